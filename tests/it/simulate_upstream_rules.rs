//! `ferroscale simulate` deciding as upstream does where it once did not (issue #25): pending DaemonSet
//! pods and pods whose node affinity names a node by `matchFields` ask for no node, a PodDisruptionBudget
//! with a null selector protects nothing, a disruption budget of "0" blocks replacements, a group whose
//! nodes never become Ready is skipped for a healthy one, and a pod's own scale-up delay is waited for.

use ferroscale::engine::expander::Strategy;

use crate::support::fixtures::dump::{node, pod};
use crate::support::simulate_harness::{pacing, quick_scale_down, reason_of, sim, ups};

const POOL: &str = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 10, capacity: {cpu: 4, memory: 16Gi, pods: 20}}
"#;

/// `pool-0` with 3.5 of its 4 cpu taken, and `extra` pods.
fn full_node_and(extra: &[String]) -> Vec<String> {
    let mut c = vec![
        node("pool-0", "pool", "4", "16Gi"),
        pod("shop", "hog", "3500m", "1Gi", Some("pool-0"), ""),
    ];
    c.extend_from_slice(extra);
    c
}

/// Upstream: cluster-autoscaler core/podlistprocessor/filter_out_daemon_sets.go and
/// utils/pod/pod.go (IsDaemonSetPod: the owner, or the `daemonset-pod` annotation).
#[test]
fn pending_daemon_set_pods_ask_for_no_node() {
    let owned = pod("kube-system", "agent", "1", "1Gi", None, "")
        .replace("kind: ReplicaSet", "kind: DaemonSet");
    let annotated = pod("kube-system", "agent-2", "1", "1Gi", None, "").replace(
        "  labels: {app:",
        "  annotations: {cluster-autoscaler.kubernetes.io/daemonset-pod: \"true\"}\n  labels: {app:",
    );
    let r = sim(&full_node_and(&[owned, annotated]), POOL).step(&quick_scale_down(), &pacing());
    assert!(r.scale_up.is_empty(), "{r:?}");

    // The same pod owned by a ReplicaSet gets a node.
    let plain = pod("shop", "web", "1", "1Gi", None, "");
    let r = sim(&full_node_and(&[plain]), POOL).step(&quick_scale_down(), &pacing());
    assert_eq!(ups(&r), vec![("pool", 1)], "{r:?}");
}

/// Upstream: kubernetes pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go (a term matches
/// only if all its requirements do; matchFields on metadata.name) against cluster-autoscaler's template
/// nodes, which are named after no real node.
#[test]
fn a_pod_bound_by_match_fields_to_a_full_node_asks_for_no_node() {
    let affinity =
        "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n\
                    \x20       nodeSelectorTerms:\n        - matchFields:\n\
                    \x20         - {key: metadata.name, operator: In, values: [pool-0]}\n";
    let pinned = pod("shop", "pinned", "1", "1Gi", None, affinity);
    let r = sim(&full_node_and(&[pinned]), POOL).step(&quick_scale_down(), &pacing());
    assert!(r.scale_up.is_empty(), "{r:?}");
    assert_eq!(
        reason_of(&r, "shop/pinned"),
        "no group fits: 1 node affinity not matched"
    );

    // An unsupported field is named, not read as nothing.
    let bad = pod(
        "shop",
        "bad",
        "1",
        "1Gi",
        None,
        &affinity.replace("metadata.name", "spec.unschedulable"),
    );
    let objects = ferroscale::k8s::documents::parse(&bad, "cluster.yaml").unwrap();
    let err = ferroscale::simulate::Simulation::new(
        &objects,
        &ferroscale::cloud::memory::MemoryConfig::parse(POOL).unwrap(),
        &ferroscale::pricing::PriceOverrides::default(),
    )
    .err()
    .expect("an unsupported matchFields key is an error");
    assert!(err.to_string().contains("matchFields[0].key"), "{err}");
}

/// A budget over shop's pods allowing no disruption; `selector` is its YAML (empty: none at all).
fn pdb(selector: &str) -> String {
    format!(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: all, namespace: shop}}\n\
         spec: {{maxUnavailable: 0{selector}}}\n\
         status: {{disruptionsAllowed: 0, currentHealthy: 2, desiredHealthy: 2, expectedPods: 2}}\n"
    )
}

/// Upstream: kubernetes pkg/controller/disruption/disruption.go (getPodsForPdb) and the policy/v1
/// PodDisruptionBudgetSpec doc: a null selector selects no pod, an empty one every pod of its namespace.
#[test]
fn a_pdb_with_a_null_selector_protects_nothing() {
    let cluster = |budget: String| {
        vec![
            node("pool-0", "pool", "4", "16Gi"),
            node("pool-1", "pool", "4", "16Gi"),
            pod("shop", "db", "3", "1Gi", Some("pool-0"), ""),
            pod("shop", "web", "500m", "1Gi", Some("pool-1"), ""),
            budget,
        ]
    };
    let removed = |budget: String| {
        let mut s = sim(&cluster(budget), POOL);
        let mut gone = Vec::new();
        for _ in 0..3 {
            let r = s.step(&quick_scale_down(), &pacing());
            gone.extend(r.scale_down.iter().map(|d| d.node.clone()));
        }
        gone
    };
    assert_eq!(
        removed(pdb("")),
        ["pool-1"],
        "a null selector protects nothing"
    );
    assert!(
        removed(pdb(", selector: {}")).is_empty(),
        "an empty selector protects every pod of shop"
    );
}

