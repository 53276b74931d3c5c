use std::time::Duration;

use crate::engine::decisions::ConsolidationAction;
use crate::engine::{Decisions, Memory, Settings};
use crate::fixtures::{group, node, pod, resources, TestWorld, GIB};
use crate::labels;
use crate::model::consolidation::{Consolidation, ConsolidationPolicy};
use crate::model::lifecycle::{Budget, DisruptionReason, Window};
use crate::model::workload::Pod;
use crate::model::NodeGroup;

use super::Declined;
use crate::engine::reasons::Unremovable;

pub(super) const NOW: i64 = 100_000;

/// A group of `cpus`-core nodes of `ty` at `price` an hour, sized 0..10 at `target`.
pub(super) fn priced(id: &str, ty: &str, cpus: i64, price: f64, target: i32) -> NodeGroup {
    group(id)
        .sizes(0, 10, target)
        .price(price)
        .template(
            node(format!("{id}-template"))
                .labels(&[(labels::INSTANCE_TYPE, ty), (labels::ZONE, "us-east-1a")])
                .sized(resources(cpus * 1000, 64 * GIB, 110))
                .template(),
        )
        .build()
}

/// A ready node `name` of `cpus` cores and type `ty`.
pub(super) fn machine(name: &str, ty: &str, cpus: i64) -> crate::model::workload::Node {
    node(name)
        .labels(&[(labels::INSTANCE_TYPE, ty), (labels::ZONE, "us-east-1a")])
        .hostname()
        .sized(resources(cpus * 1000, 64 * GIB, 110))
        .ready()
        .build()
}

/// A ReplicaSet pod of `cpus` cores on `node`.
pub(super) fn app(name: &str, node: &str, cpus: i64) -> Pod {
    pod("shop", name)
        .on(node)
        .requests(resources(cpus * 1000, GIB, 1))
        .controller("ReplicaSet")
        .build()
}

/// Consolidation on for every group, budgets wide open.
pub(super) fn consolidating() -> Settings {
    Settings {
        consolidation: Consolidation {
            policy: ConsolidationPolicy::WhenEmptyOrUnderutilized,
            after: Duration::from_secs(600),
        },
        max_disruption: Budget::Percent(100.0),
        ..Settings::upstream()
    }
}

/// Three m5.4xlarge nodes ($0.768/h) each running one 9-core pod that fits no other of them, and two
/// groups with no node yet: c6a.4xlarge (16 cores, $0.612/h) and c6a.8xlarge (32 cores, $1.224/h).
fn three_half_empty() -> TestWorld {
    let mut w = TestWorld::default()
        .group(priced("m5", "m5.4xlarge", 16, 0.768, 3))
        .group(priced("c6a4", "c6a.4xlarge", 16, 0.612, 0))
        .group(priced("c6a8", "c6a.8xlarge", 32, 1.224, 0));
    for k in 1..=3 {
        let name = format!("m-{k}");
        w = w.node_of("m5", machine(&name, "m5.4xlarge", 16)).pod(app(
            &format!("web-{k}"),
            &name,
            9,
        ));
    }
    w
}

pub(super) fn declined<'a>(d: &'a Decisions, node: &str) -> Vec<&'a Declined> {
    d.consolidation_declined
        .iter()
        .filter(|(n, _)| n == node)
        .map(|(_, why)| why)
        .collect()
}

