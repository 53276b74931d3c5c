//! `ferroscale run --interruption-queue`: EventBridge events in AWS's formats on moto's SQS, the
//! loopback Kubernetes API for the node's taint, cordon and evictions, the memory cloud for the groups.
//! A spot warning moves the node's pods at once (replacement asked for in the same loop, the node
//! cordoned and drained, the instance deleted); a rebalance recommendation is ignored unless enabled;
//! messages about foreign instances, malformed ones and those whose envelope does not hold up (another
//! account) are counted and deleted.

use std::time::{Duration, Instant};

use ferroscale::cloud::aws::interruption::InterruptionQueue;
use ferroscale::model::lifecycle::DisruptionReason;
use ferroscale::run::interruptions::{Inbox, IntakeSettings};
use ferroscale::run::Interruptions;
use ferroscale::time::unix_now as now;

use crate::support::fixtures::kube::{node, pod, POOL};
use crate::support::kube_api::{KubeApi, NODES, PODS};
use crate::support::moto::{Moto, REGION};
use crate::support::run_harness::{run_settings, Harness};

/// An EventBridge event as AWS documents it, for `instance`, sent just now from moto's account.
pub(crate) fn event(detail_type: &str, instance: &str, detail: &str) -> String {
    let time = k8s_openapi::jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ");
    format!(
        r#"{{"version":"0","id":"7bf73129-1428-4cd3-a780-95db273d1602","detail-type":"{detail_type}","source":"aws.ec2","account":"123456789012","time":"{time}","region":"{REGION}","resources":["arn:aws:ec2:{REGION}:123456789012:instance/{instance}"],"detail":{{"instance-id":"{instance}",{detail}}}}}"#
    )
}

pub(crate) fn spot(instance: &str) -> String {
    event(
        "EC2 Spot Instance Interruption Warning",
        instance,
        r#""instance-action":"terminate""#,
    )
}

pub(crate) fn rebalance(instance: &str) -> String {
    event(
        "EC2 Instance Rebalance Recommendation",
        instance,
        r#""note":"rebalance""#,
    )
}

pub(crate) struct Queue {
    pub(crate) sqs: aws_sdk_sqs::Client,
    pub(crate) url: String,
}

impl Queue {
    pub(crate) async fn create(moto: &Moto) -> Queue {
        Queue::create_with(moto, "30").await
    }

    /// The queue with this visibility timeout (seconds).
    pub(crate) async fn create_with(moto: &Moto, visibility: &str) -> Queue {
        let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new(REGION))
            .endpoint_url(&moto.url)
            .load()
            .await;
        let sqs = aws_sdk_sqs::Client::new(&config);
        let url = sqs
            .create_queue()
            .queue_name("interruptions")
            .attributes(
                aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout,
                visibility,
            )
            .send()
            .await
            .unwrap()
            .queue_url
            .unwrap();
        Queue { sqs, url }
    }

    pub(crate) async fn send(&self, body: &str) {
        self.sqs
            .send_message()
            .queue_url(&self.url)
            .message_body(body)
            .send()
            .await
            .unwrap();
    }

    /// Deletes the queue, so that receiving from it fails from now on.
    async fn delete(&self) {
        self.sqs
            .delete_queue()
            .queue_url(&self.url)
            .send()
            .await
            .unwrap();
    }

    /// Messages left in the queue, visible or in flight.
    pub(crate) async fn left(&self) -> usize {
        let attrs = self
            .sqs
            .get_queue_attributes()
            .queue_url(&self.url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::All)
            .send()
            .await
            .unwrap()
            .attributes
            .unwrap_or_default();
        let count = |k: aws_sdk_sqs::types::QueueAttributeName| {
            attrs
                .get(&k)
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0)
        };
        count(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
            + count(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
    }
}

/// Two 4-cpu nodes of `pool`, each with two 1.5-cpu replicas (1 cpu left on each).
async fn cluster(moto: &Moto, handle_rebalance: bool) -> (Harness, Queue, Inbox) {
    let queue = Queue::create(moto).await;
    let url = queue.url.clone();
    let (h, _, inbox) = cluster_on(moto, handle_rebalance, url).await;
    (h, queue, inbox)
}

