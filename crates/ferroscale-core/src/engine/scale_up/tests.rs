//! Scale-up as a person waiting for a pod sees it: the group that fits grows, a pod no group takes is told
//! each group's reason, closed groups are passed over, similar groups share, and the cluster's limits hold.

use crate::engine::decisions::ScaleUp;
use crate::engine::limits::Resource;
use crate::engine::predicates::Unfit;
use crate::engine::reasons::{Pending, Refusal};
use crate::engine::{Memory, Settings};
use crate::fixtures::{group, node, pod, resources, why, TestWorld, GIB};
use crate::labels;
use crate::model::NodeGroup;

const NOW: i64 = 10_000;

/// A group `id` scaled to zero (max 10) whose nodes have `cpu` millicores and 4 GiB per core.
fn from_zero(id: &str, cpu: i64) -> NodeGroup {
    let t = node(format!("{id}-template")).sized(resources(cpu, cpu / 1000 * 4 * GIB, 50));
    group(id).sizes(0, 10, 0).template(t.template()).build()
}

/// A pending pod `shop/<name>` the scheduler could not place, asking `cpu` millicores and 1 GiB.
fn pending(name: &str, cpu: i64) -> crate::model::workload::Pod {
    pod("shop", name)
        .requests(resources(cpu, GIB, 1))
        .unschedulable()
        .build()
}

#[test]
fn the_group_that_fits_grows_and_a_pod_no_group_takes_hears_each_groups_reason() {
    let world = TestWorld::default()
        .group(from_zero("small", 2000))
        .group(from_zero("big", 8000))
        .pod(pending("wide", 6000))
        .pod(pending("huge", 16_000));
    let mut memory = Memory::default();
    let d = world.run_once(&Settings::upstream(), &mut memory, NOW);
    assert_eq!(
        d.scale_up,
        [ScaleUp {
            group: "big".into(),
            delta: 1,
            pods: vec!["shop/wide".into()],
        }]
    );
    assert_eq!(
        why(&d, "shop/huge"),
        &Pending::NoGroupFits(vec![(Refusal::Unfit(Unfit::Insufficient("cpu".into())), 2)])
    );
    assert_eq!(
        memory.unfulfilled_since.get("big"),
        Some(&NOW),
        "the provision time counts from the scale-up"
    );
    assert_eq!(memory.last_scale_up, Some(NOW));
}

#[test]
fn a_group_at_its_max_or_backed_off_is_passed_over_for_the_next_that_fits() {
    let full = NodeGroup {
        max_size: 0,
        ..from_zero("full", 4000)
    };
    let world = TestWorld::default()
        .group(full)
        .group(from_zero("failing", 4000))
        .pod(pending("web", 3000));
    let mut memory = Memory::default();
    memory.scale_up_failed("failing", "InsufficientInstanceCapacity", NOW - 10);
    let d = world.run_once(&Settings::upstream(), &mut memory, NOW);
    assert!(d.scale_up.is_empty(), "{d:?}");
    let Pending::NoGroupFits(refusals) = why(&d, "shop/web") else {
        panic!("{d:?}");
    };
    assert!(refusals.contains(&(
        Refusal::AtMaxSize {
            group: "full".into()
        },
        1
    )));
    assert!(
        refusals.contains(&(
            Refusal::BackedOff {
                group: "failing".into(),
                seconds: 290
            },
            1
        )),
        "{refusals:?}"
    );

    let world = world.group(from_zero("spare", 4000));
    let d = world.run_once(&Settings::upstream(), &mut memory, NOW);
    let grown: Vec<(&str, i32)> = d
        .scale_up
        .iter()
        .map(|u| (u.group.as_str(), u.delta))
        .collect();
    assert_eq!(grown, [("spare", 1)]);
}

#[test]
fn similar_groups_share_a_scale_up_when_balancing() {
    let in_zone = |id: &str, zone: &str| {
        let t = node(format!("{id}-template"))
            .label(labels::ZONE, zone)
            .sized(resources(2000, 8 * GIB, 20));
        group(id).sizes(0, 10, 0).template(t.template()).build()
    };
    let world = (1..=4).fold(
        TestWorld::default()
            .group(in_zone("a", "us-east-1a"))
            .group(in_zone("b", "us-east-1b")),
        |w, k| w.pod(pending(&format!("web-{k}"), 1500)),
    );
    let mut s = Settings::upstream();
    let one_group = world.run_once(&s, &mut Memory::default(), NOW);
    assert_eq!(one_group.scale_up.len(), 1, "{one_group:?}");
    assert_eq!(one_group.scale_up[0].delta, 4, "one 2-cpu node per pod");

    s.balance_similar_node_groups = true;
    let d = world.run_once(&s, &mut Memory::default(), NOW);
    let grown: Vec<(&str, i32)> = d
        .scale_up
        .iter()
        .map(|u| (u.group.as_str(), u.delta))
        .collect();
    assert_eq!(grown, [("a", 2), ("b", 2)], "the zones even out");
    assert!(d.scale_up.iter().all(|u| u.pods.len() == 4));
}

