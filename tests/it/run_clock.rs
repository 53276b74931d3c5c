//! `ferroscale run`'s delays against clocks that disagree: the process's wall clock stepped forward an
//! hour (as NTP correcting a paused VM does) ends no delay, and a node whose creation timestamp the API
//! server's clock put an hour off still counts as the replacement it is.

use std::time::Duration;

use ferroscale::k8s::status::Status;
use ferroscale::model::lifecycle::DisruptionReason;
use ferroscale::time::unix_now as now;

use crate::support::fixtures::kube::{node, pod};
use crate::support::kube_api::{KubeApi, CONFIGMAPS, NODES, PODS};
use crate::support::process::Served;
use crate::support::run_harness::{has_deletion_taint, run_settings, Harness};
use crate::support::server::http_get;

/// `pool-a` busy, `pool-b` empty (unneeded after 10 min), and `i-c` booting with no node yet
/// (unregistered; given up on after the 15 min provision time).
const BOOTING: &str = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 5, targetSize: 3, instances: [{id: i-a}, {id: i-b}, {id: i-c}],
     capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.192,
     options: {scaleDownUnneededTime: 10m}}
"#;

/// The status ConfigMap as last written.
fn status(api: &KubeApi) -> Option<Status> {
    let cm = api.get(CONFIGMAPS, "kube-system", "cluster-autoscaler-status")?;
    serde_norway::from_str(cm["data"]["status"].as_str()?).ok()
}

/// Writes of the status ConfigMap so far: one a loop.
fn status_writes(api: &KubeApi) -> usize {
    api.requests()
        .iter()
        .filter(|r| !r.starts_with("GET") && r.contains("configmaps/cluster-autoscaler-status"))
        .count()
}

// Two workers: the API server keeps answering while a worker blocks waiting for the child to exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wall_clock_stepped_forward_an_hour_terminates_nothing() {
    let api = KubeApi::start().await;
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    api.put(NODES, node("pool-b", "memory:///pool/i-b", "4", "16Gi"));
    api.put(PODS, pod("anchor", "3", Some("pool-a"), "anchor"));
    let dir = tempfile::tempdir().unwrap();
    let step = dir.path().join("wall-step");
    std::fs::write(&step, "0").unwrap();
    let served = Served::run_on_memory(
        &api,
        dir.path(),
        BOOTING,
        &["--scan-interval", "200ms", "--leader-elect=false"],
        &[(ferroscale::time::WALL_STEP_FILE_ENV, step.to_str().unwrap())],
    )
    .await;
    api.wait_for("the first loops", |a| status_writes(a) >= 3)
        .await;
    let target = |a: &KubeApi| {
        let s = status(a).expect("the status ConfigMap");
        s.node_groups[0].conditions.health.cloud_provider_target
    };
    assert_eq!(target(&api), Some(3));

    // The wall clock jumps an hour ahead: past the unneeded time and the provision time, were they
    // counted on it.
    std::fs::write(&step, "3600").unwrap();
    let before = status_writes(&api);
    api.wait_for("ten loops after the step", |a| {
        status_writes(a) >= before + 10
    })
    .await;
    assert_eq!(target(&api), Some(3), "the booting instance is kept");
    assert!(!has_deletion_taint(&api, "pool-b"), "pool-b is not removed");
    assert!(
        !api.requests()
            .iter()
            .any(|r| r.starts_with("DELETE") || r.contains("/eviction")),
        "nothing drained or deleted: {:#?}",
        api.requests()
    );
    let (code, body) = http_get(served.http, "/health-check").await;
    assert_eq!(
        (code, body.as_str()),
        (200, "OK\n"),
        "no loop looks overdue"
    );
}

const DRIFTED: &str = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 5, capacity: {cpu: 4, memory: 16Gi, pods: 20},
     revision: "lt-0a1:2", drift: Replace, disruptionBudget: "1",
     instances: [{id: i-a, revision: "lt-0a1:1"}]}
"#;

