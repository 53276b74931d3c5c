//! Which DaemonSet pods a removal evicts (upstream's `--daemonset-eviction-for-occupied-nodes`, true,
//! and `--daemonset-eviction-for-empty-nodes`, false; actuation/drain.go evicts them after the others).

use std::time::Duration;

use crate::engine::decisions::Decisions;
use crate::engine::{Memory, Settings};
use crate::fixtures::{pool, web, TestWorld};
use crate::model::lifecycle::Budget;

/// `busy` with room, `light` with a web pod and a DaemonSet pod, `idle` with a DaemonSet pod only.
fn world() -> TestWorld {
    pool(
        "pool",
        0,
        &[
            ("busy", &[("hog", 3000)]),
            ("light", &[("web", 200)]),
            ("idle", &[]),
        ],
    )
    .pod(
        web("agent-light", 50)
            .controller("DaemonSet")
            .on("light")
            .build(),
    )
    .pod(
        web("agent-idle", 50)
            .controller("DaemonSet")
            .on("idle")
            .build(),
    )
}

fn removed(s: &Settings) -> Decisions {
    let mut s = Settings {
        max_disruption: Budget::Count(10),
        max_drain_parallelism: 10,
        ..s.clone()
    };
    s.defaults.scale_down_unneeded_time = Duration::ZERO;
    world().run_once(&s, &mut Memory::default(), 10_000)
}

fn daemon_sets<'a>(d: &'a Decisions, node: &str) -> &'a [String] {
    &d.scale_down
        .iter()
        .find(|r| r.node == node)
        .unwrap_or_else(|| panic!("{node} not removed: {d:?}"))
        .daemon_sets
}

/// Upstream: core/scaledown/actuation/actuator_test.go (DaemonSet pods evicted from occupied nodes by
/// default, from empty ones only with the flag).
#[test]
fn daemon_set_pods_are_evicted_from_occupied_nodes_and_from_empty_ones_by_flag() {
    let d = removed(&Settings::upstream());
    assert_eq!(daemon_sets(&d, "light"), ["shop/agent-light"]);
    assert!(daemon_sets(&d, "idle").is_empty(), "{d:?}");
    // The DaemonSet pod is no pod to move: `idle` is empty, `light` evicts its web pod only.
    let light = d.scale_down.iter().find(|r| r.node == "light").unwrap();
    assert_eq!(light.evict, ["shop/web"]);

    let both = Settings {
        daemonset_eviction_for_empty_nodes: true,
        ..Settings::upstream()
    };
    let d = removed(&both);
    assert_eq!(daemon_sets(&d, "idle"), ["shop/agent-idle"]);
    let none = Settings {
        daemonset_eviction_for_occupied_nodes: false,
        ..Settings::upstream()
    };
    let d = removed(&none);
    assert!(daemon_sets(&d, "light").is_empty(), "{d:?}");
}

/// Upstream: utils/daemonset (PodsToEvict) and actuation/drain_test.go (TestDaemonSetEvictionForEmptyNodes):
/// a DaemonSet pod's `cluster-autoscaler.kubernetes.io/enable-ds-eviction` decides for it, whatever the
/// flag says; only `"true"` evicts.
#[test]
fn a_daemon_set_pods_own_annotation_overrides_the_flags() {
    let with = |own: Option<bool>| {
        let mut p = web("agent-idle", 50)
            .controller("DaemonSet")
            .on("idle")
            .build();
        p.meta.ds_eviction = own;
        pool("pool", 0, &[("busy", &[("hog", 3000)]), ("idle", &[])]).pod(p)
    };
    let mut s = Settings {
        max_disruption: Budget::Count(10),
        ..Settings::upstream()
    };
    s.defaults.scale_down_unneeded_time = Duration::ZERO;
    // Empty nodes keep their DaemonSet pods by default; the pod's "true" has it evicted.
    let d = with(Some(true)).run_once(&s, &mut Memory::default(), 10_000);
    assert_eq!(daemon_sets(&d, "idle"), ["shop/agent-idle"]);
    // With the flag on, the pod's "false" keeps it.
    let on = Settings {
        daemonset_eviction_for_empty_nodes: true,
        ..s.clone()
    };
    let d = with(Some(false)).run_once(&on, &mut Memory::default(), 10_000);
    assert!(daemon_sets(&d, "idle").is_empty(), "{d:?}");
    let d = with(None).run_once(&on, &mut Memory::default(), 10_000);
    assert_eq!(daemon_sets(&d, "idle"), ["shop/agent-idle"]);
}
