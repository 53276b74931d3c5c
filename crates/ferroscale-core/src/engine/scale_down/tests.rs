//! Scale-down as an operator sees it: an underutilized node goes once it has been unneeded for the
//! unneeded time and its pods have somewhere to go; busy nodes, min size, the disruption budget, a
//! PodDisruptionBudget, a pod with nowhere to go and the drain parallelism keep nodes, each with its
//! reason. A node the descheduler emptied goes at once, under the same rules.

use crate::engine::decisions::Decisions;
use crate::engine::predicates::Unfit;
use crate::engine::reasons::{Blocker, Pause, Unremovable};
use crate::engine::{Memory, Settings};
use crate::fixtures::{group, pdb, pool, web, worker, TestWorld};
use crate::model::lifecycle::{Budget, DisruptionReason};
use crate::model::InstanceState;

const T0: i64 = 10_000;
/// Upstream's `--scale-down-unneeded-time`.
const UNNEEDED: i64 = 600;

/// `busy` (3 of its 4 cpu asked), `light` (1 cpu, which fits on `busy`) and `empty`.
fn three(min: i32) -> TestWorld {
    pool(
        "pool",
        min,
        &[
            ("busy", &[("hog", 3000)]),
            ("light", &[("web", 1000)]),
            ("empty", &[]),
        ],
    )
}

/// Settings whose disruption budget lets every node of a small group go at once.
fn unbudgeted() -> Settings {
    Settings {
        max_disruption: Budget::Count(10),
        ..Settings::upstream()
    }
}

/// A loop at `T0`, then one the unneeded time later, on the same memory: the second's decisions.
fn after_unneeded_time(world: &TestWorld, s: &Settings) -> Decisions {
    let mut memory = Memory::default();
    world.run_once(s, &mut memory, T0);
    world.run_once(s, &mut memory, T0 + UNNEEDED)
}

fn removed(d: &Decisions) -> Vec<&str> {
    d.scale_down.iter().map(|r| r.node.as_str()).collect()
}

fn kept<'a>(d: &'a Decisions, node: &str) -> &'a Unremovable {
    &d.unremovable
        .iter()
        .find(|(n, _)| n == node)
        .unwrap_or_else(|| panic!("{node} not kept: {d:?}"))
        .1
}

#[test]
fn underutilized_nodes_go_after_the_unneeded_time_and_a_busy_one_stays() {
    let world = three(0);
    let s = unbudgeted();
    let mut memory = Memory::default();
    let d = world.run_once(&s, &mut memory, T0);
    assert!(d.scale_down.is_empty(), "{d:?}");
    let busy = Unremovable::NotUnderutilized {
        utilization: 0.75,
        threshold: 0.5,
        gpu: false,
    };
    assert_eq!(kept(&d, "busy"), &busy);
    let d = world.run_once(&s, &mut memory, T0 + UNNEEDED - 1);
    assert_eq!(
        kept(&d, "light"),
        &Unremovable::NotUnneededLongEnough {
            waited: UNNEEDED - 1,
            needed: UNNEEDED
        }
    );

    let d = world.run_once(&s, &mut memory, T0 + UNNEEDED);
    // Empty nodes first, as upstream's candidates are sorted.
    assert_eq!(removed(&d), ["empty", "light"]);
    let light = &d.scale_down[1];
    assert_eq!(light.evict, ["shop/web"]);
    assert!(!light.reason.empty && d.scale_down[0].reason.empty);
    assert_eq!(light.reason.waited, UNNEEDED);
    assert_eq!(kept(&d, "busy"), &busy);
}

