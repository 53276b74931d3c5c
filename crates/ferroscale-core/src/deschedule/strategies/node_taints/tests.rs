//! Cases of the descheduler's `pkg/framework/plugins/removepodsviolatingnodetaints/node_taint_test.go`,
//! `TestDeletePodsViolatingNodeTaints`, each named by its description. Facts as the source builds them:
//! nodes 2000m / 3000 bytes / 10 pods; pods request 100m, owned by a pod; every taint its helpers make
//! is `testTaint1=test1` (the helpers ignore the key they are given), `NoSchedule` or
//! `PreferNoSchedule`. The limits (`maxPodsToEvictPerNode`...) are the planner's: those cases check how
//! many proposals a limit lets through; `nodeFit` is the evictor's: those cases check which proposals
//! fit another node.

use super::*;
use crate::deschedule::fixtures::DeschedulerPod;
use crate::deschedule::strategies::testkit::*;
use crate::deschedule::{EvictorArgs, PluginArgs};
use crate::model::workload::{Node, Pod, Toleration};
use crate::model::TaintEffect::{NoSchedule, PreferNoSchedule};

fn n(name: &str) -> crate::fixtures::NodeBuilder {
    test_node(name, 2000, 3000, 10)
}

/// `withTestTaint1` (and `withTestingTaint1`, which makes the same taint).
fn tainted(name: &str) -> Node {
    n(name)
        .taint(taint("testTaint1", "test1", NoSchedule))
        .build()
}

fn tolerant(name: &str, node: &str) -> Pod {
    owned_pod(name, node)
        .with(|p| *p.tolerations = vec![toleration("testTaint1", "test1", NoSchedule)])
        .build()
}

fn plain(name: &str, node: &str) -> Pod {
    owned_pod(name, node).build()
}

/// `withKubeSystemCriticalPod`.
fn critical(name: &str, node: &str) -> Pod {
    owned_pod(name, node)
        .with(|p| p.namespace = "kube-system".into())
        .priority(SYSTEM_CRITICAL)
        .build()
}

/// `withLocalStorageVolume` (a hostPath + emptyDir volume).
fn local_storage(name: &str, node: &str) -> Pod {
    owned_pod(name, node)
        .with(|p| p.meta.local_volumes = thin_vec::thin_vec!["sample".into()])
        .build()
}

fn daemon(name: &str, node: &str) -> Pod {
    test_pod(name, node).owner("DaemonSet", "ds").build()
}

fn mirror(name: &str, node: &str) -> Pod {
    owned_pod(name, node).mirror().build()
}

fn args(f: impl FnOnce(&mut RemovePodsViolatingNodeTaintsArgs)) -> PluginArgs {
    let mut a = RemovePodsViolatingNodeTaintsArgs::default();
    f(&mut a);
    PluginArgs::RemovePodsViolatingNodeTaints(a)
}

fn evict(nodes: Vec<Node>, pods: Vec<Pod>) -> Vec<String> {
    names(&run(args(|_| {}), nodes, pods, EvictorArgs::default()))
}

#[test]
fn pods_not_tolerating_node_taint_should_be_evicted() {
    let pods = vec![
        tolerant("p1", "n1"),
        plain("p2", "n1"),
        tolerant("p3", "n1"),
    ];
    assert_eq!(evict(vec![tainted("n1")], pods), ["p2"]);
}

#[test]
fn pods_with_tolerations_but_not_tolerating_node_taint_should_be_evicted() {
    let x = owned_pod("p4", "n1")
        .with(|p| *p.tolerations = vec![toleration("testTaintX1", "testX1", NoSchedule)])
        .build();
    let pods = vec![tolerant("p1", "n1"), tolerant("p3", "n1"), x];
    assert_eq!(evict(vec![tainted("n1")], pods), ["p4"]);
}

/// "Only <maxNoOfPodsToEvictTotal> ...", "Only <maxPodsToEvictPerNode> ..." and (twice in the source)
/// "Only <maxNoOfPodsToEvictPerNamespace> number of Pods not tolerating node taint should be evicted":
/// p5 and p6 proposed, one let through by a limit of 1.
#[test]
fn only_a_limit_of_pods_not_tolerating_node_taint_should_be_evicted() {
    let pods = vec![tolerant("p1", "n1"), plain("p5", "n1"), plain("p6", "n1")];
    let p = run(
        args(|_| {}),
        vec![tainted("n1")],
        pods,
        EvictorArgs::default(),
    );
    assert_eq!(names(&p), ["p5", "p6"]);
    assert_eq!(limited(&p, 1), 1);
}

