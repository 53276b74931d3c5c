//! The descheduler as one method among the loop's (issue #37): it plans nothing onto a node the loop's
//! decisions name as no destination (`Decisions::not_destinations`), spends only what the loop's other
//! methods left of each budget (`Decisions::pdbs_left`), and does not move a workload another method's
//! removal moved within `--deschedule-cooldown`. Through `simulate`'s descheduler, which is `run`'s.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use ferroscale::deschedule::{PluginArgs, Policy, Profile, Settings, Strategy};
use ferroscale::descheduler::{Descheduler, DeschedulerSettings, Seen};
use ferroscale::engine::Decisions;
use ferroscale::metrics::DeschedulerMetrics;
use ferroscale::model::workload::{LabelSelector, Pdb};
use ferroscale::simulate::Simulation;

use crate::support::fixtures::dump::{node, pod, GROUPS};
use crate::support::simulate_harness::sim;

/// RemoveDuplicates alone.
fn duplicates() -> Policy {
    Policy {
        profiles: vec![Profile {
            name: "p".into(),
            strategies: vec![PluginArgs::default_for(Strategy::RemoveDuplicates)],
            ..Profile::default()
        }],
        ..Policy::default()
    }
}

/// `a` with two replicas of one ReplicaSet (labelled `tier: web`, under a budget allowing one
/// disruption), `b` empty.
fn cluster() -> Simulation {
    let web = |name: &str| {
        pod("d", name, "500m", "1Gi", Some("a"), "")
            .replace("labels: {app: ", "labels: {tier: web, app: ")
    };
    let objects = vec![
        node("a", "small", "2", "8Gi"),
        node("b", "small", "2", "8Gi"),
        web("web-1"),
        web("web-2"),
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web, namespace: d}\n\
         spec: {selector: {matchLabels: {tier: web}}, maxUnavailable: 1}\nstatus: {disruptionsAllowed: 1}\n"
            .to_string(),
    ];
    let mut s = sim(&objects, GROUPS);
    s.set_descheduler(duplicates(), Duration::from_secs(300), Settings::default());
    s
}

/// The declined proposals' reasons.
fn reasons(plan: &ferroscale::deschedule::Plan) -> Vec<String> {
    plan.declined.iter().map(|d| d.why.to_string()).collect()
}

#[test]
fn alone_a_duplicate_moves_to_the_other_node() {
    let mut s = cluster();
    let now = s.now();
    let (cycle, plan) = s
        .deschedule(HashSet::new(), &Decisions::default(), now)
        .unwrap();
    assert_eq!(cycle.evicted.len(), 1, "{cycle:?}");
    assert_eq!(plan.evictions[0].to, "b");
}

#[test]
fn nothing_is_planned_onto_a_node_the_loop_names_as_no_destination() {
    let mut s = cluster();
    let d = Decisions {
        not_destinations: vec!["b".into()],
        ..Decisions::default()
    };
    let now = s.now();
    let (cycle, plan) = s.deschedule(HashSet::new(), &d, now).unwrap();
    assert!(cycle.evicted.is_empty(), "{cycle:?}");
    assert!(
        reasons(&plan)
            .iter()
            .any(|r| r.starts_with("no other node can take it")),
        "{:?}",
        reasons(&plan)
    );
}

#[test]
fn the_plan_spends_only_what_the_loops_other_methods_left_of_a_budget() {
    let mut s = cluster();
    // The cluster's budget allows one; the loop's other methods took it.
    let left = Pdb {
        namespace: "d".into(),
        name: "web".into(),
        selector: LabelSelector::parse("tier=web").unwrap(),
        disruptions_allowed: 0,
    };
    let d = Decisions {
        pdbs_left: vec![left],
        ..Decisions::default()
    };
    let now = s.now();
    let (cycle, plan) = s.deschedule(HashSet::new(), &d, now).unwrap();
    assert!(cycle.evicted.is_empty(), "{cycle:?}");
    assert!(
        reasons(&plan)
            .iter()
            .any(|r| r == "PodDisruptionBudget d/web allows no more disruptions"),
        "{:?}",
        reasons(&plan)
    );
}

