//! Cases of the descheduler's
//! `pkg/framework/plugins/removepodsviolatingnodeaffinity/node_affinity_test.go`,
//! `TestRemovePodsViolatingNodeAffinity`, each named by its description. Facts as the source builds
//! them: nodes 2000m / 3000 bytes / 10 pods, `nodeWithLabels` labelled `kubernetes.io/desiredNode=yes`;
//! three pods owned by a pod on one node, `podWithNodeAffinity` requiring that label (`In [yes]`),
//! `pod1` and `pod2` without affinity. The limits are the planner's: those cases check how many
//! proposals a limit lets through.

use super::*;
use crate::deschedule::strategies::testkit::*;
use crate::deschedule::{EvictorArgs, PluginArgs};
use crate::fixtures::req;
use crate::model::workload::{Node, Pod, SelectorOp};

const LABELLED: &str = "nodeWithLabels";
const BARE: &str = "nodeWithoutLabels";
const CORDONED: &str = "unschedulableNodeWithLabels";

fn labelled() -> Node {
    test_node(LABELLED, 2000, 3000, 10)
        .label("kubernetes.io/desiredNode", "yes")
        .build()
}

fn bare() -> Node {
    test_node(BARE, 2000, 3000, 10).build()
}

fn cordoned() -> Node {
    test_node(CORDONED, 2000, 3000, 10)
        .label("kubernetes.io/desiredNode", "yes")
        .with(|n| n.unschedulable = true)
        .build()
}

/// `addPodsToNode`: with `required`, the first pod requires the label; `terminating`: all are being
/// deleted.
fn pods_on(node: &str, required: bool, terminating: bool) -> Vec<Pod> {
    let mark = |b: crate::fixtures::PodBuilder| {
        b.with(|p| {
            if terminating {
                p.meta.deleted = Some(0);
            }
        })
    };
    let affine = owned_pod("podWithNodeAffinity", node).with(|p| {
        if required {
            p.node_affinity = vec![vec![req(
                "kubernetes.io/desiredNode",
                SelectorOp::In,
                &["yes"],
            )]];
        }
    });
    vec![
        mark(affine).build(),
        mark(owned_pod("pod1", node)).build(),
        mark(owned_pod("pod2", node)).build(),
    ]
}