fn critical_mix() -> Vec<Pod> {
    vec![
        critical("p7", "n2"),
        daemon("p8", "n2"),
        local_storage("p9", "n2"),
        mirror("p10", "n2"),
    ]
}

#[test]
fn critical_pods_not_tolerating_node_taint_should_not_be_evicted() {
    assert!(evict(vec![tainted("n2")], critical_mix()).is_empty());
}

#[test]
fn critical_pods_except_storage_pods_not_tolerating_node_taint_should_not_be_evicted() {
    let e = EvictorArgs {
        evict_local_storage_pods: true,
        ..Default::default()
    };
    let p = run(args(|_| {}), vec![tainted("n2")], critical_mix(), e);
    assert_eq!(names(&p), ["p9"]);
}

#[test]
fn critical_and_non_critical_pods_only_non_critical_pods_not_tolerating_node_taint_should_be_evicted(
) {
    let pods = vec![
        critical("p7", "n2"),
        daemon("p8", "n2"),
        mirror("p10", "n2"),
        plain("p11", "n2"),
    ];
    assert_eq!(evict(vec![tainted("n2")], pods), ["p11"]);
}

#[test]
fn critical_and_non_critical_pods_not_tolerating_node_taint_should_be_evicted_even_if_critical() {
    let pods = vec![
        plain("p2", "n1"),
        critical("p7", "n2"),
        local_storage("p9", "n2"),
        mirror("p10", "n2"),
    ];
    let e = EvictorArgs {
        evict_system_critical_pods: true,
        ..Default::default()
    };
    let p = run(args(|_| {}), vec![tainted("n1"), tainted("n2")], pods, e);
    assert_eq!(names(&p), ["p2", "p7"]);
}

/// With `nodeFit`: the proposal fits no other node.
fn fitting(nodes: Vec<Node>, pods: Vec<Pod>) -> Vec<String> {
    let p = run(
        args(|_| {}),
        nodes.clone(),
        pods.clone(),
        EvictorArgs::default(),
    );
    node_fit(nodes, pods, &p)
}

#[test]
fn pod_p2_does_not_tolerate_taint_on_its_node_but_also_not_taints_on_other_nodes() {
    let pods = vec![
        tolerant("p1", "n1"),
        plain("p2", "n1"),
        tolerant("p3", "n1"),
    ];
    assert!(fitting(vec![tainted("n1"), tainted("n2")], pods).is_empty());
}

/// p11 is bound to n2, which is not among the nodes: it is not looked at.
#[test]
fn pod_p12_does_not_tolerate_taint_on_its_node_but_other_nodes_do_not_match_its_selector() {
    let p11 = owned_pod("p11", "n2")
        .with(|p| {
            p.node_selector.insert("datacenter".into(), "west".into());
        })
        .build();
    let pods = vec![tolerant("p1", "n1"), tolerant("p3", "n1"), p11];
    let east = n("n3").label("datacenter", "east").build();
    assert!(fitting(vec![tainted("n1"), east], pods).is_empty());
}

#[test]
fn pod_p2_does_not_tolerate_taint_on_its_node_but_other_nodes_are_unschedulable() {
    let pods = vec![
        tolerant("p1", "n1"),
        plain("p2", "n1"),
        tolerant("p3", "n1"),
    ];
    let cordoned = n("n4").with(|n| n.unschedulable = true).build();
    let nodes = vec![tainted("n1"), cordoned];
    let p = run(
        args(|_| {}),
        nodes.clone(),
        pods.clone(),
        EvictorArgs::default(),
    );
    assert_eq!(names(&p), ["p2"], "proposed");
    assert!(
        node_fit(nodes, pods, &p).is_empty(),
        "but fits nowhere else"
    );
}

fn prefer_case(include: bool) -> Vec<String> {
    let p13 = owned_pod("p13", "n5")
        .with(|p| *p.tolerations = vec![toleration("testTaint0", "test0", PreferNoSchedule)])
        .build();
    let n5 = n("n5")
        .taint(taint("testTaint1", "test1", PreferNoSchedule))
        .build();
    let a = args(|a| a.include_prefer_no_schedule = include);
    names(&run(a, vec![n5], vec![p13], EvictorArgs::default()))
}

#[test]
fn pods_not_tolerating_prefer_no_schedule_node_taint_should_not_be_evicted_when_not_enabled() {
    assert!(prefer_case(false).is_empty());
}