/// Three drifted nodes of `pool` (instances launched from `lt-1:1`, the group now launches `lt-1:2`).
fn drifted(budget: &str) -> (Vec<String>, String) {
    let groups = format!(
        r#"
nodeGroups:
  - {{name: pool, minSize: 0, maxSize: 6, capacity: {{cpu: 4, memory: 16Gi, pods: 20}},
     revision: "lt-1:2", drift: Replace, disruptionBudget: "{budget}",
     instances: [{{id: i-0, revision: "lt-1:1"}}, {{id: i-1, revision: "lt-1:1"}}, {{id: i-2, revision: "lt-1:1"}}]}}
"#
    );
    let cluster = (0..3)
        .flat_map(|k| {
            [
                registered("pool", k, true, "2026-01-01T00:00:00Z"),
                pod(
                    "shop",
                    &format!("web-{k}"),
                    "3",
                    "1Gi",
                    Some(&format!("pool-{k}")),
                    "",
                ),
            ]
        })
        .collect();
    (cluster, groups)
}

/// Node `<group>-<k>` on instance `i-<k>` of `group`, Ready or never Ready (with the not-ready taint).
fn registered(group: &str, k: usize, ready: bool, created: &str) -> String {
    let (status, taints) = if ready {
        ("True", "")
    } else {
        (
            "False",
            ", taints: [{key: node.kubernetes.io/not-ready, effect: NoSchedule}]",
        )
    };
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {group}-{k}\n  creationTimestamp: \"{created}\"\n  labels: {{ferroscale.io/node-group: {group}, kubernetes.io/hostname: {group}-{k}}}\n\
         spec: {{providerID: \"memory:///{group}/i-{k}\"{taints}}}\n\
         status:\n  allocatable: {{cpu: \"4\", memory: 16Gi, pods: \"20\"}}\n  conditions: [{{type: Ready, status: \"{status}\", lastTransitionTime: \"{created}\"}}]\n"
    )
}

/// Upstream: kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go (GetAllowedDisruptionsByReason; a budget
/// of nodes: "0" allows none).
#[test]
fn a_disruption_budget_of_zero_blocks_replacements() {
    let (cluster, groups) = drifted("0");
    let mut s = sim(&cluster, &groups);
    for _ in 0..3 {
        let r = s.step(&ferroscale::cli::flags::default_engine(), &pacing());
        assert!(
            r.replacements.is_empty() && r.disruptions.is_empty(),
            "{r:?}"
        );
    }
    let (cluster, groups) = drifted("1");
    let r = sim(&cluster, &groups).step(&ferroscale::cli::flags::default_engine(), &pacing());
    assert_eq!(r.replacements.len(), 1, "a budget of one replaces: {r:?}");
}

/// Upstream: cluster-autoscaler clusterstate/clusterstate.go (IsNodeGroupHealthy,
/// IsNodeGroupReadyToScaleUp) as core/scaleup/orchestrator/orchestrator.go skips such groups.
#[test]
fn a_group_whose_nodes_never_become_ready_is_skipped_for_a_healthy_one() {
    // `bad` is cheaper, but its four nodes (a broken image) never became Ready in an hour.
    let groups = r#"
nodeGroups:
  - {name: bad, minSize: 0, maxSize: 10, capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.1}
  - {name: good, minSize: 0, maxSize: 10, capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.2}
"#;
    let mut cluster: Vec<String> = (0..4)
        .map(|k| registered("bad", k, false, "2026-01-01T00:00:00Z"))
        .collect();
    cluster.extend(full_good_nodes("2026-01-01T01:00:00Z"));
    cluster.push(pod("shop", "web", "2", "1Gi", None, ""));
    let mut by_price = ferroscale::cli::flags::default_engine();
    by_price.expander = vec![Strategy::Price];
    let r = sim(&cluster, groups).step(&by_price, &pacing());
    assert_eq!(ups(&r), vec![("good", 1)], "{r:?}");

    // With `good` at its max, the pod is told why `bad` was skipped.
    let full = groups.replace(
        "name: good, minSize: 0, maxSize: 10",
        "name: good, minSize: 0, maxSize: 6",
    );
    let r = sim(&cluster, &full).step(&by_price, &pacing());
    assert!(r.scale_up.is_empty(), "{r:?}");
    assert_eq!(
        reason_of(&r, "shop/web"),
        "no group fits: 1 group bad not ready for scale-up: 4 of its nodes unready, 1 group good at max size"
    );
}

