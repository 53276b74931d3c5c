//! `ferroscale simulate` with volumes and with inter-pod constraints that reach the whole cluster: an
//! EBS volume keeps its pod (on scale-up and on a drain) in its zone, a WaitForFirstConsumer claim
//! follows its class's allowed topologies, an Immediate claim waits without a scale-up, a CSINode's
//! attach limit sends the pod to a new node, and topology spread and anti-affinity count the pods on
//! existing nodes. Dumps are written as `kubectl get -o yaml` writes them.

use ferroscale::engine::expander::Strategy;
use ferroscale::engine::Settings;

use crate::support::fixtures::dump::{node, pod};
use crate::support::simulate_harness::{
    pacing, quick_scale_down, reason_of, sim, unremovable, ups,
};

/// Two groups alike but for their zone; `b` is cheaper, so the price expander picks it when it can.
const ZONED: &str = r#"
nodeGroups:
  - {name: a, minSize: 0, maxSize: 10, capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.2,
     labels: {topology.kubernetes.io/zone: us-east-1a}}
  - {name: b, minSize: 0, maxSize: 10, capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.1,
     labels: {topology.kubernetes.io/zone: us-east-1b}}
"#;

fn by_price() -> Settings {
    let mut s = ferroscale::cli::flags::default_engine();
    s.expander = vec![Strategy::Price];
    s
}

/// A node of group `group` in `zone`, long ready (a template candidate).
fn zoned_node(name: &str, group: &str, zone: &str, cpu: &str) -> String {
    node(name, group, cpu, "16Gi").replace(
        "  labels: {",
        &format!(
            "  creationTimestamp: \"2026-11-01T10:00:00Z\"\n  labels: {{topology.kubernetes.io/zone: {zone}, "
        ),
    )
}

/// A pod mounting the claim `claim` (spec YAML after `extra`).
fn pod_with_claim(name: &str, cpu: &str, node: Option<&str>, claim: &str) -> String {
    pod(
        "shop",
        name,
        cpu,
        "1Gi",
        node,
        &format!("  volumes: [{{name: data, persistentVolumeClaim: {{claimName: {claim}}}}}]\n"),
    )
}

/// An EBS volume in `zone` bound to `shop/<claim>`, and the claim.
fn bound_volume(claim: &str, zone: &str) -> Vec<String> {
    vec![
        format!(
            "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: pv-{claim}\n  labels: {{topology.kubernetes.io/zone: {zone}}}\n\
             spec:\n  capacity: {{storage: 10Gi}}\n  accessModes: [ReadWriteOnce]\n  storageClassName: gp3\n\
             \x20 csi: {{driver: ebs.csi.aws.com, volumeHandle: vol-{claim}}}\n\
             \x20 claimRef: {{namespace: shop, name: {claim}}}\n\
             \x20 nodeAffinity:\n    required:\n      nodeSelectorTerms:\n      - matchExpressions:\n\
             \x20       - {{key: topology.kubernetes.io/zone, operator: In, values: [{zone}]}}\n\
             status: {{phase: Bound}}\n"
        ),
        format!(
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: {claim}, namespace: shop}}\n\
             spec:\n  accessModes: [ReadWriteOnce]\n  resources: {{requests: {{storage: 10Gi}}}}\n  storageClassName: gp3\n  volumeName: pv-{claim}\n\
             status: {{phase: Bound}}\n"
        ),
    ]
}

/// An unbound claim of `class`.
fn unbound_claim(claim: &str, class: &str) -> String {
    format!(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: {claim}, namespace: shop}}\n\
         spec:\n  accessModes: [ReadWriteOnce]\n  resources: {{requests: {{storage: 10Gi}}}}\n  storageClassName: {class}\n\
         status: {{phase: Pending}}\n"
    )
}

fn storage_class(name: &str, mode: &str, zones: &[&str]) -> String {
    let topologies = if zones.is_empty() {
        String::new()
    } else {
        format!(
            "allowedTopologies:\n- matchLabelExpressions:\n  - {{key: topology.kubernetes.io/zone, values: [{}]}}\n",
            zones.join(", ")
        )
    };
    format!(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {{name: {name}}}\nprovisioner: ebs.csi.aws.com\n\
         volumeBindingMode: {mode}\n{topologies}"
    )
}

#[test]
fn a_pod_whose_ebs_volume_is_in_one_zone_scales_up_that_zone_only() {
    let mut cluster = vec![pod_with_claim("db-0", "1", None, "data-0")];
    cluster.extend(bound_volume("data-0", "us-east-1a"));
    let r = sim(&cluster, ZONED).step(&by_price(), &pacing());
    assert_eq!(
        ups(&r),
        vec![("a", 1)],
        "the cheaper zone b cannot reach the volume: {r:?}"
    );

    // Without the volume the cheaper group wins: the volume decided.
    let r = sim(&[pod("shop", "db-0", "1", "1Gi", None, "")], ZONED).step(&by_price(), &pacing());
    assert_eq!(ups(&r), vec![("b", 1)], "{r:?}");

    // With only zone b, nothing is launched and the reason names the claim.
    let only_b = ZONED.replace(
        "maxSize: 10, capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.2",
        "maxSize: 0, capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.2",
    );
    let r = sim(&cluster, &only_b).step(&by_price(), &pacing());
    assert!(r.scale_up.is_empty(), "{r:?}");
    assert_eq!(
        reason_of(&r, "shop/db-0"),
        "no group fits: 1 group a at max size, 1 volume node affinity conflict: pvc shop/data-0"
    );
}

