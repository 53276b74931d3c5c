//! Cases of the descheduler's
//! `pkg/framework/plugins/removepodsviolatinginterpodantiaffinity/pod_antiaffinity_test.go`,
//! `TestPodAntiAffinity`, each named by its description. Facts as the source builds them: nodes 2000m /
//! 3000 bytes / 10 pods labelled `region=main-region`; pods request 100m, owned by a pod; the
//! anti-affinity helpers require no pod with `key In [value]` in the same `region`. The limits are the
//! planner's: those cases check how many proposals a limit lets through; `nodeFit` is the evictor's:
//! those cases check which proposals fit another node.

use super::*;
use crate::deschedule::strategies::testkit::*;
use crate::deschedule::{EvictorArgs, PluginArgs};
use crate::fixtures::req;
use crate::model::workload::{Node, Pod, PodAffinityTerm, SelectorOp};

fn region_node(name: &str) -> Node {
    test_node(name, 2000, 3000, 10)
        .label("region", "main-region")
        .build()
}

fn repels(key: &str, value: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        selector: crate::model::workload::LabelSelector {
            requirements: vec![req(key, SelectorOp::In, &[value])],
            ..Default::default()
        },
        topology_key: "region".into(),
        ..Default::default()
    }
}

/// `buildTestPodWithAntiAffinityForNode1`.
fn anti(name: &str) -> Pod {
    owned_pod(name, "n1")
        .with(|p| p.anti_affinity = thin_vec::thin_vec![repels("foo", "bar")])
        .build()
}

/// `buildTestPodP2ForNode1`.
fn p2() -> Pod {
    owned_pod("p2", "n1").label("foo", "bar").build()
}

/// `buildTestPodNonEvictableForNode1`: system-critical priority, labelled foo=bar, no owner.
fn non_evictable() -> Pod {
    test_pod("non-evict", "n1")
        .priority(SYSTEM_CRITICAL)
        .label("foo", "bar")
        .build()
}

fn run_on(nodes: Vec<Node>, pods: Vec<Pod>) -> Vec<crate::deschedule::Proposal> {
    let args = PluginArgs::RemovePodsViolatingInterPodAntiAffinity(Default::default());
    run(args, nodes, pods, EvictorArgs::default())
}

fn four() -> Vec<Pod> {
    vec![anti("p1"), p2(), anti("p3"), anti("p4")]
}

#[test]
fn maximum_pods_to_evict_0() {
    assert_eq!(
        names(&run_on(vec![region_node("n1")], four())),
        ["p1", "p3", "p4"]
    );
}

/// "Maximum pods to evict - 3" and "Maximum pods to evict (maxPodsToEvictPerNamespace=3) - 3".
#[test]
fn maximum_pods_to_evict_3() {
    assert_eq!(limited(&run_on(vec![region_node("n1")], four()), 3), 3);
}

#[test]
fn maximum_pods_to_evict_max_no_of_pods_to_evict_total() {
    assert_eq!(limited(&run_on(vec![region_node("n1")], four()), 1), 1);
}

#[test]
fn evict_only_1_pod_after_sorting() {
    let p = |name: &str, labels: (&str, &str), repel: (&str, &str), priority| {
        owned_pod(name, "n1")
            .label(labels.0, labels.1)
            .with(|p| p.anti_affinity = thin_vec::thin_vec![repels(repel.0, repel.1)])
            .priority(priority)
            .build()
    };
    let pods = vec![
        p("p5", ("foo", "bar"), ("foo1", "bar1"), 100),
        p("p6", ("foo", "bar"), ("foo1", "bar1"), 50),
        p("p7", ("foo1", "bar1"), ("foo", "bar"), 0),
    ];
    assert_eq!(names(&run_on(vec![region_node("n1")], pods)), ["p7"]);
}

/// Twice in the source, with `maxPodsToEvictPerNode: 1`.
#[test]
fn evicts_pod_that_conflicts_with_critical_pod_but_does_not_evict_critical_pod() {
    let p = run_on(vec![region_node("n1")], vec![anti("p1"), non_evictable()]);
    assert_eq!(names(&p), ["p1"]);
}

fn west() -> Pod {
    owned_pod("p8", "n1")
        .with(|p| {
            p.node_selector.insert("datacenter".into(), "west".into());
        })
        .build()
}

#[test]
fn wont_evict_pods_because_node_selectors_dont_match_available_nodes() {
    let east = test_node("n2", 2000, 3000, 10)
        .label("datacenter", "east")
        .build();
    let nodes = vec![region_node("n1"), east];
    let pods = vec![west(), non_evictable()];
    let p = run_on(nodes.clone(), pods.clone());
    assert!(node_fit(nodes, pods, &p).is_empty() && p.is_empty());
}

#[test]
fn wont_evict_pods_because_only_other_node_is_not_schedulable() {
    let cordoned = test_node("n3", 2000, 3000, 10)
        .with(|n| n.unschedulable = true)
        .build();
    let p = run_on(
        vec![region_node("n1"), cordoned],
        vec![west(), non_evictable()],
    );
    assert!(p.is_empty());
}

