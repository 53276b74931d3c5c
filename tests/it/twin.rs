//! `simulate` predicts `run`: the same scenarios (a scale-up, a scale-down through a PodDisruptionBudget,
//! a drift replacement, a launch that runs out of capacity and falls back to another group) go through
//! `simulate` and through `run` against the loopback Kubernetes API on the same memory cloud, and the
//! decisions (groups, deltas, nodes removed and why, replacements, instances deleted, capacity given up)
//! and the nodes per group are equal loop by loop.

use std::time::Duration;

use ferroscale::engine::Settings;
use ferroscale::simulate::Pacing;
use serde_json::{json, Value};

use crate::support::twin::{through_run, through_simulate, Scenario, Step};

const T0: &str = "2026-01-01T00:00:00Z";

/// One group of 4-cpu nodes with instances `i-a` and `i-b` (nodes `pool-a`, `pool-b`).
const POOL: &str = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 5, instances: [{id: i-a}, {id: i-b}],
     capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.192}
"#;

fn node(name: &str, group: &str, instance: &str, cpu: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "creationTimestamp": T0,
            "labels": {"kubernetes.io/hostname": name, "ferroscale.io/node-group": group}},
        "spec": {"providerID": format!("memory:///{group}/{instance}")},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "20"},
            "capacity": {"cpu": cpu, "memory": "16Gi", "pods": "20"},
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": T0}],
        },
    })
}

/// A ReplicaSet's pod of `app`, on `node` or pending (marked unschedulable).
fn pod(name: &str, cpu: &str, node: Option<&str>, app: &str) -> Value {
    let status = match node {
        Some(_) => json!({"phase": "Running"}),
        None => json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}),
    };
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app},
            "creationTimestamp": T0,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-rs"),
                "uid": format!("{app}-rs-uid"), "controller": true}]},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "app",
            "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}]},
        "status": status,
    })
}

fn pdb(app: &str, allowed: i64) -> Value {
    json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": app, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": app}}, "maxUnavailable": allowed},
        "status": {"disruptionsAllowed": allowed, "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2},
    })
}

/// Upstream's defaults, scale-down without waiting.
fn eager() -> Settings {
    let mut s = ferroscale::cli::flags::default_engine();
    s.defaults.scale_down_unneeded_time = Duration::ZERO;
    s.scale_down_delay_after_add = Duration::ZERO;
    s
}

fn pacing(provision: u64) -> Pacing {
    Pacing {
        loops: 0,
        scan_interval: Duration::from_secs(10),
        provision_delay: Duration::from_secs(provision),
        node_ready_delay: Duration::ZERO,
        by_group: Default::default(),
    }
}

/// Runs both sides and compares them loop by loop; returns the steps for the scenario's own checks.
async fn twins(s: Scenario) -> Vec<Step> {
    let simulated = through_simulate(&s);
    let ran = through_run(&s).await;
    for (i, (a, b)) in simulated.iter().zip(&ran).enumerate() {
        assert_eq!(
            a,
            b,
            "loop {}: simulate (left) and run (right) differ",
            i + 1
        );
    }
    assert_eq!(simulated.len(), ran.len());
    simulated
}

#[tokio::test]
async fn a_scale_up_waits_for_its_nodes_then_binds_the_pods() {
    let groups = r#"
nodeGroups:
  - {name: small, minSize: 0, maxSize: 5, instances: [{id: i-a}],
     capacity: {cpu: 2, memory: 16Gi, pods: 20}, pricePerHour: 0.096}
  - {name: big, minSize: 0, maxSize: 2,
     capacity: {cpu: 8, memory: 16Gi, pods: 50}, pricePerHour: 0.384}
"#;
    let mut objects = vec![node("small-a", "small", "i-a", "2")];
    for k in 0..3 {
        objects.push(pod(&format!("web-{k}"), "1500m", None, "web"));
    }
    let steps = twins(Scenario {
        groups,
        objects,
        settings: ferroscale::cli::flags::default_engine(),
        loops: 4,
        pacing: pacing(20),
        events: "[]",
    })
    .await;
    let up: Vec<&(String, i32)> = steps.iter().flat_map(|s| &s.scale_up).collect();
    assert!(!up.is_empty(), "{steps:?}");
    assert!(steps[3].nodes.values().sum::<usize>() > 1, "{steps:?}");
}

#[tokio::test]
async fn booting_nodes_are_asked_for_once_and_seen_ready_on_both_sides() {
    let groups = r#"
nodeGroups:
  - {name: small, minSize: 0, maxSize: 5, instances: [{id: i-a}],
     capacity: {cpu: 2, memory: 16Gi, pods: 20}, pricePerHour: 0.096,
     options: {scaleDownUnneededTime: 60s}}
  - {name: big, minSize: 0, maxSize: 5,
     capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.192}
"#;
    let mut objects = vec![node("small-a", "small", "i-a", "2")];
    for k in 0..4 {
        objects.push(pod(&format!("web-{k}"), "3", None, "web"));
    }
    // Nodes join at the next loop (10s) and are NotReady (tainted) for three loops; they may take 35s
    // to start. `run` reads their condition and taints from the API as `simulate` has them: had it not
    // seen them become Ready (at 40s), four of five nodes would be unready from 50s on and the cluster
    // unhealthy, and the idle `small-a` would not go at 60s: its unneeded time (60s) counts from the first
    // loop, which scaled up (as upstream's RunOnce, scale-down finds unneeded nodes in that loop too).
    let mut settings = eager();
    settings.defaults.max_node_startup_time = Duration::from_secs(35);
    let steps = twins(Scenario {
        groups,
        objects,
        settings,
        loops: 8,
        pacing: Pacing {
            node_ready_delay: Duration::from_secs(30),
            ..pacing(0)
        },
        events: "[]",
    })
    .await;
    let up: Vec<&(String, i32)> = steps.iter().flat_map(|s| &s.scale_up).collect();
    assert_eq!(up, [&("big".to_string(), 4)], "asked for once: {steps:?}");
    let removed: Vec<&str> = steps
        .iter()
        .flat_map(|s| &s.removed)
        .map(|(node, _, _)| node.as_str())
        .collect();
    assert_eq!(removed, ["small-a"], "{steps:?}");
    assert!(steps[6].removed.len() == 1, "at 60s: {steps:?}");
}

