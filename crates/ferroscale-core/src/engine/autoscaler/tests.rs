//! One loop (`run_once`) as a person reads its decisions: why each pending pod waits, nothing but a
//! report from an unhealthy cluster, scale-down held back by a doubt about the state but scale-up not,
//! and no removal in a loop that scales up (within `--scale-down-delay-after-add`).

use std::time::Duration;

use crate::engine::reasons::{Doubt, Pending, Unhealthy};
use crate::engine::{Memory, Settings};
use crate::fixtures::{group, node, pool, resources, web, why, worker, GIB};
use crate::model::InstanceState;

const T0: i64 = 10_000;

#[test]
fn each_pending_pod_is_told_why_it_waits() {
    // `a` has room; `b` was asked for and has not registered yet.
    let mut world = pool("pool", 0, &[("a", &[])]);
    let g = world.group_mut("pool");
    g.target_size = 2;
    g.instances.push(crate::model::Instance {
        id: "aws:///z/b".into(),
        state: InstanceState::Running,
        error: None,
    });
    let world = world
        .pod(web("fits", 1000).unschedulable().build())
        .pod(web("next", 3500).unschedulable().build())
        .pod(web("low", 1000).unschedulable().priority(-100).build())
        .pod(web("young", 1000).unschedulable().created(T0 - 5).build());
    let s = Settings {
        new_pod_scale_up_delay: Duration::from_secs(10),
        ..Settings::upstream()
    };
    let d = world.run_once(&s, &mut Memory::default(), T0);
    assert!(d.scale_up.is_empty(), "{d:?}");
    assert_eq!(why(&d, "shop/fits"), &Pending::FitsOnNode("a".into()));
    assert_eq!(
        why(&d, "shop/next"),
        &Pending::FitsOnUpcoming {
            group: "pool".into()
        }
    );
    assert_eq!(why(&d, "shop/low"), &Pending::Expendable);
    assert_eq!(why(&d, "shop/young"), &Pending::TooNew);
}

#[test]
fn an_unhealthy_cluster_gets_no_decision_only_the_report() {
    // Four of five nodes unready for longer than they may take to start.
    let world = ["a", "b", "c", "d", "e"]
        .into_iter()
        .enumerate()
        .fold(pool("pool", 0, &[]), |w, (k, name)| {
            let n = worker(name).build();
            w.node_of("pool", crate::model::workload::Node { ready: k == 0, ..n })
        })
        .pod(web("waiting", 16_000).unschedulable().build());
    let d = world.run_once(&Settings::upstream(), &mut Memory::default(), T0);
    assert_eq!(
        d.unhealthy,
        Some(Unhealthy {
            unready: 4,
            total: 5
        })
    );
    assert!(d.scale_up.is_empty() && d.scale_down.is_empty() && d.pending.is_empty());
}

#[test]
fn a_doubt_holds_scale_down_back_but_not_scale_up() {
    let mut world = pool("pool", 0, &[("idle", &[])]);
    let s = Settings::upstream();
    let mut memory = Memory::default();
    world.run_once(&s, &mut memory, T0);
    let doubt = vec![Doubt::WatchFailing {
        kind: "pods".into(),
    }];
    world.doubts = doubt.clone();
    let d = world.run_once(&s, &mut memory, T0 + 600);
    assert!(d.scale_down.is_empty(), "{d:?}");
    assert_eq!(d.held_back, doubt);
    // Once the doubt is gone, the idle node goes.
    world.doubts.clear();
    let d = world.run_once(&s, &mut memory, T0 + 601);
    let removed: Vec<&str> = d.scale_down.iter().map(|r| r.node.as_str()).collect();
    assert_eq!(removed, ["idle"]);

    // A pod only a bigger group takes: it grows, doubt or not.
    let big = node("big-template").sized(resources(8000, 32 * GIB, 50));
    let mut world = world
        .group(
            group("big")
                .sizes(0, 10, 0)
                .template(big.template())
                .build(),
        )
        .pod(web("wide", 6000).unschedulable().build());
    world.doubts = doubt;
    let d = world.run_once(&s, &mut Memory::default(), T0);
    assert_eq!(d.scale_up.len(), 1, "{d:?}");
    assert_eq!(d.scale_up[0].group, "big");

    // Without the doubt, a loop that scales up still finds the idle node unneeded (as upstream), and
    // its removal waits for --scale-down-delay-after-add.
    world.doubts.clear();
    let mut memory = Memory::default();
    world.run_once(&s, &mut memory, T0);
    let d = world.run_once(&s, &mut memory, T0 + 600);
    assert_eq!(d.scale_up.len(), 1, "{d:?}");
    assert!(d.scale_down.is_empty(), "{d:?}");
    assert_eq!(
        d.unremovable,
        [(
            "idle".to_string(),
            crate::engine::reasons::Unremovable::Paused(crate::engine::reasons::Pause::AfterAdd)
        )]
    );
}