#[test]
fn the_clusters_core_limit_skips_the_group_and_tells_the_pod() {
    let world = TestWorld::default()
        .group(from_zero("big", 8000))
        .pod(pending("web", 3000));
    let s = Settings {
        cores_total: (0, 4),
        ..Settings::upstream()
    };
    let d = world.run_once(&s, &mut Memory::default(), NOW);
    assert!(d.scale_up.is_empty(), "{d:?}");
    assert_eq!(d.skipped_scale_ups, [("big".to_string(), Resource::Cores)]);
    assert_eq!(
        why(&d, "shop/web"),
        &Pending::NoGroupFits(vec![(
            Refusal::ResourceLimits {
                exceeded: vec![Resource::Cores]
            },
            1
        )])
    );
}

/// A group `id` scaled to zero (max 10) of 4-cpu nodes with 2 NVIDIA GPUs of type `kind`.
fn gpu_group(id: &str, kind: &str) -> NodeGroup {
    let t = node(format!("{id}-template"))
        .label(labels::GPU, kind)
        .sized(resources(4000, 16 * GIB, 50))
        .gpus(2);
    group(id).sizes(0, 10, 0).template(t.template()).build()
}

/// A pending pod `shop/<name>` asking 1 cpu and 2 GPUs: one GPU node each.
fn pending_gpu(name: &str) -> crate::model::workload::Pod {
    pod("shop", name)
        .requests(resources(1000, GIB, 1))
        .gpus(2)
        .unschedulable()
        .build()
}

fn gpu_total(kind: &str, min: i64, max: i64) -> Settings {
    Settings {
        gpu_total: vec![crate::engine::limits::GpuLimit {
            gpu_type: kind.into(),
            min,
            max,
        }],
        ..Settings::upstream()
    }
}

#[test]
fn the_clusters_gpu_limit_caps_the_scale_up_of_its_type() {
    let world = (1..=3).fold(
        TestWorld::default().group(gpu_group("t4", "nvidia-tesla-t4")),
        |w, k| w.pod(pending_gpu(&format!("train-{k}"))),
    );
    let free = world.run_once(&Settings::upstream(), &mut Memory::default(), NOW);
    assert_eq!(free.scale_up.len(), 1, "{free:?}");
    assert_eq!(
        free.scale_up[0].delta, 3,
        "without --gpu-total: one node a pod"
    );

    let d = world.run_once(
        &gpu_total("nvidia-tesla-t4", 0, 4),
        &mut Memory::default(),
        NOW,
    );
    assert_eq!(d.scale_up.len(), 1, "{d:?}");
    assert_eq!(d.scale_up[0].delta, 2, "4 T4s: two nodes of 2");

    let other = world.run_once(&gpu_total("nvidia-a10g", 0, 0), &mut Memory::default(), NOW);
    assert_eq!(
        other.scale_up[0].delta, 3,
        "a limit of another type holds nothing"
    );
}

#[test]
fn the_clusters_gpu_limit_reached_skips_the_group_and_tells_the_pod() {
    let world = TestWorld::default()
        .group(gpu_group("t4", "nvidia-tesla-t4"))
        .pod(pending_gpu("train"));
    let d = world.run_once(
        &gpu_total("nvidia-tesla-t4", 0, 1),
        &mut Memory::default(),
        NOW,
    );
    assert!(d.scale_up.is_empty(), "{d:?}");
    assert_eq!(d.skipped_scale_ups, [("t4".to_string(), Resource::Gpu)]);
    assert_eq!(
        why(&d, "shop/train"),
        &Pending::NoGroupFits(vec![(
            Refusal::ResourceLimits {
                exceeded: vec![Resource::Gpu]
            },
            1
        )])
    );
    assert_eq!(
        Refusal::ResourceLimits {
            exceeded: vec![Resource::Gpu]
        }
        .to_string(),
        "--gpu-total reached"
    );
}

