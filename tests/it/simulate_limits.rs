//! `simulate` under limits: --max-nodes-total and friends, and a spent binpacking budget.

use ferroscale::engine::Settings;

use std::time::Duration;

use crate::simulate::{pacing, pod, reason_of, sim, ups, GROUPS};

#[test]
fn limits_cap_the_scale_up() {
    let cluster: Vec<String> = (0..10)
        .map(|i| {
            pod(
                "a",
                &format!("p{i}"),
                "1500m",
                "1Gi",
                None,
                "  nodeSelector: {size: small}\n",
            )
        })
        .collect();
    let mut s = sim(&cluster, GROUPS);
    let settings = Settings {
        max_nodes_total: 4,
        ..ferroscale::cli::flags::default_engine()
    };
    let r = s.step(&settings, &pacing());
    assert_eq!(ups(&r), vec![("small", 4)]);
    assert_eq!(r.pending.len(), 6);
    assert!(
        reason_of(&r, "a/p9").contains("would exceed a limit"),
        "{r:?}"
    );
}

#[test]
fn a_spent_binpacking_budget_scales_nothing_and_says_so() {
    let cluster = vec![pod("a", "wide", "6", "4Gi", None, "")];
    let settings = Settings {
        max_nodegroup_binpacking_duration: Duration::ZERO,
        ..ferroscale::cli::flags::default_engine()
    };
    let r = sim(&cluster, GROUPS).step(&settings, &pacing());
    assert!(ups(&r).is_empty(), "{r:?}");
    let why = reason_of(&r, "a/wide");
    assert!(why.contains("--max-nodegroup-binpacking-duration"), "{why}");
}
