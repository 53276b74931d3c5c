//! `simulate` with upstream's backoff flags: a group that cannot launch is tried again after
//! `--initial-node-group-backoff-duration`, doubling up to `--max-node-group-backoff-duration`, beside
//! the same cluster under upstream's defaults (5m doubling to 30m).

use std::time::Duration;

use crate::support::fixtures::dump::pod;
use crate::support::simulate_harness::{flags, sim};

/// One group whose launches always fail for lack of capacity.
const DRY: &str = r#"
nodeGroups:
  - {name: dry, minSize: 0, maxSize: 10, capacity: {cpu: 2, memory: 8Gi, pods: 20},
     pricePerHour: 0.096, launchCapacity: 0}
"#;

/// The minutes (of loops one minute apart) in which `dry` was asked to grow, over `minutes` loops.
fn tries(args: &[&str], minutes: u32) -> Vec<u32> {
    let mut s = sim(&[pod("a", "web", "1", "1Gi", None, "")], DRY);
    let settings = flags(args);
    let pacing = ferroscale::simulate::Pacing {
        loops: 1,
        scan_interval: Duration::from_secs(60),
        provision_delay: Duration::ZERO,
        node_ready_delay: Duration::ZERO,
        by_group: Default::default(),
    };
    (0..minutes)
        .filter(|_| {
            let r = s.step(&settings, &pacing);
            r.scale_up.iter().any(|u| u.group == "dry")
        })
        .collect()
}

#[test]
fn the_backoff_flags_set_how_soon_a_failing_group_is_tried_again() {
    let upstream = tries(&[], 20);
    let quick = tries(
        &[
            "--initial-node-group-backoff-duration=1m",
            "--max-node-group-backoff-duration=2m",
        ],
        20,
    );
    // Each failure is seen the loop after the ask (the cloud reports what it could not launch) and
    // backs the group off from then: upstream's 5m, then 10m; the flags' 1m, then 2m at most.
    assert_eq!(upstream, [0, 6, 17]);
    assert_eq!(quick, [0, 2, 5, 8, 11, 14, 17]);
}
