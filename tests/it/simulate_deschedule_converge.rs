//! Issue #40's stall, through `simulate --deschedule-policy`: LowNodeUtilization's first candidates on
//! an overutilized node are pods of a zonal volume no other node's zone can take, declined every cycle;
//! the strategy goes on to the node's movable pods (as the descheduler goes on after a failed
//! eviction) and the node is within its target after the first cycle, and `evictionLimits.node`
//! counts the evictions made.

use serde_json::Value;

use crate::simulate_deschedule::declined;
use crate::simulate_report::{json_lines, ok};
use crate::support::fixtures::dump::{node, pod, GROUPS};

/// A node of 4 cpus and 16Gi in `zone`.
fn zoned(name: &str, zone: &str) -> String {
    node(name, "big", "4", "16Gi").replace(
        "  labels: {",
        &format!("  labels: {{topology.kubernetes.io/zone: {zone}, "),
    )
}

/// A pod on `a` of `memory`, of priority `priority`, mounting `claim` when given.
fn on_a(name: &str, memory: &str, priority: i32, claim: Option<&str>) -> String {
    let volume = claim
        .map(|c| {
            format!("  volumes: [{{name: data, persistentVolumeClaim: {{claimName: {c}}}}}]\n")
        })
        .unwrap_or_default();
    pod(
        "shop",
        name,
        "100m",
        memory,
        Some("a"),
        &format!("  priority: {priority}\n{volume}"),
    )
    .replace("name: rs, uid: u", &format!("name: {name}, uid: {name}"))
}

/// An EBS volume in zone z1 bound to `shop/<claim>`, and the claim.
fn zonal_volume(claim: &str) -> String {
    format!(
        "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: pv-{claim}\n\
         spec:\n  capacity: {{storage: 10Gi}}\n  accessModes: [ReadWriteOnce]\n  storageClassName: gp3\n\
         \x20 csi: {{driver: ebs.csi.aws.com, volumeHandle: vol-{claim}}}\n\
         \x20 claimRef: {{namespace: shop, name: {claim}}}\n\
         \x20 nodeAffinity:\n    required:\n      nodeSelectorTerms:\n      - matchExpressions:\n\
         \x20       - {{key: topology.kubernetes.io/zone, operator: In, values: [z1]}}\n\
         status: {{phase: Bound}}\n---\n\
         apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: {claim}, namespace: shop}}\n\
         spec:\n  accessModes: [ReadWriteOnce]\n  resources: {{requests: {{storage: 10Gi}}}}\n  storageClassName: gp3\n  volumeName: pv-{claim}\n\
         status: {{phase: Bound}}\n"
    )
}

/// Node `a` (zone z1) holds three 2Gi pods of zonal volumes (priority 0: the strategy's first
/// candidates) and `movable` pods of `each` memory (priority 10); b and c (zone z2) are empty.
fn cluster(movable: usize, each: &str) -> String {
    let mut objects = vec![zoned("a", "z1"), zoned("b", "z2"), zoned("c", "z2")];
    for i in 1..=3 {
        objects.push(zonal_volume(&format!("data-{i}")));
        objects.push(on_a(
            &format!("zonal-{i}"),
            "2Gi",
            0,
            Some(&format!("data-{i}")),
        ));
    }
    for i in 1..=movable {
        objects.push(on_a(&format!("movable-{i}"), each, 10, None));
    }
    objects.join("---\n")
}

fn policy(low: u32, target: u32, limits: &str) -> String {
    format!(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  pluginConfig:\n  \
         - name: LowNodeUtilization\n    args:\n      thresholds: {{memory: {low}}}\n      \
         targetThresholds: {{memory: {target}}}\n{limits}  plugins:\n    balance:\n      enabled: [LowNodeUtilization]\n"
    )
}

/// Each loop's JSON of `simulate --loops <loops>` with the policy.
fn simulate(cluster: &str, policy: &str, loops: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let (cluster, groups, policy) = (
        write("cluster.yaml", cluster),
        write("groups.yaml", GROUPS),
        write("policy.yaml", policy),
    );
    let out = std::process::Command::new(crate::support::process::BIN)
        .args(["simulate", "--cluster", &cluster, "--node-groups", &groups])
        .args(["--scale-down-enabled=false", "--loops", loops])
        .args(["--deschedule-policy", &policy])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    json_lines(&ok(&out))
}

fn evicted(line: &Value) -> Vec<String> {
    line["evictions"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["pod"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn low_node_utilization_goes_past_zonal_pods_to_the_movable_ones_and_settles() {
    // a: 12Gi of 16 (75%) against a 50% target; the two 3Gi movable pods bring it to 37.5%.
    let lines = simulate(&cluster(2, "3Gi"), &policy(20, 50, ""), "4");
    assert_eq!(
        evicted(&lines[0]),
        ["shop/movable-1", "shop/movable-2"],
        "{}",
        lines[0]
    );
    let why = declined(&lines[0]);
    // Named by what blocks them on each node they could go to: their volume's zone, on both.
    assert!(
        why.iter().any(|(p, r)| p == "shop/zonal-1"
            && r.ends_with(
                "volume node affinity conflict: pvc shop/data-1 on 2 nodes (VolumeBinding)"
            )),
        "the zonal pods are declined with why: {why:?}"
    );
    // And in the JSON's structure: the filter, the refusal, the nodes.
    let zonal = lines[0]["deschedulingDeclined"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["pod"] == "shop/zonal-1")
        .unwrap();
    assert_eq!(
        zonal["blocked"],
        serde_json::json!([{"filter": "VolumeBinding",
            "reason": "volume node affinity conflict: pvc shop/data-1", "nodes": 2}])
    );
    // Settled: a is within its target, nothing is proposed again.
    for line in &lines[1..] {
        assert!(evicted(line).is_empty(), "{line}");
    }
}

#[test]
fn eviction_limits_node_counts_evictions_made_not_proposals() {
    // a: 11Gi (69%) against 20%: every movable pod would go; five of them under a limit of five,
    // the three declined zonal pods not counted.
    let limits = "      evictionLimits: {node: 5}\n";
    let lines = simulate(&cluster(6, "1Gi"), &policy(10, 20, limits), "1");
    let moved = evicted(&lines[0]);
    assert_eq!(moved.len(), 5, "{}", lines[0]);
    assert!(
        moved.iter().all(|p| p.starts_with("shop/movable")),
        "{moved:?}"
    );
}
