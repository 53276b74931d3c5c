//! Replacements as an operator sees them: a drifted node gets a surge first and goes only once a new node
//! has joined; expired nodes are replaced oldest first within the group's disruption budget and its max
//! size; a surge never delivered is given up and asked for again.

use std::time::Duration;

use crate::engine::decisions::{Decisions, Replacement, ScaleUp};
use crate::engine::reasons::{Due, Refusal, Unremovable};
use crate::engine::{Memory, Settings};
use crate::fixtures::{pool, worker, TestWorld};
use crate::model::drift::DriftPolicy;
use crate::model::lifecycle::{Budget, DisruptionReason};
use crate::model::InstanceState;

const T0: i64 = 10_000;

/// Group `pool` of one node, `old`, launched from revision 1 while the group launches revision 2; the
/// group replaces drifted nodes (its own `drift: Replace`).
fn drifted() -> TestWorld {
    let mut world = drifted_off();
    world.group_mut("pool").lifecycle.drift = Some(DriftPolicy::Replace);
    world
}

/// The same, without opting in.
fn drifted_off() -> TestWorld {
    let mut world = pool("pool", 0, &[("old", &[("web", 1000)])]);
    let g = world.group_mut("pool");
    g.lifecycle.revision = Some("lt-1:2".into());
    g.lifecycle
        .instance_revisions
        .insert("aws:///z/old".into(), "lt-1:1".into());
    world
}

/// The cloud grew `pool` by the surge and its node `new` joined, ready, launched from the current
/// revision: created at `created` by the API server's clock, first seen by the loop at `seen`.
fn surge_joined(mut world: TestWorld, created: i64, seen: i64) -> TestWorld {
    let g = world.group_mut("pool");
    g.target_size = 2;
    g.instances.push(crate::model::Instance {
        id: "aws:///z/new".into(),
        state: InstanceState::Running,
        error: None,
    });
    g.lifecycle
        .instance_revisions
        .insert("aws:///z/new".into(), "lt-1:2".into());
    world.node_of("pool", worker("new").created(created).seen(seen).build())
}

fn surges(d: &Decisions) -> Vec<(&str, i32, Vec<&str>)> {
    d.replacements
        .iter()
        .map(|r| {
            let nodes = r.for_nodes.iter().map(String::as_str).collect();
            (r.group.as_str(), r.delta, nodes)
        })
        .collect()
}

#[test]
fn a_drifted_node_is_surged_first_and_goes_once_the_new_node_has_joined() {
    let s = Settings::upstream();
    let mut memory = Memory::default();
    let world = drifted();
    let d = world.run_once(&s, &mut memory, T0);
    assert_eq!(
        d.scale_up,
        [ScaleUp {
            group: "pool".into(),
            delta: 1,
            pods: vec![],
        }]
    );
    assert_eq!(
        d.replacements,
        [Replacement {
            group: "pool".into(),
            delta: 1,
            for_nodes: vec!["old".into()],
        }]
    );
    assert!(
        d.scale_down.is_empty(),
        "nothing goes before the surge joins"
    );
    assert_eq!(memory.last_surge, Some(T0));
    assert!(
        memory.scale_down_paused(&s, T0 + 1).is_some(),
        "a surge pauses scale-down too"
    );
    assert!(
        memory.consolidation_paused(&s, T0 + 1).is_none(),
        "but not consolidation"
    );

    // Asked again while the surge is on its way: nothing more.
    let d = world.run_once(&s, &mut memory, T0 + 5);
    assert!(d.scale_up.is_empty() && d.scale_down.is_empty(), "{d:?}");

    // The cloud grew the group and the new node joined, ready, launched from the current revision.
    let world = surge_joined(world, T0 + 5, T0 + 5);
    let d = world.run_once(&s, &mut memory, T0 + 10);
    assert!(d.scale_up.is_empty(), "{d:?}");
    assert_eq!(d.scale_down.len(), 1, "{d:?}");
    let old = &d.scale_down[0];
    assert_eq!((old.node.as_str(), old.group.as_str()), ("old", "pool"));
    assert_eq!(old.evict, ["shop/web"]);
    assert_eq!(old.reason.disruption, Some(DisruptionReason::Drift));
    assert_eq!(d.disruptions.len(), 1);
    assert_eq!(d.disruptions[0].reason, DisruptionReason::Drift);
}

