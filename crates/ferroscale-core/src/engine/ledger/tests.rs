//! The ledger as the loop uses it: one count of PDBs, caps and out-of-service nodes shared by every
//! method, what it leaves for the descheduler, and the rules of what counts.

use std::time::Duration;

use crate::engine::reasons::{Blocker, Unremovable};
use crate::engine::{Memory, Settings};
use crate::fixtures::{pdb, pool, resources, web, worker, TestWorld, GIB};
use crate::model::consolidation::{Consolidation, ConsolidationPolicy};
use crate::model::lifecycle::{Budget, DisruptionReason};
use crate::model::workload::PodPhase;

const T0: i64 = 10_000;

/// Scale-down at once, every node of the pool allowed out.
fn quick() -> Settings {
    let mut s = Settings::upstream();
    s.defaults.scale_down_unneeded_time = Duration::ZERO;
    s.max_drain_parallelism = 10;
    s
}

/// `big` (busy, with room for every web pod), `a`, `b` and `c` with one web pod each: every web pod is
/// covered by one PDB allowing `allowed`.
fn world(allowed: i32) -> TestWorld {
    let mut w = pool(
        "pool",
        0,
        &[
            ("big", &[("hog", 2500)]),
            ("a", &[("web-a", 500)]),
            ("b", &[("web-b", 500)]),
            ("c", &[("web-c", 500)]),
        ],
    )
    .pdb(pdb("shop", "web", "web", allowed));
    // `hog` is no web pod.
    let hog = w.pods.iter_mut().find(|p| p.name == "hog").unwrap();
    std::sync::Arc::make_mut(hog)
        .labels
        .insert("app".into(), "other".into());
    w
}

fn removed(d: &crate::engine::Decisions) -> Vec<&str> {
    d.scale_down.iter().map(|s| s.node.as_str()).collect()
}

#[test]
fn a_pdb_is_counted_down_across_nodes_and_left_for_the_descheduler() {
    let d = world(2).run_once(&quick(), &mut Memory::default(), T0);
    // Two of the three web nodes go (the PDB allows two), the third is kept by it.
    assert_eq!(removed(&d), ["a", "b"], "{d:#?}");
    assert!(
        d.unremovable.iter().any(|(n, why)| n == "c"
            && matches!(why, Unremovable::Blocked(Blocker::Budget { .. }))),
        "{d:#?}"
    );
    assert_eq!(d.pdbs_left[0].disruptions_allowed, 0);
    // `a` and `b` go: no pod is to be moved onto them.
    assert!(d.not_destinations.contains(&"a".to_string()));
    assert!(!d.not_destinations.contains(&"big".to_string()));
}

#[test]
fn an_involuntary_notice_takes_from_the_pdb_before_scale_down() {
    let mut w = world(1);
    w.interrupted
        .insert("c".into(), DisruptionReason::SpotInterruption);
    let d = w.run_once(&quick(), &mut Memory::default(), T0);
    assert_eq!(d.disruptions.len(), 1, "{d:#?}");
    // The spot warning's eviction used the one disruption the PDB allows: scale-down takes none.
    assert!(d.scale_down.is_empty(), "{d:#?}");
    assert_eq!(d.pdbs_left[0].disruptions_allowed, 0);
    // The contrast: without the warning, scale-down takes one web node.
    let d = world(1).run_once(&quick(), &mut Memory::default(), T0);
    assert_eq!(removed(&d), ["a"], "{d:#?}");
}

#[test]
fn pods_not_running_do_not_use_a_pdb() {
    let mut w = world(1);
    for p in w.pods.iter_mut().filter(|p| p.name != "hog") {
        std::sync::Arc::make_mut(p).meta.phase = PodPhase::Pending;
    }
    let d = w.run_once(&quick(), &mut Memory::default(), T0);
    // The eviction API ignores PDBs for pods that are not running: each of the three may go.
    assert_eq!(removed(&d), ["a", "b", "c"], "{d:#?}");
    assert_eq!(d.pdbs_left[0].disruptions_allowed, 1);
}

#[test]
fn the_evictions_of_removals_in_flight_are_taken_from_their_pdbs() {
    let mut w = world(1);
    w.removing.insert("c".into(), true);
    let d = w.run_once(&quick(), &mut Memory::default(), T0);
    assert!(
        d.scale_down.is_empty(),
        "c's drain will take the one disruption: {d:#?}"
    );
    assert!(d.not_destinations.contains(&"c".to_string()));
    // The drain's node empty of PDB pods: the disruption is free again.
    let mut w = world(1);
    w.removing.insert("big".into(), true);
    let d = w.run_once(&quick(), &mut Memory::default(), T0);
    assert_eq!(removed(&d), ["a"], "{d:#?}");
}