#[test]
fn a_workload_another_methods_removal_moved_is_not_moved_again_within_the_cooldown() {
    let s = cluster();
    let c = s.cluster().clone();
    let settings = DeschedulerSettings {
        policy: Arc::new(duplicates()),
        interval: Duration::from_secs(300),
        plan: Settings::default(),
        dry_run: false,
    };
    let mut d = Descheduler::with_cluster(settings, c.clone(), DeschedulerMetrics::unregistered());
    let (nodes, pods) = {
        let state = c.state();
        (state.nodes.clone(), state.pods.clone())
    };
    let now = s.now();
    // A scale-down's drain evicted web-1 from `a` a minute ago.
    let drained = pods.iter().find(|p| p.name == "web-1").unwrap();
    d.remember_moved([(&**drained, "a")], now - 60);
    let seen = Seen {
        nodes: &nodes,
        pods: &pods,
        failed: &[],
        pdbs: &[],
        removing: &HashSet::new(),
        ids: &c,
    };
    let (cycle, plan) = futures::executor::block_on(d.deschedule(&seen, now));
    assert!(cycle.evicted.is_empty(), "{cycle:?}");
    assert!(
        reasons(&plan)
            .iter()
            .any(|r| r.starts_with("its workload was moved recently")),
        "{:?}",
        reasons(&plan)
    );
    // Past the cooldown it moves.
    let later = now + Settings::default().cooldown_secs;
    let (cycle, _) = futures::executor::block_on(d.deschedule(&seen, later));
    assert_eq!(cycle.evicted.len(), 1, "{cycle:?}");
}

#[test]
fn a_cycle_asks_for_a_bounded_number_of_evictions_and_leaves_the_rest_for_a_later_cycle() {
    use ferroscale::deschedule::strategies::failed::RemoveFailedPodsArgs;
    use ferroscale::descheduler::EVICTIONS_PER_CYCLE;
    let extra = 5;
    // Two nodes: as the descheduler, a cycle needs two ready ones.
    let mut objects = vec![node("a", "big", "8", "32Gi"), node("b", "big", "8", "32Gi")];
    for i in 0..EVICTIONS_PER_CYCLE + extra {
        let p = pod("d", &format!("crashed-{i}"), "1m", "1Mi", Some("a"), "");
        objects.push(format!("{p}status: {{phase: Failed}}\n"));
    }
    let mut s = sim(&objects, GROUPS);
    let failed = PluginArgs::RemoveFailedPods(RemoveFailedPodsArgs {
        min_pod_lifetime_seconds: None,
        ..RemoveFailedPodsArgs::default()
    });
    let policy = Policy {
        profiles: vec![Profile {
            name: "p".into(),
            strategies: vec![failed],
            ..Profile::default()
        }],
        ..Policy::default()
    };
    s.set_descheduler(policy, Duration::from_secs(300), Settings::default());
    let now = s.now();
    let (cycle, plan) = s
        .deschedule(HashSet::new(), &Decisions::default(), now)
        .unwrap();
    assert_eq!(plan.evictions.len(), EVICTIONS_PER_CYCLE + extra);
    assert_eq!(cycle.evicted.len(), EVICTIONS_PER_CYCLE);
    assert_eq!(cycle.deferred, extra);
    assert_eq!(
        s.cluster().state().failed.len(),
        extra,
        "left for a later cycle"
    );
    // The next cycle takes them.
    let (cycle, _) = s
        .deschedule(HashSet::new(), &Decisions::default(), now + 300)
        .unwrap();
    assert_eq!(cycle.evicted.len(), extra);
    assert!(s.cluster().state().failed.is_empty());
}