/// Upstream: cluster-autoscaler core/static_autoscaler.go (`filterOutYoungPods`): a pod's
/// `cluster-autoscaler.kubernetes.io/pod-scale-up-delay` annotation makes it wait that long from its
/// creation before it asks for a node.
#[test]
fn a_pod_asks_for_a_node_only_after_its_own_scale_up_delay() {
    let patient = pod("shop", "patient", "1", "1Gi", None, "").replace(
        "  labels: {app:",
        "  annotations: {cluster-autoscaler.kubernetes.io/pod-scale-up-delay: 30s}\n  labels: {app:",
    );
    let mut s = sim(&full_node_and(&[patient]), POOL);
    let first_up = (0..6)
        .map(|_| s.step(&quick_scale_down(), &pacing()))
        .find(|r| !r.scale_up.is_empty())
        .expect("a scale-up once the delay passed");
    assert_eq!(first_up.time, 30, "{first_up:?}");
}

/// `name` in `zone` of group `pool`.
fn zoned(name: &str, zone: &str) -> String {
    node(name, "pool", "4", "16Gi").replace(
        "kubernetes.io/hostname:",
        &format!("topology.kubernetes.io/zone: {zone}, kubernetes.io/hostname:"),
    )
}

/// A pod of app `one`, at most one per zone, on `node`.
fn one_per_zone(name: &str, node: &str) -> String {
    let anti = "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n\
                \x20     - labelSelector: {matchLabels: {app: one}}\n\
                \x20       topologyKey: topology.kubernetes.io/zone\n";
    pod("shop", name, "500m", "1Gi", Some(node), anti).replace(&format!("app: {name}"), "app: one")
}

/// Upstream: cluster-autoscaler simulator/cluster.go (a node's pods leave the snapshot before they are
/// placed elsewhere, one by one). A pod allowed once per zone moves to another node of its own zone
/// when its node goes: it does not conflict with itself.
#[test]
fn a_one_per_zone_pod_moves_within_its_zone_at_scale_down() {
    let cluster = vec![
        zoned("a-1", "us-east-1a"),
        zoned("a-2", "us-east-1a"),
        zoned("b-1", "us-east-1b"),
        one_per_zone("one-a", "a-1"),
        one_per_zone("one-b", "b-1"),
        pod("shop", "hog-a", "2500m", "1Gi", Some("a-2"), ""),
        pod("shop", "hog-b", "2500m", "1Gi", Some("b-1"), ""),
    ];
    let r = sim(&cluster, POOL).step(&quick_scale_down(), &pacing());
    let removed: Vec<(&str, &[String])> = r
        .scale_down
        .iter()
        .map(|d| (d.node.as_str(), d.evicted.as_slice()))
        .collect();
    assert_eq!(
        removed,
        vec![("a-1", &["shop/one-a".to_string()][..])],
        "{r:?}"
    );

    // With no other node in its zone, it has nowhere to go and its node stays.
    let alone: Vec<String> = cluster
        .iter()
        .filter(|o| !o.contains("name: a-2") && !o.contains("hog-a"))
        .cloned()
        .collect();
    let r = sim(&alone, POOL).step(&quick_scale_down(), &pacing());
    assert!(r.scale_down.is_empty(), "{r:?}");
}

/// `--events` `neverReady`: the group's new nodes never become Ready (a broken image). They count as
/// upcoming while they may still start (the group's `maxNodeStartupTime`, here 1m), so the pods are not
/// asked for twice; past it the group is unhealthy (upstream: clusterstate IsNodeGroupHealthy) and the
/// pods go to the healthy group.
#[test]
fn a_group_whose_new_nodes_never_become_ready_is_given_up_for_a_healthy_one() {
    let groups = r#"
nodeGroups:
  - {name: bad, minSize: 0, maxSize: 10, capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.1,
     options: {maxNodeStartupTime: 1m}}
  - {name: good, minSize: 0, maxSize: 10, capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.2}
"#;
    let mut cluster: Vec<String> = Vec::new();
    cluster.extend(full_good_nodes("2026-01-01T00:00:00Z"));
    for k in 0..4 {
        cluster.push(pod("shop", &format!("web-{k}"), "3500m", "1Gi", None, ""));
    }
    let mut s = sim(&cluster, groups);
    s.set_events(
        ferroscale::simulate::parse_events("- {at: 0s, neverReady: bad}").unwrap(),
        false,
    );
    let mut by_price = ferroscale::cli::flags::default_engine();
    by_price.expander = vec![Strategy::Price];
    let mut asked: Vec<(String, i32)> = Vec::new();
    for _ in 0..12 {
        let r = s.step(&by_price, &pacing());
        asked.extend(r.scale_up.iter().map(|u| (u.group.clone(), u.delta)));
    }
    assert_eq!(
        asked,
        [("bad".to_string(), 4), ("good".to_string(), 4)],
        "bad asked for once while its nodes may start, then given up for good"
    );
}

/// Six Ready nodes of group `good` created at `created`, each with 3.5 of its 4 cpu taken.
fn full_good_nodes(created: &str) -> Vec<String> {
    (0..6)
        .flat_map(|k| {
            [
                registered("good", k, true, created),
                pod(
                    "shop",
                    &format!("hog-{k}"),
                    "3500m",
                    "1Gi",
                    Some(&format!("good-{k}")),
                    "",
                ),
            ]
        })
        .collect()
}
