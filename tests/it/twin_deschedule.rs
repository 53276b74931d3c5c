//! `simulate` predicts `run`'s descheduler — one implementation (`descheduler::Descheduler`), evicting
//! through the live API in one and the simulated cluster in the other: the same objects, read by `run`'s
//! watches from the loopback Kubernetes API and by `simulate` from a dump, planned by one descheduling
//! cycle each with the same policy, give the same evictions; with `HighNodeUtilization`, both hand the
//! same emptied node to scale-down instead of evicting its pods. The same holds for a whole loop: `run`'s
//! `Runner` (its evictions in the background) and `simulate`'s step.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fixtures::kube::{node, pod, POOL};
use crate::support::kube_api::{KubeApi, NODES, PODS};
use crate::support::run_harness::{run_settings, Harness};
use crate::support::simulate_harness::pacing;
use ferroscale::cloud::memory::MemoryConfig;
use ferroscale::deschedule::strategies::failed::RemoveFailedPodsArgs;
use ferroscale::deschedule::{PluginArgs, Policy, Profile, Settings, Strategy};
use ferroscale::descheduler::{Descheduler, DeschedulerSettings};
use ferroscale::engine::Decisions;
use ferroscale::k8s::documents;
use ferroscale::k8s::events::Events;
use ferroscale::k8s::index::Index;
use ferroscale::k8s::watch::Watches;
use ferroscale::metrics::Metrics;
use ferroscale::pricing::PriceOverrides;
use ferroscale::run::RunSettings;
use ferroscale::simulate::Simulation;
use ferroscale::time::unix_now as now;

/// Failed pods removed at any age, duplicates spread.
fn policy() -> Policy {
    Policy {
        profiles: vec![Profile {
            name: "default".into(),
            strategies: vec![
                PluginArgs::RemoveFailedPods(RemoveFailedPodsArgs {
                    min_pod_lifetime_seconds: None,
                    ..RemoveFailedPodsArgs::default()
                }),
                PluginArgs::default_for(Strategy::RemoveDuplicates),
            ],
            ..Profile::default()
        }],
        ..Policy::default()
    }
}

/// Two nodes; three replicas of one ReplicaSet on `pool-b`, a failed pod of another owner still bound
/// to `pool-a` (the planner lets one strategy only move a workload per cycle).
fn objects() -> Vec<(&'static str, Value)> {
    let mut failed = pod("job-1", "100m", Some("pool-a"), "job");
    failed["status"] = json!({"phase": "Failed", "reason": "Error"});
    failed["metadata"]["ownerReferences"][0]["name"] = json!("jobs");
    vec![
        ("Node", node("pool-a", "memory:///pool/i-a", "4", "16Gi")),
        ("Node", node("pool-b", "memory:///pool/i-b", "4", "16Gi")),
        ("Pod", pod("web-1", "200m", Some("pool-b"), "web")),
        ("Pod", pod("web-2", "200m", Some("pool-b"), "web")),
        ("Pod", pod("web-3", "200m", Some("pool-b"), "web")),
        ("Pod", failed),
    ]
}

/// One cycle of `run`'s descheduler with `policy` on `objects` in the loopback API: the pods it evicted
/// and the nodes it handed to scale-down.
async fn through_run(policy: Policy, objects: Vec<(&str, Value)>) -> (Vec<String>, Vec<String>) {
    let api = KubeApi::start().await;
    for (kind, o) in objects {
        api.put(if kind == "Node" { NODES } else { PODS }, o);
    }
    let watches = Watches::start(&api.client(), false);
    watches
        .ready(tokio::time::sleep(Duration::from_secs(10)))
        .await
        .unwrap();
    let mut index = Index::default();
    index.update(&watches, now());
    let metrics = Metrics::default().with_descheduler();
    let client = api.client();
    let mut d = Descheduler::new(
        DeschedulerSettings {
            policy: Arc::new(policy),
            interval: Duration::from_secs(300),
            plan: Settings::default(),
            dry_run: false,
        },
        client.clone(),
        Events::start(&client, "test-replica"),
        metrics.descheduler.clone().unwrap(),
    );
    d.hand_emptied_to_scale_down();
    let mut cycle = d.cycle(&index, &HashSet::new(), now()).await;
    cycle.evicted.sort();
    (cycle.evicted, cycle.emptying)
}

/// `simulate`'s cluster: `objects` as a dump.
fn simulation(objects: Vec<(&str, Value)>) -> Simulation {
    let items: Vec<Value> = objects
        .into_iter()
        .map(|(kind, mut o)| {
            o["kind"] = json!(kind);
            o["apiVersion"] = json!("v1");
            o
        })
        .collect();
    let dump = json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string();
    let objects = documents::parse(&dump, "twin.json").unwrap();
    let config = MemoryConfig::parse(POOL).unwrap();
    Simulation::new(&objects, &config, &PriceOverrides::default()).unwrap()
}