/// Upstream: cluster-autoscaler clusterstate/clusterstate.go (IsNodeGroupHealthy,
/// IsNodeGroupReadyToScaleUp) as core/scaleup/orchestrator/orchestrator.go skips such groups, and
/// clusterstate_test.go's TestUnreadyLongAfterCreation.
#[test]
fn a_group_whose_nodes_never_become_ready_is_skipped_for_a_healthy_one() {
    use crate::fixtures::worker;
    let bad = NodeGroup {
        target_size: 4,
        ..from_zero("bad", 8000)
    };
    // `good` at its max first: only the reasons.
    let good = |max_size| NodeGroup {
        target_size: 6,
        max_size,
        ..from_zero("good", 8000)
    };
    // Four nodes of `bad` created long ago and never ready: too many past --ok-total-unready-count (3)
    // and 45% of the group, but 40% of the cluster's ten, so the cluster itself stays healthy.
    let world = |good: NodeGroup| {
        let mut world = TestWorld::default()
            .group(bad.clone())
            .group(good)
            .pod(pending("web", 6000));
        for k in 0..4 {
            let mut n = worker(&format!("bad-{k}")).build();
            n.ready = false;
            world = world.node_of("bad", n);
        }
        // Cordoned, so the group's template is its cloud's (8 cores), not a copy of these.
        for k in 0..6 {
            let mut n = worker(&format!("good-{k}")).build();
            n.unschedulable = true;
            world = world.node_of("good", n);
        }
        world
    };
    let d = world(good(6)).run_once(&Settings::upstream(), &mut Memory::default(), NOW);
    assert!(d.unhealthy.is_none(), "{d:?}");
    assert!(d.scale_up.is_empty(), "{d:?}");
    assert_eq!(
        why(&d, "shop/web").to_string(),
        "no group fits: 1 group bad not ready for scale-up: 4 of its nodes unready, 1 group good at max size"
    );

    let d = world(good(10)).run_once(&Settings::upstream(), &mut Memory::default(), NOW);
    assert!(d.unhealthy.is_none(), "{d:?}");
    assert_eq!(
        d.scale_up,
        [ScaleUp {
            group: "good".into(),
            delta: 1,
            pods: vec!["shop/web".into()],
        }]
    );
}

/// Upstream: exponential_backoff.go with `--initial-node-group-backoff-duration`,
/// `--max-node-group-backoff-duration` and `--node-group-backoff-reset-timeout`. A group whose scale-ups
/// keep failing is passed over for the flags' first backoff, doubled per failure after one ended up to
/// the max; a failure while it is backed off keeps its length, and one after the reset time starts over.
#[test]
fn a_failing_group_backs_off_as_long_as_the_backoff_flags_say() {
    let world = TestWorld::default()
        .group(from_zero("failing", 4000))
        .pod(pending("web", 3000));
    let s = Settings {
        node_group_backoff: crate::engine::settings::NodeGroupBackoff {
            initial: std::time::Duration::from_secs(60),
            max: std::time::Duration::from_secs(240),
            reset: std::time::Duration::from_secs(3600),
        },
        ..Settings::upstream()
    };
    let mut memory = Memory::default();
    let mut at = NOW;
    let mut pauses = Vec::new();
    for _ in 0..4 {
        // The loop grows the group (the backoff is over) and hands over its settings; its launch fails.
        let d = world.run_once(&s, &mut memory, at);
        assert_eq!(d.scale_up.len(), 1, "{d:?}");
        memory.scale_up_failed("failing", "cloudProviderError", at);
        let until = memory.backed_off("failing", at).unwrap();
        let d = world.run_once(&s, &mut memory, until - 1);
        assert!(d.scale_up.is_empty(), "backed off until {until}: {d:?}");
        pauses.push(until - at);
        at = until + 1;
    }
    assert_eq!(pauses, [60, 120, 240, 240]);

    // Another failure while backed off keeps the length; one after the reset time starts over.
    memory.scale_up_failed("failing", "cloudProviderError", at);
    memory.scale_up_failed("failing", "cloudProviderError", at + 10);
    assert_eq!(memory.backed_off("failing", at + 10), Some(at + 10 + 240));
    let later = at + 10 + 3601;
    memory.scale_up_failed("failing", "cloudProviderError", later);
    assert_eq!(memory.backed_off("failing", later), Some(later + 60));
}
