//! Finished pods (Failed, Succeeded) still bound: `PodLifeTime` reaches succeeded ones (upstream's
//! `pod-life-time-transition.yml`), and their eviction needs no place and spends no disruption budget
//! (the eviction API does not check budgets for a pod that is not running).

use super::*;
use crate::clock::FixedClock;
use crate::deschedule::fixtures::{DeschedulerPod, Fixture};
use crate::deschedule::strategies::lifetime::{PodConditionFilter, PodLifeTimeArgs};
use crate::deschedule::{PluginArgs, Profile};
use crate::fixtures::{node, pdb, pod, resources};
use crate::model::workload::{PodCondition, PodPhase};

fn n(name: &str) -> Node {
    node(name)
        .allocatable(resources(4000, 8 << 30, 110))
        .ready()
        .build()
}

/// A pod of Job `batch` on `a` in `phase`, its `Initialized` condition `PodCompleted` since `since`.
fn job_pod(name: &str, phase: PodPhase, since: i64) -> Pod {
    pod("default", name)
        .on("a")
        .label("app", "batch")
        .owner("Job", "batch")
        .phase(phase)
        .with(|p| {
            p.meta.conditions = vec![PodCondition {
                kind: "Initialized".into(),
                status: "True".into(),
                reason: "PodCompleted".into(),
                last_transition: Some(since),
            }]
            .into();
        })
        .build()
}

/// Upstream's `pod-life-time-transition.yml`: succeeded pods of `default` whose `PodCompleted`
/// condition is over four hours old.
fn transition() -> Policy {
    Policy {
        profiles: vec![Profile {
            name: "ProfileName".into(),
            strategies: vec![PluginArgs::PodLifeTime(PodLifeTimeArgs {
                states: vec!["Succeeded".into()],
                conditions: vec![PodConditionFilter {
                    reason: "PodCompleted".into(),
                    status: "True".into(),
                    min_time_since_last_transition_seconds: Some(14_400),
                    ..Default::default()
                }],
                ..Default::default()
            })],
            ..Profile::default()
        }],
        ..Policy::default()
    }
}

#[test]
fn pod_life_time_removes_succeeded_pods_and_spends_no_budget() {
    let now = 100_000;
    let mut f = Fixture::new(
        vec![n("a"), n("b")],
        vec![
            job_pod("done-long-ago", PodPhase::Succeeded, now - 5 * 3600),
            job_pod("done-lately", PodPhase::Succeeded, now - 3600),
            job_pod("running", PodPhase::Running, now - 5 * 3600),
        ],
    );
    f.now = now;
    // A budget that allows nothing: finished pods go anyway, as the eviction API lets them.
    f.pdbs.push(pdb("default", "batch", "batch", 0));
    let p = plan(
        &transition(),
        &f.cluster(),
        &History::default(),
        &Settings::default(),
        &FixedClock::default(),
    );
    let gone: Vec<(&str, &str)> = p
        .evictions
        .iter()
        .map(|e| (e.pod.name.as_str(), e.to.as_str()))
        .collect();
    assert_eq!(gone, [("done-long-ago", "")], "{:?}", p.declined);
}

#[test]
fn a_failed_pods_eviction_leaves_the_budget_to_the_running_ones() {
    let mut f = Fixture::new(
        vec![n("a"), n("b")],
        vec![
            job_pod("failed", PodPhase::Failed, 0),
            job_pod("running", PodPhase::Running, 0),
        ],
    );
    f.pdbs.push(pdb("default", "batch", "batch", 1));
    let cluster = f.cluster();
    let settings = Settings::default();
    let history = History::default();
    let policy = Policy::default();
    let mut planner = Planner::new(&policy, &cluster, &history, &settings);
    for p in f.failed.iter().chain(&f.pods) {
        planner.consider(Proposal::anywhere(p, Strategy::PodLifeTime), "p");
    }
    let gone: Vec<&str> = planner
        .out
        .evictions
        .iter()
        .map(|e| e.pod.name.as_str())
        .collect();
    assert_eq!(gone, ["failed", "running"], "{:?}", planner.out.declined);
}

#[test]
fn one_ready_node_alone_is_not_descheduled() {
    // As the descheduler: a cycle needs two ready nodes within the policy's nodeSelector.
    let mut f = Fixture::new(
        vec![n("a")],
        vec![job_pod("done-long-ago", PodPhase::Succeeded, 50_000)],
    );
    f.now = 100_000;
    let p = plan(
        &transition(),
        &f.cluster(),
        &History::default(),
        &Settings::default(),
        &FixedClock::default(),
    );
    assert!(p.evictions.is_empty() && p.declined.is_empty());
    let mut f = Fixture::new(
        vec![n("a"), n("b")],
        vec![job_pod("done-long-ago", PodPhase::Succeeded, 50_000)],
    );
    f.now = 100_000;
    let p = plan(
        &transition(),
        &f.cluster(),
        &History::default(),
        &Settings::default(),
        &FixedClock::default(),
    );
    assert_eq!(p.evictions.len(), 1);
}