#[test]
fn a_wait_for_first_consumer_claim_scales_up_where_its_class_may_provision() {
    let cluster = vec![
        pod_with_claim("db-0", "1", None, "data-0"),
        unbound_claim("data-0", "gp3-a"),
        storage_class("gp3-a", "WaitForFirstConsumer", &["us-east-1a"]),
    ];
    let r = sim(&cluster, ZONED).step(&by_price(), &pacing());
    assert_eq!(ups(&r), vec![("a", 1)], "{r:?}");

    // A class allowed anywhere lets the cheaper zone take it.
    let anywhere = vec![
        pod_with_claim("db-0", "1", None, "data-0"),
        unbound_claim("data-0", "gp3"),
        storage_class("gp3", "WaitForFirstConsumer", &[]),
    ];
    let r = sim(&anywhere, ZONED).step(&by_price(), &pacing());
    assert_eq!(ups(&r), vec![("b", 1)], "{r:?}");
}

#[test]
fn an_unbound_immediate_claim_waits_and_triggers_nothing() {
    let cluster = vec![
        pod_with_claim("db-0", "1", None, "data-0"),
        unbound_claim("data-0", "slow"),
        storage_class("slow", "Immediate", &[]),
        pod_with_claim("db-1", "1", None, "nowhere"),
    ];
    let r = sim(&cluster, ZONED).step(&by_price(), &pacing());
    assert!(r.scale_up.is_empty(), "{r:?}");
    assert_eq!(
        reason_of(&r, "shop/db-0"),
        "waits for pvc shop/data-0: unbound with Immediate binding; no node can take the pod before that"
    );
    assert_eq!(
        reason_of(&r, "shop/db-1"),
        "waits for pvc shop/nowhere: not found; no node can take the pod before that"
    );
}

#[test]
fn a_node_at_its_attach_limit_takes_no_more_volumes_so_a_node_is_added() {
    let csinode = |limit: u32| {
        format!(
            "apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {{name: full}}\n\
             spec:\n  drivers:\n  - {{name: ebs.csi.aws.com, nodeID: i-full, allocatable: {{count: {limit}}}}}\n"
        )
    };
    let mut cluster = vec![
        zoned_node("full", "a", "us-east-1a", "4"),
        pod_with_claim("db-0", "500m", Some("full"), "data-0"),
        pod_with_claim("db-1", "500m", None, "data-1"),
    ];
    cluster.extend(bound_volume("data-0", "us-east-1a"));
    cluster.extend(bound_volume("data-1", "us-east-1a"));

    let mut limited = cluster.clone();
    limited.push(csinode(1));
    let r = sim(&limited, ZONED).step(&by_price(), &pacing());
    assert_eq!(ups(&r), vec![("a", 1)], "{r:?}");

    // Room for a second volume: the existing node takes the pod.
    let mut roomy = cluster;
    roomy.push(csinode(2));
    let r = sim(&roomy, ZONED).step(&by_price(), &pacing());
    assert!(r.scale_up.is_empty(), "{r:?}");
    assert!(r.pending.is_empty(), "bound to the existing node: {r:?}");
}

#[test]
fn a_drain_never_moves_a_pod_away_from_its_volume_zone() {
    let mut cluster = vec![
        zoned_node("a1", "a", "us-east-1a", "4"),
        zoned_node("b1", "b", "us-east-1b", "4"),
        pod_with_claim("db-0", "100m", Some("a1"), "data-0"),
        pod("shop", "web", "100m", "100Mi", Some("b1"), ""),
    ];
    cluster.extend(bound_volume("data-0", "us-east-1a"));
    let r = sim(&cluster, ZONED).step(&quick_scale_down(), &pacing());
    let removed: Vec<&str> = r.scale_down.iter().map(|d| d.node.as_str()).collect();
    assert_eq!(
        removed,
        vec!["b1"],
        "web moves to a1; db-0 cannot move to b1: {r:?}"
    );
    assert!(
        unremovable(&r, "a1").contains("volume node affinity conflict: pvc shop/data-0"),
        "{r:?}"
    );
}

/// `spec` YAML for a pod spread by zone (maxSkew 1) with the other `app: web` pods.
const SPREAD: &str = "  topologySpreadConstraints:\n  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}\n";

fn web(name: &str, node: Option<&str>, extra: &str) -> String {
    pod("shop", name, "1", "1Gi", node, extra)
        .replace(&format!("labels: {{app: {name}}}"), "labels: {app: web}")
}