#[test]
fn pods_not_tolerating_prefer_no_schedule_node_taint_should_be_evicted_when_enabled() {
    assert_eq!(prefer_case(true), ["p13"]);
}

fn excluded(list: &[&str]) -> Vec<String> {
    let a = args(|a| a.excluded_taints = list.iter().map(|s| s.to_string()).collect());
    names(&run(
        a,
        vec![tainted("n1")],
        vec![plain("p2", "n1")],
        EvictorArgs::default(),
    ))
}

#[test]
fn pods_not_tolerating_excluded_node_taints_by_key_should_not_be_evicted() {
    assert!(excluded(&["excludedTaint1", "testTaint1"]).is_empty());
}

#[test]
fn pods_not_tolerating_excluded_node_taints_by_key_and_value_should_not_be_evicted() {
    assert!(excluded(&["testTaint1=test1"]).is_empty());
}

#[test]
fn the_excluded_taint_matches_the_key_of_node1s_taint_but_not_the_value() {
    assert_eq!(excluded(&["testTaint1=test2"]), ["p2"]);
}

/// n2 is not among the nodes; p2 does not fit n6 (1m cpu, 1 byte, 1 pod).
#[test]
fn pods_not_tolerating_node_taint_cannot_be_evicted_because_the_only_available_node_is_too_small() {
    let pods = vec![
        plain("p2", "n1"),
        critical("p7", "n2"),
        local_storage("p9", "n2"),
        mirror("p10", "n2"),
    ];
    let n6 = test_node("n6", 1, 1, 1)
        .taint(taint("testTaint1", "test1", PreferNoSchedule))
        .build();
    let nodes = vec![tainted("n1"), n6];
    let e = EvictorArgs {
        evict_system_critical_pods: true,
        ..Default::default()
    };
    let p = run(args(|_| {}), nodes.clone(), pods.clone(), e);
    assert_eq!(names(&p), ["p2"]);
    assert!(node_fit(nodes, pods, &p).is_empty());
}

fn included(list: &[&str], nodes: Vec<Node>, pods: Vec<Pod>) -> Vec<String> {
    let a = args(|a| a.included_taints = Some(list.iter().map(|s| s.to_string()).collect()));
    names(&run(a, nodes, pods, EvictorArgs::default()))
}

fn both_taints(name: &str) -> Node {
    n(name)
        .taint(taint("testTaint1", "test1", NoSchedule))
        .taint(taint("testTaint1", "test1", NoSchedule))
        .build()
}

/// p1 is bound to n1, which is not among the nodes.
#[test]
fn pods_tolerating_included_taints_should_not_get_evicted_even_with_other_taints_present() {
    let got = included(
        &["testTaint1=test1"],
        vec![both_taints("n7")],
        vec![tolerant("p1", "n1")],
    );
    assert!(got.is_empty());
}

#[test]
fn pods_not_tolerating_not_included_taints_should_not_get_evicted() {
    let x = owned_pod("p4", "n1")
        .with(|p| *p.tolerations = vec![toleration("testTaintX1", "testX1", NoSchedule)])
        .build();
    let pods = vec![tolerant("p1", "n1"), plain("p2", "n1"), x];
    assert!(included(&["testTaint2=test2"], vec![tainted("n1")], pods).is_empty());
}

#[test]
fn pods_tolerating_included_taint_should_not_get_evicted_pods_not_tolerating_should() {
    let pods = vec![
        tolerant("p1", "n1"),
        plain("p2", "n1"),
        tolerant("p3", "n1"),
    ];
    assert_eq!(
        included(&["testTaint1=test1"], vec![tainted("n1")], pods),
        ["p2"]
    );
}

/// p15's second toleration replaces its first (`addTolerationToPod` sets the list): it tolerates
/// `testingTaint1=testing1` only, so it is the one evicted.
#[test]
fn pods_not_tolerating_all_taints_are_evicted_when_included_taints_is_empty() {
    let p15 = owned_pod("p15", "n7")
        .with(|p| *p.tolerations = vec![toleration("testingTaint1", "testing1", NoSchedule)])
        .build();
    let pods = vec![tolerant("p14", "n7"), p15];
    assert_eq!(evict(vec![both_taints("n7")], pods), ["p15"]);
}

/// Not an upstream case: `includedTaints: []` (set, empty) counts no taint, as the descheduler's nil
/// test reads it; absent counts every taint.
#[test]
fn an_empty_included_taints_list_counts_no_taint() {
    assert!(included(&[], vec![tainted("n1")], vec![plain("p2", "n1")]).is_empty());
}