/// Upstream: kubernetes-sigs/karpenter pkg/controllers/disruption (budgets apply to voluntary
/// disruptions) and cluster-autoscaler core/scaledown/planner/planner.go (plain scale-down is capped by
/// --max-scale-down-parallelism and --max-drain-parallelism only).
#[test]
fn the_groups_disruption_budget_and_min_size_keep_nodes() {
    // --max-disruption's default 10% does not slow plain scale-down: both unneeded nodes go.
    let d = after_unneeded_time(&three(0), &Settings::upstream());
    assert_eq!(removed(&d), ["empty", "light"]);
    // A budget the group set does: one at a time.
    let mut budgeted = three(0);
    budgeted.group_mut("pool").lifecycle.disruption_budget = Some(Budget::Count(1));
    let d = after_unneeded_time(&budgeted, &Settings::upstream());
    assert_eq!(removed(&d), ["empty"]);
    assert_eq!(
        kept(&d, "light"),
        &Unremovable::DisruptionBudget {
            group: "pool".into(),
            allowed: 1
        }
    );
    // Its "0" blocks scale-down.
    budgeted.group_mut("pool").lifecycle.disruption_budget = Some(Budget::Count(0));
    let d = after_unneeded_time(&budgeted, &Settings::upstream());
    assert!(removed(&d).is_empty(), "{d:?}");
    let d = after_unneeded_time(&three(2), &unbudgeted());
    assert_eq!(removed(&d), ["empty"]);
    assert_eq!(
        kept(&d, "light"),
        &Unremovable::AtMinSize {
            group: "pool".into()
        }
    );
}

#[test]
fn a_pod_that_may_not_move_or_has_nowhere_to_go_keeps_its_node() {
    let guarded = three(0).pdb(pdb("shop", "web-budget", "web", 0));
    let d = after_unneeded_time(&guarded, &unbudgeted());
    assert_eq!(removed(&d), ["empty"]);
    assert_eq!(
        kept(&d, "light"),
        &Unremovable::Blocked(Blocker::Budget {
            pod: "shop/web".into(),
            namespace: "shop".into(),
            name: "web-budget".into()
        })
    );

    let cramped = pool(
        "pool",
        0,
        &[("busy", &[("hog", 3000)]), ("light", &[("web", 1500)])],
    );
    let d = after_unneeded_time(&cramped, &unbudgeted());
    assert!(d.scale_down.is_empty(), "{d:?}");
    assert_eq!(
        kept(&d, "light"),
        &Unremovable::NoPlaceFor {
            pod: "shop/web".into(),
            why: Some(Unfit::Insufficient("cpu".into()))
        }
    );
}

/// Upstream: core/scaledown/budgets (CropNodes) and processors/scaledowncandidates (empty nodes
/// sorted first, then previously unneeded ones); --max-empty-bulk-delete caps nothing since 1.33.
#[test]
fn empty_nodes_go_first_within_the_parallelism_and_one_node_with_pods_per_loop() {
    let world = pool(
        "pool",
        0,
        &[
            ("busy", &[("hog", 3000)]),
            ("light-1", &[("web-1", 200)]),
            ("light-2", &[("web-2", 200)]),
            ("empty-1", &[]),
            ("empty-2", &[]),
        ],
    );
    let d = after_unneeded_time(&world, &unbudgeted());
    assert_eq!(removed(&d), ["empty-1", "empty-2", "light-1"]);
    assert_eq!(kept(&d, "light-2"), &Unremovable::WaitsForNextLoop);
    // The deprecated --max-empty-bulk-delete caps nothing; --max-scale-down-parallelism caps all.
    let s = Settings {
        max_empty_bulk_delete: 1,
        ..unbudgeted()
    };
    let d = after_unneeded_time(&world, &s);
    assert_eq!(removed(&d), ["empty-1", "empty-2", "light-1"]);
    let s = Settings {
        max_scale_down_parallelism: 2,
        ..unbudgeted()
    };
    let d = after_unneeded_time(&world, &s);
    assert_eq!(removed(&d), ["empty-1", "empty-2"], "{d:?}");
}