#[test]
fn topology_spread_counts_the_pods_on_existing_nodes() {
    // Four web pods in zone a, none in b (b's node is full of something else): the fifth must go to b,
    // though a is cheaper here.
    let groups = ZONED.replace("pricePerHour: 0.2", "pricePerHour: 0.05");
    let mut cluster = vec![
        zoned_node("a1", "a", "us-east-1a", "4"),
        zoned_node("b1", "b", "us-east-1b", "4"),
        pod("shop", "batch", "4", "1Gi", Some("b1"), ""),
        web("web-5", None, SPREAD),
    ];
    for i in 1..=4 {
        cluster.push(web(&format!("web-{i}"), Some("a1"), SPREAD));
    }
    let r = sim(&cluster, &groups).step(&by_price(), &pacing());
    assert_eq!(ups(&r), vec![("b", 1)], "{r:?}");

    // Counting only new nodes, zone a would have taken it: without the pods in a, it does.
    let mut empty_a = vec![
        zoned_node("b1", "b", "us-east-1b", "4"),
        pod("shop", "batch", "4", "1Gi", Some("b1"), ""),
        web("web-5", None, SPREAD),
    ];
    empty_a.push(zoned_node("a1", "a", "us-east-1a", "4"));
    empty_a.push(pod("shop", "batch-a", "4", "1Gi", Some("a1"), ""));
    let r = sim(&empty_a, &groups).step(&by_price(), &pacing());
    assert_eq!(ups(&r), vec![("a", 1)], "{r:?}");
}

#[test]
fn anti_affinity_counts_the_pods_on_existing_nodes() {
    let anti = "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n\
                \x20     - {topologyKey: topology.kubernetes.io/zone, labelSelector: {matchLabels: {app: web}}}\n";
    // A web pod runs on a full node in zone b (the cheaper group): the new one must go to zone a.
    let cluster = vec![
        zoned_node("b1", "b", "us-east-1b", "1"),
        web("web-1", Some("b1"), ""),
        web("web-2", None, anti),
    ];
    let r = sim(&cluster, ZONED).step(&by_price(), &pacing());
    assert_eq!(ups(&r), vec![("a", 1)], "{r:?}");
}

#[test]
fn a_template_copied_from_a_real_node_keeps_its_attach_limit() {
    // Group a has a real node that can attach one EBS volume; a pod needing two goes to b, whose
    // template comes from the cloud (no CSINode known: no limit), though a is cheaper here.
    let groups = ZONED.replace("pricePerHour: 0.2", "pricePerHour: 0.05");
    let two_claims = pod(
        "shop",
        "db-0",
        "1",
        "1Gi",
        None,
        "  volumes: [{name: d1, persistentVolumeClaim: {claimName: one}}, {name: d2, persistentVolumeClaim: {claimName: two}}]\n",
    );
    let csinode = "apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {name: a1}\n\
                   spec:\n  drivers:\n  - {name: ebs.csi.aws.com, nodeID: i-a1, allocatable: {count: 1}}\n";
    let mut cluster = vec![
        zoned_node("a1", "a", "us-east-1a", "1"),
        pod("shop", "busy", "1", "1Gi", Some("a1"), ""),
        two_claims,
        unbound_claim("one", "gp3"),
        unbound_claim("two", "gp3"),
        storage_class("gp3", "WaitForFirstConsumer", &[]),
    ];
    let r = sim(&cluster, &groups).step(&by_price(), &pacing());
    assert_eq!(
        ups(&r),
        vec![("a", 1)],
        "without a CSINode a is cheaper: {r:?}"
    );
    cluster.push(csinode.into());
    let r = sim(&cluster, &groups).step(&by_price(), &pacing());
    assert_eq!(ups(&r), vec![("b", 1)], "{r:?}");
}

#[test]
fn a_bad_operator_in_a_volume_or_pod_node_affinity_is_named() {
    use ferroscale::cloud::memory::MemoryConfig;
    use ferroscale::k8s::documents;
    use ferroscale::pricing::PriceOverrides;
    use ferroscale::simulate::Simulation;

    let error = |cluster: &[String]| {
        let objects = documents::parse(&cluster.join("---\n"), "cluster.yaml").unwrap();
        Simulation::new(
            &objects,
            &MemoryConfig::parse(ZONED).unwrap(),
            &PriceOverrides::default(),
        )
        .err()
        .expect("refused")
        .to_string()
    };
    let mut cluster = vec![pod_with_claim("db-0", "1", None, "data-0")];
    cluster.extend(bound_volume("data-0", "us-east-1a"));
    cluster[1] = cluster[1].replace("operator: In", "operator: Near");
    let e = error(&cluster);
    assert!(
        e.contains("persistentvolume pv-data-0: spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator"),
        "{e}"
    );
    let affinity = "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions: [{key: zone, operator: Near, values: [a]}]\n";
    let e = error(&[pod("shop", "web", "1", "1Gi", None, affinity)]);
    assert!(
        e.contains("pod shop/web: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator"),
        "{e}"
    );
}