#[test]
fn three_half_empty_nodes_are_replaced_by_one_cheaper_node_new_capacity_first() {
    let mut world = three_half_empty();
    let settings = consolidating();
    let mut memory = Memory::default();
    let d = world.run_once(&settings, &mut memory, NOW);
    assert_eq!(d.consolidations.len(), 1, "{d:#?}");
    let plan = &d.consolidations[0];
    assert_eq!(plan.action, ConsolidationAction::Replace);
    assert_eq!(plan.nodes, ["m-1", "m-2", "m-3"]);
    assert_eq!(plan.into.len(), 1);
    assert_eq!(
        (plan.into[0].group.as_str(), plan.into[0].count),
        ("c6a8", 1)
    );
    assert!((plan.savings_per_hour - (3.0 * 0.768 - 1.224)).abs() < 1e-9);
    assert_eq!(plan.pods_evicted.len(), 3);
    // Surge first: the new node is asked for, no old node goes yet.
    assert_eq!(d.scale_up.len(), 1);
    assert_eq!(
        (d.scale_up[0].group.as_str(), d.scale_up[0].delta),
        ("c6a8", 1)
    );
    assert_eq!(d.replacements[0].for_nodes, ["m-1", "m-2", "m-3"]);
    assert!(d.scale_down.is_empty());

    // While the new node is on its way, nothing else happens and the old nodes stay.
    world.group_mut("c6a8").target_size = 1;
    let d = world.run_once(&settings, &mut memory, NOW + 60);
    assert!(
        d.scale_down.is_empty() && d.consolidations.is_empty(),
        "{d:#?}"
    );
    assert_eq!(d.consolidation_waits, Some(super::Waits::InProgress));

    // Once it joined and is ready, the old nodes drain, as disruptions of reason consolidation, one
    // a loop: `--max-drain-parallelism` (1) holds for consolidation as for scale-down, and the others
    // wait for a later loop (said why), their plan kept.
    let mut new = machine("c-1", "c6a.8xlarge", 32);
    new.seen = NOW + 120;
    world = world.node_of("c6a8", new);
    let mut gone = Vec::new();
    for (k, at) in [NOW + 180, NOW + 190, NOW + 200].into_iter().enumerate() {
        let d = world.run_once(&settings, &mut memory, at);
        assert_eq!(d.scale_down.len(), 1, "loop {k}: {d:#?}");
        assert!(d
            .disruptions
            .iter()
            .all(|x| x.reason == DisruptionReason::Consolidation));
        let kept = d
            .consolidation_declined
            .iter()
            .filter(|(_, why)| *why == super::Declined::Parallelism)
            .count();
        assert_eq!(kept, 2 - k, "loop {k}: {d:#?}");
        gone.push(d.scale_down[0].node.clone());
        world.nodes.retain(|n| n.name != d.scale_down[0].node);
        world.group_mut("m5").target_size -= 1;
    }
    assert_eq!(gone, ["m-1", "m-2", "m-3"]);
    assert!(memory.consolidating.is_empty());
}

/// Without scale-down's waits, scale-down never takes the room a replacement's old nodes' pods go to:
/// here it would take m-4 (half used), whose pod fits only on the new node the old nodes' pods need.
#[test]
fn scale_down_waits_while_a_replacement_is_under_way() {
    let mut world = three_half_empty()
        .node_of("m5", machine("m-4", "m5.4xlarge", 16))
        .pod(app("half", "m-4", 8));
    world.group_mut("m5").target_size = 4;
    let mut settings = consolidating();
    settings.defaults.scale_down_unneeded_time = Duration::ZERO;
    settings.scale_down_delay_after_add = Duration::ZERO;
    settings.consolidation_max_set = 3;
    settings.max_drain_parallelism = 3;
    let mut memory = Memory::default();
    let d = world.run_once(&settings, &mut memory, NOW);
    assert_eq!(d.consolidations[0].nodes, ["m-1", "m-2", "m-3"], "{d:#?}");
    world.group_mut("c6a8").target_size = 1;
    let mut new = machine("c-1", "c6a.8xlarge", 32);
    new.seen = NOW + 60;
    world = world.node_of("c6a8", new);
    let d = world.run_once(&settings, &mut memory, NOW + 60);
    let mut gone: Vec<&str> = d.scale_down.iter().map(|s| s.node.as_str()).collect();
    gone.sort();
    assert_eq!(gone, ["m-1", "m-2", "m-3"], "{d:#?}");
    let m4 = d
        .unremovable
        .iter()
        .find(|(n, _)| n == "m-4")
        .map(|(_, why)| why);
    // The old nodes' pods hold their room on the new node (held nodes are simulated first), so m-4's
    // pod fits nowhere: it stays, whatever the pause.
    assert!(
        matches!(m4, Some(Unremovable::NoPlaceFor { pod, .. }) if pod == "shop/half"),
        "{d:#?}"
    );
    assert!(memory.consolidating.is_empty());
}