/// Upstream: processors/scaledowncandidates/previouscandidates: nodes found unneeded in an earlier
/// loop are looked at before the others (after the empty ones), so they keep their place.
#[test]
fn nodes_found_unneeded_before_are_looked_at_before_the_others() {
    let world = pool(
        "pool",
        0,
        &[
            ("light-1", &[("web-1", 200)]),
            ("light-2", &[("web-2", 200)]),
            ("busy", &[("hog", 3000)]),
        ],
    );
    // No unneeded time: both may go at once, but one drain per loop (--max-drain-parallelism 1).
    let mut s = unbudgeted();
    s.defaults.scale_down_unneeded_time = std::time::Duration::ZERO;
    let d = world.run_once(&s, &mut Memory::default(), T0);
    assert_eq!(removed(&d), ["light-1"], "cluster order: {d:?}");
    let mut memory = Memory::default();
    memory.unneeded_since.insert("light-2".into(), T0 - 60);
    let d = world.run_once(&s, &mut memory, T0);
    assert_eq!(
        removed(&d),
        ["light-2"],
        "unneeded before, looked at first: {d:?}"
    );
    assert_eq!(kept(&d, "light-1"), &Unremovable::WaitsForNextLoop);
}

#[test]
fn scale_down_pauses_after_a_scale_up() {
    let world = three(0);
    let s = unbudgeted();
    let mut memory = Memory::default();
    world.run_once(&s, &mut memory, T0);
    memory.last_scale_up = Some(T0 + 1);
    let d = world.run_once(&s, &mut memory, T0 + UNNEEDED);
    assert!(d.scale_down.is_empty(), "{d:?}");
    assert_eq!(kept(&d, "empty"), &Unremovable::Paused(Pause::AfterAdd));
}

/// Upstream: planner.go unneededNodesLimit. One loop looks for at most 2 × the parallelism more unneeded
/// nodes than the last found, so a big idle cluster is looked at a slice per loop.
#[test]
fn each_loop_finds_at_most_twice_the_parallelism_more_unneeded_nodes() {
    let names: Vec<String> = (0..7).map(|k| format!("idle-{k}")).collect();
    let nodes: Vec<(&str, &[(&str, i64)])> = names.iter().map(|n| (n.as_str(), &[][..])).collect();
    let world = pool("pool", 0, &nodes);
    let s = Settings {
        max_scale_down_parallelism: 1,
        ..Settings::upstream()
    };
    let mut memory = Memory::default();
    let mut found = Vec::new();
    for k in 0..4 {
        world.run_once(&s, &mut memory, T0 + k);
        found.push(memory.unneeded_since.len());
    }
    assert_eq!(found, [2, 4, 6, 7]);

    // Its upper bound is the parallelism per loop of one unneeded time, loops `--scan-interval` apart,
    // plus the buffer: with 5m loops and the 10m unneeded time, 1 × 2 + 1.
    let slow = Settings {
        scan_interval: std::time::Duration::from_secs(300),
        ..s
    };
    let mut memory = Memory::default();
    let found: Vec<usize> = (0..4)
        .map(|k| {
            world.run_once(&slow, &mut memory, T0 + k);
            memory.unneeded_since.len()
        })
        .collect();
    assert_eq!(found, [2, 3, 3, 3]);
}

/// Upstream: eligibility.go applies the utilization threshold to unready nodes too; an unready node
/// only waits the unready time instead of the unneeded time.
#[test]
fn an_unready_busy_node_is_not_underutilized() {
    let mut world = pool("pool", 0, &[("busy", &[("hog", 3000)]), ("idle", &[])]);
    for n in &mut world.nodes {
        n.ready = false;
    }
    let d = after_unneeded_time(&world, &unbudgeted());
    assert!(
        matches!(kept(&d, "busy"), Unremovable::NotUnderutilized { .. }),
        "{d:?}"
    );
    assert!(!matches!(
        kept(&d, "idle"),
        Unremovable::NotUnderutilized { .. }
    ));
}

/// Upstream: planner.go with its RemainingPdbTracker. A budget allowing one disruption lets one of two
/// nodes whose pods it covers be unneeded in a loop, not both.
#[test]
fn a_disruption_budget_is_used_up_across_the_nodes_of_one_loop() {
    let world = pool(
        "pool",
        0,
        &[
            ("a", &[("web-1", 500)]),
            ("b", &[("web-2", 500)]),
            ("big", &[("hog", 1000)]),
        ],
    )
    .pdb(pdb("shop", "web", "web", 1));
    let d = after_unneeded_time(&world, &unbudgeted());
    assert_eq!(removed(&d), ["a"], "{d:?}");
    assert!(
        matches!(kept(&d, "b"), Unremovable::Blocked(Blocker::Budget { .. })),
        "{d:?}"
    );
}

