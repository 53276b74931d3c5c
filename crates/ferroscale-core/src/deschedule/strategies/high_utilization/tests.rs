//! Cases of the descheduler's `highnodeutilization_test.go`, each named after its test function and
//! case. `TestHighNodeUtilization` runs the evictor with `nodeFit` set; `...WithTaints` without.

use super::{EvictionMode, HighNodeUtilizationArgs};
use crate::deschedule::args::Thresholds;
use crate::deschedule::strategies::usage::testing::*;
use crate::deschedule::PluginArgs;
use crate::deschedule::{Evictor, EvictorArgs, View};
use crate::fixtures::{NodeBuilder, PodBuilder};
use crate::model::TaintEffect;

fn args(pairs: &[(&str, f64)]) -> HighNodeUtilizationArgs {
    HighNodeUtilizationArgs {
        thresholds: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect::<Thresholds>(),
        ..Default::default()
    }
}

fn evicted(
    args: HighNodeUtilizationArgs,
    fit: bool,
    nodes: Vec<NodeBuilder>,
    pods: Vec<PodBuilder>,
) -> Vec<String> {
    run(
        PluginArgs::HighNodeUtilization(args),
        if fit {
            node_fit()
        } else {
            EvictorArgs::default()
        },
        nodes.into_iter().map(|n| n.build()).collect(),
        pods.into_iter().map(|p| p.build()).collect(),
    )
}

fn unschedulable(n: NodeBuilder) -> NodeBuilder {
    n.with(|n| n.unschedulable = true)
}

fn p4(name: &str, node: &str) -> PodBuilder {
    tpod(name, 400, 0, node)
}

/// Pods `p{first}..` of 400m owned by the ReplicaSet, by node.
fn rs_pods(first: usize, counts: &[(&str, usize)]) -> Vec<PodBuilder> {
    let mut out = Vec::new();
    let mut i = first;
    for (node, count) in counts {
        for _ in 0..*count {
            out.push(p4(&format!("p{i}"), node).rs());
            i += 1;
        }
    }
    out
}

const CPU_PODS_20: [(&str, f64); 2] = [("cpu", 20.0), ("pods", 20.0)];
const CPU_PODS_30: [(&str, f64); 2] = [("cpu", 30.0), ("pods", 30.0)];

#[test]
fn high_node_utilization_no_node_below_threshold_usage() {
    let nodes = ["n1", "n2", "n3"].map(|n| tnode(n, 4000, 3000, 10)).into();
    let pods = rs_pods(1, &[("n1", 3), ("n2", 3), ("n3", 3)]);
    assert_eq!(evicted(args(&CPU_PODS_20), true, nodes, pods).len(), 0);
}

#[test]
fn high_node_utilization_no_evictable_pods() {
    let nodes = vec![
        tnode("n1", 4000, 3000, 9),
        tnode("n2", 4000, 3000, 10),
        tnode("n3", 4000, 3000, 10),
    ];
    let mut pods = vec![
        p4("p1", "n1").normal().local_storage().mirror(),
        p4("p2", "n1").normal().critical(),
        p4("p3", "n2").ds(),
        p4("p4", "n2").ds(),
    ];
    pods.extend(rs_pods(5, &[("n3", 4)]));
    let t = [("cpu", 40.0), ("pods", 40.0)];
    assert_eq!(evicted(args(&t), true, nodes, pods).len(), 0);
}

#[test]
fn high_node_utilization_no_node_to_schedule_evicted_pods() {
    let nodes = vec![
        tnode("n1", 4000, 3000, 10),
        tnode("n2", 4000, 3000, 10),
        unschedulable(tnode("n3", 4000, 3000, 10)),
    ];
    let pods = rs_pods(1, &[("n1", 1), ("n2", 1), ("n3", 3)]);
    assert_eq!(evicted(args(&CPU_PODS_20), true, nodes, pods).len(), 0);
}

#[test]
fn high_node_utilization_without_priorities() {
    let nodes = vec![
        tnode("n1", 4000, 3000, 10),
        tnode("n2", 4000, 3000, 10),
        unschedulable(tnode("n3", 4000, 3000, 10)),
    ];
    let mut pods = vec![p4("p1", "n1").rs(), p4("p2", "n1").normal().critical()];
    pods.extend(rs_pods(3, &[("n2", 4), ("n3", 1)]));
    // n3 holds less: emptied first.
    assert_eq!(evicted(args(&CPU_PODS_30), true, nodes, pods), ["p7", "p1"]);
}

#[test]
fn high_node_utilization_without_priorities_stop_when_resource_capacity_is_depleted() {
    let nodes = vec![
        tnode("n1", 2000, 3000, 10),
        tnode("n2", 2000, 3000, 10),
        unschedulable(tnode("n3", 2000, 3000, 10)),
    ];
    let pods = rs_pods(1, &[("n1", 1), ("n2", 4), ("n3", 1)]);
    assert_eq!(evicted(args(&CPU_PODS_30), true, nodes, pods).len(), 1);
}