#[tokio::test]
async fn a_scale_down_evicts_through_the_budget_and_deletes_the_node() {
    let groups = POOL;
    let objects = vec![
        node("pool-a", "pool", "i-a", "4"),
        node("pool-b", "pool", "i-b", "4"),
        pod("anchor", "3", Some("pool-a"), "anchor"),
        pod("web-1", "500m", Some("pool-b"), "web"),
        pdb("web", 1),
    ];
    let steps = twins(Scenario {
        groups,
        objects,
        settings: eager(),
        loops: 3,
        pacing: pacing(0),
        events: "[]",
    })
    .await;
    let removed: Vec<&String> = steps
        .iter()
        .flat_map(|s| &s.removed)
        .map(|r| &r.0)
        .collect();
    assert_eq!(removed, ["pool-b"], "{steps:?}");
    assert_eq!(steps[2].nodes["pool"], 1);
}

#[tokio::test]
async fn a_drifted_node_is_replaced_surge_first() {
    let groups = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 6, capacity: {cpu: 4, memory: 16Gi, pods: 20},
     revision: "lt-1:2", drift: Replace, disruptionBudget: "1",
     instances: [{id: i-0, revision: "lt-1:1"}, {id: i-1}]}
"#;
    let objects = vec![
        node("pool-0", "pool", "i-0", "4"),
        node("pool-1", "pool", "i-1", "4"),
        pod("web-0", "3", Some("pool-0"), "web"),
        pod("web-1", "3", Some("pool-1"), "web"),
    ];
    let steps = twins(Scenario {
        groups,
        objects,
        settings: ferroscale::cli::flags::default_engine(),
        loops: 5,
        pacing: pacing(10),
        events: "[]",
    })
    .await;
    let surges: Vec<&(String, i32)> = steps.iter().flat_map(|s| &s.replacements).collect();
    assert_eq!(surges, [&("pool".to_string(), 1)], "{steps:?}");
    let removed: Vec<&String> = steps
        .iter()
        .flat_map(|s| &s.removed)
        .map(|r| &r.0)
        .collect();
    assert_eq!(removed, ["pool-0"], "{steps:?}");
}

#[tokio::test]
async fn a_group_out_of_capacity_is_given_up_for_the_next_one() {
    let groups = r#"
nodeGroups:
  - {name: cheap, minSize: 0, maxSize: 5, launchCapacity: 0,
     capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.1}
  - {name: dear, minSize: 0, maxSize: 5,
     capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.4}
"#;
    let objects = vec![
        pod("web-0", "3", None, "web"),
        pod("web-1", "3", None, "web"),
    ];
    let mut settings = ferroscale::cli::flags::default_engine();
    settings.expander = vec![ferroscale::engine::expander::Strategy::Price];
    let steps = twins(Scenario {
        groups,
        objects,
        settings,
        loops: 4,
        pacing: pacing(0),
        events: "[]",
    })
    .await;
    let up: Vec<&String> = steps
        .iter()
        .flat_map(|s| &s.scale_up)
        .map(|u| &u.0)
        .collect();
    assert!(
        up.contains(&&"cheap".to_string()) && up.contains(&&"dear".to_string()),
        "{steps:?}"
    );
    assert!(steps.iter().any(|s| !s.cancelled.is_empty()), "{steps:?}");
}

#[tokio::test]
async fn a_spot_warning_takes_the_node_out_and_replaces_it_in_the_same_loop() {
    let groups = POOL;
    let objects = vec![
        node("pool-a", "pool", "i-a", "4"),
        node("pool-b", "pool", "i-b", "4"),
        pod("web-0", "1", Some("pool-a"), "web"),
        pod("web-1", "1", Some("pool-a"), "web"),
        pod("web-2", "1", Some("pool-a"), "web"),
        pod("web-3", "3", Some("pool-b"), "web"),
        pdb("web", 0),
    ];
    let events = "- at: 10s\n  event:\n    version: \"0\"\n    source: aws.ec2\n    detail-type: EC2 Spot Instance Interruption Warning\n    region: us-east-1\n    detail: {instance-id: i-a}\n";
    let steps = twins(Scenario {
        groups,
        objects,
        settings: ferroscale::cli::flags::default_engine(),
        loops: 4,
        pacing: pacing(10),
        events,
    })
    .await;
    assert!(steps[0].disrupted.is_empty(), "{steps:?}");
    assert_eq!(
        steps[1].disrupted,
        [("pool-a".to_string(), "spot-interruption".to_string())]
    );
    assert_eq!(steps[1].replacements, [("pool".to_string(), 1)]);
    assert_eq!(
        steps[3].nodes["pool"], 2,
        "the replacement joined: {steps:?}"
    );
}
