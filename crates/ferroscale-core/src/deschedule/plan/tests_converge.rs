//! The node-utilization strategies converge: a candidate the plan declines is replaced by the node's
//! next one, and `evictionLimits` counts the evictions made, as the descheduler goes on to the next
//! pod after a failed eviction.

use super::*;
use crate::clock::FixedClock;
use crate::deschedule::args::Thresholds;
use crate::deschedule::fixtures::{DeschedulerPod, Fixture};
use crate::deschedule::strategies::low_utilization::{EvictionLimits, LowNodeUtilizationArgs};
use crate::deschedule::{PluginArgs, Profile};
use crate::fixtures::{node, pod, resources};

const GI: i64 = 1 << 30;

/// A ready node of 4 cpus, 16 GiB, in `zone`.
fn n(name: &str, zone: &str) -> Node {
    node(name)
        .allocatable(resources(4000, 16 * GI, 110))
        .label("zone", zone)
        .ready()
        .build()
}

/// A replica of `gi` GiB on `a`, priority `prio`; `pinned`: its node selector admits zone z1 only
/// (as a zonal volume would), which only `a` is in.
fn replica(name: &str, gi: i64, prio: i32, pinned: bool) -> Pod {
    let b = pod("shop", name)
        .requests(resources(100, gi * GI, 1))
        .on("a")
        .priority(prio)
        .owner("ReplicaSet", name);
    if pinned {
        b.with(|p| {
            p.node_selector.insert("zone".into(), "z1".into());
        })
        .build()
    } else {
        b.build()
    }
}

fn low(pct_low: f64, pct_high: f64, node_limit: Option<u32>) -> Policy {
    let th = |v: f64| -> Thresholds { [("memory".to_string(), v)].into() };
    Policy {
        profiles: vec![Profile {
            name: "p".into(),
            strategies: vec![PluginArgs::LowNodeUtilization(LowNodeUtilizationArgs {
                thresholds: th(pct_low),
                target_thresholds: th(pct_high),
                eviction_limits: node_limit.map(|n| EvictionLimits { node: Some(n) }),
                ..Default::default()
            })],
            ..Profile::default()
        }],
        ..Policy::default()
    }
}

fn cycle(f: &Fixture, policy: &Policy) -> Plan {
    plan(
        policy,
        &f.cluster(),
        &History::default(),
        &Settings::default(),
        &FixedClock::default(),
    )
}

fn names(e: &[Eviction]) -> Vec<&str> {
    e.iter().map(|e| e.pod.name.as_str()).collect()
}

/// Three pinned pods of the lowest priority, then two movable ones: the strategy's first picks
/// have no other place, so only going on past them brings `a` under its target.
fn stalled() -> Fixture {
    let mut pods: Vec<Pod> = (1..=3)
        .map(|i| replica(&format!("pinned-{i}"), 2, 0, true))
        .collect();
    pods.push(replica("movable-1", 3, 10, false));
    pods.push(replica("movable-2", 3, 10, false));
    Fixture::new(vec![n("a", "z1"), n("b", "z2"), n("c", "z2")], pods)
}

#[test]
fn low_node_utilization_goes_past_declined_pods_to_the_movable_ones() {
    // a: 12 GiB of 16 (75%) against a 50% target; the three pinned pods are declined.
    let f = stalled();
    let p = cycle(&f, &low(20.0, 50.0, None));
    assert_eq!(names(&p.evictions), ["movable-1", "movable-2"]);
    assert_eq!(p.declined.len(), 3, "{:?}", p.declined);
    assert!(p
        .declined
        .iter()
        .all(|d| matches!(d.why, Why::NoPlace(_)) && d.pod.name.starts_with("pinned")));
}

#[test]
fn low_node_utilization_stops_once_the_node_is_within_its_target() {
    // a at 75%, target 60%: one 3 GiB pod (to 56%) is enough; the second is not proposed.
    let f = stalled();
    let p = cycle(&f, &low(20.0, 60.0, None));
    assert_eq!(names(&p.evictions), ["movable-1"]);
}

#[test]
fn eviction_limits_count_the_evictions_made() {
    let mut pods: Vec<Pod> = (1..=3)
        .map(|i| replica(&format!("pinned-{i}"), 1, 0, true))
        .collect();
    pods.extend((1..=8).map(|i| replica(&format!("movable-{i}"), 1, 10, false)));
    let f = Fixture::new(vec![n("a", "z1"), n("b", "z2"), n("c", "z2")], pods);
    // a: 11 GiB (69%) against 30%: seven evictions would bring it under; the limit stops at five
    // made, the three declined pinned pods not among them.
    let p = cycle(&f, &low(5.0, 30.0, None));
    assert_eq!(p.evictions.len(), 7, "{:?}", names(&p.evictions));
    let p = cycle(&f, &low(5.0, 30.0, Some(5)));
    assert_eq!(p.evictions.len(), 5, "{:?}", names(&p.evictions));
    assert!(names(&p.evictions).iter().all(|n| n.starts_with("movable")));
}

#[test]
fn a_per_node_limit_of_the_policy_ends_the_node_with_one_decline() {
    let f = stalled();
    let policy = Policy {
        max_per_node: Some(1),
        ..low(5.0, 10.0, None)
    };
    let p = cycle(&f, &policy);
    assert_eq!(names(&p.evictions), ["movable-1"]);
    let limits = p
        .declined
        .iter()
        .filter(|d| matches!(d.why, Why::Limit(Limit::PerNode(1))))
        .count();
    assert_eq!(limits, 1, "{:?}", p.declined);
}

#[test]
fn high_node_utilization_counts_only_the_room_its_evictions_take() {
    use crate::deschedule::strategies::high_utilization::HighNodeUtilizationArgs;
    let on = |name: &str, node_name: &str, cpu: i64, prio: i32| {
        pod("shop", name)
            .requests(resources(cpu, GI, 1))
            .on(node_name)
            .priority(prio)
            .owner("ReplicaSet", name)
    };
    let pods = vec![
        // a (20% cpu, underutilized): a pinned pod first, too big for b's room, then a movable one.
        on("pinned", "a", 500, 0)
            .with(|p| {
                p.node_selector.insert("zone".into(), "z1".into());
            })
            .build(),
        on("movable", "a", 300, 10).build(),
        // b: 400m of room left.
        on("busy", "b", 3600, 0).build(),
    ];
    let f = Fixture::new(vec![n("a", "z1"), n("b", "z2")], pods);
    let policy = Policy {
        profiles: vec![Profile {
            name: "p".into(),
            strategies: vec![PluginArgs::HighNodeUtilization(HighNodeUtilizationArgs {
                thresholds: [("cpu".to_string(), 20.0)].into(),
                ..Default::default()
            })],
            ..Profile::default()
        }],
        ..Policy::default()
    };
    let p = cycle(&f, &policy);
    // The pinned pod's decline leaves b's room to the movable one.
    assert_eq!(names(&p.evictions), ["movable"], "{:?}", p.declined);
    assert!(p.emptied.is_empty(), "the pinned pod stays on a");
}