/// `a` (its web pod at 62%, above the threshold) and `b` (a hog of `hog` millicores).
fn emptied_a(hog: i64) -> TestWorld {
    pool(
        "pool",
        0,
        &[("a", &[("web", 2500)]), ("b", &[("hog", hog)])],
    )
}

/// A loop at `T0` with the descheduler having emptied `a` (and a node since gone).
fn descheduled(world: &TestWorld, s: &Settings) -> (Decisions, Memory) {
    let mut memory = Memory::default();
    memory.set_emptying(&["a".into(), "gone".into()], T0 - 5);
    let d = world.run_once(s, &mut memory, T0);
    (d, memory)
}

#[test]
fn a_node_the_descheduler_emptied_goes_at_once_through_scale_down_with_its_reason() {
    let world = emptied_a(1000);
    // Ordinary scale-down keeps it: it is not underutilized.
    let d = after_unneeded_time(&world, &Settings::upstream());
    assert!(matches!(
        kept(&d, "a"),
        Unremovable::NotUnderutilized { .. }
    ));
    let (d, memory) = descheduled(&world, &Settings::upstream());
    assert_eq!(removed(&d), ["a"], "{d:?}");
    let a = &d.scale_down[0];
    assert_eq!(a.evict, ["shop/web"]);
    assert_eq!(a.reason.disruption, Some(DisruptionReason::Descheduled));
    assert_eq!(a.reason.waited, 5);
    assert_eq!(a.reason.to_string(), "emptied by the descheduler");
    assert_eq!(d.disruptions.len(), 1);
    assert_eq!(d.disruptions[0].node, "a");
    assert_eq!(d.disruptions[0].reason, DisruptionReason::Descheduled);
    assert!(d.disruptions[0].notice.is_none());
    // The node gone is forgotten; `a` stays asked for until the next descheduling cycle says otherwise.
    assert_eq!(memory.emptying.keys().collect::<Vec<_>>(), ["a"]);
}

#[test]
fn a_budget_a_do_not_disrupt_pod_or_no_room_keeps_a_node_the_descheduler_emptied() {
    // `--max-disruption` counts, as for any voluntary disruption.
    let s = Settings {
        max_disruption: Budget::Count(0),
        ..Settings::upstream()
    };
    let (d, _) = descheduled(&emptied_a(1000), &s);
    assert!(removed(&d).is_empty(), "{d:?}");
    assert_eq!(
        kept(&d, "a"),
        &Unremovable::DisruptionBudget {
            group: "pool".into(),
            allowed: 0
        }
    );
    assert!(d.disruptions.is_empty());
    // Kept for now, it is soft-tainted so that the scheduler prefers the other nodes meanwhile.
    assert!(d.soft_taint.contains(&"a".to_string()), "{d:?}");

    let mut guarded = emptied_a(1000);
    let web = guarded.pods.iter_mut().find(|p| p.name == "web").unwrap();
    std::sync::Arc::make_mut(web).meta.do_not_disrupt = true;
    let (d, _) = descheduled(&guarded, &Settings::upstream());
    assert!(removed(&d).is_empty(), "{d:?}");
    assert_eq!(
        kept(&d, "a"),
        &Unremovable::Blocked(Blocker::DoNotDisrupt {
            pod: "shop/web".into()
        })
    );

    // The hog grew since the plan: the web pod fits nowhere else now.
    let (d, _) = descheduled(&emptied_a(2000), &Settings::upstream());
    assert!(removed(&d).is_empty(), "{d:?}");
    assert_eq!(
        kept(&d, "a"),
        &Unremovable::NoPlaceFor {
            pod: "shop/web".into(),
            why: Some(Unfit::Insufficient("cpu".into()))
        }
    );
}

