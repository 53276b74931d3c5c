//! Cases of the descheduler's `pkg/framework/plugins/removepodsviolatingtopologyspreadconstraint/
//! topologyspreadconstraint_test.go`, `TestTopologySpreadConstraint`, each named by its description.
//! Facts as the source builds them: pods `pod-<n>` of namespace `ns1`, numbered in the order written,
//! request 100m, owned by a ReplicaSet, listed on each node by name (the source sorts them so); the
//! default constraint is `maxSkew` over `zone` selecting `foo=bar`, `DoNotSchedule`. `nodeFit` is the
//! evictor's: those cases check which proposals fit another node, by the scheduler's filters. The
//! cases of `ScheduleAnyway` constraints are in `tests/soft.rs`.

use super::*;
use crate::deschedule::fixtures::DeschedulerPod;
use crate::deschedule::strategies::testkit::*;
use crate::deschedule::{EvictorArgs, PluginArgs};
use crate::fixtures::{labels, req, selector};
use crate::model::workload::{Requirement, SelectorOp, Toleration};
use crate::model::TaintEffect;

fn zone_node(name: &str, zone: &str) -> Node {
    test_node(name, 2000, 3000, 10).label("zone", zone).build()
}

/// `getDefaultTopologyConstraints(skew)`.
fn zone(skew: i32) -> SpreadConstraint {
    SpreadConstraint {
        max_skew: skew,
        topology_key: "zone".into(),
        selector: selector(&[("foo", "bar")]),
        ..Default::default()
    }
}

/// `getDefaultNodeTopologyConstraints(skew)`: over `node`.
fn node_key(skew: i32) -> SpreadConstraint {
    SpreadConstraint {
        topology_key: "node".into(),
        ..zone(skew)
    }
}

/// One `testPodList` entry.
#[derive(Clone, Default)]
struct G {
    count: usize,
    node: &'static str,
    labels: Vec<(&'static str, &'static str)>,
    spread: Vec<SpreadConstraint>,
    /// `whenUnsatisfiable: ScheduleAnyway` constraints.
    soft: Vec<SpreadConstraint>,
    node_selector: Vec<(&'static str, &'static str)>,
    node_affinity: Vec<Vec<Requirement>>,
    no_owners: bool,
    tolerations: Vec<Toleration>,
    deleted: bool,
}

/// `count` pods labelled foo=bar on `node`.
fn g(count: usize, node: &'static str) -> G {
    G {
        count,
        node,
        labels: vec![("foo", "bar")],
        ..Default::default()
    }
}

impl G {
    fn spread(mut self, c: SpreadConstraint) -> Self {
        self.spread = vec![c];
        self
    }
    fn select(mut self, k: &'static str, v: &'static str) -> Self {
        self.node_selector.push((k, v));
        self
    }
}