fn evict(types: &[&str], nodes: Vec<Node>, pods: Vec<Pod>) -> Vec<String> {
    let a = RemovePodsViolatingNodeAffinityArgs {
        node_affinity_type: types.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    let args = PluginArgs::RemovePodsViolatingNodeAffinity(a);
    names(&run(args, nodes, pods, EvictorArgs::default()))
}

/// The pod's `Affinity.NodeAffinity` is empty: there is nothing to violate, and the type is unknown.
#[test]
fn invalid_affinity_type_should_not_evict_any_pods() {
    let t = "requiredDuringSchedulingRequiredDuringExecution";
    let got = evict(&[t], vec![bare(), labelled()], pods_on(BARE, false, false));
    assert!(got.is_empty());
    let a = RemovePodsViolatingNodeAffinityArgs {
        node_affinity_type: vec![t.into()],
        ..Default::default()
    };
    assert!(a.warnings()[0].contains(t));
}

#[test]
fn pod_is_correctly_scheduled_on_node_no_eviction_expected_required_affinity() {
    let got = evict(
        &[REQUIRED],
        vec![labelled()],
        pods_on(LABELLED, true, false),
    );
    assert!(got.is_empty());
}

/// `addPodsToNode(.., "preferred...")`: the first pod prefers the label with weight 10.
fn preferring(node: &str) -> Vec<Pod> {
    let mut pods = pods_on(node, false, false);
    pods[0].meta.preferred_node_affinity = vec![(
        10,
        vec![req("kubernetes.io/desiredNode", SelectorOp::In, &["yes"])],
    )]
    .into();
    pods
}

#[test]
fn pod_is_correctly_scheduled_on_node_no_eviction_expected_preferred_affinity() {
    let got = evict(&[PREFERRED], vec![labelled()], preferring(LABELLED));
    assert!(got.is_empty());
}

#[test]
fn pod_is_scheduled_on_node_without_matching_labels_another_schedulable_node_available_with_better_fit_should_be_evicted(
) {
    let a = RemovePodsViolatingNodeAffinityArgs {
        node_affinity_type: vec![PREFERRED.into()],
        ..Default::default()
    };
    assert!(a.warnings().is_empty(), "the preferred type is honoured");
    let args = PluginArgs::RemovePodsViolatingNodeAffinity(a);
    let got = run(
        args,
        vec![bare(), labelled()],
        preferring(BARE),
        EvictorArgs::default(),
    );
    assert_eq!(names(&got), ["podWithNodeAffinity"]);
    // Only onto the node it prefers more: the plan never moves it to one it prefers no more.
    assert_eq!(got[0].onto.as_deref(), Some(&[LABELLED.to_string()][..]));
}

#[test]
fn pod_is_scheduled_on_node_without_matching_labels_but_no_node_where_pod_fits_is_available_should_not_evict_preferred_affinity(
) {
    let got = evict(&[PREFERRED], vec![bare(), cordoned()], preferring(BARE));
    assert!(got.is_empty());
}

#[test]
fn pod_on_node_without_matching_labels_another_schedulable_node_available_should_be_evicted() {
    let got = evict(
        &[REQUIRED],
        vec![bare(), labelled()],
        pods_on(BARE, true, false),
    );
    assert_eq!(got, ["podWithNodeAffinity"]);
}

fn one_violating() -> Vec<crate::deschedule::Proposal> {
    let a = RemovePodsViolatingNodeAffinityArgs {
        node_affinity_type: vec![REQUIRED.into()],
        ..Default::default()
    };
    let args = PluginArgs::RemovePodsViolatingNodeAffinity(a);
    run(
        args,
        vec![bare(), labelled()],
        pods_on(BARE, true, false),
        EvictorArgs::default(),
    )
}

/// "..., maxPodsToEvictPerNode set to 1, should be evicted [required affinity]" and "...,
/// maxNoOfPodsToEvictPerNamespace set to 1, should be evicted [required affinity]".
#[test]
fn pod_on_node_without_matching_labels_a_limit_of_1_should_be_evicted() {
    assert_eq!(limited(&one_violating(), 1), 1);
}

/// "..., maxPodsToEvictPerNode set to 0, ...", "..., maxNoOfPodsToEvictTotal set to 0, ..." and "...,
/// maxNoOfPodsToEvictPerNamespace set to 0, should not be evicted [required affinity]".
#[test]
fn pod_on_node_without_matching_labels_a_limit_of_0_should_not_be_evicted() {
    assert_eq!(limited(&one_violating(), 0), 0);
}

/// "..., maxPodsToEvictPerNode set to 1, no pod evicted since pod terminating [required affinity]" and
/// the same with maxNoOfPodsToEvictPerNamespace.
#[test]
fn pod_on_node_without_matching_labels_no_pod_evicted_since_pod_terminating() {
    let got = evict(
        &[REQUIRED],
        vec![bare(), labelled()],
        pods_on(BARE, true, true),
    );
    assert!(got.is_empty());
}

#[test]
fn pod_on_node_without_matching_labels_but_no_node_where_pod_fits_should_not_evict() {
    let got = evict(
        &[REQUIRED],
        vec![bare(), cordoned()],
        pods_on(BARE, true, false),
    );
    assert!(got.is_empty());
}

/// The pods' node is not among the nodes: they are not looked at.
#[test]
fn pod_on_node_without_matching_labels_and_unschedulable_node_where_pod_could_fit_should_not_evict()
{
    let got = evict(
        &[REQUIRED],
        vec![labelled(), cordoned()],
        pods_on(BARE, true, false),
    );
    assert!(got.is_empty());
}

/// Not an upstream case: a pod violating its affinity on a node being removed is still proposed,
/// but not when the only node it fits is itself being removed.
#[test]
fn a_node_being_removed_is_no_place_to_go() {
    let nodes = vec![bare(), labelled()];
    let pods = pods_on(BARE, true, false);
    let mut f = crate::deschedule::fixtures::Fixture::new(nodes, pods);
    f.removing.insert(LABELLED.into());
    let cluster = f.cluster();
    let view = crate::deschedule::View::new(&cluster);
    let e = EvictorArgs::default();
    let a = RemovePodsViolatingNodeAffinityArgs {
        node_affinity_type: vec![REQUIRED.into()],
        ..Default::default()
    };
    assert!(propose(&a, &view, &crate::deschedule::Evictor::new(&e, &view)).is_empty());
}

/// Upstream: the plugin's `validation_test.go`: `nodeAffinityType` must be set; include and exclude
/// namespaces together are refused.
#[test]
fn validation_names_the_field() {
    let none = RemovePodsViolatingNodeAffinityArgs::default();
    assert!(none
        .validate()
        .unwrap_err()
        .to_string()
        .contains("nodeAffinityType"));
    let both = RemovePodsViolatingNodeAffinityArgs {
        node_affinity_type: vec![REQUIRED.into()],
        namespaces: Some(crate::deschedule::args::Namespaces {
            include: vec!["a".into()],
            exclude: vec!["b".into()],
        }),
        ..Default::default()
    };
    assert!(both
        .validate()
        .unwrap_err()
        .to_string()
        .contains("namespaces"));
}

/// Upstream: the plugin's `validation_test.go`, `TestValidateRemovePodsViolatingNodeAffinityArgs`
/// (its five cases: nil and empty types, a valid one, bad namespaces, both errors reported together).
#[test]
fn validation_as_the_descheduler() {
    let check = |types: &[&str], both: bool| {
        RemovePodsViolatingNodeAffinityArgs {
            node_affinity_type: types.iter().map(|s| s.to_string()).collect(),
            namespaces: both.then(|| validation_namespaces(true)),
            ..Default::default()
        }
        .validate()
        .map_err(|e| e.to_string())
    };
    assert!(check(&[], false).unwrap_err().contains("nodeAffinityType"));
    assert_eq!(check(&[REQUIRED], false), Ok(()));
    assert!(check(&[REQUIRED], true).unwrap_err().contains("namespaces"));
    let e = check(&[], true).unwrap_err();
    assert!(
        e.contains("nodeAffinityType") && e.contains("namespaces"),
        "{e}"
    );
}

/// Upstream: the plugin's `defaults_test.go`: no defaults, values kept.
#[test]
fn defaults_as_the_descheduler() {
    let a: RemovePodsViolatingNodeAffinityArgs = serde_norway::from_str("{}").unwrap();
    assert_eq!(a, RemovePodsViolatingNodeAffinityArgs::default());
    let b: RemovePodsViolatingNodeAffinityArgs = serde_norway::from_str(
        "nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecution]\n",
    )
    .unwrap();
    assert_eq!(b.node_affinity_type, [REQUIRED]);
}

/// Not an upstream case: pods of one shape share the answer to "fits another node?" only when the
/// node found is not their own.
#[test]
fn pods_of_one_shape_each_get_their_own_answer() {
    let ask = |slots: i64| {
        let nodes = vec![
            test_node("a", 2000, 3000, slots).build(),
            test_node("b", 2000, 3000, slots).build(),
        ];
        let pods = vec![owned_pod("p", "a").build(), owned_pod("q", "b").build()];
        let f = crate::deschedule::fixtures::Fixture::new(nodes, pods);
        let cluster = f.cluster();
        let view = crate::deschedule::View::new(&cluster);
        let fit = crate::deschedule::strategies::fit::Fit::new(&view);
        let on = |n: &str| view.pods_on(n)[0].clone();
        [
            fit.fits_any_other_unspread(&on("a")),
            fit.fits_any_other_unspread(&on("b")),
        ]
    };
    assert_eq!(ask(10), [true, true], "each fits the other's node");
    assert_eq!(ask(1), [false, false], "both nodes full");
}

/// Not an upstream case, where ferroscale must not do what the descheduler does: the only node the
/// pod's affinity admits has its host port taken. The descheduler's `PodFitsAnyNode` does not check
/// ports, so it evicts and the pod goes Pending. The scheduler's filters see the port taken, so
/// nothing is proposed.
#[test]
fn a_pod_whose_only_place_has_its_host_port_taken_is_not_proposed() {
    use crate::model::workload::HostPort;
    let port = HostPort {
        protocol: "TCP".into(),
        ip: String::new(),
        port: 8080,
    };
    let mut pods = pods_on(BARE, true, false);
    pods[0].host_ports = thin_vec::thin_vec![port.clone()];
    let mut holder = owned_pod("holder", LABELLED).build();
    holder.host_ports = thin_vec::thin_vec![port];
    pods.push(holder);
    assert!(evict(&[REQUIRED], vec![bare(), labelled()], pods).is_empty());
}
