//! The kill matrix, continued (see `run_restart`): a consolidation replacing three nodes by one, and a
//! node the descheduler emptied, each killed at each of its steps; and a leadership handover in the
//! middle of a consolidation's drain, the new leader finishing what the old one started.

use std::sync::atomic::Ordering;
use std::time::Duration;

use ferroscale::cloud::Cloud;
use ferroscale::k8s::lease::LeaseSettings;
use ferroscale::run::RunSettings;
use ferroscale::time::unix_now as now;
use serde_json::json;

use crate::run_deschedule_emptied::{objects, settings as desched_settings};
use crate::support::fixtures::kube::{node, pod, POOL};
use crate::support::kube_api::{KubeApi, NODES, PDBS, PODS};
use crate::support::restart::{allow, intent_of, one_evicted, reconciled, Site};
use crate::support::run_harness::{has_deletion_taint, Harness};

// ---- consolidation: m5-0..2 (9 of 16 cores used each) into one node of group `big` ----

const GROUPS: &str = r#"
nodeGroups:
  - {name: m5, minSize: 0, maxSize: 6, capacity: {cpu: 16, memory: 64Gi, pods: 110}, pricePerHour: 0.768,
     disruptionBudget: "100%", consolidation: {policy: WhenEmptyOrUnderutilized, after: 0s},
     instances: [{id: i-0}, {id: i-1}, {id: i-2}]}
  - {name: big, minSize: 0, maxSize: 6, capacity: {cpu: 32, memory: 128Gi, pods: 110}, pricePerHour: 1.224}
"#;

/// Each m5 node holds one 9-core pod (which fits on no other m5 node): m5-0 and m5-1 web pods under a
/// budget allowing `allowed` disruptions, m5-2 a db pod.
async fn consolidation_site(allowed: i64) -> Site {
    let api = KubeApi::start().await;
    for k in 0..3 {
        let name = format!("m5-{k}");
        api.put(
            NODES,
            node(&name, &format!("memory:///m5/i-{k}"), "16", "64Gi"),
        );
    }
    api.put(PODS, pod("web-0", "9", Some("m5-0"), "web"));
    api.put(PODS, pod("web-1", "9", Some("m5-1"), "web"));
    api.put(PODS, pod("db-2", "9", Some("m5-2"), "db"));
    api.put(
        PDBS,
        json!({"metadata": {"name": "web", "namespace": "default"},
               "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1},
               "status": {"disruptionsAllowed": allowed}}),
    );
    let mut settings = ferroscale::cli::flags::default_engine();
    settings.max_drain_parallelism = 3;
    Site::new(api, GROUPS, settings, allowed < 2).await
}

fn consolidated(s: &Site) -> bool {
    let snapshot = s.cloud.snapshot();
    snapshot.group("m5").unwrap().instances.is_empty()
        && snapshot.group("big").unwrap().instances.len() == 1
}

fn big_asked(s: &Site) -> bool {
    s.cloud.snapshot().group("big").unwrap().target_size == 1
}

async fn consolidate_to_the_end(s: &Site, h: &mut Harness, t: i64) {
    let t = s.settle(h, t, big_asked).await;
    s.join(t + 5);
    s.settle(h, t + 10, consolidated).await;
}

async fn consolidation_reference() -> String {
    let s = consolidation_site(2).await;
    let mut h = s.start().await;
    h.synced(3, 3).await;
    consolidate_to_the_end(&s, &mut h, now()).await;
    s.summary()
}

#[tokio::test]
async fn consolidation_killed_before_its_surge_is_asked_asks_it_once() {
    let reference = consolidation_reference().await;
    let s = consolidation_site(2).await;
    let h = s.start().await;
    h.synced(3, 3).await;
    s.cloud.hold_increase.store(true, Ordering::SeqCst);
    let t = now();
    let mut h = s.kill_in_loop(h, t).await;
    assert_eq!(reconciled(&h, "consolidation", "rolled_back"), 3);
    consolidate_to_the_end(&s, &mut h, t + 10).await;
    assert_eq!(s.summary(), reference);
}

#[tokio::test]
async fn consolidation_killed_after_its_surge_is_asked_waits_for_it() {
    let reference = consolidation_reference().await;
    let s = consolidation_site(2).await;
    let mut h = s.start().await;
    h.synced(3, 3).await;
    let t = now();
    let d = h.runner.run_once(t).await.unwrap();
    assert_eq!(d.consolidations.len(), 1, "{d:#?}");
    let mut h = s.restart(h, t + 5).await;
    assert_eq!(reconciled(&h, "consolidation", "resumed"), 3);
    consolidate_to_the_end(&s, &mut h, t + 10).await;
    assert_eq!(s.summary(), reference);
}

