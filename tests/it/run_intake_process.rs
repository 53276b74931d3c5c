//! `ferroscale run` as a process taking interruption notices in: killed mid-drain, it leaves the notice
//! in the queue for the next process, which finishes it once; with `--dry-run` it reads nothing.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::run_intake::{count, PATIENCE};
use crate::run_interruptions::{sample, spot, Queue};
use crate::support::fixtures::kube::{node, pod, POOL};
use crate::support::kube_api::{KubeApi, NODES, PDBS, PODS};
use crate::support::moto::{Moto, REGION};
use crate::support::process::Served;
use crate::support::run_harness::evictions;

/// The node's cordon.
fn cordoned(api: &KubeApi, name: &str) -> bool {
    api.get(NODES, "", name).unwrap()["spec"]["unschedulable"] == true
}

/// `ferroscale run` on the memory cloud `groups`, reading the queue, its loop every 500 ms.
async fn run_binary(api: &KubeApi, moto: &Moto, dir: &std::path::Path, extra: &[&str]) -> Served {
    let mut args = vec![
        "--scan-interval",
        "500ms",
        "--leader-elect=false",
        "--interruption-queue",
        "interruptions",
        "--aws-region",
        REGION,
    ];
    args.extend_from_slice(extra);
    Served::run_on_memory(
        api,
        dir,
        POOL,
        &args,
        &[("AWS_ENDPOINT_URL", moto.url.as_str())],
    )
    .await
}

// Two workers: the API server keeps answering while a worker blocks on the child.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_mid_drain_leaves_the_notice_to_the_next_which_handles_it_once() {
    let moto = Moto::start().await;
    let queue = Queue::create_with(&moto, "2").await;
    let api = KubeApi::start().await;
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    api.put(NODES, node("pool-b", "memory:///pool/i-b", "4", "16Gi"));
    api.put(PODS, pod("web-1", "500m", Some("pool-a"), "web"));
    api.put(PODS, pod("web-2", "500m", Some("pool-a"), "web"));
    // The budget refuses every eviction: the first run's drain goes on (for --max-pod-eviction-time).
    let budget = |allowed: i64| {
        json!({"metadata": {"name": "web", "namespace": "default"},
               "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1},
               "status": {"disruptionsAllowed": allowed}})
    };
    api.put(PDBS, budget(0));
    let dir = tempfile::tempdir().unwrap();
    let mut first = run_binary(&api, &moto, dir.path(), &[]).await;
    queue.send(&spot("i-a")).await;
    let started = Instant::now();
    while !(cordoned(&api, "pool-a") && evictions(&api) > 0) {
        assert!(started.elapsed() < PATIENCE, "the drain never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Mid-drain: the message is still the queue's.
    assert_eq!(queue.left().await, 1);
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    assert_eq!(queue.left().await, 1, "the notice survives the crash");

    // The budget allows the evictions now; a new process takes the notice up again and finishes.
    api.put(PDBS, budget(2));
    let second = run_binary(&api, &moto, dir.path(), &[]).await;
    while api.get(PODS, "default", "web-1").is_some()
        || api.get(PODS, "default", "web-2").is_some()
        || queue.left().await > 0
    {
        assert!(started.elapsed() < PATIENCE, "never finished");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A few loops more: nothing is done again.
    let evicted = evictions(&api);
    let (_, before) = crate::support::server::http_get(second.http, "/metrics").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (_, m) = crate::support::server::http_get(second.http, "/metrics").await;
    assert_eq!(evictions(&api), evicted, "evicted again");
    // The second process carries the notice on from the node's intent at once; the message, received
    // again (handled, or once its instance is gone, no managed group's) is deleted, and the node is
    // counted disrupted once.
    assert_eq!(
        count(&m, "spot-interruption", "handled") + count(&m, "spot-interruption", "foreign"),
        1.0,
        "{m}"
    );
    assert_eq!(
        sample(
            &m,
            "ferroscale_intents_reconciled_total{action=\"notice\",outcome=\"resumed\"}"
        ),
        1.0,
        "{m}"
    );
    assert_eq!(
        sample(
            &m,
            "ferroscale_nodes_disrupted_total{reason=\"spot-interruption\",node_group=\"pool\"}"
        ),
        1.0,
        "{m}"
    );
    assert_eq!(
        sample(&before, "ferroscale_interruption_inbox_messages"),
        sample(&m, "ferroscale_interruption_inbox_messages")
    );
    assert_eq!(sample(&m, "ferroscale_interruption_inbox_messages"), 0.0);
    assert_eq!(queue.left().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_replica_reads_nothing_from_the_queue() {
    let moto = Moto::start().await;
    let queue = Queue::create_with(&moto, "30").await;
    let api = KubeApi::start().await;
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    queue.send(&spot("i-a")).await;
    let dir = tempfile::tempdir().unwrap();
    let served = run_binary(&api, &moto, dir.path(), &["--dry-run"]).await;
    // Loops run...
    let started = Instant::now();
    loop {
        let (_, m) = crate::support::server::http_get(served.http, "/metrics").await;
        if sample(
            &m,
            "cluster_autoscaler_function_duration_seconds_count{function=\"main\"}",
        ) >= 3.0
        {
            break;
        }
        assert!(started.elapsed() < PATIENCE, "no loops: {m}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // ...and the message was never received: the first receive is this one.
    let got = queue
        .sqs
        .receive_message()
        .queue_url(&queue.url)
        .message_system_attribute_names(
            aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
        )
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    assert_eq!(got.len(), 1);
    let received = got[0].attributes().unwrap()
        [&aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount]
        .clone();
    assert_eq!(received, "1");
}