#[tokio::test]
async fn a_surge_whose_creation_timestamp_is_skewed_an_hour_back_still_counts() {
    let api = KubeApi::start().await;
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    let mut h = Harness::new(
        api,
        DRIFTED,
        ferroscale::cli::flags::default_engine(),
        run_settings(),
    )
    .await;
    h.synced(1, 0).await;
    let t0 = now();
    let d = h.runner.run_once(t0).await.unwrap();
    assert_eq!(d.replacements.len(), 1, "{d:?}");
    assert_eq!(h.group("pool").target_size, 2);

    // The surge registers; the API server's clock, an hour behind the loop's, stamps its creation
    // before the surge was asked for.
    let new = h
        .group("pool")
        .instances
        .iter()
        .map(|i| i.id.clone())
        .find(|id| !id.ends_with("/i-a"))
        .unwrap();
    let mut joined = node("pool-d", &new, "4", "16Gi");
    joined["metadata"]["creationTimestamp"] =
        serde_json::json!(k8s_openapi::jiff::Timestamp::from_second(t0 + 15 - 3600)
            .unwrap()
            .to_string());
    h.api.put(NODES, joined);
    h.synced(2, 0).await;
    // Past the provision time: a surge not counted as joined would be given up and asked again.
    let d = h.runner.run_once(t0 + 1000).await.unwrap();
    assert!(d.replacements.is_empty(), "no second surge: {d:?}");
    assert_eq!(d.disruptions.len(), 1, "{d:?}");
    assert_eq!(d.disruptions[0].node, "pool-a");
    assert_eq!(d.disruptions[0].reason, DisruptionReason::Drift);
    for _ in 0..100 {
        if h.group("pool").target_size == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let group = h.group("pool");
    assert_eq!(group.target_size, 1, "pool-a's instance went: {group:?}");
    assert!(!group.instances.iter().any(|i| i.id.ends_with("/i-a")));
}

/// Pool `pool`: `pool-a` on `i-a`, ready; `old` on `i-b` and `late` on `i-c`, not ready.
const STARTING: &str = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 5, targetSize: 3, instances: [{id: i-a}, {id: i-b}, {id: i-c}],
     capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.192}
"#;

/// A node `name` of pool `pool` on `instance`, whose `Ready` condition is false.
fn unready(name: &str, instance: &str) -> serde_json::Value {
    let mut n = node(name, &format!("memory:///pool/{instance}"), "4", "16Gi");
    n["status"]["conditions"][0]["status"] = serde_json::json!("False");
    n
}

/// The cluster's (not started, unready) nodes in the status ConfigMap.
fn starting_and_unready(h: &Harness) -> (usize, usize) {
    let counts = h.status().cluster_wide.health.node_counts.unwrap();
    (
        counts.registered.not_started,
        counts.registered.unready.total,
    )
}

#[tokio::test]
async fn a_node_is_as_old_as_the_loop_has_seen_it_and_one_recreated_is_new() {
    // The loopback API stamps every node created two days ago, as an API server whose clock is two
    // days behind would stamp a node that just joined.
    let api = KubeApi::start().await;
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    api.put(NODES, unready("old", "i-b"));
    let mut h = Harness::new(
        api,
        STARTING,
        ferroscale::cli::flags::default_engine(),
        run_settings(),
    )
    .await;
    h.synced(2, 0).await;
    let t0 = now();
    h.runner.run_once(t0).await.unwrap();
    // Listed at start: it was there before this process, and its creation timestamp stands.
    assert_eq!(starting_and_unready(&h), (0, 1));

    // Joined while the loop runs: starting, whatever its creation timestamp says.
    h.api.put(NODES, unready("late", "i-c"));
    h.synced(3, 0).await;
    h.runner.run_once(t0 + 10).await.unwrap();
    assert_eq!(starting_and_unready(&h), (1, 1));

    // `old` deleted and created again under its name between two loops: a new node, starting.
    let events = h.watches.nodes.events();
    h.api.delete(NODES, "", "old");
    h.api.put(NODES, unready("old", "i-b"));
    for _ in 0..400 {
        if h.watches.nodes.events() >= events + 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        h.watches.nodes.events() >= events + 2,
        "the watch delivered both"
    );
    h.runner.run_once(t0 + 30).await.unwrap();
    assert_eq!(starting_and_unready(&h), (2, 0));

    // Past the start-up time (15m) on the loop's clock, both are unready.
    h.runner.run_once(t0 + 30 + 901).await.unwrap();
    assert_eq!(starting_and_unready(&h), (0, 2));
}