/// The cluster with the poller on the queue at `url` (created by the caller).
async fn cluster_on(moto: &Moto, handle_rebalance: bool, url: String) -> (Harness, (), Inbox) {
    let api = KubeApi::start().await;
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    api.put(NODES, node("pool-b", "memory:///pool/i-b", "4", "16Gi"));
    for (name, node) in [
        ("web-1", "pool-a"),
        ("web-2", "pool-a"),
        ("web-3", "pool-b"),
        ("web-4", "pool-b"),
    ] {
        api.put(PODS, pod(name, "1500m", Some(node), "web"));
    }
    let mut h = Harness::new(
        api,
        POOL,
        ferroscale::cli::flags::default_engine(),
        run_settings(),
    )
    .await;
    h.synced(2, 4).await;
    let connected = InterruptionQueue::connect(&url, Some(REGION), Some(&moto.url))
        .await
        .unwrap();
    let inbox = Inbox::default();
    let lifecycle = h.metrics.autoscaler.as_ref().unwrap().lifecycle.clone();
    let intake = IntakeSettings {
        handle_rebalance,
        ..IntakeSettings::default()
    };
    h.runner.set_interruptions(Interruptions::start(
        connected,
        h.cloud.clone(),
        inbox.clone(),
        intake,
        lifecycle,
    ));
    (h, (), inbox)
}

