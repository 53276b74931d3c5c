//! `simulate`: a loop that scales up still finds the idle nodes unneeded, as upstream's RunOnce does:
//! it starts their timers and soft-taints them (`DeletionCandidateOfClusterAutoscaler`), and only their
//! removal waits for `--scale-down-delay-after-add`. An idle node goes at the same time whether or not
//! the cluster grew when it was first seen idle.

use std::time::Duration;

use ferroscale::labels;
use ferroscale::simulate::Pacing;

use crate::support::fixtures::dump::{node, pod, GROUPS};
use crate::support::simulate_harness::{sim, ups};

/// Loops a minute apart; new nodes join a minute after they are asked for.
fn minutes() -> Pacing {
    Pacing {
        loops: 1,
        scan_interval: Duration::from_secs(60),
        provision_delay: Duration::from_secs(60),
        node_ready_delay: Duration::ZERO,
        by_group: Default::default(),
    }
}

/// Runs `idle` (an empty `small` node) with `pods` for 12 minutes, upstream's defaults (10m unneeded
/// time, 10m delay after a scale-up): the scale-ups of the first loop, whether `idle` had the soft taint
/// after it, and the minute `idle` was removed.
fn idle_with(pods: Vec<String>) -> (Vec<(String, i32)>, bool, Option<u32>) {
    let mut cluster = vec![node("idle", "small", "2", "8Gi")];
    cluster.extend(pods);
    let mut s = sim(&cluster, GROUPS);
    let settings = ferroscale::cli::flags::default_engine();
    let first = s.step(&settings, &minutes());
    let grew: Vec<(String, i32)> = ups(&first)
        .into_iter()
        .map(|(g, n)| (g.to_string(), n))
        .collect();
    let tainted =
        s.cluster().state().nodes.iter().any(|n| {
            n.name == "idle" && n.taints.iter().any(|t| t.key == labels::DELETION_CANDIDATE)
        });
    let removed = (1..=12).find(|_| {
        let r = s.step(&settings, &minutes());
        r.scale_down.iter().any(|d| d.node == "idle")
    });
    (grew, tainted, removed)
}

#[test]
fn an_idle_node_is_timed_and_soft_tainted_in_a_loop_that_scales_up() {
    // `wide` needs 6 cpu: only a `big` node takes it, and `idle` cannot.
    let (grew, tainted, removed) = idle_with(vec![pod("a", "wide", "6", "4Gi", None, "")]);
    assert_eq!(grew, [("big".to_string(), 1)]);
    assert!(tainted, "soft-tainted in the loop that scaled up");
    // The same cluster without the pending pod: no scale-up, and `idle` goes at the same minute.
    let (quiet, quiet_tainted, quiet_removed) = idle_with(Vec::new());
    assert!(quiet.is_empty() && quiet_tainted);
    assert_eq!(removed, quiet_removed);
    assert_eq!(removed, Some(10), "10m after it was first seen idle");
}