#[tokio::test]
async fn consolidation_killed_once_its_surge_is_ready_drains_the_old_nodes() {
    let reference = consolidation_reference().await;
    let s = consolidation_site(2).await;
    let mut h = s.start().await;
    h.synced(3, 3).await;
    let t = now();
    h.runner.run_once(t).await.unwrap();
    s.join(t + 5);
    let mut h = s.restart(h, t + 10).await;
    assert_eq!(reconciled(&h, "consolidation", "resumed"), 3);
    s.settle(&mut h, t + 20, consolidated).await;
    assert_eq!(s.summary(), reference);
}

#[tokio::test]
async fn consolidation_killed_with_half_its_pods_evicted_finishes_on_the_new_node() {
    let reference = consolidation_reference().await;
    let s = consolidation_site(2).await;
    let mut h = s.start().await;
    h.synced(3, 3).await;
    let t = now();
    h.runner.run_once(t).await.unwrap();
    // Planned; by the time its node joins, the web pods' budget allows one disruption: one web node
    // is drained and deleted, the other waits.
    allow(&s.api, 1);
    s.join(t + 5);
    h.synced(4, 3).await;
    h.runner.run_once(t + 10).await.unwrap();
    h.runner.settle().await;
    assert_eq!(web_pods_left(&s.api), 1);
    allow(&s.api, 1);
    let mut h = s.restart(h, t + 15).await;
    assert!(reconciled(&h, "consolidation", "resumed") >= 1);
    s.settle(&mut h, t + 20, consolidated).await;
    assert_eq!(s.summary(), reference);
}

fn web_pods_left(api: &KubeApi) -> usize {
    ["web-0", "web-1"]
        .iter()
        .filter(|p| api.get(PODS, "default", p).is_some())
        .count()
}

#[tokio::test]
async fn consolidation_killed_after_a_delete_was_asked_ends_as_uninterrupted() {
    let reference = consolidation_reference().await;
    let s = consolidation_site(2).await;
    let mut h = s.start().await;
    h.synced(3, 3).await;
    let t = now();
    h.runner.run_once(t).await.unwrap();
    s.join(t + 5);
    h.synced(4, 3).await;
    s.cloud.hold_after_delete.store(true, Ordering::SeqCst);
    h.runner.run_once(t + 10).await.unwrap();
    s.cloud.reached().await;
    let mut h = s.restart(h, t + 15).await;
    s.settle(&mut h, t + 20, consolidated).await;
    assert_eq!(s.summary(), reference);
}

// ---- a node the descheduler emptied (HighNodeUtilization): pool-a, removed by scale-down ----

async fn emptied_site(slow: bool) -> Site {
    let api = KubeApi::start().await;
    for (kind, o) in objects() {
        api.put(if kind == "Node" { NODES } else { PODS }, o);
    }
    if slow {
        api.put(
            PDBS,
            json!({"metadata": {"name": "web", "namespace": "default"},
                   "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1},
                   "status": {"disruptionsAllowed": 2}}),
        );
    }
    let mut s = Site::new(api, POOL, ferroscale::cli::flags::default_engine(), slow).await;
    s.run = RunSettings {
        deschedule: Some(desched_settings()),
        ..s.run.clone()
    };
    s
}

fn pool_a_gone(s: &Site) -> bool {
    let pool = s.cloud.snapshot().group("pool").unwrap().clone();
    pool.instances.len() == 1 && !pool.instances[0].id.ends_with("/i-a")
}

async fn emptied_reference() -> String {
    emptied_site(false)
        .await
        .uninterrupted(2, 3, pool_a_gone)
        .await
}

#[tokio::test]
async fn an_emptied_node_killed_after_its_intent_is_written_is_removed_by_the_next_process() {
    let reference = emptied_reference().await;
    let s = emptied_site(false).await;
    let mut h = s.start().await;
    h.synced(2, 3).await;
    let t = now();
    h.runner.run_once(t).await.unwrap();
    assert!(
        intent_of(&s.api, "pool-a").is_some_and(|i| i.contains("descheduled")),
        "written with the cycle"
    );
    let mut h = s.restart(h, t + 5).await;
    assert_eq!(reconciled(&h, "descheduled", "resumed"), 1);
    s.settle(&mut h, t + 10, pool_a_gone).await;
    assert_eq!(s.summary(), reference);
}