/// In the loop a replacement's old nodes are retired, their pods are not yet where they will run:
/// no new plan is made that could count on the same room (here, deleting the fourth node onto the
/// new one), even with scale-down's cooldown off.
#[test]
fn no_new_plan_while_old_nodes_are_retired() {
    let mut world = three_half_empty()
        .node_of("m5", machine("m-4", "m5.4xlarge", 16))
        .pod(app("web-4", "m-4", 9));
    world.group_mut("m5").target_size = 4;
    let mut settings = consolidating();
    settings.scale_down_delay_after_add = Duration::ZERO;
    settings.consolidation_max_set = 3;
    settings.max_drain_parallelism = 3;
    let mut memory = Memory::default();
    let d = world.run_once(&settings, &mut memory, NOW);
    assert_eq!(d.consolidations[0].nodes, ["m-1", "m-2", "m-3"], "{d:#?}");
    world.group_mut("c6a8").target_size = 1;
    let mut new = machine("c-1", "c6a.8xlarge", 32);
    new.seen = NOW + 60;
    world = world.node_of("c6a8", new);
    let d = world.run_once(&settings, &mut memory, NOW + 120);
    assert_eq!(d.scale_down.len(), 3, "{d:#?}");
    assert!(d.consolidations.is_empty(), "{d:#?}");
    assert_eq!(d.consolidation_waits, Some(super::Waits::Retiring));
}

/// The new node joins with most of its room taken meanwhile (a pod bound there first): the old
/// nodes' pods no longer fit, so they stay, declined, and are no candidates again for `after`.
#[test]
fn a_new_node_whose_room_was_taken_does_not_free_the_old_ones() {
    let mut world = three_half_empty();
    let settings = consolidating();
    let mut memory = Memory::default();
    let d = world.run_once(&settings, &mut memory, NOW);
    assert_eq!(d.consolidations.len(), 1, "{d:#?}");
    world.group_mut("c6a8").target_size = 1;
    let mut new = machine("c-1", "c6a.8xlarge", 32);
    new.seen = NOW + 60;
    world = world.node_of("c6a8", new).pod(app("hog", "c-1", 20));
    let d = world.run_once(&settings, &mut memory, NOW + 120);
    assert!(
        d.scale_down.is_empty() && d.disruptions.is_empty(),
        "{d:#?}"
    );
    assert_eq!(
        declined(&d, "m-1"),
        [&Declined::RoomTaken {
            group: "c6a8".into()
        }]
    );
    assert!(memory.consolidating.is_empty() && memory.surge_claimed.is_empty());
    let d = world.run_once(&settings, &mut memory, NOW + 180);
    assert!(d.consolidations.is_empty(), "{d:#?}");
}

/// One node at $1/h with a 9-core pod, and a group whose 16-core nodes cost `price`.
pub(super) fn one_node(price: f64) -> TestWorld {
    TestWorld::default()
        .group(priced("a", "m5.4xlarge", 16, 1.0, 1))
        .group(priced("b", "m6a.4xlarge", 16, price, 0))
        .node_of("a", machine("a-1", "m5.4xlarge", 16))
        .pod(app("web", "a-1", 9))
}

#[test]
fn a_five_percent_saving_is_declined_at_the_default_and_taken_at_three_percent() {
    let world = one_node(0.95);
    let d = world.run_once(&consolidating(), &mut Memory::default(), NOW);
    assert!(d.consolidations.is_empty(), "{d:#?}");
    assert!(
        matches!(declined(&d, "a-1")[..], [Declined::SavingTooSmall { min_share, .. }] if *min_share == 0.1),
        "{d:#?}"
    );
    let settings = Settings {
        consolidation_min_savings: 0.03,
        ..consolidating()
    };
    let d = world.run_once(&settings, &mut Memory::default(), NOW);
    assert_eq!(d.consolidations.len(), 1, "{d:#?}");
    assert_eq!(d.consolidations[0].into[0].group, "b");
    // And the per-pod floor: $0.05/h saved for one pod is below $0.10 a pod.
    let settings = Settings {
        consolidation_min_savings_per_pod: 0.1,
        ..settings
    };
    let d = world.run_once(&settings, &mut Memory::default(), NOW);
    assert!(d.consolidations.is_empty());
    assert!(matches!(
        declined(&d, "a-1")[..],
        [Declined::SavingPerPodTooSmall { pods: 1, .. }]
    ));
}

