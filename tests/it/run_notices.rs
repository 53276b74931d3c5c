//! `run` after an interruption notice is accepted, on moto's SQS and the loopback Kubernetes API: a
//! voluntary notice's drain that fails takes its cordon off as well as its taint; a spot warning for a
//! node already draining for scale-down restarts its removal at the interruption's pace, which deletes
//! the instance even though a disruption budget keeps refusing an eviction; a spot warning after a
//! rebalance recommendation that kept its node (a pod without a controller) takes it out anyway.

use std::time::{Duration, Instant};

use ferroscale::cloud::aws::interruption::InterruptionQueue;
use ferroscale::model::lifecycle::DisruptionReason;
use ferroscale::run::interruptions::{Inbox, IntakeSettings};
use ferroscale::run::{Interruptions, RunSettings};
use ferroscale::time::unix_now as now;

use crate::run_interruptions::{rebalance, spot, Queue};
use crate::support::fixtures::kube::POOL;
use crate::support::kube_api::{KubeApi, NODES, PDBS, PODS};
use crate::support::moto::{Moto, REGION};
use crate::support::run_harness::{
    eager, evictions, has_deletion_taint, pool, run_settings, Harness,
};

/// `pool` (see `run_harness::pool`: pool-b's two web pods under a budget allowing one disruption) with
/// the runner reading the queue; rebalance recommendations handled.
/// Connects the harness's loop to `queue`, rebalance recommendations handled.
async fn listen(h: &mut Harness, moto: &Moto, queue: &Queue) {
    let connected = InterruptionQueue::connect(&queue.url, Some(REGION), Some(&moto.url))
        .await
        .unwrap();
    let lifecycle = h.metrics.autoscaler.as_ref().unwrap().lifecycle.clone();
    h.runner.set_interruptions(Interruptions::start(
        connected,
        h.cloud.clone(),
        Inbox::default(),
        IntakeSettings {
            handle_rebalance: true,
            ..Default::default()
        },
        lifecycle,
    ));
}

async fn started(moto: &Moto, run: RunSettings, scale_down: bool) -> (Harness, Queue) {
    let queue = Queue::create(moto).await;
    let api = KubeApi::start().await;
    pool(&api, 1).await;
    let mut settings = eager();
    settings.scale_down_enabled = scale_down;
    let mut h = Harness::new(api, POOL, settings, run).await;
    h.synced(2, 3).await;
    listen(&mut h, moto, &queue).await;
    (h, queue)
}

fn cordoned(api: &KubeApi, node: &str) -> bool {
    api.get(NODES, "", node).unwrap()["spec"]["unschedulable"] == true
}

/// Whether pool's instance `id` is still in its group.
fn has_instance(h: &Harness, id: &str) -> bool {
    h.group("pool")
        .instances
        .iter()
        .any(|i| i.id.ends_with(&format!("/{id}")))
}

