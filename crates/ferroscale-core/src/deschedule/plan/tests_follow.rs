//! A plan places no pod where the policy's own strategies would evict it again next cycle: not as
//! a duplicate of its owner's pod (`RemoveDuplicates`), not against a `ScheduleAnyway` spread a
//! spread strategy balances; it picks another node or declines with why.

use super::*;
use crate::clock::FixedClock;
use crate::deschedule::args::Thresholds;
use crate::deschedule::fixtures::{DeschedulerPod, Fixture};
use crate::deschedule::strategies::low_utilization::LowNodeUtilizationArgs;
use crate::deschedule::strategies::remove_duplicates::RemoveDuplicatesArgs;
use crate::deschedule::strategies::spread::{
    RemovePodsViolatingTopologySpreadConstraintArgs, WhenUnsatisfiable,
};
use crate::deschedule::{PluginArgs, Profile};
use crate::fixtures::{node, pod, resources, selector};
use crate::labels;
use crate::model::workload::SpreadConstraint;

const GI: i64 = 1 << 30;

fn n(name: &str) -> Node {
    node(name)
        .allocatable(resources(4000, 16 * GI, 110))
        .hostname()
        .ready()
        .build()
}

/// A pod of `gi` GiB on `on`, owned by ReplicaSet `owner`, priority `prio`.
fn p(name: &str, owner: &str, gi: i64, on: &str, prio: i32) -> crate::fixtures::PodBuilder {
    pod("shop", name)
        .requests(resources(100, gi * GI, 1))
        .on(on)
        .priority(prio)
        .label("app", owner)
        .owner("ReplicaSet", owner)
        .images(&[owner])
}

/// `a` over 60% memory with web-1 (lowest priority) its first candidate; `b` (emptiest, web-2 on
/// it) and `c` under 30%.
fn skewed(c_gi: i64) -> Fixture {
    let pods = vec![
        p("web-1", "web", 4, "a", 0).build(),
        p("hog-1", "hog-1", 4, "a", 10).build(),
        p("hog-2", "hog-2", 4, "a", 10).build(),
        p("web-2", "web", 1, "b", 10).build(),
        p("filler", "filler", c_gi, "c", 10).build(),
    ];
    Fixture::new(vec![n("a"), n("b"), n("c")], pods)
}

fn low() -> PluginArgs {
    let th = |v: f64| -> Thresholds { [("memory".to_string(), v)].into() };
    PluginArgs::LowNodeUtilization(LowNodeUtilizationArgs {
        thresholds: th(30.0),
        target_thresholds: th(60.0),
        ..Default::default()
    })
}