#[test]
fn a_do_not_disrupt_pod_keeps_its_node() {
    let mut world = one_node(0.5);
    let p = std::sync::Arc::make_mut(&mut world.pods[0]);
    p.meta.do_not_disrupt = true;
    let d = world.run_once(&consolidating(), &mut Memory::default(), NOW);
    assert!(
        d.consolidations.is_empty() && d.scale_up.is_empty(),
        "{d:#?}"
    );
    assert_eq!(
        declined(&d, "a-1"),
        [&Declined::DoNotDisrupt {
            pod: "shop/web".into()
        }]
    );
}

#[test]
fn a_node_changed_within_after_is_no_candidate() {
    let mut world = one_node(0.5);
    std::sync::Arc::make_mut(&mut world.pods[0]).meta.created = NOW - 60;
    let d = world.run_once(&consolidating(), &mut Memory::default(), NOW);
    assert!(d.consolidations.is_empty(), "{d:#?}");
    let d = world.run_once(&consolidating(), &mut Memory::default(), NOW + 600);
    assert_eq!(d.consolidations.len(), 1);
}

#[test]
fn a_budget_of_one_replaces_one_node_at_a_time() {
    let mut world = three_half_empty();
    world.group_mut("m5").lifecycle.disruption_budget = Some(Budget::Count(1));
    let settings = consolidating();
    let mut memory = Memory::default();
    let d = world.run_once(&settings, &mut memory, NOW);
    assert_eq!(d.consolidations.len(), 1, "{d:#?}");
    assert_eq!(d.consolidations[0].nodes.len(), 1);
    assert_eq!(d.consolidations[0].into[0].group, "c6a4");
    let d = world.run_once(&settings, &mut memory, NOW + 60);
    assert!(d.consolidations.is_empty() && d.scale_down.is_empty());
}

#[test]
fn a_closed_window_consolidates_nothing() {
    let mut world = three_half_empty();
    // Open 02:00 to 03:00 UTC; NOW is 03:46 UTC.
    world.group_mut("m5").lifecycle.disruption_window =
        Some(Window::parse("0 2 * * *", Duration::from_secs(3600)).unwrap());
    let d = world.run_once(&consolidating(), &mut Memory::default(), NOW);
    assert!(
        d.consolidations.is_empty() && d.scale_up.is_empty(),
        "{d:#?}"
    );
    assert_eq!(
        declined(&d, "m-1"),
        [&Declined::OutsideDisruptionWindow { group: "m5".into() }]
    );
}

#[test]
fn no_spot_to_spot_move_onto_a_pool_interrupted_more_recently() {
    let spot = |mut g: NodeGroup| {
        let mut t = (*g.template).clone();
        t.labels
            .insert(labels::EKS_CAPACITY_TYPE.into(), "SPOT".into());
        g.template = std::sync::Arc::new(t);
        g
    };
    let mut n = machine("a-1", "m5.4xlarge", 16);
    n.labels
        .insert(labels::EKS_CAPACITY_TYPE.into(), "SPOT".into());
    let world = TestWorld::default()
        .group(spot(priced("a", "m5.4xlarge", 16, 0.4, 1)))
        .group(spot(priced("b", "m6a.4xlarge", 16, 0.2, 0)))
        .node_of("a", n)
        .pod(app("web", "a-1", 9));
    let d = world.run_once(&consolidating(), &mut Memory::default(), NOW);
    assert_eq!(d.consolidations.len(), 1, "a quiet pool is taken");
    // b's pool was interrupted 20 minutes ago (its avoidance over, its record recent).
    let mut memory = Memory::default();
    memory.capacity_lost("m6a.4xlarge".into(), "us-east-1a".into(), NOW - 1200);
    let d = world.run_once(&consolidating(), &mut memory, NOW);
    assert!(
        d.consolidations.is_empty() && d.scale_up.is_empty(),
        "{d:#?}"
    );
}

#[test]
fn new_nodes_never_ready_leave_the_old_ones_in_place() {
    let mut world = three_half_empty();
    let settings = consolidating();
    let mut memory = Memory::default();
    let d = world.run_once(&settings, &mut memory, NOW);
    assert_eq!(d.consolidations.len(), 1);
    world.group_mut("c6a8").target_size = 1;
    // maxNodeProvisionTime (15 minutes) passes without the node.
    let late = NOW + 16 * 60;
    let d = world.run_once(&settings, &mut memory, late);
    assert!(d.scale_down.is_empty(), "{d:#?}");
    assert_eq!(
        declined(&d, "m-1")[0],
        &Declined::NotReadyInTime {
            group: "c6a8".into()
        }
    );
    assert!(memory.consolidating.is_empty());
    // Not candidates again for `after`.
    world.group_mut("c6a8").target_size = 0;
    let d = world.run_once(&settings, &mut memory, late + 60);
    assert!(d.consolidations.is_empty(), "{d:#?}");
}