/// A pool whose node `a` is full and whose target (2) counts `b`, registered at `created` as `b` says;
/// one pod waits that only an empty node takes.
fn booting(b: crate::model::workload::Node) -> crate::fixtures::TestWorld {
    let mut world = pool("pool", 0, &[("a", &[("full", 4000)])]);
    let g = world.group_mut("pool");
    g.target_size = 2;
    g.instances.push(crate::model::Instance {
        id: b.provider_id.clone(),
        state: InstanceState::Running,
        error: None,
    });
    world
        .node_of("pool", b)
        .pod(web("next", 3000).unschedulable().build())
}

#[test]
fn a_booting_node_is_upcoming_until_its_startup_time_is_over() {
    use crate::fixtures::no_schedule;
    let s = Settings::upstream();
    let not_ready = |created: i64| {
        let n = worker("b")
            .taint(no_schedule("node.kubernetes.io/not-ready", ""))
            .created(created)
            .build();
        crate::model::workload::Node { ready: false, ..n }
    };
    // Registered a minute ago, not ready: its pods wait for it, nothing more is asked for.
    let d = booting(not_ready(T0 - 60)).run_once(&s, &mut Memory::default(), T0);
    assert!(d.scale_up.is_empty(), "{d:?}");
    assert_eq!(
        why(&d, "shop/next"),
        &Pending::FitsOnUpcoming {
            group: "pool".into()
        }
    );
    // Past maxNodeStartupTime (15 minutes) it is unready, no longer upcoming: another node comes.
    let d = booting(not_ready(T0 - 900)).run_once(&s, &mut Memory::default(), T0);
    assert_eq!(d.scale_up.len(), 1, "{d:?}");
    assert_eq!(
        (d.scale_up[0].group.as_str(), d.scale_up[0].delta),
        ("pool", 1)
    );
    // The group's own startup time counts, not the default.
    let mut world = booting(not_ready(T0 - 60));
    world.group_mut("pool").options = Some(crate::model::AutoscalingOptions {
        max_node_startup_time: Some(Duration::from_secs(30)),
        ..Default::default()
    });
    let d = world.run_once(&s, &mut Memory::default(), T0);
    assert_eq!(d.scale_up.len(), 1, "{d:?}");
}

#[test]
fn a_node_with_a_startup_taint_is_still_starting() {
    use crate::fixtures::no_schedule;
    let s = Settings::upstream();
    // Ready by its condition, but a start-up taint says its CNI is not there yet.
    let cni = worker("b")
        .taint(no_schedule(
            "startup-taint.cluster-autoscaler.kubernetes.io/cni",
            "",
        ))
        .created(T0 - 60)
        .build();
    let d = booting(cni.clone()).run_once(&s, &mut Memory::default(), T0);
    assert!(d.scale_up.is_empty(), "{d:?}");
    assert_eq!(
        why(&d, "shop/next"),
        &Pending::FitsOnUpcoming {
            group: "pool".into()
        }
    );
    // Without the taint, the node is ready, the pod fits nowhere (it is unschedulable by a taint of the
    // test's choosing) and a node is asked for.
    let full = worker("b")
        .taint(no_schedule("dedicated", "other"))
        .created(T0 - 60)
        .build();
    let d = booting(full.clone()).run_once(&s, &mut Memory::default(), T0);
    assert_eq!(d.scale_up.len(), 1, "{d:?}");
    // `--startup-taint dedicated` (or `--ignore-taint`) makes that taint a start-up taint too.
    let flagged = Settings {
        taints: crate::engine::taints::TaintConfig {
            startup: vec!["dedicated".into()],
            status: vec![],
        },
        ..Settings::upstream()
    };
    let d = booting(full).run_once(&flagged, &mut Memory::default(), T0);
    assert!(d.scale_up.is_empty(), "{d:?}");
    assert_eq!(
        why(&d, "shop/next"),
        &Pending::FitsOnUpcoming {
            group: "pool".into()
        }
    );
}

/// Upstream: cluster-autoscaler `--bypassed-scheduler-names`: pods of those schedulers count as pending
/// without waiting for the scheduler's unschedulable mark.
#[test]
fn pods_of_a_bypassed_scheduler_count_as_pending_at_once() {
    let mut unmarked = web("custom", 3900).build();
    unmarked.meta.scheduler_name = Some("my-scheduler".into());
    let world = pool("pool", 0, &[("full", &[("busy", 3900)])]).pod(unmarked);
    let d = world.run_once(&Settings::upstream(), &mut Memory::default(), T0);
    assert!(d.scale_up.is_empty() && d.pending.is_empty(), "{d:?}");
    let bypassed = Settings {
        bypassed_scheduler_names: vec!["my-scheduler".into()],
        ..Settings::upstream()
    };
    let d = world.run_once(&bypassed, &mut Memory::default(), T0);
    assert_eq!(d.scale_up.len(), 1, "{d:?}");
}