#[test]
fn max_evictions_per_loop_holds_the_rest_for_a_later_loop() {
    let mut s = quick();
    s.max_evictions_per_loop = 1;
    let d = world(10).run_once(&s, &mut Memory::default(), T0);
    assert_eq!(removed(&d), ["a"], "{d:#?}");
    assert!(
        d.unremovable
            .iter()
            .any(|(n, why)| n == "b" && *why == Unremovable::EvictionLimit { max: 1 }),
        "{d:#?}"
    );
    // 0: no limit.
    s.max_evictions_per_loop = 0;
    let d = world(10).run_once(&s, &mut Memory::default(), T0);
    assert_eq!(removed(&d), ["a", "b", "c"], "{d:#?}");
}

#[test]
fn unneeded_nodes_are_no_destinations() {
    // Default unneeded time: `a`, `b` and `c` are unneeded, not yet removed.
    let mut s = Settings::upstream();
    s.max_drain_parallelism = 10;
    let d = world(10).run_once(&s, &mut Memory::default(), T0);
    assert!(d.scale_down.is_empty());
    for n in ["a", "b", "c"] {
        assert!(d.not_destinations.contains(&n.to_string()), "{d:#?}");
    }
}

/// Found by the consolidation property test: scale-down removes `src` (its pod planned onto `mid`) and
/// then `mid` (underutilized still, the pod planned further, onto `far`); `far`, underutilized as the
/// cluster stands, receives that pod, so consolidation may not delete it in the same loop. (Empty
/// nodes are looked at first, as upstream's: `mid` holds a small pod so that `src` comes first.)
#[test]
fn a_node_receiving_a_pod_moved_twice_is_taken_by_no_later_method() {
    let node = |name: &str, cpu: i64| worker(name).sized(resources(cpu, 16 * GIB, 110)).build();
    let mut w = pool("pool", 0, &[]);
    {
        let g = w.group_mut("pool");
        g.target_size = 3;
        g.price_per_hour = Some(0.1);
    }
    let w = w
        .node_of("pool", node("src", 4000))
        .node_of("pool", node("mid", 8000))
        .node_of("pool", node("far", 4000))
        .pod(web("p", 1500).on("src").build())
        .pod(web("q", 100).on("mid").build())
        .pod(web("r", 100).on("far").build());
    let mut s = quick();
    s.consolidation = Consolidation {
        policy: ConsolidationPolicy::WhenEmptyOrUnderutilized,
        after: Duration::ZERO,
    };
    s.max_disruption = Budget::Percent(100.0);
    let d = w.run_once(&s, &mut Memory::default(), T0);
    let mut taken: Vec<&str> = removed(&d);
    taken.sort();
    assert_eq!(taken, ["mid", "src"], "{d:#?}");
    assert!(d.consolidations.is_empty(), "{d:#?}");
    assert!(d.not_destinations.iter().all(|n| n != "far"), "{d:#?}");
}

/// The descheduler's moves stand for its cooldown: a node holding a pod of a workload it moved is kept
/// by scale-down and declined by consolidation, say why, and goes once the caller no longer lists it.
#[test]
fn a_workload_the_descheduler_moved_is_not_moved_again_by_scale_down_or_consolidation() {
    let mut w = world(10);
    w.group_mut("pool").price_per_hour = Some(0.1);
    let moved = w
        .pods
        .iter()
        .find(|p| p.name == "web-a")
        .unwrap()
        .owner_key();
    let mut s = quick();
    s.consolidation = Consolidation {
        policy: ConsolidationPolicy::WhenEmptyOrUnderutilized,
        after: Duration::ZERO,
    };
    s.max_disruption = Budget::Percent(100.0);
    let mut memory = Memory {
        descheduled: [moved].into_iter().collect(),
        ..Memory::default()
    };
    let d = w.run_once(&s, &mut memory, T0);
    assert_eq!(removed(&d), ["b", "c"], "{d:#?}");
    assert!(
        d.unremovable.iter().any(|(n, why)| n == "a"
            && *why
                == Unremovable::Descheduled {
                    pod: "shop/web-a".into()
                }),
        "{d:#?}"
    );
    assert!(d
        .consolidations
        .iter()
        .all(|c| !c.nodes.contains(&"a".into())));
    assert!(
        d.consolidation_declined.iter().any(|(n, why)| n == "a"
            && *why
                == crate::engine::consolidate::Declined::Descheduled {
                    pod: "shop/web-a".into()
                }),
        "{d:#?}"
    );
    // The cooldown over (the caller lists it no more), it goes with the others.
    let d = w.run_once(&s, &mut Memory::default(), T0);
    assert_eq!(removed(&d), ["a", "b", "c"], "{d:#?}");
}
