//! Actual usage: the collector's smoothing (the descheduler's `TestMetricsCollector` figures), and
//! `LowNodeUtilization` classing and emptying nodes by what they use, not what their pods request.

use super::*;
use crate::clock::FixedClock;
use crate::deschedule::args::Strategy;
use crate::deschedule::fixtures::Fixture;
use crate::deschedule::plan::{reads_metrics as wanted, Skipped, Unavailable};
use crate::deschedule::strategies::low_utilization::{LowNodeUtilizationArgs, MetricsUtilization};
use crate::deschedule::strategies::usage::testing::{tnode, tpod, TestPod};
use crate::deschedule::{plan, strategies, Evictor, EvictorArgs, History, Profile, Settings};
use crate::deschedule::{PluginArgs, Policy, View};

const GI: i64 = 1 << 30;

fn m(cpu_milli: i64, memory: i64) -> Measured {
    Measured { cpu_milli, memory }
}

#[test]
fn node_usage_is_smoothed_as_the_descheduler_does() {
    let mut u = Usage::default();
    u.collect([
        ("n1".to_string(), m(400, GI)),
        ("n2".to_string(), m(1400, GI)),
    ]);
    assert_eq!(u.node("n2"), Some(m(1400, GI)), "first sample taken as is");
    u.collect([("n2".to_string(), m(500, 2 * GI))]);
    assert_eq!(u.node("n2").unwrap().cpu_milli, 1310);
    assert_eq!(
        u.node("n2").unwrap().memory,
        (0.9 * GI as f64 + 0.1 * 2.0 * GI as f64).round() as i64
    );
    u.collect([("n2".to_string(), m(900, 2 * GI))]);
    assert_eq!(u.node("n2").unwrap().cpu_milli, 1269);
    assert_eq!(u.node("n1"), Some(m(400, GI)), "no sample: kept");
    assert_eq!(u.node("n3"), None);
}

fn metrics_args() -> LowNodeUtilizationArgs {
    LowNodeUtilizationArgs {
        thresholds: [("cpu".to_string(), 30.0)].into(),
        target_thresholds: [("cpu".to_string(), 50.0)].into(),
        metrics_utilization: Some(MetricsUtilization {
            source: "KubernetesMetrics".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Requests say n2 is full (60%) and n1 nearly empty (20%); metrics-server says n1 burns 80% and
/// n2 20%. Pods leave n1, each freeing what it uses (300m), until n1 is at its 50% target.
fn disagreeing(pod_metrics: &[(&str, Option<Measured>)]) -> Fixture {
    let nodes = ["n1", "n2", "n3"]
        .map(|n| tnode(n, 2000, 16 * GI, 110).build())
        .to_vec();
    let mut pods: Vec<_> = (1..=4)
        .map(|i| tpod(&format!("p{i}"), 100, GI, "n1").rs().build())
        .collect();
    pods.push(tpod("big", 1200, GI, "n2").rs().build());
    pods.push(tpod("mid", 800, GI, "n3").rs().build());
    let mut f = Fixture::new(nodes, pods);
    let mut usage = Usage::default();
    usage.collect([
        ("n1".to_string(), m(1600, 4 * GI)),
        ("n2".to_string(), m(400, 2 * GI)),
        ("n3".to_string(), m(800, 2 * GI)),
    ]);
    usage.set_pods(
        pod_metrics
            .iter()
            .map(|(name, u)| (format!("default/{name}"), *u)),
    );
    f.usage = Some(usage);
    f
}

fn proposed(f: &Fixture, args: LowNodeUtilizationArgs) -> Vec<String> {
    let cluster = f.cluster();
    let view = View::new(&cluster);
    let ev = EvictorArgs::default();
    let evictor = Evictor::new(&ev, &view);
    strategies::propose(&PluginArgs::LowNodeUtilization(args), &view, &evictor)
        .into_iter()
        .map(|p| format!("{}@{}", p.pod.name, p.node))
        .collect()
}

const ALL: [(&str, Option<Measured>); 6] = [
    (
        "p1",
        Some(Measured {
            cpu_milli: 300,
            memory: GI,
        }),
    ),
    (
        "p2",
        Some(Measured {
            cpu_milli: 300,
            memory: GI,
        }),
    ),
    (
        "p3",
        Some(Measured {
            cpu_milli: 300,
            memory: GI,
        }),
    ),
    (
        "p4",
        Some(Measured {
            cpu_milli: 300,
            memory: GI,
        }),
    ),
    (
        "big",
        Some(Measured {
            cpu_milli: 300,
            memory: GI,
        }),
    ),
    (
        "mid",
        Some(Measured {
            cpu_milli: 700,
            memory: GI,
        }),
    ),
];

#[test]
fn pods_move_by_usage_not_requests() {
    let f = disagreeing(&ALL);
    let by_requests = LowNodeUtilizationArgs {
        metrics_utilization: None,
        ..metrics_args()
    };
    assert_eq!(proposed(&f, by_requests), ["big@n2"]);
    assert_eq!(proposed(&f, metrics_args()), ["p1@n1", "p2@n1"]);
}

#[test]
fn a_pod_without_metrics_is_left() {
    let mut some = ALL.to_vec();
    some[0].1 = None;
    some.remove(1);
    let f = disagreeing(&some);
    // p1: a container without cpu; p2: no PodMetrics at all.
    assert_eq!(proposed(&f, metrics_args()), ["p3@n1", "p4@n1"]);
}

fn one_profile(args: LowNodeUtilizationArgs) -> Policy {
    Policy {
        profiles: vec![Profile {
            name: "p".into(),
            strategies: vec![PluginArgs::LowNodeUtilization(args)],
            ..Profile::default()
        }],
        ..Policy::default()
    }
}

fn cycle(f: &Fixture, policy: &Policy) -> crate::deschedule::Plan {
    plan(
        policy,
        &f.cluster(),
        &History::default(),
        &Settings::default(),
        &FixedClock::default(),
    )
}

#[test]
fn a_node_missing_from_the_metrics_stops_the_strategy_for_the_cycle() {
    let mut f = disagreeing(&ALL);
    let policy = one_profile(metrics_args());
    assert!(wanted(&policy));
    let p = cycle(&f, &policy);
    assert_eq!(p.evictions.len(), 2, "{:?}", p.evictions);
    assert!(p.skipped.is_empty());
    f.usage.as_mut().unwrap().nodes.remove("n3");
    let p = cycle(&f, &policy);
    assert!(p.evictions.is_empty(), "{:?}", p.evictions);
    assert_eq!(
        p.skipped,
        [Skipped {
            profile: "p".into(),
            strategy: Strategy::LowNodeUtilization,
            why: Unavailable::NodeMissing("n3".into()),
        }]
    );
    f.usage = None;
    assert_eq!(cycle(&f, &policy).skipped[0].why, Unavailable::NoMetrics);
    // By requests, nothing is missing.
    let by_requests = one_profile(LowNodeUtilizationArgs {
        metrics_utilization: None,
        ..metrics_args()
    });
    assert!(!wanted(&by_requests));
    assert!(cycle(&f, &by_requests).skipped.is_empty());
}
