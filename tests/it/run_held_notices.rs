//! Notices that wait stay valid (issue #38): a notice held for its node (waiting on a budget, or on a
//! scheduled change's start) is kept by its instance, not judged again by its message's age when it,
//! or another message saying the same, is received again; and held notices do not take the inbox's
//! room, so a spot warning still comes through an inbox full of far-future scheduled changes. Moto's
//! SQS, the loopback Kubernetes API, the memory cloud.

use std::time::{Duration, Instant};

use ferroscale::model::lifecycle::DisruptionReason;
use ferroscale::run::interruptions::IntakeSettings;
use ferroscale::time::unix_now as now;
use serde_json::json;

use crate::run_intake::{aged, count, intake, PATIENCE};
use crate::run_interruptions::{rebalance, sample, spot, Queue};
use crate::run_notice_checks::retirement;
use crate::support::fixtures::kube::{node, pod, POOL};
use crate::support::kube_api::{KubeApi, NODES, PDBS, PODS};
use crate::support::moto::Moto;
use crate::support::run_harness::{eager, evictions, pool, run_settings, Harness};

fn cordoned(api: &KubeApi, node: &str) -> bool {
    api.get(NODES, "", node).unwrap()["spec"]["unschedulable"] == true
}

#[tokio::test]
async fn a_held_rebalance_received_again_past_the_max_age_keeps_its_drain_going() {
    let moto = Moto::start().await;
    // Back one second after each receive while it is held.
    let queue = Queue::create_with(&moto, "1").await;
    let api = KubeApi::start().await;
    // pool-b's two web pods under a budget allowing one disruption.
    pool(&api, 1).await;
    let mut settings = eager();
    settings.scale_down_enabled = false;
    // The refused eviction is retried for ten minutes: the drain goes on while the budget refuses.
    let mut run = run_settings();
    run.drain.max_pod_eviction_time = Duration::from_secs(600);
    let mut h = Harness::new(api, POOL, settings, run).await;
    h.synced(2, 3).await;
    let max_age = Duration::from_secs(2);
    let intake_settings = IntakeSettings {
        handle_rebalance: true,
        max_age,
        ..IntakeSettings::default()
    };
    intake(&mut h, &moto, &queue.url, intake_settings).await;
    let sent = Instant::now();
    queue.send(&rebalance("i-b")).await;
    // Cordoned, one pod evicted, the other refused by the budget.
    while !(cordoned(&h.api, "pool-b") && evictions(&h.api) >= 2) {
        assert!(sent.elapsed() < PATIENCE, "never drained");
        h.runner.run_once(now()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Past the age limit the message comes back (every second) and another one saying the same,
    // published long ago, arrives: neither is judged stale.
    queue.send(&aged(&rebalance("i-b"), 60)).await;
    let m = loop {
        h.runner.run_once(now()).await.unwrap();
        let m = h.metrics.encode();
        if sent.elapsed() > max_age * 3 && count(&m, "rebalance", "repeated") >= 1.0 {
            break m;
        }
        assert!(sent.elapsed() < PATIENCE, "{m}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(count(&m, "unknown", "unverified"), 0.0, "{m}");
    assert_eq!(count(&m, "rebalance", "handled"), 1.0, "{m}");
    assert!(cordoned(&h.api, "pool-b"), "the drain goes on");
    assert!(!h.group("pool").instances.is_empty());
    assert_eq!(queue.left().await, 1, "the message held is kept");
    // The budget allows the second eviction: the drain ends, the instance goes, then the message.
    h.api.update(
        PDBS,
        "default",
        "web",
        json!({"status": {"disruptionsAllowed": 1}}),
    );
    while h
        .group("pool")
        .instances
        .iter()
        .any(|i| i.id.ends_with("/i-b"))
        || queue.left().await > 0
    {
        assert!(sent.elapsed() < PATIENCE, "never finished");
        h.runner.run_once(now()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let m = h.metrics.encode();
    assert_eq!(count(&m, "unknown", "unverified"), 0.0, "{m}");
    assert!(
        m.contains(r#"ferroscale_nodes_disrupted_total{reason="rebalance",node_group="pool"} 1"#),
        "{m}"
    );
}

/// `pool` with four instances, i-a to i-d.
const FOUR: &str = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 8, targetSize: 4,
     instances: [{id: i-a}, {id: i-b}, {id: i-c}, {id: i-d}],
     capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.192}
"#;

#[tokio::test]
async fn a_spot_warning_comes_through_an_inbox_full_of_held_scheduled_changes() {
    const CAP: usize = 3;
    let moto = Moto::start().await;
    let queue = Queue::create_with(&moto, "30").await;
    let api = KubeApi::start().await;
    for x in ["a", "b", "c", "d"] {
        let name = format!("pool-{x}");
        api.put(
            NODES,
            node(&name, &format!("memory:///pool/i-{x}"), "4", "16Gi"),
        );
        api.put(PODS, pod(&format!("web-{x}"), "500m", Some(&name), "web"));
    }
    let mut settings = eager();
    settings.scale_down_enabled = false;
    let mut h = Harness::new(api, FOUR, settings, run_settings()).await;
    h.synced(4, 4).await;
    let intake_settings = IntakeSettings {
        inbox_cap: CAP,
        ..IntakeSettings::default()
    };
    intake(&mut h, &moto, &queue.url, intake_settings).await;
    // Retirements a month away for three nodes: as many as the inbox takes, all held.
    let month = now() + 30 * 24 * 3600;
    for x in ["a", "b", "c"] {
        queue.send(&retirement(&format!("i-{x}"), month)).await;
    }
    let started = Instant::now();
    while count(&h.metrics.encode(), "scheduled-change", "handled") < CAP as f64 {
        let d = h.runner.run_once(now()).await.unwrap();
        assert!(d.disruptions.is_empty(), "a month away: {d:?}");
        assert!(started.elapsed() < PATIENCE, "never handled");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    h.runner.run_once(now()).await.unwrap();
    let m = h.metrics.encode();
    assert_eq!(
        sample(&m, "ferroscale_interruption_held_messages"),
        CAP as f64,
        "{m}"
    );
    assert_eq!(
        sample(&m, "ferroscale_interruption_inbox_messages"),
        0.0,
        "{m}"
    );
    assert_eq!(queue.left().await, CAP, "held, not deleted");
    // A spot warning for the fourth node is received and takes it out.
    queue.send(&spot("i-d")).await;
    let d = loop {
        let d = h.runner.run_once(now()).await.unwrap();
        if !d.disruptions.is_empty() {
            break d;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "the warning never came through"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(d.disruptions.len(), 1, "{d:?}");
    assert_eq!(d.disruptions[0].node, "pool-d");
    assert_eq!(d.disruptions[0].reason, DisruptionReason::SpotInterruption);
}

/// A process restarted while a rebalance's drain waits on its budget carries the notice on from the
/// node's intent: the message, received again past the age limit, is taken as held (`repeated`), not
/// judged stale; the node waits for its budget uncordoned, and once the budget allows, it goes.
#[tokio::test]
async fn a_held_rebalance_survives_a_restart_and_its_message_is_not_judged_stale() {
    let moto = Moto::start().await;
    let queue = Queue::create_with(&moto, "1").await;
    let api = KubeApi::start().await;
    pool(&api, 1).await;
    let mut settings = eager();
    settings.scale_down_enabled = false;
    let mut run = run_settings();
    run.drain.max_pod_eviction_time = Duration::from_secs(600);
    let max_age = Duration::from_secs(2);
    let intake_settings = IntakeSettings {
        handle_rebalance: true,
        max_age,
        ..IntakeSettings::default()
    };
    let mut h = Harness::new(api.clone(), POOL, settings.clone(), run.clone()).await;
    h.synced(2, 3).await;
    intake(&mut h, &moto, &queue.url, intake_settings.clone()).await;
    let sent = Instant::now();
    queue.send(&rebalance("i-b")).await;
    while !(cordoned(&api, "pool-b") && evictions(&api) >= 2) {
        assert!(sent.elapsed() < PATIENCE, "never drained");
        h.runner.run_once(now()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Killed mid-drain; the next process starts on the same cluster, cloud and queue.
    let cloud = h.cloud.clone();
    drop(h);
    let mut h = Harness::with_cloud(api.clone(), cloud, settings, run).await;
    h.synced(2, 2).await;
    intake(&mut h, &moto, &queue.url, intake_settings).await;
    h.runner.start_acting(now()).await;
    let m = loop {
        h.runner.run_once(now()).await.unwrap();
        let m = h.metrics.encode();
        if sent.elapsed() > max_age * 3 && count(&m, "rebalance", "repeated") >= 1.0 {
            break m;
        }
        assert!(sent.elapsed() < PATIENCE, "{m}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(count(&m, "unknown", "unverified"), 0.0, "{m}");
    assert!(
        m.contains(r#"ferroscale_intents_reconciled_total{action="notice",outcome="resumed"} 1"#),
        "{m}"
    );
    // The drain starts again when the budget allows (until then the node waits, uncordoned, its
    // notice kept on it).
    let intent = api.get(NODES, "", "pool-b").unwrap()["metadata"]["annotations"]
        ["ferroscale.io/intent"]
        .clone();
    assert!(
        intent.as_str().is_some_and(|i| i.contains("rebalance")),
        "{intent}"
    );
    api.update(
        PDBS,
        "default",
        "web",
        json!({"status": {"disruptionsAllowed": 1}}),
    );
    while h
        .group("pool")
        .instances
        .iter()
        .any(|i| i.id.ends_with("/i-b"))
        || queue.left().await > 0
    {
        assert!(sent.elapsed() < PATIENCE, "never finished");
        h.runner.run_once(now()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!cordoned(&api, "pool-a"));
    assert_eq!(count(&h.metrics.encode(), "unknown", "unverified"), 0.0);
}
