//! `simulate` and pods waiting for preemption: a pending pod the scheduler nominated a node for
//! (`status.nominatedNodeName`) is placed on that node and asks for no new one, as upstream's
//! `FilterOutExpendableAndSplit` and its snapshot's forced placement do; one nominated for a node that
//! is gone is an ordinary pending pod.

use crate::support::fixtures::dump::{node, pod, GROUPS};
use crate::support::simulate_harness::{flags, pacing, reason_of, sim, ups};

/// A full small node `n1` and a pending pod needing a small node of its own, nominated for `nominated`.
fn cluster(nominated: Option<&str>) -> Vec<String> {
    let status = nominated
        .map(|n| format!("status:\n  nominatedNodeName: {n}\n"))
        .unwrap_or_default();
    vec![
        node("n1", "small", "1500m", "7Gi"),
        pod("a", "victim", "1400m", "1Gi", Some("n1"), ""),
        pod(
            "a",
            "preemptor",
            "1400m",
            "1Gi",
            None,
            "  nodeSelector: {size: small}\n",
        ) + &status,
    ]
}

#[test]
fn a_pod_waiting_for_preemption_on_its_nominated_node_asks_for_no_node() {
    let r = sim(&cluster(Some("n1")), GROUPS).step(&flags(&[]), &pacing());
    assert!(ups(&r).is_empty(), "{r:?}");
    assert_eq!(
        reason_of(&r, "a/preemptor"),
        "nominated for node n1, waits for its preemption there; no scale-up needed"
    );
    // It counts on that node: n1, with the victim and the preemptor, is not underutilized.
    assert!(r.scale_down.is_empty(), "{r:?}");

    // Not nominated: it asks for a node.
    let r = sim(&cluster(None), GROUPS).step(&flags(&[]), &pacing());
    assert_eq!(ups(&r), vec![("small", 1)], "{r:?}");
    // Nominated for a node that is gone: it asks for a node too.
    let r = sim(&cluster(Some("gone")), GROUPS).step(&flags(&[]), &pacing());
    assert_eq!(ups(&r), vec![("small", 1)], "{r:?}");
}