/// Drift is opt-in, as consolidation is: a group that says nothing, under the default `--drift Never`,
/// keeps its drifted node and the loop says why; the flag opts every group in, and a group's own
/// `Never` overrides the flag.
#[test]
fn a_drifted_node_stays_unless_its_group_or_the_flag_opts_in() {
    let world = drifted_off();
    let d = world.run_once(&Settings::upstream(), &mut Memory::default(), T0);
    assert!(d.scale_up.is_empty() && d.replacements.is_empty(), "{d:?}");
    assert_eq!(
        d.due,
        [(
            "old".to_string(),
            Due::DriftNotEnabled {
                group: "pool".into()
            }
        )]
    );

    let every_group = Settings {
        drift: DriftPolicy::Replace,
        ..Settings::upstream()
    };
    let d = world.run_once(&every_group, &mut Memory::default(), T0);
    assert_eq!(surges(&d), [("pool", 1, vec!["old"])]);
    assert_eq!(
        d.due,
        [("old".to_string(), Due::Replacing(DisruptionReason::Drift))]
    );

    let mut never = drifted_off();
    never.group_mut("pool").lifecycle.drift = Some(DriftPolicy::Never);
    let d = never.run_once(&every_group, &mut Memory::default(), T0);
    assert!(
        d.replacements.is_empty(),
        "the group's own Never wins: {d:?}"
    );
}

/// The node's own `karpenter.sh/do-not-disrupt` keeps it from replacement, drifted or expired, and
/// the loop says so; its neighbour without the annotation is replaced.
#[test]
fn a_node_annotated_do_not_disrupt_is_not_replaced() {
    let mut world = pool("pool", 0, &[("kept", &[]), ("other", &[])]);
    world.nodes[0].do_not_disrupt = true;
    world.nodes[0].created = 0;
    world.nodes[1].created = 10;
    let s = Settings {
        node_max_lifetime: Some(Duration::from_secs(3600)),
        max_disruption: Budget::Count(2),
        ..Settings::upstream()
    };
    let d = world.run_once(&s, &mut Memory::default(), 100_000);
    assert_eq!(surges(&d), [("pool", 1, vec!["other"])]);
    assert!(d
        .due
        .contains(&("kept".into(), Due::DoNotDisrupt(DisruptionReason::Expired))));
}

#[test]
fn expired_nodes_are_replaced_oldest_first_within_the_budget_and_below_max() {
    let mut world = pool("pool", 0, &[("a", &[]), ("b", &[]), ("c", &[])]);
    for (k, n) in world.nodes.iter_mut().enumerate() {
        n.created = 10 * (2 - k as i64);
    }
    let s = Settings {
        node_max_lifetime: Some(Duration::from_secs(86_400)),
        ..Settings::upstream()
    };
    let now = 100_000;
    // 10% of three nodes: one at a time, the oldest (c).
    let d = world.run_once(&s, &mut Memory::default(), now);
    assert_eq!(surges(&d), [("pool", 1, vec!["c"])]);

    let two = Settings {
        max_disruption: Budget::Count(2),
        ..s.clone()
    };
    let d = world.run_once(&two, &mut Memory::default(), now);
    assert_eq!(surges(&d), [("pool", 2, vec!["c", "b"])]);

    world.group_mut("pool").max_size = 4;
    let d = world.run_once(&two, &mut Memory::default(), now);
    assert_eq!(surges(&d), [("pool", 1, vec!["c"])], "one node of room");

    world.group_mut("pool").max_size = 3;
    let d = world.run_once(&two, &mut Memory::default(), now);
    assert!(d.replacements.is_empty(), "no room for a surge: {d:?}");
}

/// A surge never delivered backs its group off as a failed scale-up does (upstream's
/// `RegisterFailedScaleUp` for capacity that never came): it is asked for again only once the backoff
/// is over, not every provision time forever.
#[test]
fn a_surge_never_delivered_backs_its_group_off_then_is_asked_again() {
    let s = Settings::upstream();
    let mut memory = Memory::default();
    let world = drifted();
    world.run_once(&s, &mut memory, T0);
    assert!(memory.replacing.contains_key("old"));
    let d = world.run_once(&s, &mut memory, T0 + 900);
    assert!(d.scale_up.is_empty(), "still within the provision time");
    let d = world.run_once(&s, &mut memory, T0 + 901);
    assert!(d.scale_up.is_empty(), "{d:?}");
    assert!(memory.replacing.is_empty(), "given up");
    assert_eq!(memory.backed_off("pool", T0 + 901), Some(T0 + 901 + 300));
    let d = world.run_once(&s, &mut memory, T0 + 902);
    assert!(
        d.scale_up.is_empty(),
        "not while the group backs off: {d:?}"
    );
    assert!(
        d.unremovable.iter().any(|(n, why)| n == "old"
            && matches!(why, Unremovable::SurgeRefused(Refusal::BackedOff { .. }))),
        "{d:?}"
    );
    let d = world.run_once(&s, &mut memory, T0 + 901 + 300);
    assert_eq!(surges(&d), [("pool", 1, vec!["old"])]);
    assert!(d.scale_down.is_empty(), "the old node stays meanwhile");
}

