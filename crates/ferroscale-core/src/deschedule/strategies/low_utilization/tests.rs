//! Cases of the descheduler's `lownodeutilization_test.go` (requests-based usage; actual usage is
//! tested in `deschedule::actual`), each named after its test function and case. Its tests run the
//! evictor with `nodeFit` set.

use super::{EvictionLimits, LowNodeUtilizationArgs};
use crate::deschedule::args::{Namespaces, Thresholds};
use crate::deschedule::strategies::usage::testing::*;
use crate::deschedule::PluginArgs;
use crate::deschedule::{Evictor, View};
use crate::fixtures::{NodeBuilder, PodBuilder};
use crate::model::workload::SelectorOp;
use crate::model::TaintEffect;

fn th(pairs: &[(&str, f64)]) -> Thresholds {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// cpu and pods at 30% under, 50% over: most cases' thresholds.
fn args() -> LowNodeUtilizationArgs {
    LowNodeUtilizationArgs {
        thresholds: th(&[("cpu", 30.0), ("pods", 30.0)]),
        target_thresholds: th(&[("cpu", 50.0), ("pods", 50.0)]),
        ..Default::default()
    }
}

fn evicted(
    args: LowNodeUtilizationArgs,
    nodes: Vec<NodeBuilder>,
    pods: Vec<PodBuilder>,
) -> Vec<String> {
    run(
        PluginArgs::LowNodeUtilization(args),
        node_fit(),
        nodes.into_iter().map(|n| n.build()).collect(),
        pods.into_iter().map(|p| p.build()).collect(),
    )
}

fn unschedulable(n: NodeBuilder) -> NodeBuilder {
    n.with(|n| n.unschedulable = true)
}

/// n1 (9 pods), n2 and a cordoned n3 (10 pods each), 4000m and 3000 bytes each.
fn three_nodes() -> Vec<NodeBuilder> {
    vec![
        tnode("n1", 4000, 3000, 9),
        tnode("n2", 4000, 3000, 10),
        unschedulable(tnode("n3", 4000, 3000, 10)),
    ]
}

fn p4(name: &str, node: &str) -> PodBuilder {
    tpod(name, 400, 0, node)
}

/// p6..p8 of most cases: a DaemonSet pod, a mirror pod with local storage, a critical pod.
fn kept() -> Vec<PodBuilder> {
    vec![
        p4("p6", "n1").ds(),
        p4("p7", "n1").normal().local_storage().mirror(),
        p4("p8", "n1").normal().critical(),
    ]
}

/// p1..p5 on n1 as `f` builds them, the kept pods, p9 on n2.
fn n1_five(f: impl Fn(PodBuilder) -> PodBuilder) -> Vec<PodBuilder> {
    let mut pods: Vec<PodBuilder> = (1..=5).map(|i| f(p4(&format!("p{i}"), "n1"))).collect();
    pods.extend(kept());
    pods.push(p4("p9", "n2").rs());
    pods
}

#[test]
fn low_node_utilization_no_evictable_pods() {
    let mut pods: Vec<PodBuilder> = (1..=4).map(|i| p4(&format!("p{i}"), "n1").ds()).collect();
    pods.push(p4("p5", "n1").normal().local_storage().mirror());
    pods.push(p4("p6", "n1").critical());
    pods.push(p4("p9", "n2").rs());
    assert_eq!(evicted(args(), three_nodes(), pods).len(), 0);
}

#[test]
fn low_node_utilization_without_priorities() {
    let mut pods = n1_five(|p| p.rs());
    // The case's critical pod has no owner.
    pods[7] = p4("p8", "n1").critical();
    assert_eq!(
        evicted(args(), three_nodes(), pods),
        ["p1", "p2", "p3", "p4"]
    );
}

#[test]
fn low_node_utilization_without_priorities_but_excluding_namespaces() {
    let mut pods = n1_five(|p| p.normal().namespace("namespace1"));
    pods[7] = p4("p8", "n1").critical();
    let args = LowNodeUtilizationArgs {
        evictable_namespaces: Some(Namespaces {
            include: vec![],
            exclude: vec!["namespace1".into()],
        }),
        ..args()
    };
    assert_eq!(evicted(args, three_nodes(), pods).len(), 0);
}

#[test]
fn low_node_utilization_without_priorities_but_include_only_default_namespace() {
    let mut pods = n1_five(|p| p.rs());
    for i in 3..=5 {
        pods[i - 1] = p4(&format!("p{i}"), "n1").namespace(&format!("namespace{i}"));
    }
    // `include` is not how the descheduler limits evictions (only `exclude` is read): the two
    // evictions come from the evictor keeping the ownerless pods.
    let args = LowNodeUtilizationArgs {
        evictable_namespaces: Some(Namespaces {
            include: vec!["default".into()],
            exclude: vec![],
        }),
        ..args()
    };
    assert_eq!(evicted(args, three_nodes(), pods), ["p1", "p2"]);
}

#[test]
fn low_node_utilization_without_priorities_stop_when_cpu_capacity_is_depleted() {
    let pods = n1_five(|p| p.rs());
    assert_eq!(evicted(args(), three_nodes(), pods).len(), 4);
}

#[test]
fn low_node_utilization_with_priorities() {
    let prio = |p: PodBuilder, v| p.rs().priority(v);
    let mut pods = n1_five(|p| p);
    for i in 1..=4 {
        pods[i - 1] = prio(p4(&format!("p{i}"), "n1"), HIGH);
    }
    pods[4] = prio(p4("p5", "n1"), LOW);
    pods[5] = p4("p6", "n1").ds().priority(HIGH);
    pods[6] = p4("p7", "n1")
        .normal()
        .priority(LOW)
        .local_storage()
        .mirror();
    // The lowest priority first.
    assert_eq!(
        evicted(args(), three_nodes(), pods),
        ["p5", "p1", "p2", "p3"]
    );
}

#[test]
fn low_node_utilization_without_priorities_evicting_best_effort_pods_only() {
    let mut pods = n1_five(|p| p.rs().best_effort());
    pods[2] = p4("p3", "n1").rs();
    assert_eq!(
        evicted(args(), three_nodes(), pods),
        ["p1", "p2", "p4", "p5"]
    );
}

fn ext_args(low: f64, high: f64, deviation: bool) -> LowNodeUtilizationArgs {
    LowNodeUtilizationArgs {
        thresholds: th(&[("pods", low), (EXT, low)]),
        target_thresholds: th(&[("pods", high), (EXT, high)]),
        use_deviation_thresholds: deviation,
        ..Default::default()
    }
}

#[test]
fn low_node_utilization_with_extended_resource() {
    let nodes = vec![
        with_ext(tnode("n1", 4000, 3000, 9), EXT, 8),
        with_ext(tnode("n2", 4000, 3000, 10), EXT, 8),
        unschedulable(tnode("n3", 4000, 3000, 10)),
    ];
    let e = |name: &str, node: &str| tpod(name, 0, 0, node).ext(EXT, 1);
    let mut pods: Vec<PodBuilder> = (1..=5).map(|i| e(&format!("p{i}"), "n1").rs()).collect();
    pods.push(e("p6", "n1").normal());
    pods.push(e("p7", "n1").normal().local_storage().mirror());
    pods.push(e("p8", "n1").normal().critical());
    pods.push(e("p9", "n2").rs());
    // Four could go by pods; the extended resource runs out after three.
    assert_eq!(evicted(ext_args(30.0, 50.0, false), nodes, pods).len(), 3);
}

#[test]
fn low_node_utilization_with_extended_resource_in_some_of_nodes() {
    let nodes = vec![
        with_ext(tnode("n1", 4000, 3000, 9), EXT, 8),
        tnode("n2", 4000, 3000, 10),
        unschedulable(tnode("n3", 4000, 3000, 10)),
    ];
    let pods = vec![
        tpod("p1", 0, 0, "n1").rs().ext(EXT, 1),
        tpod("p9", 0, 0, "n2").rs(),
    ];
    assert_eq!(evicted(ext_args(30.0, 50.0, false), nodes, pods).len(), 0);
}

#[test]
fn low_node_utilization_with_extended_resource_in_some_of_nodes_with_deviation() {
    let nodes = vec![
        with_ext(tnode("n1", 4000, 3000, 10), EXT, 8),
        with_ext(tnode("n2", 4000, 3000, 10), EXT, 8),
        unschedulable(tnode("n3", 4000, 3000, 10)),
    ];
    let pods = vec![
        tpod("p1", 0, 0, "n1").rs().ext(EXT, 1),
        tpod("p2", 0, 0, "n2").rs().ext(EXT, 7),
        tpod("p3", 0, 0, "n2").rs(),
        tpod("p8", 0, 0, "n3").rs(),
        tpod("p9", 0, 0, "n3").rs(),
    ];
    let args = LowNodeUtilizationArgs {
        thresholds: th(&[("pods", 5.0), (EXT, 10.0)]),
        target_thresholds: th(&[("pods", 5.0), (EXT, 10.0)]),
        use_deviation_thresholds: true,
        ..Default::default()
    };
    // Both pods are BestEffort (extended resources do not make a QoS class): n2's order stands.
    assert_eq!(evicted(args, nodes, pods), ["p2"]);
}

/// p1..p3 evictable on n1, p4 and p5 (owned by a Pod) as `restricted` builds them, the kept pods;
/// n2 labelled `datacenter: east`.
fn west_only(
    restricted: impl Fn(PodBuilder) -> PodBuilder,
    p9: bool,
) -> (Vec<NodeBuilder>, Vec<PodBuilder>) {
    let nodes = vec![
        tnode("n1", 4000, 3000, 9),
        tnode("n2", 4000, 3000, 10).label("datacenter", "east"),
    ];
    let mut pods: Vec<PodBuilder> = (1..=3).map(|i| p4(&format!("p{i}"), "n1").rs()).collect();
    pods.push(restricted(p4("p4", "n1").normal()));
    pods.push(restricted(p4("p5", "n1").normal()));
    pods.extend(kept());
    if p9 {
        pods.push(tpod("p9", 0, 0, "n2").rs());
    }
    (nodes, pods)
}

#[test]
fn low_node_utilization_without_priorities_but_only_other_node_is_unschedulable() {
    let nodes = vec![
        tnode("n1", 4000, 3000, 9),
        unschedulable(tnode("n2", 4000, 3000, 10)),
    ];
    let mut pods = n1_five(|p| p.rs());
    pods.pop();
    assert_eq!(evicted(args(), nodes, pods).len(), 0);
}

#[test]
fn low_node_utilization_only_other_node_does_not_match_node_selector_of_p4_and_p5() {
    let (nodes, pods) = west_only(|p| p.selector("datacenter", "west"), false);
    assert_eq!(evicted(args(), nodes, pods), ["p1", "p2", "p3"]);
}

fn west_affinity(p: PodBuilder) -> PodBuilder {
    p.affinity(vec![req("datacenter", SelectorOp::In, &["west"])])
}

#[test]
fn low_node_utilization_only_other_node_does_not_match_node_affinity_of_p4_and_p5() {
    let (nodes, pods) = west_only(west_affinity, true);
    assert_eq!(evicted(args(), nodes, pods), ["p1", "p2", "p3"]);
}

#[test]
fn low_node_utilization_without_priorities_different_evictions_for_requested_and_actual() {
    let (nodes, pods) = west_only(west_affinity, true);
    assert_eq!(evicted(args(), nodes, pods).len(), 3);
}

fn deviation() -> LowNodeUtilizationArgs {
    LowNodeUtilizationArgs {
        thresholds: th(&[("cpu", 5.0), ("pods", 5.0)]),
        target_thresholds: th(&[("cpu", 5.0), ("pods", 5.0)]),
        use_deviation_thresholds: true,
        ..Default::default()
    }
}

#[test]
fn low_node_utilization_deviation_thresholds() {
    let pods = n1_five(|p| p.rs());
    assert_eq!(evicted(deviation(), three_nodes(), pods).len(), 2);
}

#[test]
fn low_node_utilization_deviation_thresholds_and_overevicting_memory() {
    let nodes = vec![
        tnode("n1", 4000, 3000, 10),
        tnode("n2", 4000, 3000, 10),
        unschedulable(tnode("n3", 4000, 3000, 10)),
    ];
    let mem = |p: PodBuilder| p.with(|p| p.requests.memory = 375);
    let mut pods: Vec<PodBuilder> = n1_five(|p| p.rs()).into_iter().map(mem).collect();
    pods[8] = tpod("p9", 400, 3000, "n2").rs();
    // n2's memory is all requested: no room to move anything to.
    assert_eq!(evicted(deviation(), nodes, pods).len(), 0);
}

#[test]
fn low_node_utilization_without_priorities_with_node_eviction_limit() {
    let pods = n1_five(|p| p.rs());
    let args = LowNodeUtilizationArgs {
        eviction_limits: Some(EvictionLimits { node: Some(2) }),
        ..args()
    };
    assert_eq!(evicted(args, three_nodes(), pods).len(), 2);
}

/// `TestLowNodeUtilizationWithTaints`: pods under 20%, over 70%.
fn taint_case(nodes: Vec<NodeBuilder>, pods: Vec<PodBuilder>) -> Vec<String> {
    let args = LowNodeUtilizationArgs {
        thresholds: th(&[("pods", 20.0)]),
        target_thresholds: th(&[("pods", 70.0)]),
        ..Default::default()
    };
    evicted(args, nodes, pods)
}

fn n3_tainted() -> NodeBuilder {
    tnode("n3", 1000, 3000, 10).taint(taint("key", "value", TaintEffect::NoSchedule))
}

fn n1_pods(count: usize) -> Vec<PodBuilder> {
    (1..=count)
        .map(|i| tpod(&format!("pod_{i}_n1"), 200, 0, "n1").rs())
        .collect()
}

#[test]
fn low_node_utilization_with_taints_no_taints() {
    let nodes = vec![
        tnode("n1", 2000, 3000, 10),
        tnode("n2", 1000, 3000, 10),
        tnode("n3", 1000, 3000, 10),
    ];
    let mut pods = n1_pods(8);
    pods.push(tpod("pod_9_n2", 200, 0, "n2").rs());
    assert_eq!(taint_case(nodes, pods).len(), 1);
}

#[test]
fn low_node_utilization_with_taints_no_pod_tolerates_node_taint() {
    let mut pods = n1_pods(8);
    pods.push(tpod("pod_9_n3", 200, 0, "n3").rs());
    assert_eq!(
        taint_case(vec![tnode("n1", 2000, 3000, 10), n3_tainted()], pods).len(),
        0
    );
}

#[test]
fn low_node_utilization_with_taints_pod_which_tolerates_node_taint() {
    let mut pods = n1_pods(7);
    pods.push(
        tpod("tolerate_pod", 200, 0, "n1")
            .rs()
            .tolerate("key", "value", None),
    );
    pods.push(tpod("pod_9_n3", 200, 0, "n3").rs());
    let got = taint_case(vec![tnode("n1", 2000, 3000, 10), n3_tainted()], pods);
    assert_eq!(got, ["tolerate_pod"]);
}

#[test]
fn proposals_point_at_the_underutilized_nodes() {
    let f = crate::deschedule::fixtures::Fixture::new(
        three_nodes().into_iter().map(|n| n.build()).collect(),
        n1_five(|p| p.rs()).into_iter().map(|p| p.build()).collect(),
    );
    let cluster = f.cluster();
    let view = View::new(&cluster);
    let ev = node_fit();
    let out = super::propose(&args(), &view, &Evictor::new(&ev, &view));
    assert!(!out.is_empty());
    assert!(out
        .iter()
        .all(|p| p.node == "n1" && p.onto.as_deref() == Some(&["n2".to_string()][..])));
}

#[test]
fn args_read_as_the_descheduler_writes_them() {
    let a: LowNodeUtilizationArgs = serde_norway::from_str(
        "thresholds: {cpu: 20, memory: 20, pods: 20}\n\
         targetThresholds: {cpu: 50, memory: 50, pods: 50}\n\
         useDeviationThresholds: false\nnumberOfNodes: 3\n\
         evictableNamespaces: {exclude: [kube-system]}\nevictionLimits: {node: 5}\n",
    )
    .unwrap();
    assert_eq!(a.number_of_nodes, 3);
    assert_eq!(a.eviction_limits, Some(EvictionLimits { node: Some(5) }));
    assert!(a.validate().is_ok());
}

/// Actual usage is read from metrics-server (`metricsServer: true`, `source: KubernetesMetrics`);
/// what cannot be honoured is refused by name, after the descheduler's own checks.
#[test]
fn metrics_utilization_checks() {
    let args = |m: &str, t: &str| {
        serde_norway::from_str::<LowNodeUtilizationArgs>(&format!(
            "thresholds: {{{t}: 20}}\ntargetThresholds: {{{t}: 50}}\nmetricsUtilization: {m}\n"
        ))
        .unwrap()
    };
    for m in ["{metricsServer: true}", "{source: KubernetesMetrics}"] {
        let a = args(m, "cpu");
        assert!(a.validate().is_ok(), "{m}");
        assert!(a.reads_metrics(), "{m}");
    }
    let e = args("{source: Prometheus}", "cpu").validate().unwrap_err();
    assert_eq!(e.first().field, "metricsUtilization.prometheus", "{e}");
    assert!(e.first().why.contains("query is required"), "{e}");
    let e = args("{source: Prometheus, prometheus: {query: up}}", "cpu")
        .validate()
        .unwrap_err();
    assert_eq!(e.first().field, "metricsUtilization.source", "{e}");
    let e = args("{}", "cpu").validate().unwrap_err();
    assert_eq!(e.first().field, "metricsUtilization", "{e}");
    let e = args("{metricsServer: true}", "example.com/foo")
        .validate()
        .unwrap_err();
    assert_eq!(e.first().field, "thresholds.example.com/foo", "{e}");
}

#[test]
fn bad_thresholds_are_refused_naming_them() {
    let check = |yaml: &str| {
        serde_norway::from_str::<LowNodeUtilizationArgs>(yaml)
            .unwrap()
            .validate()
            .unwrap_err()
            .to_string()
    };
    assert!(check("thresholds: {cpu: -1}\ntargetThresholds: {cpu: 50}").contains("thresholds"));
    assert!(
        check("thresholds: {cpu: 20}\ntargetThresholds: {cpu: 150}").contains("targetThresholds")
    );
    assert!(check("thresholds: {cpu: 60}\ntargetThresholds: {cpu: 50}").contains("greater"));
    assert!(check("thresholds: {cpu: 20}\ntargetThresholds: {memory: 50}").contains("different"));
    assert!(check(
        "thresholds: {cpu: 20}\ntargetThresholds: {cpu: 50}\nevictableNamespaces: {include: [a]}"
    )
    .contains("evictableNamespaces"));
    // Deviations may be wider below than above.
    let ok: LowNodeUtilizationArgs = serde_norway::from_str(
        "thresholds: {cpu: 60}\ntargetThresholds: {cpu: 50}\nuseDeviationThresholds: true",
    )
    .unwrap();
    assert!(ok.validate().is_ok());
}

/// The descheduler's `PodToleratesTaints` wants at least as many tolerations as the node has taints:
/// one toleration of everything does not let a pod onto a node with two taints.
#[test]
fn a_destination_needs_as_many_tolerations_as_it_has_taints() {
    let n2 = tnode("n2", 2000, 3000, 10)
        .taint(taint("a", "", TaintEffect::NoSchedule))
        .taint(taint("b", "", TaintEffect::NoSchedule));
    let all = crate::model::workload::Toleration {
        key: String::new(),
        value: None,
        effect: None,
    };
    let mut pods = n1_pods(7);
    pods.push(
        tpod("wildcard", 200, 0, "n1")
            .rs()
            .with(move |p| p.tolerations.push(all)),
    );
    pods.push(
        tpod("both", 200, 0, "n1")
            .rs()
            .tolerate("a", "", None)
            .tolerate("b", "", None),
    );
    assert_eq!(
        taint_case(vec![tnode("n1", 2000, 3000, 10), n2], pods),
        ["both"]
    );
}