#[test]
fn an_optimal_cluster_does_nothing_for_a_hundred_loops() {
    let mut world = TestWorld::default()
        .group(priced("m5", "m5.4xlarge", 16, 0.768, 0))
        .group(priced("c6a4", "c6a.4xlarge", 16, 0.612, 0))
        .group(priced("c6a8", "c6a.8xlarge", 32, 1.224, 1))
        .node_of("c6a8", machine("c-1", "c6a.8xlarge", 32));
    for k in 1..=3 {
        world = world.pod(app(&format!("web-{k}"), "c-1", 9));
    }
    let settings = consolidating();
    let mut memory = Memory::default();
    for k in 0..100 {
        let d = world.run_once(&settings, &mut memory, NOW + 60 * k);
        assert!(
            d.consolidations.is_empty() && d.scale_up.is_empty() && d.scale_down.is_empty(),
            "loop {k}: {d:#?}"
        );
    }
}

#[test]
fn never_is_the_default_and_changes_nothing() {
    let world = three_half_empty();
    let d = world.run_once(&Settings::upstream(), &mut Memory::default(), NOW);
    assert!(d.consolidations.is_empty() && d.consolidation_declined.is_empty());
    assert!(d.scale_up.is_empty() && d.consolidation_waits.is_none());
}

#[test]
fn when_empty_deletes_only_nodes_with_nothing_to_evict() {
    let world = TestWorld::default()
        .group(priced("a", "m5.4xlarge", 16, 1.0, 2))
        .node_of("a", machine("a-1", "m5.4xlarge", 16))
        .node_of("a", machine("a-2", "m5.4xlarge", 16))
        .pod(app("web", "a-1", 2));
    let settings = Settings {
        consolidation: Consolidation {
            policy: ConsolidationPolicy::WhenEmpty,
            after: Duration::from_secs(600),
        },
        // Scale-down off: what goes, consolidation takes.
        scale_down_enabled: false,
        ..consolidating()
    };
    let d = world.run_once(&settings, &mut Memory::default(), NOW);
    assert_eq!(d.consolidations.len(), 1, "{d:#?}");
    assert_eq!(d.consolidations[0].action, ConsolidationAction::Delete);
    assert_eq!(d.consolidations[0].nodes, ["a-2"]);
    assert_eq!(d.scale_down.len(), 1);
    assert_eq!(d.scale_down[0].node, "a-2");
}

#[test]
fn a_group_at_its_min_size_keeps_its_nodes() {
    let mut world = one_node(0.5);
    world.group_mut("a").min_size = 1;
    let d = world.run_once(&consolidating(), &mut Memory::default(), NOW);
    assert!(d.consolidations.is_empty(), "{d:#?}");
    assert_eq!(
        declined(&d, "a-1"),
        [&Declined::AtMinSize { group: "a".into() }]
    );
}

#[test]
fn the_gpu_minimum_keeps_a_gpu_node_a_cheaper_one_could_replace() {
    let mut world = one_node(0.5);
    let a = world.nodes.iter_mut().find(|n| n.name == "a-1").unwrap();
    a.labels
        .insert(labels::GPU.into(), "nvidia-tesla-t4".into());
    a.allocatable.extended.insert(labels::NVIDIA_GPU.into(), 1);
    let d = world.run_once(&consolidating(), &mut Memory::default(), NOW);
    assert_eq!(d.consolidations.len(), 1, "no limit: {d:#?}");
    let s = Settings {
        gpu_total: vec![crate::engine::limits::GpuLimit {
            gpu_type: "nvidia-tesla-t4".into(),
            min: 1,
            max: 10,
        }],
        ..consolidating()
    };
    let d = world.run_once(&s, &mut Memory::default(), NOW);
    assert!(d.consolidations.is_empty(), "{d:#?}");
    assert!(matches!(
        declined(&d, "a-1")[..],
        [Declined::ClusterLimit(crate::engine::limits::Resource::Gpu)]
    ));
}