#[test]
fn the_gpu_minimum_keeps_a_gpu_node_of_its_type() {
    let mut world = pool(
        "pool",
        0,
        &[("busy", &[("hog", 3000)]), ("gpu-1", &[]), ("gpu-2", &[])],
    );
    for n in world.nodes.iter_mut().filter(|n| n.name.starts_with("gpu")) {
        n.labels
            .insert(crate::labels::GPU.into(), "nvidia-tesla-t4".into());
        n.allocatable
            .extended
            .insert(crate::labels::NVIDIA_GPU.into(), 2);
    }
    let free = after_unneeded_time(&world, &unbudgeted());
    assert_eq!(removed(&free), ["gpu-1", "gpu-2"], "{free:?}");

    let s = Settings {
        gpu_total: vec![crate::engine::limits::GpuLimit {
            gpu_type: "nvidia-tesla-t4".into(),
            min: 2,
            max: 10,
        }],
        ..unbudgeted()
    };
    let d = after_unneeded_time(&world, &s);
    assert_eq!(removed(&d), ["gpu-1"], "{d:?}");
    assert_eq!(
        kept(&d, "gpu-2"),
        &Unremovable::MinimalResourceLimit {
            resource: crate::engine::limits::Resource::Gpu
        }
    );
    assert_eq!(
        kept(&d, "gpu-2").to_string(),
        "the cluster would go below the minimum of --gpu-total"
    );
}

/// `slice` of four idle nodes (one running `busy`'s pod when `blocked`) that scales all or nothing,
/// and a `pool` node with room for whatever they hold.
fn atomic_slice(blocked: bool) -> TestWorld {
    let hog: &[(&str, i64)] = if blocked { &[("hog", 3000)] } else { &[] };
    let mut w = pool(
        "slice",
        0,
        &[
            ("s-1", &[]),
            ("s-2", &[("tiny", 100)]),
            ("s-3", &[]),
            ("s-4", hog),
        ],
    );
    w.group_mut("slice").options = Some(crate::model::AutoscalingOptions {
        zero_or_max_node_scaling: Some(true),
        ..Default::default()
    });
    // A busy node of another group, at its min size, with room for the tiny pod.
    let spare = group("other")
        .sizes(1, 10, 1)
        .instance("spare", InstanceState::Running);
    w.group(spare.build())
        .node_of("other", worker("spare").build())
        .pod(web("load", 2500).on("spare").build())
}

/// Upstream: core/scaledown/budgets/budgets_test.go and processors/nodes AtomicResizeFilteringProcessor:
/// an atomic group goes whole or not at all, each of its nodes kept for AtomicScaleDownFailed.
#[test]
fn an_atomic_group_goes_whole_or_not_at_all() {
    let mut s = unbudgeted();
    s.max_drain_parallelism = 10;
    let d = after_unneeded_time(&atomic_slice(false), &s);
    let mut gone = removed(&d);
    gone.sort();
    assert_eq!(gone, ["s-1", "s-2", "s-3", "s-4"], "{d:?}");
    // One node busy: none goes, where plain scale-down would take three.
    let d = after_unneeded_time(&atomic_slice(true), &s);
    assert!(removed(&d).is_empty(), "{d:?}");
    let failed = Unremovable::AtomicScaleDownFailed {
        group: "slice".into(),
    };
    for n in ["s-1", "s-2", "s-3"] {
        assert_eq!(kept(&d, n), &failed, "{n}");
    }
    assert!(matches!(
        kept(&d, "s-4"),
        Unremovable::NotUnderutilized { .. }
    ));
    let mut plain = atomic_slice(true);
    plain.group_mut("slice").options = None;
    assert_eq!(after_unneeded_time(&plain, &s).scale_down.len(), 3);
    // The parallelism allows three removals: as upstream's budgets, one whole slice may overflow it.
    s.max_scale_down_parallelism = 3;
    let d = after_unneeded_time(&atomic_slice(false), &s);
    assert_eq!(removed(&d).len(), 4, "{d:?}");
    // Not when the caps are spent already: the group waits rather than going in part.
    let mut busy = atomic_slice(false);
    for k in 1..=3 {
        busy.removing.insert(format!("elsewhere-{k}"), false);
    }
    let d = after_unneeded_time(&busy, &s);
    assert!(removed(&d).is_empty(), "{d:?}");
    assert_eq!(kept(&d, "s-1"), &Unremovable::ParallelismReached);
}
