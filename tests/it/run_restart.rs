//! The kill matrix: `run` killed at each step of each multi-step action (its runner dropped with its
//! drains mid-flight and nothing undone, as SIGKILL leaves things), then started again on the same
//! loopback API and cloud, reconciling the intents on the nodes before its first loop. Each cell ends
//! as the uninterrupted run does: the same nodes and group size, no node tainted, cordoned or carrying
//! an intent of an action no longer under way, each surge asked for once, no pod evicted twice.
//! Actions: a scale-down, a drift replacement, a voluntary notice (`run_restart_more` has the rest).

use std::sync::atomic::Ordering;

use ferroscale::cloud::Cloud;
use ferroscale::model::lifecycle::DisruptionReason;
use ferroscale::time::unix_now as now;
use serde_json::json;

use crate::support::fixtures::kube::{node, pod, POOL};
use crate::support::kube_api::{KubeApi, NODES, PDBS, PODS};
use crate::support::restart::{allow, intent_written, one_evicted, reconciled, Site};
use crate::support::run_harness::{eager, has_deletion_taint, pool, Harness};

/// Successful evictions of `pod` (the API deleted it): at most one, or it was evicted twice.
fn evicted_once(api: &KubeApi, pod: &str) -> bool {
    let asked = api
        .requests()
        .iter()
        .filter(|r| {
            r.starts_with(&format!(
                "POST /api/v1/namespaces/default/pods/{pod}/eviction"
            ))
        })
        .count();
    api.get(PODS, "default", pod).is_none() && asked >= 1
}

// ---- scale-down: pool-b's two web pods drained, pool-b deleted ----

async fn scale_down_site(allowed: i64) -> Site {
    let api = KubeApi::start().await;
    pool(&api, allowed).await;
    Site::new(api, POOL, eager(), allowed < 2).await
}

fn pool_b_gone(s: &Site) -> bool {
    s.cloud.snapshot().group("pool").unwrap().instances.len() == 1
}

/// The uninterrupted scale-down, for comparison.
async fn scale_down_reference() -> String {
    let s = scale_down_site(2).await;
    let mut h = s.start().await;
    h.synced(2, 3).await;
    let t = s.settle(&mut h, now(), pool_b_gone).await;
    // Steady loops write no intent: only differences are written.
    let patches = |api: &KubeApi| {
        api.requests()
            .iter()
            .filter(|r| r.starts_with("PATCH /api/v1/nodes"))
            .count()
    };
    let before = patches(&s.api);
    h.synced_any().await;
    h.runner.run_once(t).await.unwrap();
    h.runner.run_once(t + 10).await.unwrap();
    assert_eq!(patches(&s.api), before, "{:#?}", s.api.requests());
    s.summary()
}

#[tokio::test]
async fn scale_down_killed_after_its_intent_is_written_is_rolled_back_then_done_once() {
    let reference = scale_down_reference().await;
    let s = scale_down_site(2).await;
    let mut h = s.start().await;
    h.synced(2, 3).await;
    // The taint's read never answers: the process dies with the intent written and nothing else.
    s.api.hold("GET /api/v1/nodes/pool-b");
    let t = now();
    let _ = h.runner.run_once(t).await;
    intent_written(&s.api, "pool-b").await;
    let mut h = s.restart(h, t + 5).await;
    assert_eq!(reconciled(&h, "scale-down", "rolled_back"), 1);
    s.settle(&mut h, t + 10, pool_b_gone).await;
    assert_eq!(s.summary(), reference);
    assert!(evicted_once(&s.api, "web-1") && evicted_once(&s.api, "web-2"));
}

#[tokio::test]
async fn scale_down_killed_with_half_its_pods_evicted_evicts_only_the_rest() {
    let reference = scale_down_reference().await;
    // One disruption allowed: web-1 or web-2 goes, the other is refused and retried.
    let s = scale_down_site(1).await;
    let mut h = s.start().await;
    h.synced(2, 3).await;
    let t = now();
    let _ = h.runner.run_once(t).await;
    one_evicted(&s.api, ["web-1", "web-2"]).await;
    let first = if s.api.get(PODS, "default", "web-1").is_none() {
        "web-1"
    } else {
        "web-2"
    };
    let before: usize = s
        .api
        .requests()
        .iter()
        .filter(|r| r.contains(&format!("pods/{first}/eviction")))
        .count();
    // The budget recovers (the evicted pod's replacement runs elsewhere) while nobody runs.
    allow(&s.api, 1);
    let mut h = s.restart(h, t + 5).await;
    assert_eq!(reconciled(&h, "scale-down", "rolled_back"), 1);
    assert!(
        !has_deletion_taint(&s.api, "pool-b"),
        "the drain's taint is undone at start"
    );
    s.settle(&mut h, t + 10, pool_b_gone).await;
    assert_eq!(s.summary(), reference);
    let after: usize = s
        .api
        .requests()
        .iter()
        .filter(|r| r.contains(&format!("pods/{first}/eviction")))
        .count();
    assert_eq!(after, before, "{first} was not asked to be evicted again");
}

