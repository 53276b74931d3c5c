//! Issue #40: the descheduler chart's default policy (our chart's `descheduler.policy`) on a skewed
//! cluster, through `simulate --deschedule-policy` over an hour of 5-minute cycles with a 10-minute
//! cooldown: the plan never sends two pods of one owner to one node (RemoveDuplicates would evict
//! one of them again once the cooldown is over), so the cluster settles and no pod moves twice.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::simulate_report::{json_lines, ok};
use crate::support::fixtures::dump::{node, pod, GROUPS};

/// The chart's default `descheduler.policy`, as a policy file.
fn chart_policy() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/charts/ferroscale/values.yaml");
    let values: serde_norway::Value =
        serde_norway::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut policy = values["descheduler"]["policy"].clone();
    let map = policy.as_mapping_mut().expect("descheduler.policy");
    map.insert("apiVersion".into(), "descheduler/v1alpha2".into());
    map.insert("kind".into(), "DeschedulerPolicy".into());
    serde_norway::to_string(&policy).unwrap()
}

/// A pod of ReplicaSet `owner` on `node`.
fn replica(owner: &str, i: usize, cpu: &str, memory: &str, node: &str) -> String {
    pod("shop", &format!("{owner}-{i}"), cpu, memory, Some(node), "")
        .replace("name: rs, uid: u", &format!("name: {owner}, uid: {owner}"))
}

/// a holds web's four replicas (RemoveDuplicates moves three away, LowNodeUtilization wants it
/// under half); b and c hold a pod each; d is empty, the emptiest node for every move.
fn skewed() -> String {
    let mut objects: Vec<String> = ["a", "b", "c", "d"]
        .iter()
        .map(|n| node(n, "big", "4", "16Gi"))
        .collect();
    for i in 1..=4 {
        objects.push(replica("web", i, "500m", "2Gi", "a"));
    }
    objects.push(replica("batch", 1, "600m", "2560Mi", "b"));
    objects.push(replica("cache", 1, "600m", "2560Mi", "c"));
    objects.join("---\n")
}

fn simulate(cluster: &str, policy: &str) -> Vec<Value> {
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
        .args(["--scale-down-enabled=false", "--loops", "12"])
        .args(["--scan-interval", "5m", "--deschedule-interval", "5m"])
        .args(["--deschedule-cooldown", "10m"])
        .args(["--deschedule-policy", &policy])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    json_lines(&ok(&out))
}

#[test]
fn the_charts_default_policy_settles_a_skewed_cluster_with_no_pod_moved_twice() {
    let lines = simulate(&skewed(), &chart_policy());
    // Pod → (loop, to) of each eviction.
    let mut moves: BTreeMap<String, Vec<(usize, String)>> = BTreeMap::new();
    for (i, line) in lines.iter().enumerate() {
        for e in line["evictions"].as_array().into_iter().flatten() {
            moves
                .entry(e["pod"].as_str().unwrap().to_string())
                .or_default()
                .push((i, e["to"].as_str().unwrap_or("").to_string()));
        }
    }
    assert!(
        moves.keys().filter(|p| p.starts_with("shop/web")).count() >= 2,
        "web's duplicates on a are moved: {moves:?}"
    );
    for (pod, m) in &moves {
        assert_eq!(m.len(), 1, "{pod} moved more than once: {m:?}");
    }
    // No two of web's pods sent to one node.
    let mut to: Vec<&str> = moves
        .iter()
        .filter(|(p, _)| p.starts_with("shop/web"))
        .map(|(_, m)| m[0].1.as_str())
        .collect();
    to.sort_unstable();
    let before = to.len();
    to.dedup();
    assert_eq!(to.len(), before, "web's moves: {moves:?}");
    // Settled: the last half hour evicts nothing.
    for line in &lines[6..] {
        assert!(
            line["evictions"].as_array().is_none_or(|a| a.is_empty()),
            "{line}"
        );
    }
}