/// The loop's engine without scale-down. With it, the loop soft-taints the unneeded node, which
/// `simulate`'s descheduler sees at once (the actuator changed the simulated cluster) and `run`'s only
/// from its next loop's index: a difference of when each side reads the cluster, not of the descheduler.
fn engine() -> ferroscale::engine::Settings {
    ferroscale::engine::Settings {
        scale_down_enabled: false,
        ..ferroscale::cli::flags::default_engine()
    }
}

/// One loop of `run` with `--deschedule-policy` `policy` on `objects` in the loopback API, its
/// background work waited for: the pods evicted and the nodes handed to scale-down.
async fn loop_of_run(policy: Policy, objects: Vec<(&str, Value)>) -> (Vec<String>, Vec<String>) {
    let api = KubeApi::start().await;
    for (kind, o) in objects {
        api.put(if kind == "Node" { NODES } else { PODS }, o);
    }
    let run = RunSettings {
        deschedule: Some(DeschedulerSettings {
            policy: Arc::new(policy),
            interval: Duration::from_secs(300),
            plan: Settings::default(),
            dry_run: false,
        }),
        ..run_settings()
    };
    let mut h = Harness::new(api.clone(), POOL, engine(), run).await;
    h.runner.run_once(now()).await.unwrap();
    h.runner.settle().await;
    let mut evicted: Vec<String> = api
        .requests()
        .iter()
        .filter(|r| r.starts_with("POST") && r.contains("/eviction"))
        .filter_map(|r| {
            let name = r.split("/pods/").nth(1)?.split('/').next()?;
            Some(format!("default/{name}"))
        })
        .collect();
    evicted.sort();
    let emptying = h.runner.memory().emptying.keys().cloned().collect();
    (evicted, emptying)
}

/// One loop of `simulate --deschedule-policy` `policy` on `objects`: the pods evicted and the nodes
/// handed to scale-down, from the loop's report.
fn loop_of_simulate(policy: Policy, objects: Vec<(&str, Value)>) -> (Vec<String>, Vec<String>) {
    let mut sim = simulation(objects);
    sim.set_now(now());
    sim.set_descheduler(policy, Duration::from_secs(300), Settings::default());
    let r = sim.step(&engine(), &pacing());
    let mut evicted: Vec<String> = r.evictions.iter().map(|e| e.pod.clone()).collect();
    evicted.sort();
    (evicted, r.emptying)
}

/// One cycle of `simulate`'s descheduler (`run`'s, evicting through the simulated cluster) with `policy`
/// on `objects` as a dump: the pods it evicted and the nodes it handed to scale-down.
fn through_simulate(policy: Policy, objects: Vec<(&str, Value)>) -> (Vec<String>, Vec<String>) {
    let mut sim = simulation(objects);
    sim.set_descheduler(policy, Duration::from_secs(300), Settings::default());
    let (mut cycle, _) = sim
        .deschedule(HashSet::new(), &Decisions::default(), now())
        .expect("the first cycle is due");
    cycle.evicted.sort();
    (cycle.evicted, cycle.emptying)
}

#[tokio::test]
async fn run_and_simulate_evict_the_same_pods_from_the_same_cluster() {
    let (simulated, emptied) = through_simulate(policy(), objects());
    assert!(emptied.is_empty());
    assert!(
        simulated.contains(&"default/job-1".to_string()),
        "{simulated:?}"
    );
    assert!(simulated.len() >= 2, "a duplicate moved too: {simulated:?}");
    assert_eq!(through_run(policy(), objects()).await, (simulated, emptied));
}

#[tokio::test]
async fn run_and_simulate_hand_the_same_emptied_node_to_scale_down() {
    use crate::run_deschedule_emptied::{objects, pack};
    let simulated = through_simulate(pack(), objects());
    assert_eq!(simulated, (vec![], vec!["pool-a".to_string()]));
    assert_eq!(through_run(pack(), objects()).await, simulated);
}

#[tokio::test]
async fn a_loop_of_run_and_of_simulate_evict_the_same_pods() {
    let simulated = loop_of_simulate(policy(), objects());
    assert!(
        simulated.0.contains(&"default/job-1".to_string()),
        "{simulated:?}"
    );
    assert!(
        simulated.0.len() >= 2,
        "a duplicate moved too: {simulated:?}"
    );
    assert_eq!(loop_of_run(policy(), objects()).await, simulated);
}

#[tokio::test]
async fn a_loop_of_run_and_of_simulate_hand_the_same_emptied_node_to_scale_down() {
    use crate::run_deschedule_emptied::{objects, pack};
    let simulated = loop_of_simulate(pack(), objects());
    assert_eq!(simulated, (vec![], vec!["pool-a".to_string()]));
    assert_eq!(loop_of_run(pack(), objects()).await, simulated);
}