/// Runs loops until `done`, at most `limit` after `since`.
async fn until(
    h: &mut Harness,
    since: Instant,
    limit: Duration,
    what: &str,
    done: impl Fn(&Harness) -> bool,
) {
    while !done(h) {
        assert!(
            since.elapsed() < limit,
            "{what}: requests {:#?}",
            h.api.requests()
        );
        h.runner.run_once(now()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_failed_voluntary_drain_takes_its_cordon_off_too() {
    let moto = Moto::start().await;
    let (mut h, queue) = started(&moto, run_settings(), false).await;
    let sent = Instant::now();
    queue.send(&rebalance("i-b")).await;
    // The budget lets one of pool-b's two pods go; the other is refused until the (3 s) eviction time
    // runs out, and the removal fails: the node is left as it was, schedulable and untainted.
    until(
        &mut h,
        sent,
        Duration::from_secs(60),
        "the failed drain's clean-up",
        |h| {
            evictions(&h.api) >= 2
                && !has_deletion_taint(&h.api, "pool-b")
                && !cordoned(&h.api, "pool-b")
        },
    )
    .await;
    assert!(
        h.api
            .requests()
            .iter()
            .any(|r| r.starts_with("PATCH") && r.contains("/nodes/pool-b")),
        "the node was cordoned, then uncordoned"
    );
    assert!(
        has_instance(&h, "i-b"),
        "a voluntary notice never deletes past a refused eviction"
    );
    // The budget allows a disruption again: the notice, still there, takes the node out; it counts once.
    h.api.update(
        PDBS,
        "default",
        "web",
        serde_json::json!({"status": {"disruptionsAllowed": 1}}),
    );
    until(
        &mut h,
        sent,
        Duration::from_secs(60),
        "the instance deleted",
        |h| !has_instance(h, "i-b"),
    )
    .await;
    let m = h.metrics.encode();
    assert!(
        m.contains(r#"ferroscale_nodes_disrupted_total{reason="rebalance",node_group="pool"} 1"#),
        "{m}"
    );
}

#[tokio::test]
async fn a_spot_warning_for_a_node_draining_for_scale_down_restarts_it_at_the_interruptions_pace() {
    let moto = Moto::start().await;
    // Scale-down drains retry a refused eviction for ten minutes; an interruption's for 45 s at most.
    let mut run = run_settings();
    run.drain.max_pod_eviction_time = Duration::from_secs(600);
    let (mut h, queue) = started(&moto, run, true).await;
    let start = Instant::now();
    // pool-b is unneeded: its scale-down evicts one pod and then waits on the budget.
    until(
        &mut h,
        start,
        Duration::from_secs(30),
        "the scale-down's drain",
        |h| evictions(&h.api) >= 2,
    )
    .await;
    assert!(!cordoned(&h.api, "pool-b"), "a scale-down does not cordon");
    let sent = Instant::now();
    queue.send(&spot("i-b")).await;
    until(
        &mut h,
        sent,
        Duration::from_secs(120),
        "the instance deleted",
        |h| !has_instance(h, "i-b"),
    )
    .await;
    assert!(
        cordoned(&h.api, "pool-b"),
        "taken out at the interruption's pace"
    );
    assert!(!h.api.events("InterruptionNotice").is_empty());
}

#[tokio::test]
async fn a_spot_warning_after_a_kept_rebalance_takes_the_node_out_anyway() {
    let moto = Moto::start().await;
    let queue = Queue::create(&moto).await;
    let api = KubeApi::start().await;
    pool(&api, 1).await;
    // A pod no controller recreates: a voluntary notice keeps its node.
    let mut tool = crate::support::fixtures::kube::pod("tool", "100m", Some("pool-b"), "tool");
    tool["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("ownerReferences");
    api.put(PODS, tool);
    let mut settings = eager();
    settings.scale_down_enabled = false;
    let mut h = Harness::new(api, POOL, settings, run_settings()).await;
    h.synced(2, 4).await;
    listen(&mut h, &moto, &queue).await;
    let sent = Instant::now();
    queue.send(&rebalance("i-b")).await;
    let handled = r#"ferroscale_interruption_messages_total{kind="rebalance",result="handled"} 1"#;
    loop {
        let d = h.runner.run_once(now()).await.unwrap();
        assert!(
            d.disruptions.is_empty(),
            "the rebalance keeps pool-b: {d:?}"
        );
        if h.metrics.encode().contains(handled) {
            assert!(
                d.unremovable.iter().any(|(n, _)| n == "pool-b"),
                "kept, and says why: {d:?}"
            );
            break;
        }
        assert!(sent.elapsed() < Duration::from_secs(30), "never handled");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!cordoned(&h.api, "pool-b"));
    let sent = Instant::now();
    queue.send(&spot("i-b")).await;
    let d = loop {
        let d = h.runner.run_once(now()).await.unwrap();
        if !d.disruptions.is_empty() {
            break d;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(30),
            "no disruption: {d:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(d.disruptions[0].node, "pool-b");
    assert_eq!(d.disruptions[0].reason, DisruptionReason::SpotInterruption);
    until(
        &mut h,
        sent,
        Duration::from_secs(60),
        "the instance deleted",
        |h| !has_instance(h, "i-b"),
    )
    .await;
}