fn policy(strategies: Vec<PluginArgs>) -> Policy {
    Policy {
        profiles: vec![Profile {
            name: "p".into(),
            strategies,
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

fn moved<'p>(plan: &'p Plan, pod: &str) -> Option<&'p str> {
    plan.evictions
        .iter()
        .find(|e| e.pod.name == pod)
        .map(|e| e.to.as_str())
}

#[test]
fn a_pod_is_not_sent_to_the_node_of_its_owners_other_pod_when_remove_duplicates_runs() {
    let f = skewed(3);
    // Alone, the scheduler's pick is the emptiest node: web-2's.
    assert_eq!(moved(&cycle(&f, &policy(vec![low()])), "web-1"), Some("b"));
    let dedup = PluginArgs::RemoveDuplicates(RemoveDuplicatesArgs::default());
    let plan = cycle(&f, &policy(vec![low(), dedup]));
    assert_eq!(moved(&plan, "web-1"), Some("c"), "{plan:?}");
}

#[test]
fn with_no_node_but_a_duplicate_one_the_pod_is_declined_naming_remove_duplicates() {
    // c too full to take web-1: only b, where it would be web-2's duplicate.
    let f = skewed(12);
    let dedup = PluginArgs::RemoveDuplicates(RemoveDuplicatesArgs::default());
    let plan = cycle(&f, &policy(vec![low(), dedup]));
    assert_eq!(moved(&plan, "web-1"), None, "{plan:?}");
    let d = plan
        .declined
        .iter()
        .find(|d| d.pod.name == "web-1")
        .expect("web-1 declined");
    assert_eq!(
        d.why,
        Why::WouldRecreate {
            strategy: Strategy::RemoveDuplicates
        }
    );
}

#[test]
fn a_soft_spread_the_policy_balances_is_kept_by_the_placement() {
    // web's pods spread softly over hostnames: b holds one, c none.
    let soft = SpreadConstraint {
        max_skew: 1,
        topology_key: labels::HOSTNAME.into(),
        selector: selector(&[("app", "web")]),
        min_domains: None,
        ignore_node_affinity: false,
        honor_taints: false,
    };
    let with_soft = |b: crate::fixtures::PodBuilder| {
        let soft = soft.clone();
        b.with(move |p| p.meta.soft_spread = vec![soft].into())
    };
    let pods = vec![
        with_soft(p("web-1", "web", 4, "a", 0)).build(),
        p("hog-1", "hog-1", 4, "a", 10).build(),
        p("hog-2", "hog-2", 4, "a", 10).build(),
        with_soft(p("web-2", "web", 1, "b", 10)).build(),
        with_soft(p("web-3", "web", 1, "b", 10)).build(),
        p("filler", "filler", 3, "c", 10).build(),
    ];
    let f = Fixture::new(vec![n("a"), n("b"), n("c")], pods);
    assert_eq!(moved(&cycle(&f, &policy(vec![low()])), "web-1"), Some("b"));
    let spread = PluginArgs::RemovePodsViolatingTopologySpreadConstraint(
        RemovePodsViolatingTopologySpreadConstraintArgs {
            constraints: vec![
                WhenUnsatisfiable::DoNotSchedule,
                WhenUnsatisfiable::ScheduleAnyway,
            ],
            ..Default::default()
        },
    );
    let plan = cycle(&f, &policy(vec![low(), spread]));
    assert_eq!(moved(&plan, "web-1"), Some("c"), "{plan:?}");
}

#[test]
fn a_preferred_node_affinity_the_policy_enforces_keeps_the_pod_on_a_node_it_prefers_most() {
    use crate::deschedule::strategies::node_affinity::{
        RemovePodsViolatingNodeAffinityArgs, PREFERRED,
    };
    use crate::model::workload::{Requirement, SelectorOp};
    let tiered = |name: &str, tier: &str| {
        node(name)
            .allocatable(resources(4000, 16 * GI, 110))
            .hostname()
            .label("tier", tier)
            .ready()
            .build()
    };
    // web-1 prefers fast nodes and is on one (a, over its target): b is the emptiest, but slow.
    let fast = vec![Requirement {
        key: "tier".into(),
        op: SelectorOp::In,
        values: vec!["fast".into()],
    }];
    let pods = vec![
        p("web-1", "web", 4, "a", 0)
            .with(move |p| p.meta.preferred_node_affinity = vec![(10, fast)].into())
            .build(),
        p("hog-1", "hog-1", 4, "a", 10).build(),
        p("hog-2", "hog-2", 4, "a", 10).build(),
        p("filler", "filler", 3, "c", 10).build(),
    ];
    let nodes = vec![
        tiered("a", "fast"),
        tiered("b", "slow"),
        tiered("c", "fast"),
    ];
    let f = Fixture::new(nodes, pods);
    assert_eq!(moved(&cycle(&f, &policy(vec![low()])), "web-1"), Some("b"));
    let affinity =
        PluginArgs::RemovePodsViolatingNodeAffinity(RemovePodsViolatingNodeAffinityArgs {
            node_affinity_type: vec![PREFERRED.into()],
            ..Default::default()
        });
    let plan = cycle(&f, &policy(vec![affinity, low()]));
    assert_eq!(moved(&plan, "web-1"), Some("c"), "{plan:?}");
}
