//! `simulate` predicts `run`'s descheduler: the same objects, read by `run`'s watches from the loopback
//! Kubernetes API and by `simulate` from a dump, planned by one descheduling cycle each with the same
//! policy, give the same evictions; with `HighNodeUtilization`, both hand the same emptied node to
//! scale-down instead of evicting its pods.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fixtures::kube::{node, pod, POOL};
use crate::support::kube_api::{KubeApi, NODES, PODS};
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

/// One cycle of `simulate`'s descheduler (`run`'s, evicting through the simulated cluster) with `policy`
/// on `objects` as a dump: the pods it evicted and the nodes it handed to scale-down.
fn through_simulate(policy: Policy, objects: Vec<(&str, Value)>) -> (Vec<String>, Vec<String>) {
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
    let mut sim = Simulation::new(&objects, &config, &PriceOverrides::default()).unwrap();
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