#[test]
fn high_node_utilization_with_priorities() {
    let nodes = vec![
        tnode("n1", 4000, 3000, 10),
        tnode("n2", 2000, 3000, 10),
        unschedulable(tnode("n3", 2000, 3000, 10)),
    ];
    let mut pods = vec![
        p4("p1", "n1").rs().priority(LOW),
        p4("p2", "n1").rs().priority(HIGH),
    ];
    pods.extend(rs_pods(5, &[("n2", 4)]));
    pods.push(p4("p9", "n3").ds());
    assert_eq!(evicted(args(&[("cpu", 30.0)]), true, nodes, pods), ["p1"]);
}

#[test]
fn high_node_utilization_without_priorities_evicting_best_effort_pods_only() {
    let nodes = vec![
        tnode("n1", 3000, 3000, 10),
        tnode("n2", 3000, 3000, 5),
        unschedulable(tnode("n3", 3000, 3000, 10)),
    ];
    let mut pods = vec![
        tpod("p1", 0, 0, "n1").rs().best_effort(),
        p4("p2", "n1").rs(),
    ];
    pods.extend(rs_pods(3, &[("n2", 4)]));
    assert_eq!(evicted(args(&[("cpu", 30.0)]), true, nodes, pods), ["p1"]);
}

fn ext_pods(ext_on_n2: bool) -> Vec<PodBuilder> {
    let mut pods = vec![
        tpod("p1", 100, 0, "n1").rs().ext(EXT, 1),
        tpod("p2", 100, 0, "n1").rs().ext(EXT, 1),
    ];
    for i in 3..=6 {
        let p = tpod(&format!("p{i}"), 500, 0, "n2").rs();
        pods.push(if ext_on_n2 { p.ext(EXT, 1) } else { p });
    }
    pods
}

#[test]
fn high_node_utilization_with_extended_resource() {
    let nodes = vec![
        with_ext(tnode("n1", 4000, 3000, 10), EXT, 8),
        with_ext(tnode("n2", 4000, 3000, 10), EXT, 8),
        unschedulable(tnode("n3", 4000, 3000, 10)),
    ];
    let got = evicted(
        args(&[("cpu", 20.0), (EXT, 40.0)]),
        true,
        nodes,
        ext_pods(true),
    );
    assert_eq!(got, ["p1", "p2"]);
}

#[test]
fn high_node_utilization_with_extended_resource_in_some_of_nodes() {
    let nodes = vec![
        with_ext(tnode("n1", 4000, 3000, 10), EXT, 8),
        tnode("n2", 4000, 3000, 10),
        unschedulable(tnode("n3", 4000, 3000, 10)),
    ];
    let got = evicted(
        args(&[("cpu", 40.0), (EXT, 40.0)]),
        true,
        nodes,
        ext_pods(false),
    );
    assert_eq!(got.len(), 0);
}

/// n1 (9 pods) holds p1..p3 and a DaemonSet pod; n2 holds p5, which selects `datacenter: west`.
fn selector_case(n1_west: bool) -> Vec<String> {
    let n1 = tnode("n1", 4000, 3000, 9);
    let n1 = if n1_west {
        n1.label("datacenter", "west")
    } else {
        n1
    };
    let mut pods = rs_pods(1, &[("n1", 3)]);
    pods.push(p4("p4", "n1").ds());
    pods.push(p4("p5", "n2").rs().selector("datacenter", "west"));
    evicted(
        args(&CPU_PODS_30),
        true,
        vec![n1, tnode("n2", 4000, 3000, 10)],
        pods,
    )
}

#[test]
fn high_node_utilization_other_node_match_pod_node_selector() {
    assert_eq!(selector_case(true), ["p5"]);
}

#[test]
fn high_node_utilization_other_node_does_not_match_pod_node_selector() {
    assert_eq!(selector_case(false).len(), 0);
}

/// Upstream lists this case twice, identically: transcribed once.
#[test]
fn high_node_utilization_other_node_does_not_have_enough_memory() {
    let nodes = vec![tnode("n1", 4000, 200, 9), tnode("n2", 4000, 3000, 10)];
    let mem = |p: PodBuilder, m: i64| p.with(move |p| p.requests.memory = m);
    let mut pods: Vec<PodBuilder> = rs_pods(1, &[("n1", 3)])
        .into_iter()
        .map(|p| mem(p, 50))
        .collect();
    pods.push(mem(p4("p4", "n1").ds(), 50));
    pods.push(mem(p4("p5", "n2").rs(), 100));
    assert_eq!(evicted(args(&CPU_PODS_30), true, nodes, pods).len(), 0);
}