/// Upstream: the plugin's `validation_test.go`, `TestValidateRemovePodsViolatingNodeTaintsArgs` (its
/// six cases).
#[test]
fn validation_as_the_descheduler() {
    let (valid, invalid) = validation_selectors();
    let ok = |a: RemovePodsViolatingNodeTaintsArgs| a.validate();
    let base = RemovePodsViolatingNodeTaintsArgs::default;
    let with_ns = |both| RemovePodsViolatingNodeTaintsArgs {
        namespaces: Some(validation_namespaces(both)),
        ..base()
    };
    assert_eq!(ok(with_ns(false)), Ok(()));
    assert!(ok(with_ns(true))
        .unwrap_err()
        .to_string()
        .contains("namespaces"));
    let with_sel = |s| RemovePodsViolatingNodeTaintsArgs {
        label_selector: Some(s),
        ..base()
    };
    assert_eq!(ok(with_sel(valid)), Ok(()));
    assert!(ok(with_sel(invalid))
        .unwrap_err()
        .to_string()
        .contains("labelSelector"));
    let excluded = RemovePodsViolatingNodeTaintsArgs {
        excluded_taints: vec!["testTaint1=test1".into()],
        ..base()
    };
    assert_eq!(ok(excluded.clone()), Ok(()));
    let both = RemovePodsViolatingNodeTaintsArgs {
        excluded_taints: vec!["do-not-evict".into()],
        included_taints: Some(vec!["testTaint1=test1".into()]),
        ..base()
    };
    let e = ok(both).unwrap_err().to_string();
    assert!(
        e.contains("excludedTaints") && e.contains("includedTaints"),
        "{e}"
    );
}

/// Upstream: the plugin's `defaults_test.go` (its two cases): nothing set stays unset, values are kept.
#[test]
fn defaults_as_the_descheduler() {
    let a: RemovePodsViolatingNodeTaintsArgs = serde_norway::from_str("{}").unwrap();
    assert!(!a.include_prefer_no_schedule && a.excluded_taints.is_empty());
    assert!(a.included_taints.is_none());
    let b: RemovePodsViolatingNodeTaintsArgs = serde_norway::from_str(
        "excludedTaints: [ExcludedTaints]\nincludedTaints: [IncludedTaints]\n",
    )
    .unwrap();
    assert_eq!(b.excluded_taints, ["ExcludedTaints"]);
    assert_eq!(
        b.included_taints.as_deref(),
        Some(&["IncludedTaints".to_string()][..])
    );
}

#[test]
fn arguments_read_as_the_descheduler_writes_them() {
    let a: RemovePodsViolatingNodeTaintsArgs = serde_norway::from_str(
        "includePreferNoSchedule: true\nexcludedTaints: [\"dedicated=gpu\"]\nnamespaces: {exclude: [kube-system]}\n",
    )
    .unwrap();
    assert!(a.include_prefer_no_schedule && a.included_taints.is_none());
    assert_eq!(a.excluded_taints, ["dedicated=gpu"]);
    let bad = serde_norway::from_str::<RemovePodsViolatingNodeTaintsArgs>("excludeTaints: [a]\n");
    assert!(bad.unwrap_err().to_string().contains("excludeTaints"));
}

/// Upstream: `TestToleratesTaint` of the same file (its six cases), on the engine's toleration check
/// the strategy uses.
#[test]
fn tolerates_taint_as_the_descheduler() {
    let exists = |key: &str| Toleration {
        key: key.into(),
        value: None,
        effect: Some(NoSchedule),
    };
    let cases = [
        (exists("foo"), taint("foo", "", NoSchedule), true),
        (exists("foo"), taint("foo", "bar", NoSchedule), true),
        (exists(""), taint("foo", "bar", NoSchedule), true),
        (
            toleration("foo", "bar", NoSchedule),
            taint("foo", "bar", NoSchedule),
            true,
        ),
        (
            toleration("foo", "value1", NoSchedule),
            taint("foo", "value2", NoSchedule),
            false,
        ),
        (
            toleration("foo", "bar", NoSchedule),
            taint("foo", "bar", crate::model::TaintEffect::NoExecute),
            false,
        ),
    ];
    for (i, (tol, t, want)) in cases.into_iter().enumerate() {
        assert_eq!(tol.tolerates(&t), want, "case {i}");
    }
}
