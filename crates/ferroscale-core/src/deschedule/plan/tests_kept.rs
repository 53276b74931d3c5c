//! The pods a strategy considered and the evictor kept are in the plan's declined proposals with the
//! evictor's reason (`Why::Kept`), ferroscale's own protections included; DaemonSet pods are not
//! listed (no descheduler evicts them).

use super::*;
use crate::clock::FixedClock;
use crate::deschedule::fixtures::{DeschedulerPod, Fixture};
use crate::deschedule::strategies::lifetime::PodLifeTimeArgs;
use crate::deschedule::{Kept, PluginArgs, Profile};
use crate::fixtures::{node, pod, resources};
use crate::model::workload::SafeToEvict;

#[test]
fn pods_the_evictor_keeps_are_declined_with_its_reason() {
    let n = |name: &str| {
        node(name)
            .allocatable(resources(4000, 8 << 30, 110))
            .ready()
            .build()
    };
    let old = |name: &str| {
        pod("web", name)
            .on("a")
            .owner("ReplicaSet", "web")
            .created(1_000)
    };
    let pods = vec![
        old("movable").build(),
        old("protected").do_not_disrupt().build(),
        old("unsafe")
            .with(|p| p.meta.safe_to_evict = Some(SafeToEvict::No))
            .build(),
        pod("kube-system", "agent")
            .on("a")
            .owner("DaemonSet", "agent")
            .build(),
    ];
    let mut f = Fixture::new(vec![n("a"), n("b")], pods);
    f.now = 10_000;
    let policy = Policy {
        profiles: vec![Profile {
            name: "p".into(),
            strategies: vec![PluginArgs::PodLifeTime(PodLifeTimeArgs {
                max_pod_life_time_seconds: Some(60),
                ..Default::default()
            })],
            ..Profile::default()
        }],
        ..Policy::default()
    };
    let p = plan(
        &policy,
        &f.cluster(),
        &History::default(),
        &Settings::default(),
        &FixedClock::default(),
    );
    let gone: Vec<&str> = p.evictions.iter().map(|e| e.pod.name.as_str()).collect();
    assert_eq!(gone, ["movable"], "{:?}", p.declined);
    let kept: Vec<(&str, &Why)> = p
        .declined
        .iter()
        .map(|d| (d.pod.name.as_str(), &d.why))
        .collect();
    assert_eq!(
        kept,
        [
            ("protected", &Why::Kept(Kept::DoNotDisrupt)),
            ("unsafe", &Why::Kept(Kept::NotSafeToEvict)),
        ]
    );
    assert!(p
        .declined
        .iter()
        .all(|d| d.strategy == Strategy::PodLifeTime && d.node == "a"));
}
