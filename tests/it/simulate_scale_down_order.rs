//! `simulate` and upstream's scale-down shape: empty nodes go in one loop up to
//! `--max-scale-down-parallelism` (no `--max-empty-bulk-delete` cap since upstream 1.33), and a group
//! that scales all or nothing (`zeroOrMaxNodeScaling`) is removed whole or kept whole.

use crate::support::fixtures::dump::{node, pod};
use crate::support::simulate_harness::{flags, pacing, sim, unremovable};

/// `small` nodes, and `slice`, four nodes that scale all or nothing.
const GROUPS: &str = r#"
nodeGroups:
  - {name: small, minSize: 0, maxSize: 30, capacity: {cpu: 2, memory: 8Gi, pods: 20}, labels: {size: small}}
  - {name: slice, minSize: 0, maxSize: 4, capacity: {cpu: 2, memory: 8Gi, pods: 20}, labels: {size: slice},
     options: {zeroOrMaxNodeScaling: "true"}}
"#;

fn empties(n: usize) -> Vec<String> {
    (1..=n)
        .map(|i| node(&format!("idle-{i:02}"), "small", "1500m", "7Gi"))
        .collect()
}

#[test]
fn fourteen_empty_nodes_go_in_one_loop_within_the_parallelism() {
    // The deprecated --max-empty-bulk-delete (10 by default) caps nothing: the parallelism does.
    let r = sim(&empties(14), GROUPS).step(
        &flags(&[
            "--max-scale-down-parallelism",
            "20",
            "--max-empty-bulk-delete",
            "10",
        ]),
        &pacing(),
    );
    assert_eq!(r.scale_down.len(), 14, "{r:?}");
    // Upstream's default parallelism, 10: ten go, the rest in a later loop.
    let r = sim(&empties(14), GROUPS).step(&flags(&[]), &pacing());
    assert_eq!(r.scale_down.len(), 10, "{r:?}");
    assert_eq!(
        unremovable(&r, "idle-14"),
        "unneeded; waits for the next loop"
    );
}

#[test]
fn empty_nodes_go_before_nodes_to_drain() {
    // A light node first in the cluster's order, then empty ones; one removal allowed: an empty one.
    let mut cluster = vec![
        node("a-light", "small", "1500m", "7Gi"),
        pod("a", "web", "100m", "100Mi", Some("a-light"), ""),
        node("b-busy", "small", "1500m", "7Gi"),
        pod("a", "hog", "1400m", "1Gi", Some("b-busy"), ""),
    ];
    cluster.extend(empties(2));
    let r = sim(&cluster, GROUPS).step(&flags(&["--max-scale-down-parallelism", "1"]), &pacing());
    let gone: Vec<&str> = r.scale_down.iter().map(|s| s.node.as_str()).collect();
    assert_eq!(gone, ["idle-01"], "{r:?}");
}

/// The four nodes of `slice`, idle; `busy` puts a pod on the last.
fn slice(busy: bool) -> Vec<String> {
    let mut v: Vec<String> = (1..=4)
        .map(|i| node(&format!("slice-{i}"), "slice", "1500m", "7Gi"))
        .collect();
    if busy {
        v.push(pod("a", "trainer", "1400m", "1Gi", Some("slice-4"), ""));
    }
    v
}

#[test]
fn an_atomic_group_is_removed_whole_or_kept_whole() {
    let r = sim(&slice(false), GROUPS).step(&flags(&[]), &pacing());
    let mut gone: Vec<&str> = r.scale_down.iter().map(|s| s.node.as_str()).collect();
    gone.sort();
    assert_eq!(gone, ["slice-1", "slice-2", "slice-3", "slice-4"], "{r:?}");
    // One node busy: none goes (plain scale-down would take three and break the slice).
    let r = sim(&slice(true), GROUPS).step(&flags(&[]), &pacing());
    assert!(r.scale_down.is_empty(), "{r:?}");
    for n in ["slice-1", "slice-2", "slice-3"] {
        assert_eq!(
            unremovable(&r, n),
            "group slice scales all or nothing (zeroOrMaxNodeScaling) and not all its nodes can go"
        );
    }
    let plain = GROUPS.replace("options: {zeroOrMaxNodeScaling: \"true\"}", "options: {}");
    let r = sim(&slice(true), &plain).step(&flags(&[]), &pacing());
    assert_eq!(r.scale_down.len(), 3, "{r:?}");
}