#[tokio::test]
async fn scale_down_killed_after_the_delete_was_asked_leaves_the_node_to_go() {
    let reference = scale_down_reference().await;
    let s = scale_down_site(2).await;
    let mut h = s.start().await;
    h.synced(2, 3).await;
    s.cloud.hold_after_delete.store(true, Ordering::SeqCst);
    let t = now();
    let _ = h.runner.run_once(t).await;
    s.cloud.reached().await;
    let mut h = s.restart(h, t + 5).await;
    s.settle(&mut h, t + 10, pool_b_gone).await;
    assert_eq!(s.summary(), reference);
}

// ---- drift: pool-a (an older launch template) replaced, surge first ----

const DRIFTED: &str = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 5, capacity: {cpu: 4, memory: 16Gi, pods: 20},
     revision: "lt:2", drift: Replace, disruptionBudget: "1",
     instances: [{id: i-a, revision: "lt:1"}, {id: i-c, revision: "lt:2"}]}
"#;

async fn drift_site(allowed: i64) -> Site {
    let api = KubeApi::start().await;
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    api.put(NODES, node("pool-c", "memory:///pool/i-c", "4", "16Gi"));
    api.put(PODS, pod("web-1", "200m", Some("pool-a"), "web"));
    api.put(PODS, pod("web-2", "200m", Some("pool-a"), "web"));
    api.put(
        PDBS,
        json!({"metadata": {"name": "web", "namespace": "default"},
               "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1},
               "status": {"disruptionsAllowed": allowed}}),
    );
    let mut settings = ferroscale::cli::flags::default_engine();
    settings.scale_down_enabled = false;
    Site::new(api, DRIFTED, settings, allowed < 2).await
}

fn pool_a_replaced(s: &Site) -> bool {
    let g = s.cloud.snapshot().group("pool").unwrap().clone();
    !g.instances.iter().any(|i| i.id.ends_with("/i-a")) && g.instances.len() == 2
}

/// Loops until the surge is asked for, joins it, and loops until pool-a is gone.
async fn drift_to_the_end(s: &Site, h: &mut Harness, t: i64) {
    let t = s
        .settle(h, t, |s| {
            s.cloud.snapshot().group("pool").unwrap().target_size == 3
        })
        .await;
    s.join(t + 5);
    s.settle(h, t + 10, pool_a_replaced).await;
}

async fn drift_reference() -> String {
    let s = drift_site(2).await;
    let mut h = s.start().await;
    h.synced(2, 2).await;
    drift_to_the_end(&s, &mut h, now()).await;
    s.summary()
}

#[tokio::test]
async fn drift_killed_before_its_surge_is_asked_asks_it_once() {
    let reference = drift_reference().await;
    let s = drift_site(2).await;
    let h = s.start().await;
    h.synced(2, 2).await;
    s.cloud.hold_increase.store(true, Ordering::SeqCst);
    let t = now();
    let mut h = s.kill_in_loop(h, t).await;
    assert_eq!(reconciled(&h, "replacement", "rolled_back"), 1);
    drift_to_the_end(&s, &mut h, t + 10).await;
    assert_eq!(s.summary(), reference);
}

#[tokio::test]
async fn drift_killed_after_its_surge_is_asked_waits_for_it_instead_of_asking_again() {
    let reference = drift_reference().await;
    let s = drift_site(2).await;
    let mut h = s.start().await;
    h.synced(2, 2).await;
    let t = now();
    let d = h.runner.run_once(t).await.unwrap();
    assert_eq!(d.replacements.len(), 1);
    let mut h = s.restart(h, t + 5).await;
    assert_eq!(reconciled(&h, "replacement", "resumed"), 1);
    drift_to_the_end(&s, &mut h, t + 10).await;
    assert_eq!(s.summary(), reference);
}

