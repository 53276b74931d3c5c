//! Cases of the descheduler's `removeduplicates_test.go`, each named after its test function and
//! case: the nodes and pods as the case builds them, the count (and where it says, which) of evictions.

use super::RemoveDuplicatesArgs;
use crate::deschedule::fixtures::DeschedulerPod;
use crate::deschedule::strategies::usage::testing::*;
use crate::deschedule::EvictorArgs;
use crate::deschedule::PluginArgs;
use crate::fixtures::PodBuilder;
use crate::model::workload::{Node, Pod, SelectorOp};
use crate::model::TaintEffect;

/// `buildTestNode`: 2000m, 3000 bytes, 10 pods.
fn n(name: &str) -> crate::fixtures::NodeBuilder {
    tnode(name, 2000, 3000, 10)
}

/// `buildTestPodForNode`: 100m.
fn p(name: &str, node: &str) -> PodBuilder {
    tpod(name, 100, 0, node)
}

/// `buildTestPodWithRSOwnerRefWithNamespaceForNode1`.
fn rs_in(name: &str, ns: &str) -> PodBuilder {
    p(name, "n1").rs().namespace(ns)
}

fn evicted(
    args: RemoveDuplicatesArgs,
    evictor: EvictorArgs,
    nodes: Vec<Node>,
    pods: Vec<PodBuilder>,
) -> Vec<String> {
    let pods: Vec<Pod> = pods.into_iter().map(|p| p.build()).collect();
    run(PluginArgs::RemoveDuplicates(args), evictor, nodes, pods)
}