#[tokio::test]
async fn an_emptied_node_killed_mid_drain_is_drained_of_the_rest() {
    let reference = emptied_reference().await;
    let s = emptied_site(true).await;
    let mut h = s.start().await;
    h.synced(2, 3).await;
    let t = now();
    h.runner.run_once(t).await.unwrap();
    // Emptied under a budget allowing both moves; by the drain, it allows one.
    allow(&s.api, 1);
    h.runner.run_once(t + 10).await.unwrap();
    one_evicted(&s.api, ["web-1", "web-2"]).await;
    allow(&s.api, 1);
    let mut h = s.restart(h, t + 15).await;
    assert_eq!(reconciled(&h, "descheduled", "resumed"), 1);
    s.settle(&mut h, t + 20, pool_a_gone).await;
    assert_eq!(s.summary(), reference);
}

#[tokio::test]
async fn an_emptied_node_killed_after_its_delete_was_asked_ends_as_uninterrupted() {
    let reference = emptied_reference().await;
    let s = emptied_site(false).await;
    let mut h = s.start().await;
    h.synced(2, 3).await;
    let t = now();
    h.runner.run_once(t).await.unwrap();
    s.cloud.hold_after_delete.store(true, Ordering::SeqCst);
    h.runner.run_once(t + 10).await.unwrap();
    s.cloud.reached().await;
    let mut h = s.restart(h, t + 15).await;
    s.settle(&mut h, t + 20, pool_a_gone).await;
    assert_eq!(s.summary(), reference);
}

// ---- a leadership handover in the middle of a consolidation's drain ----

fn lease(identity: &str) -> LeaseSettings {
    LeaseSettings {
        namespace: "kube-system".into(),
        name: "cluster-autoscaler".into(),
        identity: identity.into(),
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_secs(1),
        retry_period: Duration::from_millis(100),
    }
}

// Two workers: the API server answers while the replicas' loops run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_leader_finishes_a_consolidation_the_old_one_left_mid_drain() {
    let mut s = consolidation_site(2).await;
    s.run.lease = Some(lease("a"));
    let a = s.start().await;
    a.synced(3, 3).await;
    let (stop_a, stopped_a) = tokio::sync::oneshot::channel::<()>();
    let a_runs = tokio::spawn(a.runner.run(async {
        let _ = stopped_a.await;
    }));
    s.api
        .wait_for("the surge asked for", |_| big_asked(&s))
        .await;
    // A node registers seconds after it is asked for, never in the same second (the engine takes a
    // node seen after the ask, to the second, as the surge): the test's node joins two seconds on.
    let asked = now();
    s.api.wait_for("two seconds", |_| now() >= asked + 2).await;
    // By the time the new node joins, the budget allows one web pod to go: the other waits.
    allow(&s.api, 1);
    s.join(now());
    one_evicted(&s.api, ["web-0", "web-1"]).await;
    // a steps down mid-drain (its drains stop where they are), and b takes the Lease over.
    stop_a.send(()).unwrap();
    a_runs.await.unwrap().unwrap();
    allow(&s.api, 1);
    s.run.lease = Some(lease("b"));
    let b = s.process().await;
    let (stop_b, stopped_b) = tokio::sync::oneshot::channel::<()>();
    let metrics = b.metrics.clone();
    let b_runs = tokio::spawn(b.runner.run(async {
        let _ = stopped_b.await;
    }));
    for _ in 0..600 {
        s.forget_gone();
        if consolidated(&s) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(consolidated(&s), "{}", s.summary());
    stop_b.send(()).unwrap();
    b_runs.await.unwrap().unwrap();
    let m = metrics.encode();
    assert!(
        m.contains(
            "ferroscale_intents_reconciled_total{action=\"scale-down\",outcome=\"rolled_back\"} 1"
        ) || m.contains("ferroscale_intents_reconciled_total{action=\"consolidation\""),
        "{m}"
    );
    assert_eq!(s.cloud.asked.load(Ordering::SeqCst), 1, "one surge");
    assert!(s.api.get(PODS, "default", "db-2").is_none());
    for n in s.api.list(NODES) {
        let name = n["metadata"]["name"].as_str().unwrap();
        assert!(!has_deletion_taint(&s.api, name) && n["spec"]["unschedulable"] != true);
    }
}