/// Upstream: kubernetes-sigs/karpenter pkg/controllers/disruption/helpers.go (BuildDisruptionBudgetMapping:
/// a budget of 0 allows no disruption) and cluster-autoscaler's `scale-down-disabled` annotation
/// (core/scaledown/eligibility/eligibility.go), which keeps a node from every voluntary removal.
#[test]
fn a_budget_of_zero_and_scale_down_disabled_keep_drifted_nodes() {
    let s = Settings::upstream();
    let mut world = drifted();
    world.group_mut("pool").lifecycle.disruption_budget = Some(Budget::Count(0));
    let d = world.run_once(&s, &mut Memory::default(), T0);
    assert!(d.replacements.is_empty() && d.scale_up.is_empty(), "{d:?}");

    let mut world = drifted();
    world.nodes[0].scale_down_disabled = true;
    let d = world.run_once(&s, &mut Memory::default(), T0);
    assert!(d.replacements.is_empty() && d.scale_up.is_empty(), "{d:?}");

    // Neither: the drifted node is replaced.
    let d = drifted().run_once(&s, &mut Memory::default(), T0);
    assert_eq!(surges(&d), [("pool", 1, vec!["old"])]);
}

#[test]
fn a_surge_counts_when_it_joins_whatever_the_api_servers_clock_says_of_its_creation() {
    let s = Settings::upstream();
    // The API server's clock an hour behind or ahead of the loop's: the creation timestamp says the
    // new node was created before the surge was asked, or far after; the loop saw it join after.
    for skew in [-3600, 3600] {
        let mut memory = Memory::default();
        let world = drifted();
        let d = world.run_once(&s, &mut memory, T0);
        assert_eq!(surges(&d), [("pool", 1, vec!["old"])]);
        let world = surge_joined(world, T0 + 5 + skew, T0 + 5);
        // Past the provision time: a surge that had not joined would be asked for again.
        let d = world.run_once(&s, &mut memory, T0 + 1000);
        assert!(d.replacements.is_empty(), "skew {skew}: {d:?}");
        assert!(d.scale_up.is_empty(), "skew {skew}: {d:?}");
        let gone: Vec<&str> = d.scale_down.iter().map(|r| r.node.as_str()).collect();
        assert_eq!(gone, ["old"], "skew {skew}");
    }
}

/// With scale-down's waits off, the surge node joins empty, so scale-down could take it in the loop
/// the old node goes: it does not, since the drifted node's pod needs it (replacement is decided before
/// scale-down, which sees the old node going).
#[test]
fn a_surge_node_that_joined_empty_is_kept_for_the_old_nodes_pods() {
    let mut s = Settings::upstream();
    s.defaults.scale_down_unneeded_time = Duration::ZERO;
    s.scale_down_delay_after_add = Duration::ZERO;
    let mut memory = Memory::default();
    let world = drifted();
    let d = world.run_once(&s, &mut memory, T0);
    assert_eq!(surges(&d), [("pool", 1, vec!["old"])]);
    let world = surge_joined(world, T0 + 5, T0 + 5);
    let d = world.run_once(&s, &mut memory, T0 + 10);
    let gone: Vec<&str> = d.scale_down.iter().map(|x| x.node.as_str()).collect();
    assert_eq!(gone, ["old"], "{d:#?}");
    assert!(
        d.unremovable.iter().any(|(n, _)| n == "new"),
        "the new node holds the old node's pod: {d:#?}"
    );
}

/// Every surge obeys `--gpu-total` as scale-up does: the old GPU node still runs while its new one
/// comes up, so a maximum of the cluster's GPUs leaves no room for a replacement.
#[test]
fn a_surge_stays_under_the_gpu_maximum() {
    use crate::engine::limits::{GpuLimit, Resource};
    use crate::labels;
    let mut world = drifted();
    let g = world.group_mut("pool");
    let t = std::sync::Arc::make_mut(&mut g.template);
    t.labels
        .insert(labels::GPU.into(), "nvidia-tesla-t4".into());
    t.allocatable.extended.insert(labels::NVIDIA_GPU.into(), 1);
    let old = world.nodes.iter_mut().find(|n| n.name == "old").unwrap();
    old.labels
        .insert(labels::GPU.into(), "nvidia-tesla-t4".into());
    old.allocatable
        .extended
        .insert(labels::NVIDIA_GPU.into(), 1);
    let with_max = |max| Settings {
        gpu_total: vec![GpuLimit {
            gpu_type: "nvidia-tesla-t4".into(),
            min: 0,
            max,
        }],
        ..Settings::upstream()
    };
    let d = world.run_once(&with_max(2), &mut Memory::default(), T0);
    assert_eq!(surges(&d), [("pool", 1, vec!["old"])], "{d:?}");

    let d = world.run_once(&with_max(1), &mut Memory::default(), T0);
    assert!(d.replacements.is_empty(), "{d:?}");
    assert!(
        d.unremovable.iter().any(|(n, why)| n == "old"
            && *why
                == Unremovable::SurgeRefused(Refusal::ResourceLimits {
                    exceeded: vec![Resource::Gpu]
                })),
        "{d:?}"
    );
}