/// Upstream: cluster-autoscaler core/podlistprocessor/filter_out_daemon_sets.go (and
/// utils/pod.IsDaemonSetPod for the annotation): pending DaemonSet pods ask for no node.
#[test]
fn pending_daemon_set_pods_trigger_no_scale_up() {
    // Neither pod fits the full node; a new node of the group would take either.
    let world = pool("pool", 0, &[("full", &[("busy", 3900)])])
        .pod(
            web("agent", 1000)
                .controller("DaemonSet")
                .unschedulable()
                .build(),
        )
        .pod(
            web("annotated", 1000)
                .daemon_set_annotation()
                .unschedulable()
                .build(),
        );
    let d = world.run_once(&Settings::upstream(), &mut Memory::default(), T0);
    assert!(d.scale_up.is_empty(), "{d:?}");
    assert!(d.pending.is_empty(), "dropped, as upstream: {d:?}");

    // The same pod without the annotation asks for a node.
    let world = pool("pool", 0, &[("full", &[("busy", 3900)])])
        .pod(web("plain", 1000).unschedulable().build());
    let d = world.run_once(&Settings::upstream(), &mut Memory::default(), T0);
    assert_eq!(d.scale_up.len(), 1, "{d:?}");
}

/// Upstream: cluster-autoscaler core/static_autoscaler.go (`filterOutYoungPods`): the
/// `cluster-autoscaler.kubernetes.io/pod-scale-up-delay` annotation lengthens, never shortens, the delay.
#[test]
fn a_pods_own_scale_up_delay_only_lengthens_the_flags() {
    let full = || pool("pool", 0, &[("full", &[("busy", 3900)])]);
    let young = |delay: Option<i64>| {
        let mut p = web("young", 1000).unschedulable().created(T0 - 60).build();
        p.meta.scale_up_delay = delay;
        p
    };
    let s = Settings::upstream();
    // A minute old, asking to wait five: it waits.
    let d = full()
        .pod(young(Some(300)))
        .run_once(&s, &mut Memory::default(), T0);
    assert!(d.scale_up.is_empty(), "{d:?}");
    assert_eq!(why(&d, "shop/young"), &Pending::TooNew);
    // Without the annotation it asks for a node at once.
    let d = full()
        .pod(young(None))
        .run_once(&s, &mut Memory::default(), T0);
    assert_eq!(d.scale_up.len(), 1, "{d:?}");
    // A shorter delay than the flag's does not shorten it.
    let long = Settings {
        new_pod_scale_up_delay: Duration::from_secs(600),
        ..Settings::upstream()
    };
    let d = full()
        .pod(young(Some(10)))
        .run_once(&long, &mut Memory::default(), T0);
    assert_eq!(why(&d, "shop/young"), &Pending::TooNew);
}

/// Upstream: core/static_autoscaler_test.go TestStaticAutoscalerRunOnceWithUnschedulableNominatedPods
/// (FilterOutExpendableAndSplit): a pod waiting for preemption on its nominated node asks for nothing;
/// nominated for a node that is gone, it is pending as any other.
#[test]
fn a_pod_nominated_for_a_node_waits_there_and_asks_for_nothing() {
    let nominated = |n: &str| {
        let mut p = web("preemptor", 3000).unschedulable().build();
        p.meta.nominated_node = Some(n.into());
        p
    };
    let full = || pool("pool", 0, &[("a", &[("victim", 3500)])]);
    let d = full()
        .pod(nominated("a"))
        .run_once(&Settings::upstream(), &mut Memory::default(), T0);
    assert!(d.scale_up.is_empty(), "{d:?}");
    assert_eq!(why(&d, "shop/preemptor"), &Pending::Nominated("a".into()));
    assert!(!Pending::Nominated("a".into()).unschedulable());
    let d =
        full()
            .pod(nominated("gone"))
            .run_once(&Settings::upstream(), &mut Memory::default(), T0);
    assert_eq!(d.scale_up.len(), 1, "{d:?}");
}

/// Upstream: core/scaleup/orchestrator (MaxNodesTotal counts the ready nodes and the upcoming ones):
/// a node still starting is upcoming and counted once.
#[test]
fn a_booting_node_counts_once_against_max_nodes_total() {
    use crate::fixtures::no_schedule;
    let b = worker("b")
        .taint(no_schedule("node.kubernetes.io/not-ready", ""))
        .created(T0 - 60)
        .build();
    let world = booting(crate::model::workload::Node { ready: false, ..b })
        .pod(web("more-1", 3000).unschedulable().build())
        .pod(web("more-2", 3000).unschedulable().build());
    // a (ready) + b (upcoming) + 2 more = 4: the maximum allows both.
    let s = Settings {
        max_nodes_total: 4,
        ..Settings::upstream()
    };
    let d = world.run_once(&s, &mut Memory::default(), T0);
    assert_eq!(d.scale_up.len(), 1, "{d:?}");
    assert_eq!(d.scale_up[0].delta, 2, "{d:?}");
    let s = Settings {
        max_nodes_total: 3,
        ..Settings::upstream()
    };
    let d = world.run_once(&s, &mut Memory::default(), T0);
    assert_eq!(d.scale_up[0].delta, 1, "{d:?}");
}