#[tokio::test]
async fn drift_killed_once_its_surge_is_ready_retires_the_old_node() {
    let reference = drift_reference().await;
    let s = drift_site(2).await;
    let mut h = s.start().await;
    h.synced(2, 2).await;
    let t = now();
    let _ = h.runner.run_once(t).await.unwrap();
    s.join(t + 5);
    let mut h = s.restart(h, t + 5).await;
    assert_eq!(reconciled(&h, "replacement", "resumed"), 1);
    s.settle(&mut h, t + 10, pool_a_replaced).await;
    assert_eq!(s.summary(), reference);
}

#[tokio::test]
async fn drift_killed_mid_drain_drains_the_rest_on_the_same_surge() {
    let reference = drift_reference().await;
    let s = drift_site(1).await;
    let mut h = s.start().await;
    h.synced(2, 2).await;
    let t = now();
    let _ = h.runner.run_once(t).await.unwrap();
    s.join(t + 5);
    h.synced(3, 2).await;
    let _ = h.runner.run_once(t + 10).await.unwrap();
    one_evicted(&s.api, ["web-1", "web-2"]).await;
    allow(&s.api, 1);
    let mut h = s.restart(h, t + 15).await;
    assert_eq!(reconciled(&h, "replacement", "resumed"), 1);
    s.settle(&mut h, t + 20, pool_a_replaced).await;
    assert_eq!(s.summary(), reference);
}

#[tokio::test]
async fn drift_killed_after_the_old_nodes_delete_was_asked_ends_as_uninterrupted() {
    let reference = drift_reference().await;
    let s = drift_site(2).await;
    let mut h = s.start().await;
    h.synced(2, 2).await;
    let t = now();
    let _ = h.runner.run_once(t).await.unwrap();
    s.join(t + 5);
    h.synced(3, 2).await;
    s.cloud.hold_after_delete.store(true, Ordering::SeqCst);
    let _ = h.runner.run_once(t + 10).await.unwrap();
    s.cloud.reached().await;
    let mut h = s.restart(h, t + 15).await;
    s.settle(&mut h, t + 20, pool_a_replaced).await;
    assert_eq!(s.summary(), reference);
}

// ---- a voluntary notice (rebalance recommendation) for pool-b ----

async fn notice_site(allowed: i64) -> Site {
    let api = KubeApi::start().await;
    pool(&api, allowed).await;
    let mut settings = eager();
    settings.scale_down_enabled = false;
    let mut s = Site::new(api, POOL, settings, allowed < 2).await;
    s.notice = Some(("pool-b".into(), DisruptionReason::Rebalance));
    s
}

async fn notice_reference() -> String {
    notice_site(2).await.uninterrupted(2, 3, pool_b_gone).await
}

#[tokio::test]
async fn a_notice_killed_after_its_intent_is_written_is_carried_on_from_the_node() {
    let reference = notice_reference().await;
    let s = notice_site(2).await;
    let mut h = s.start().await;
    h.synced(2, 3).await;
    s.api.hold("GET /api/v1/nodes/pool-b");
    let t = now();
    let _ = h.runner.run_once(t).await;
    intent_written(&s.api, "pool-b").await;
    // The restarted process hears of no notice: the node's intent carries it.
    let mut h = s.restart(h, t + 5).await;
    assert_eq!(reconciled(&h, "notice", "resumed"), 1);
    s.settle(&mut h, t + 10, pool_b_gone).await;
    assert_eq!(s.summary(), reference);
}

#[tokio::test]
async fn a_notice_killed_mid_drain_is_carried_on_and_leaves_no_cordon() {
    let reference = notice_reference().await;
    let s = notice_site(1).await;
    let mut h = s.start().await;
    h.synced(2, 3).await;
    let t = now();
    let _ = h.runner.run_once(t).await;
    one_evicted(&s.api, ["web-1", "web-2"]).await;
    assert!(s.api.get(NODES, "", "pool-b").unwrap()["spec"]["unschedulable"] == true);
    allow(&s.api, 1);
    let mut h = s.restart(h, t + 5).await;
    assert_eq!(reconciled(&h, "notice", "resumed"), 1);
    s.settle(&mut h, t + 10, pool_b_gone).await;
    assert_eq!(s.summary(), reference);
}

#[tokio::test]
async fn a_notice_killed_after_the_delete_was_asked_ends_as_uninterrupted() {
    let reference = notice_reference().await;
    let s = notice_site(2).await;
    let mut h = s.start().await;
    h.synced(2, 3).await;
    s.cloud.hold_after_delete.store(true, Ordering::SeqCst);
    let t = now();
    let _ = h.runner.run_once(t).await;
    s.cloud.reached().await;
    let mut h = s.restart(h, t + 5).await;
    s.settle(&mut h, t + 10, pool_b_gone).await;
    assert_eq!(s.summary(), reference);
}