#[test]
fn no_pod_to_evicted_since_all_pod_terminating() {
    let dying = |name: &str| {
        owned_pod(name, "n1")
            .with(|p| {
                p.anti_affinity = thin_vec::thin_vec![repels("foo", "bar")];
                p.meta.deleted = Some(0);
            })
            .build()
    };
    assert!(run_on(vec![region_node("n1")], vec![dying("p9"), dying("p10")]).is_empty());
}

/// n4 has 2m cpu, 2 bytes, 1 pod: the three proposals fit nowhere else.
#[test]
fn wont_evict_pods_because_only_other_node_doesnt_have_enough_resources() {
    let nodes = vec![region_node("n1"), test_node("n4", 2, 2, 1).build()];
    let p = run_on(nodes.clone(), four());
    assert_eq!(p.len(), 3);
    assert!(node_fit(nodes, four(), &p).is_empty());
}

#[test]
fn evict_pod_violating_anti_affinity_among_different_node_all_pods_have_anti_affinity() {
    let n5 = test_node("n5", 200, 3000, 10)
        .label("region", "main-region")
        .build();
    let p11 = owned_pod("p11", "n5").label("foo", "bar").build();
    let p = run_on(vec![region_node("n1"), n5], vec![anti("p1"), p11]);
    assert_eq!(names(&p), ["p1"]);
}

/// Not an upstream case: without the topology label, only the pod's own node is its domain.
#[test]
fn without_the_topology_label_only_the_own_node_counts() {
    let bare = |name: &str| test_node(name, 2000, 3000, 10).build();
    let far = owned_pod("p11", "n5").label("foo", "bar").build();
    assert!(run_on(vec![bare("n1"), bare("n5")], vec![anti("p1"), far]).is_empty());
    let near = owned_pod("p11", "n1").label("foo", "bar").build();
    assert_eq!(
        names(&run_on(vec![bare("n1")], vec![anti("p1"), near])),
        ["p1"]
    );
}

/// Not an upstream case: pods out of the strategy's namespaces neither move nor count.
#[test]
fn out_of_scope_pods_do_not_count() {
    let a = RemovePodsViolatingInterPodAntiAffinityArgs {
        namespaces: Some(crate::deschedule::args::Namespaces {
            include: vec!["other".into()],
            exclude: vec![],
        }),
        ..Default::default()
    };
    let args = PluginArgs::RemovePodsViolatingInterPodAntiAffinity(a);
    assert!(run(
        args,
        vec![region_node("n1")],
        four(),
        EvictorArgs::default()
    )
    .is_empty());
}

/// Upstream: the plugin's `validation_test.go`, `TestValidateRemovePodsViolatingInterPodAntiAffinityArgs`
/// (its four cases), and `defaults_test.go` (no defaults: empty stays empty).
#[test]
fn validation_and_defaults_as_the_descheduler() {
    let (valid, invalid) = validation_selectors();
    let check = |namespaces, label_selector| {
        RemovePodsViolatingInterPodAntiAffinityArgs {
            namespaces,
            label_selector,
        }
        .validate()
        .map_err(|e| e.to_string())
    };
    assert_eq!(check(Some(validation_namespaces(false)), None), Ok(()));
    let e = check(Some(validation_namespaces(true)), None).unwrap_err();
    assert!(e.contains("namespaces"), "{e}");
    assert_eq!(check(None, Some(valid)), Ok(()));
    let e = check(None, Some(invalid)).unwrap_err();
    assert!(e.contains("labelSelector"), "{e}");
    let empty: RemovePodsViolatingInterPodAntiAffinityArgs = serde_norway::from_str("{}").unwrap();
    assert_eq!(
        empty,
        RemovePodsViolatingInterPodAntiAffinityArgs::default()
    );
    assert!(empty.namespaces.is_none() && empty.label_selector.is_none());
}

/// Not an upstream case: a term naming no label value (`Exists`) is checked over its whole domain,
/// one naming values through the pods carrying them: both find the same pods.
#[test]
fn terms_with_and_without_label_values_find_the_same_pods() {
    let exists = PodAffinityTerm {
        selector: crate::model::workload::LabelSelector {
            requirements: vec![req("foo", SelectorOp::Exists, &[])],
            ..Default::default()
        },
        topology_key: "region".into(),
        ..Default::default()
    };
    let by = |term: PodAffinityTerm| {
        let p1 = owned_pod("p1", "n1")
            .with(move |p| p.anti_affinity = thin_vec::thin_vec![term])
            .build();
        let far = owned_pod("p11", "n5").label("foo", "bar").build();
        let n5 = test_node("n5", 2000, 3000, 10)
            .label("region", "main-region")
            .build();
        names(&run_on(vec![region_node("n1"), n5], vec![p1, far]))
    };
    assert_eq!(by(exists), ["p1"]);
    assert_eq!(by(repels("foo", "bar")), ["p1"]);
    assert!(by(repels("foo", "baz")).is_empty());
}