/// `TestFindDuplicatePods`: default args but the case's `excludeOwnerKinds` and `nodeFit`.
fn find(
    pods: Vec<PodBuilder>,
    nodes: Vec<crate::fixtures::NodeBuilder>,
    exclude: &[&str],
    fit: bool,
) -> usize {
    let args = RemoveDuplicatesArgs {
        exclude_owner_kinds: exclude.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    let evictor = if fit {
        node_fit()
    } else {
        EvictorArgs::default()
    };
    evicted(
        args,
        evictor,
        nodes.into_iter().map(|n| n.build()).collect(),
        pods,
    )
    .len()
}

fn dev3() -> Vec<PodBuilder> {
    vec![rs_in("p1", "dev"), rs_in("p2", "dev"), rs_in("p3", "dev")]
}

fn test3() -> Vec<PodBuilder> {
    vec![
        rs_in("p8", "test"),
        rs_in("p9", "test"),
        rs_in("p10", "test"),
    ]
}

/// p4..p7 of the case: a DaemonSet pod, one with local storage, a mirror pod, a critical pod.
fn kept4() -> Vec<PodBuilder> {
    vec![
        p("p4", "n1").ds(),
        p("p5", "n1").normal().local_storage(),
        p("p6", "n1").mirror(),
        p("p7", "n1").critical(),
    ]
}

fn cat(v: Vec<Vec<PodBuilder>>) -> Vec<PodBuilder> {
    v.into_iter().flatten().collect()
}

fn two() -> Vec<crate::fixtures::NodeBuilder> {
    vec![n("n1"), n("n2")]
}

#[test]
fn find_duplicate_pods_three_pods_in_dev_bound_to_same_replicaset_one_evicted() {
    assert_eq!(find(dev3(), two(), &[], false), 1);
}

#[test]
fn find_duplicate_pods_replicaset_kind_excluded_none_evicted() {
    assert_eq!(find(dev3(), two(), &["ReplicaSet"], false), 0);
}

#[test]
fn find_duplicate_pods_three_pods_in_test_one_evicted() {
    assert_eq!(find(test3(), two(), &[], false), 1);
}

#[test]
fn find_duplicate_pods_three_in_dev_three_in_test_same_replicaset_name() {
    // The case's description says 4; its expectation is 2 (one per namespace).
    assert_eq!(find(cat(vec![dev3(), test3()]), two(), &[], false), 2);
}

#[test]
fn find_duplicate_pods_daemonset_local_storage_mirror_critical_none_evicted() {
    assert_eq!(find(kept4(), two(), &[], false), 0);
}

#[test]
fn find_duplicate_pods_test_all_pods() {
    assert_eq!(
        find(cat(vec![dev3(), kept4(), test3()]), two(), &[], false),
        2
    );
}

#[test]
fn find_duplicate_pods_same_owner_different_images_not_evicted() {
    let pods = vec![
        rs_in("p11", "different-images").images(&["foo"]),
        rs_in("p12", "different-images").images(&["bar"]),
    ];
    assert_eq!(find(pods, two(), &[], false), 0);
}

#[test]
fn find_duplicate_pods_multiple_containers_do_not_match_themselves() {
    let pods = vec![rs_in("p13", "different-images").images(&["", "foo"])];
    assert_eq!(find(pods, two(), &[], false), 0);
}

#[test]
fn find_duplicate_pods_matching_owners_not_all_matching_images_not_evicted() {
    let pods = vec![
        rs_in("p11", "different-images").images(&["foo"]),
        rs_in("p13", "different-images").images(&["", "foo"]),
    ];
    assert_eq!(find(pods, two(), &[], false), 0);
}

#[test]
fn find_duplicate_pods_only_other_node_tainted_node_fit_none_evicted() {
    let nodes = vec![
        n("n1"),
        n("n3").taint(taint("hardware", "gpu", TaintEffect::NoSchedule)),
    ];
    assert_eq!(find(dev3(), nodes, &[], true), 0);
}

#[test]
fn find_duplicate_pods_node_selector_matches_no_node_node_fit_none_evicted() {
    let pods = ["p15", "NOT1", "NOT2"]
        .map(|name| rs_in(name, "node-fit").selector("datacenter", "west"))
        .into();
    let nodes = vec![n("n1"), n("n4").label("datacenter", "east")];
    assert_eq!(find(pods, nodes, &[], true), 0);
}

#[test]
fn find_duplicate_pods_only_other_node_unschedulable_node_fit_none_evicted() {
    let nodes = vec![n("n1"), n("n5").with(|n| n.unschedulable = true)];
    assert_eq!(find(dev3(), nodes, &[], true), 0);
}

#[test]
fn find_duplicate_pods_only_other_node_short_of_cpu_node_fit_none_evicted() {
    let mut pods = dev3();
    pods.push(tpod("CPU-eater", 150, 150, "n6").namespace("test"));
    let nodes = vec![n("n1"), tnode("n6", 200, 200, 10)];
    assert_eq!(find(pods, nodes, &[], true), 0);
}

#[test]
fn find_duplicate_pods_only_other_node_has_enough_cpu_node_fit_one_evicted() {
    let mut pods = dev3();
    pods.push(tpod("CPU-saver", 100, 150, "n6").namespace("test"));
    let nodes = vec![n("n1"), tnode("n6", 200, 200, 10)];
    assert_eq!(find(pods, nodes, &[], true), 1);
}

/// `TestRemoveDuplicatesUniformly`: default args and evictor.
fn uniformly(pods: Vec<PodBuilder>, nodes: Vec<crate::fixtures::NodeBuilder>) -> Vec<String> {
    evicted(
        RemoveDuplicatesArgs::default(),
        EvictorArgs::default(),
        nodes.into_iter().map(|n| n.build()).collect(),
        pods,
    )
}

/// Pods named `p{first}..` on nodes by count, each built by `f`.
fn spread(
    first: usize,
    counts: &[(&str, usize)],
    f: impl Fn(PodBuilder, usize) -> PodBuilder,
) -> Vec<PodBuilder> {
    let mut out = Vec::new();
    let mut i = first;
    for (node, count) in counts {
        for _ in 0..*count {
            out.push(f(p(&format!("p{i}"), node), i));
            i += 1;
        }
    }
    out
}

fn three() -> Vec<crate::fixtures::NodeBuilder> {
    vec![n("n1"), n("n2"), n("n3")]
}

const FIVE_THREE_ONE: [(&str, usize); 3] = [("n1", 5), ("n2", 3), ("n3", 1)];

#[test]
fn remove_duplicates_uniformly_evict_pods_uniformly() {
    let pods = spread(1, &FIVE_THREE_ONE, |p, _| p.rs());
    assert_eq!(uniformly(pods, three()), ["p4", "p5"]);
}

#[test]
fn remove_duplicates_uniformly_with_one_node_left_out() {
    let pods = spread(1, &FIVE_THREE_ONE, |p, _| p.rs());
    assert_eq!(uniformly(pods, vec![n("n1"), n("n2")]).len(), 1);
}

#[test]
fn remove_duplicates_uniformly_with_two_replica_sets() {
    let pods = spread(11, &FIVE_THREE_ONE, |p, _| {
        p.owner("ReplicaSet", "replicaset-1")
            .owner("ReplicaSet", "replicaset-2")
    });
    // Upstream counts 4: each of the two owners evicts the same two pods. Proposed once each here.
    assert_eq!(uniformly(pods, three()), ["p14", "p15"]);
}

#[test]
fn remove_duplicates_uniformly_with_two_owner_references() {
    let mut pods = spread(11, &FIVE_THREE_ONE, |p, _| p.rs());
    pods.extend(spread(21, &[("n1", 1), ("n2", 3), ("n3", 5)], |p, _| {
        p.owner("ReplicaSet", "replicaset-2")
    }));
    assert_eq!(uniformly(pods, three()).len(), 4);
}

#[test]
fn remove_duplicates_uniformly_fewer_pods_than_nodes() {
    let pods = spread(1, &[("n1", 2)], |p, _| p.rs());
    assert_eq!(uniformly(pods, three()).len(), 1);
}

#[test]
fn remove_duplicates_uniformly_fewer_pods_than_nodes_ignoring_other_images() {
    // `buildTestPodWithImage` adds a container with the image to the one without.
    let pods = [("p1", "foo"), ("p2", "bar"), ("p3", "baz"), ("p4", "foo")]
        .map(|(name, image)| p(name, "n1").rs().images(&["", image]))
        .into();
    assert_eq!(uniformly(pods, three()), ["p4"]);
}

#[test]
fn remove_duplicates_uniformly_a_single_pod_with_three_nodes() {
    let pods = spread(1, &[("n1", 1)], |p, _| p.rs());
    assert_eq!(uniformly(pods, three()).len(), 0);
}

fn workers_and_masters(
    master: impl Fn(crate::fixtures::NodeBuilder) -> crate::fixtures::NodeBuilder,
    worker: impl Fn(crate::fixtures::NodeBuilder) -> crate::fixtures::NodeBuilder,
) -> Vec<crate::fixtures::NodeBuilder> {
    let mut nodes: Vec<_> = ["worker1", "worker2", "worker3"]
        .map(|w| worker(n(w)))
        .into();
    nodes.extend(["master1", "master2", "master3"].map(|m| master(n(m))));
    nodes
}

const WORKERS: [(&str, usize); 3] = [("worker1", 5), ("worker2", 3), ("worker3", 1)];

/// k1 for odd pod numbers, k2 for even ones, as the cases alternate them.
fn k(i: usize) -> &'static str {
    if i % 2 == 1 {
        "k1"
    } else {
        "k2"
    }
}