/// Runs loops until one takes a node out of service (a notice has come through the queue), at most 30 s
/// after `sent`.
async fn until_disrupted(h: &mut Harness, sent: Instant) -> ferroscale::engine::Decisions {
    loop {
        let d = h.runner.run_once(now()).await.unwrap();
        if !d.disruptions.is_empty() {
            return d;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(30),
            "no disruption: {d:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The value of a sample whose line starts with `series`, 0 when absent.
pub(crate) fn sample(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test]
async fn a_spot_warning_moves_the_pods_at_once_and_asks_for_the_replacement_in_the_same_loop() {
    let moto = Moto::start().await;
    let (mut h, queue, _inbox) = cluster(&moto, false).await;
    let sent = Instant::now();
    queue.send(&spot("i-a")).await;
    queue.send(&rebalance("i-b")).await;
    queue.send(&spot("i-0foreign000000000")).await;
    queue.send("this is not an event").await;
    // Written to the queue by hand, for pool-b's instance, from another account: not acted on.
    queue
        .send(&spot("i-b").replace(
            "\"account\":\"123456789012\"",
            "\"account\":\"999999999999\"",
        ))
        .await;

    let d = until_disrupted(&mut h, sent).await;
    let asked = sent.elapsed();
    assert_eq!(d.disruptions.len(), 1, "{d:?}");
    assert_eq!(d.disruptions[0].node, "pool-a");
    assert_eq!(d.disruptions[0].reason, DisruptionReason::SpotInterruption);
    // web-1 and web-2 need 3 cpu: pool-b has 1 left, so one more node, in this very loop.
    assert_eq!(d.scale_up.len(), 1, "{d:?}");
    assert_eq!(
        (d.scale_up[0].group.as_str(), d.scale_up[0].delta),
        ("pool", 1)
    );
    assert_eq!(d.replacements.len(), 1);
    assert_eq!(d.replacements[0].for_nodes, vec!["pool-a"]);

    // The node is cordoned and tainted, its replicas evicted, its instance deleted.
    h.api
        .wait_for("the evictions", |api| {
            api.get(PODS, "default", "web-1").is_none()
                && api.get(PODS, "default", "web-2").is_none()
        })
        .await;
    let evicted = sent.elapsed();
    let node = h.api.get(NODES, "", "pool-a").unwrap();
    assert_eq!(node["spec"]["unschedulable"], true, "{node}");
    assert!(
        node["spec"]["taints"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["key"] == "ToBeDeletedByClusterAutoscaler"),
        "{node}"
    );
    for _ in 0..100 {
        if !h
            .group("pool")
            .instances
            .iter()
            .any(|i| i.id.ends_with("/i-a"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let group = h.group("pool");
    assert!(
        !group.instances.iter().any(|i| i.id.ends_with("/i-a")),
        "the interrupted instance is deleted: {group:?}"
    );
    assert_eq!(group.target_size, 2, "2 + 1 replacement - 1 interrupted");
    assert!(!h.api.events("InterruptionNotice").is_empty());
    // The status ConfigMap says the same.
    let status = h.status();
    assert_eq!(status.disruptions.len(), 1, "{status:?}");
    assert_eq!(status.disruptions[0].reason, "spot-interruption");
    println!(
        "spot warning sent → replacement asked for: {asked:?}; → both pods evicted: {evicted:?}"
    );

    // Every message is gone from the queue: handled, ignored (the rebalance, not enabled), foreign and
    // malformed alike; each counted.
    for _ in 0..100 {
        if queue.left().await == 0 {
            break;
        }
        h.runner.run_once(now()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(queue.left().await, 0);
    let m = h.metrics.encode();
    let count = |kind: &str, result: &str| {
        sample(
            &m,
            &format!(
                "ferroscale_interruption_messages_total{{kind=\"{kind}\",result=\"{result}\"}}"
            ),
        )
    };
    assert_eq!(count("spot-interruption", "handled"), 1.0, "{m}");
    assert_eq!(count("spot-interruption", "foreign"), 1.0);
    assert_eq!(count("rebalance", "ignored"), 1.0);
    assert_eq!(count("unknown", "malformed"), 1.0);
    assert_eq!(count("unknown", "unverified"), 1.0);
    assert_eq!(
        sample(
            &m,
            "ferroscale_nodes_disrupted_total{reason=\"spot-interruption\",node_group=\"pool\"}"
        ),
        1.0
    );
    assert_eq!(sample(&m, "ferroscale_interruption_queue_up"), 1.0);
}

#[tokio::test]
async fn a_rebalance_recommendation_moves_pods_only_when_enabled() {
    let moto = Moto::start().await;
    let (mut h, queue, _inbox) = cluster(&moto, true).await;
    let sent = Instant::now();
    queue.send(&rebalance("i-b")).await;
    let d = until_disrupted(&mut h, sent).await;
    assert_eq!(d.disruptions[0].node, "pool-b");
    assert_eq!(d.disruptions[0].reason, DisruptionReason::Rebalance);
    assert_eq!(d.replacements.len(), 1, "{d:?}");
}

#[tokio::test]
async fn a_queue_that_fails_shows_until_it_answers_again() {
    let moto = Moto::start().await;
    let (mut h, queue, inbox) = cluster(&moto, false).await;
    // A loop takes the inbox: the poller receives while loops keep doing so (within 30 s here).
    h.runner.run_once(now()).await.unwrap();
    // The queue disappears: receives fail, and readiness says so.
    queue.delete().await;
    let started = Instant::now();
    while inbox.ready().is_ok() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the failure never showed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(inbox
        .ready()
        .unwrap_err()
        .contains("interruption queue failing"));
    // Back under the same name (and URL): the poller recovers by itself.
    Queue::create(&moto).await;
    h.runner.run_once(now()).await.unwrap();
    while inbox.ready().is_err() {
        h.runner.run_once(now()).await.unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "never recovered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_message_received_again_before_a_loop_takes_it_counts_once() {
    let moto = Moto::start().await;
    // A one-second visibility timeout: the poller receives the message again and again while no loop
    // runs, as a replica that does not lead would.
    let queue = Queue::create_with(&moto, "1").await;
    let (mut h, _, _inbox) = cluster_on(&moto, false, queue.url.clone()).await;
    // A first loop: from now on the poller receives.
    h.runner.run_once(now()).await.unwrap();
    queue.send(&spot("i-0foreign000000000")).await;
    tokio::time::sleep(Duration::from_millis(3500)).await;
    h.runner.run_once(now()).await.unwrap();
    let m = h.metrics.encode();
    assert_eq!(
        sample(
            &m,
            "ferroscale_interruption_messages_total{kind=\"spot-interruption\",result=\"foreign\"}"
        ),
        1.0,
        "{m}"
    );
}

// Two workers: the API server keeps answering while a worker blocks waiting for the child to exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_takes_the_queue_flag_and_readyz_says_when_the_queue_fails() {
    let moto = Moto::start().await;
    let queue = Queue::create(&moto).await;
    let api = KubeApi::start().await;
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    api.put(NODES, node("pool-b", "memory:///pool/i-b", "4", "16Gi"));
    api.put(PODS, pod("web-1", "1500m", Some("pool-a"), "web"));
    let dir = tempfile::tempdir().unwrap();
    let mut served = crate::support::process::Served::run_on_memory(
        &api,
        dir.path(),
        POOL,
        &[
            "--scan-interval",
            "500ms",
            "--leader-elect=false",
            "--interruption-queue",
            "interruptions",
            "--aws-region",
            REGION,
        ],
        &[("AWS_ENDPOINT_URL", moto.url.as_str())],
    )
    .await;
    let http = served.http;
    queue.send(&spot("i-a")).await;
    api.wait_for("the InterruptionNotice event", |a| {
        !a.events("InterruptionNotice").is_empty()
    })
    .await;
    let (code, _) = crate::support::server::http_get(http, "/readyz").await;
    assert_eq!(code, 200);
    queue.delete().await;
    let started = Instant::now();
    let body = loop {
        let (code, body) = crate::support::server::http_get(http, "/readyz").await;
        if code == 503 {
            break body;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "/readyz stayed {code}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(body.contains("interruption queue failing"), "{body}");
    assert!(served.terminate().success());
}

#[tokio::test]
async fn a_replica_whose_loops_do_not_run_leaves_the_messages_in_the_queue() {
    let moto = Moto::start().await;
    let (_h, queue, _inbox) = cluster(&moto, false).await;
    queue.send(&spot("i-a")).await;
    // No loop ever takes the inbox (a replica that does not lead): nothing is received.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let visible = queue
        .sqs
        .receive_message()
        .queue_url(&queue.url)
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    assert_eq!(
        visible.len(),
        1,
        "the message is still there for the leader"
    );
}