#[test]
fn high_node_utilization_with_extended_resource_threshold_and_no_extended_resource_pods() {
    let nodes = ["n1", "n2", "n3"]
        .map(|n| with_ext(tnode(n, 4000, 3000, 10), EXT, 10))
        .into();
    let mut pods = vec![
        tpod("p1", 100, 0, "n1").rs().ext(EXT, 3),
        tpod("p2", 100, 0, "n1").rs().ext(EXT, 3),
    ];
    pods.extend((3..=6).map(|i| tpod(&format!("p{i}"), 500, 0, "n2").rs()));
    let a = HighNodeUtilizationArgs {
        eviction_modes: vec![EvictionMode::OnlyThresholdingResources],
        ..args(&[(EXT, 40.0)])
    };
    assert_eq!(evicted(a, true, nodes, pods).len(), 0);
}

/// `TestHighNodeUtilizationWithTaints`: cpu under 40%, default evictor.
fn taints_case(nodes: Vec<NodeBuilder>, pods: Vec<PodBuilder>) -> Vec<String> {
    evicted(args(&[("cpu", 40.0)]), false, nodes, pods)
}

fn n3_tainted() -> NodeBuilder {
    tnode("n3", 1000, 3000, 10).taint(taint("key", "value", TaintEffect::NoSchedule))
}

#[test]
fn high_node_utilization_with_taints_no_taints() {
    let nodes = ["n1", "n2", "n3"].map(|n| tnode(n, 1000, 3000, 10)).into();
    let mut pods: Vec<PodBuilder> = (1..=3)
        .map(|i| tpod(&format!("pod_{i}_n1"), 200, 0, "n1").rs())
        .collect();
    pods.push(tpod("pod_4_n2", 200, 0, "n2").rs());
    assert_eq!(taints_case(nodes, pods), ["pod_4_n2"]);
}

#[test]
fn high_node_utilization_with_taints_no_pod_tolerates_node_taint() {
    let pods = vec![
        tpod("pod_1_n1", 200, 0, "n1").rs(),
        tpod("pod_2_n3", 200, 0, "n3").rs(),
    ];
    let nodes = vec![tnode("n1", 1000, 3000, 10), n3_tainted()];
    assert_eq!(taints_case(nodes, pods).len(), 0);
}

#[test]
fn high_node_utilization_with_taints_pod_which_tolerates_node_taint() {
    let pods = vec![
        tpod("pod_1_n1", 100, 0, "n1").rs(),
        tpod("tolerate_pod", 200, 0, "n1")
            .rs()
            .tolerate("key", "value", None),
        tpod("pod_9_n3", 500, 0, "n3").rs(),
    ];
    let nodes = vec![tnode("n1", 1000, 3000, 10), n3_tainted()];
    assert_eq!(taints_case(nodes, pods), ["tolerate_pod"]);
}

#[test]
fn proposals_point_at_the_nodes_that_stay() {
    let f = crate::deschedule::fixtures::Fixture::new(
        ["n1", "n2", "n3"]
            .map(|n| tnode(n, 1000, 3000, 10).build())
            .into(),
        vec![
            tpod("a", 600, 0, "n1").rs().build(),
            tpod("b", 100, 0, "n2").rs().build(),
        ],
    );
    let cluster = f.cluster();
    let view = View::new(&cluster);
    let ev = EvictorArgs::default();
    let out = super::propose(&args(&[("cpu", 40.0)]), &view, &Evictor::new(&ev, &view));
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].pod.name.as_str(), out[0].node.as_str()),
        ("b", "n2")
    );
    assert_eq!(out[0].onto.as_deref(), Some(&["n1".to_string()][..]));
}

#[test]
fn args_read_and_checked_as_the_descheduler_does() {
    let a: HighNodeUtilizationArgs = serde_norway::from_str(
        "thresholds: {cpu: 20, memory: 20}\nnumberOfNodes: 2\n\
         evictionModes: [OnlyThresholdingResources]\nevictableNamespaces: {exclude: [kube-system]}\n",
    )
    .unwrap();
    assert_eq!(a.eviction_modes, [EvictionMode::OnlyThresholdingResources]);
    assert!(a.validate().is_ok());
    let bad_mode = serde_norway::from_str::<HighNodeUtilizationArgs>(
        "thresholds: {cpu: 20}\nevictionModes: [Everything]",
    );
    assert!(bad_mode.unwrap_err().to_string().contains("Everything"));
    let check = |yaml: &str| {
        serde_norway::from_str::<HighNodeUtilizationArgs>(yaml)
            .unwrap()
            .validate()
            .unwrap_err()
            .to_string()
    };
    assert!(check("thresholds: {}").contains("thresholds"));
    assert!(check("thresholds: {cpu: 101}").contains("cpu"));
    assert!(
        check("thresholds: {cpu: 20}\nevictableNamespaces: {include: [a]}")
            .contains("evictableNamespaces")
    );
}