#[test]
fn remove_duplicates_uniformly_respecting_taints() {
    let pods = spread(1, &WORKERS, |p, i| {
        let v = if k(i) == "k1" { "v1" } else { "v2" };
        p.rs().tolerate(k(i), v, Some(TaintEffect::NoSchedule))
    });
    let control = |n: crate::fixtures::NodeBuilder| {
        n.taint(taint(
            "node-role.kubernetes.io/control-plane",
            "",
            TaintEffect::NoSchedule,
        ))
    };
    assert_eq!(
        uniformly(pods, workers_and_masters(control, |n| n)).len(),
        2
    );
}

#[test]
fn remove_duplicates_uniformly_respecting_required_node_affinity() {
    let pods = spread(1, &WORKERS, |p, i| {
        p.rs().affinity(vec![
            req(
                "node-role.kubernetes.io/control-plane",
                SelectorOp::DoesNotExist,
                &[],
            ),
            req(k(i), SelectorOp::DoesNotExist, &[]),
        ])
    });
    let control =
        |n: crate::fixtures::NodeBuilder| n.label("node-role.kubernetes.io/control-plane", "");
    assert_eq!(
        uniformly(pods, workers_and_masters(control, |n| n)).len(),
        2
    );
}

#[test]
fn remove_duplicates_uniformly_respecting_node_selector() {
    let pods = spread(1, &WORKERS, |p, i| {
        p.rs().selector("node-role.kubernetes.io/worker", k(i))
    });
    // The case labels every worker `k1`, then `k2` over it.
    let worker = |n: crate::fixtures::NodeBuilder| n.label("node-role.kubernetes.io/worker", "k2");
    assert_eq!(uniformly(pods, workers_and_masters(|n| n, worker)).len(), 2);
}

#[test]
fn remove_duplicates_uniformly_respecting_node_selector_with_zero_target_nodes() {
    let pods = spread(1, &WORKERS, |p, i| {
        p.rs().selector("node-role.kubernetes.io/worker", k(i))
    });
    assert_eq!(uniformly(pods, workers_and_masters(|n| n, |n| n)).len(), 0);
}

#[test]
fn namespaces_include_limits_the_pods_looked_at() {
    let args = RemoveDuplicatesArgs {
        namespaces: Some(crate::deschedule::args::Namespaces {
            include: vec!["test".into()],
            exclude: vec![],
        }),
        ..Default::default()
    };
    let nodes = two().into_iter().map(|n| n.build()).collect();
    let got = evicted(
        args,
        EvictorArgs::default(),
        nodes,
        cat(vec![dev3(), test3()]),
    );
    assert_eq!(got, ["p10"]);
}

#[test]
fn args_read_as_the_descheduler_writes_them() {
    let a: RemoveDuplicatesArgs = serde_norway::from_str(
        "namespaces: {exclude: [kube-system]}\nexcludeOwnerKinds: [ReplicaSet]\n",
    )
    .unwrap();
    assert_eq!(a.exclude_owner_kinds, ["ReplicaSet"]);
    assert!(a.validate().is_ok());
    let both: RemoveDuplicatesArgs =
        serde_norway::from_str("namespaces: {include: [a], exclude: [b]}").unwrap();
    assert!(both
        .validate()
        .unwrap_err()
        .to_string()
        .contains("namespaces"));
    let unknown = serde_norway::from_str::<RemoveDuplicatesArgs>("excludeOwnerKind: [X]");
    assert!(unknown
        .unwrap_err()
        .to_string()
        .contains("excludeOwnerKind"));
}