/// `createTestPods`, each node's pods listed by name.
fn create(groups: &[G]) -> Vec<Pod> {
    let mut out = Vec::new();
    for gr in groups {
        for _ in 0..gr.count {
            let name = format!("pod-{}", out.len());
            let mut b = pod("ns1", name).requests(crate::fixtures::resources(100, 0, 1));
            b = b.on(gr.node);
            if !gr.no_owners {
                b = b.owner("ReplicaSet", "rs");
            }
            let gr = gr.clone();
            out.push(
                b.with(move |p| {
                    p.labels = labels(&gr.labels).into();
                    p.spread = gr.spread.clone().into();
                    p.meta.soft_spread = gr.soft.clone().into();
                    p.node_selector = labels(&gr.node_selector);
                    p.node_affinity = gr.node_affinity.clone();
                    *p.tolerations = gr.tolerations.clone();
                    p.meta.deleted = gr.deleted.then_some(0);
                })
                .build(),
            );
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

use crate::fixtures::pod;

fn args(f: impl FnOnce(&mut RemovePodsViolatingTopologySpreadConstraintArgs)) -> PluginArgs {
    let mut a = RemovePodsViolatingTopologySpreadConstraintArgs::default();
    f(&mut a);
    PluginArgs::RemovePodsViolatingTopologySpreadConstraint(a)
}

/// The proposals' pods; with `node_fit`, those that fit another node.
fn balance(nodes: Vec<Node>, groups: &[G], a: PluginArgs, node_fit_on: bool) -> Vec<String> {
    let pods = create(groups);
    let p = run(a, nodes.clone(), pods.clone(), EvictorArgs::default());
    if node_fit_on {
        node_fit(nodes, pods, &p)
    } else {
        names(&p)
    }
}

fn two_zones() -> Vec<Node> {
    vec![zone_node("n1", "zoneA"), zone_node("n2", "zoneB")]
}

fn default() -> PluginArgs {
    args(|_| {})
}

#[test]
fn two_domains_sizes_2_1_max_skew_1_move_0_pods() {
    let groups = [g(1, "n1").spread(zone(1)), g(1, "n1"), g(1, "n2")];
    assert!(balance(two_zones(), &groups, default(), false).is_empty());
}

#[test]
fn two_domains_sizes_3_1_max_skew_1_move_1_pod_to_achieve_2_2() {
    let groups = [g(1, "n1").spread(zone(1)), g(2, "n1"), g(1, "n2")];
    assert_eq!(balance(two_zones(), &groups, default(), false).len(), 1);
}

#[test]
fn two_domains_sizes_3_1_max_skew_1_no_pods_eligible_move_0_pods() {
    let bare = |gr: G| G {
        no_owners: true,
        ..gr
    };
    let groups = [
        bare(g(1, "n1").spread(zone(1))),
        bare(g(2, "n1")),
        bare(g(1, "n2")),
    ];
    assert!(balance(two_zones(), &groups, default(), false).is_empty());
}

#[test]
fn two_domains_sizes_3_1_move_1_pod_to_achieve_2_2_exclude_kube_system_namespace() {
    let groups = [g(1, "n1").spread(zone(1)), g(2, "n1"), g(1, "n2")];
    let a = args(|a| {
        a.namespaces = Some(crate::deschedule::args::Namespaces {
            include: vec![],
            exclude: vec!["kube-system".into()],
        })
    });
    assert_eq!(balance(two_zones(), &groups, a, true).len(), 1);
}

#[test]
fn two_domains_sizes_5_2_max_skew_1_move_1_pod_to_achieve_4_3() {
    let groups = [g(1, "n1").spread(zone(1)), g(4, "n1"), g(2, "n2")];
    assert_eq!(balance(two_zones(), &groups, default(), false).len(), 1);
}

#[test]
fn two_domains_sizes_4_0_max_skew_1_move_2_pods_to_achieve_2_2() {
    let groups = [g(1, "n1").spread(zone(1)), g(3, "n1")];
    let got = balance(two_zones(), &groups, default(), false);
    assert_eq!(got.len(), 2);
}

#[test]
fn two_domains_sizes_4_0_only_move_1_pod_since_pods_with_node_selector_and_affinity_are_not_evicted(
) {
    let affine = G {
        node_affinity: vec![vec![req("foo", SelectorOp::In, &["bar"])]],
        ..g(1, "n1").spread(zone(1))
    };
    let groups = [
        g(1, "n1").spread(zone(1)).select("zone", "zoneA"),
        g(1, "n1").spread(zone(1)).select("zone", "zoneA"),
        affine,
        g(1, "n1").spread(zone(1)),
    ];
    assert_eq!(balance(two_zones(), &groups, default(), true), ["pod-3"]);
}

fn os_nodes(extra: bool) -> Vec<Node> {
    let n = |name: &str, label: &str, os: &str| {
        test_node(name, 2000, 3000, 10)
            .label("node", label)
            .label("os", os)
            .build()
    };
    let mut v = vec![
        n("n1", "linNodeA", "linux"),
        n("n2", "linNodeB", "linux"),
        n("n3", "linNodeC", "linux"),
        n("n4", "winNodeA", "windows"),
        n("n5", "winNodeB", "windows"),
        n("n6", "winNodeC", "windows"),
    ];
    if extra {
        v.push(n("n7", "winNodeD", "windows"));
    }
    v
}

fn windows(count: usize, node: &'static str) -> G {
    g(count, node).spread(node_key(1)).select("os", "windows")
}

#[test]
fn six_domains_sizes_0_0_0_3_3_2_no_pod_is_evicted_since_topology_is_balanced() {
    let groups = [windows(3, "n4"), windows(3, "n5"), windows(2, "n6")];
    assert!(balance(os_nodes(false), &groups, default(), false).is_empty());
}

#[test]
fn seven_domains_sizes_0_0_0_3_3_2_two_pods_are_evicted_and_moved_to_new_node_added() {
    let groups = [windows(3, "n4"), windows(3, "n5"), windows(2, "n6")];
    let pods = create(&groups);
    let p = run(default(), os_nodes(true), pods, EvictorArgs::default());
    assert_eq!(p.len(), 2);
    let onto = p[0].onto.clone().unwrap_or_default();
    assert!(
        onto.contains(&"n7".to_string()),
        "towards the new node: {onto:?}"
    );
}

#[test]
fn six_domains_sizes_0_0_0_4_3_1_1_pod_is_evicted_from_node_4() {
    let groups = [windows(4, "n4"), windows(3, "n5"), windows(1, "n6")];
    let p = run(
        default(),
        os_nodes(false),
        create(&groups),
        EvictorArgs::default(),
    );
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].node, "n4");
}

#[test]
fn six_domains_sizes_0_0_0_4_3_1_0_pod_is_evicted_as_pods_of_win_node_a_can_only_be_scheduled_there(
) {
    let groups = [
        g(4, "n4").spread(node_key(1)).select("node", "winNodeA"),
        windows(3, "n5"),
        windows(1, "n6"),
    ];
    assert!(balance(os_nodes(false), &groups, default(), true).is_empty());
}

#[test]
fn two_domains_sizes_4_0_move_2_pods_since_selector_matches_multiple_nodes() {
    let nodes = vec![
        test_node("n1", 2000, 3000, 10)
            .labels(&[("zone", "zoneA"), ("region", "boston")])
            .build(),
        test_node("n2", 2000, 3000, 10)
            .labels(&[("zone", "zoneB"), ("region", "boston")])
            .build(),
    ];
    let boston = |gr: G| gr.select("region", "boston");
    let groups = [
        boston(g(1, "n1").spread(zone(1))),
        boston(g(1, "n1")),
        boston(g(1, "n1")),
        boston(g(1, "n1")),
    ];
    assert_eq!(balance(nodes, &groups, default(), false).len(), 2);
}

fn zones(n: usize) -> Vec<Node> {
    ["zoneA", "zoneB", "zoneC", "zoneD"][..n]
        .iter()
        .enumerate()
        .map(|(i, z)| zone_node(&format!("n{}", i + 1), z))
        .collect()
}

#[test]
fn three_domains_sizes_0_1_100_max_skew_1_move_66_pods_to_get_34_33_34() {
    let groups = [g(1, "n2").spread(zone(1)), g(100, "n3")];
    assert_eq!(balance(zones(3), &groups, default(), false).len(), 66);
}

#[test]
fn four_domains_sizes_0_1_3_5_should_move_3_to_get_2_2_3_2() {
    let groups = [g(1, "n2").spread(zone(1)), g(3, "n3"), g(5, "n4")];
    assert_eq!(balance(zones(4), &groups, default(), false).len(), 3);
}

#[test]
fn two_domains_size_2_6_max_skew_2_should_move_1_to_get_3_5() {
    let groups = [g(1, "n1").spread(zone(2)), g(1, "n1"), g(6, "n2")];
    assert_eq!(balance(two_zones(), &groups, default(), false).len(), 1);
}

#[test]
fn two_domains_size_2_6_max_skew_2_cant_move_any_because_of_node_taints() {
    let nodes = vec![
        test_node("n1", 2000, 3000, 10)
            .label("zone", "zoneA")
            .taint(taint("hardware", "gpu", TaintEffect::NoSchedule))
            .build(),
        zone_node("n2", "zoneB"),
    ];
    let groups = [g(1, "n1").spread(zone(2)), g(1, "n1"), g(6, "n2")];
    assert!(balance(nodes, &groups, default(), true).is_empty());
}

#[test]
fn two_domains_size_2_6_max_skew_2_cant_move_any_because_node1_does_not_have_enough_cpu() {
    let nodes = vec![
        test_node("n1", 200, 3000, 10)
            .label("zone", "zoneA")
            .build(),
        zone_node("n2", "zoneB"),
    ];
    let groups = [g(1, "n1").spread(zone(2)), g(1, "n1"), g(6, "n2")];
    assert!(balance(nodes, &groups, default(), true).is_empty());
}

#[test]
fn three_domains_size_8_7_0_max_skew_1_should_move_5_to_get_5_5_5() {
    let groups = [g(8, "n1").spread(zone(1)), g(7, "n2").spread(zone(1))];
    let mut got = balance(zones(3), &groups, default(), false);
    got.sort();
    assert_eq!(got, ["pod-5", "pod-6", "pod-7", "pod-8", "pod-9"]);
}

#[test]
fn three_domains_size_5_5_5_max_skew_1_should_move_0_to_retain_5_5_5() {
    let groups = [
        g(5, "n1").spread(zone(1)),
        g(5, "n2").spread(zone(1)),
        g(5, "n3").spread(zone(1)),
    ];
    assert!(balance(zones(3), &groups, default(), false).is_empty());
}

mod more;
mod soft;
