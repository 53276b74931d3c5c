//! `ferroscale run` fails closed, against the loopback Kubernetes API: a renewal that hangs or a Lease
//! taken mid-drain stops every mutation, a broken watch or an unreadable pod holds scale-down back (not
//! scale-up), drains are capped across loops, a pod scheduled onto a draining node stops its deletion, and
//! an unhealthy cluster gets no action; a node being drained counts against its group's min size; an
//! expendable pod goes down with its node without eviction; an eviction names the pod by UID, so a
//! same-named replacement is spared.

use std::time::{Duration, Instant};

use ferroscale::engine::reasons::{Doubt, Unremovable};
use ferroscale::k8s::lease::LeaseSettings;
use ferroscale::run::RunSettings;
use serde_json::json;

use crate::support::fixtures::kube::{node, pod, GROUPS, POOL};
use crate::support::kube_api::{KubeApi, CONFIGMAPS, LEASES, NODES, PDBS, PODS};
use crate::support::run_harness::{
    eager, evictions, has_deletion_taint, pool, run_settings, Harness,
};

/// Leader-elected, looping fast: a 10s Lease renewed every 200ms, given up 2s after renewals fail.
fn leased() -> RunSettings {
    RunSettings {
        scan_interval: Duration::from_millis(300),
        lease: Some(LeaseSettings {
            namespace: "kube-system".into(),
            name: "cluster-autoscaler".into(),
            identity: "test-replica".into(),
            lease_duration: Duration::from_secs(10),
            renew_deadline: Duration::from_secs(2),
            retry_period: Duration::from_millis(200),
        }),
        ..run_settings()
    }
}

/// The requests the API saw from `from` on that change something.
fn mutations(api: &KubeApi, from: usize) -> Vec<String> {
    api.requests()[from..]
        .iter()
        .filter(|r| !r.starts_with("GET"))
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_that_hangs_stops_the_replica_before_its_lease_expires() {
    let api = KubeApi::start().await;
    api.put(NODES, node("small-a", "memory:///small/i-a", "2", "8Gi"));
    api.put(PODS, pod("needs-big", "3", None, "a"));
    let h = Harness::new(api.clone(), GROUPS, eager(), leased()).await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(h.runner.run(async {
        let _ = stopped.await;
    }));
    api.wait_for("a loop as leader", |a| {
        a.get(CONFIGMAPS, "kube-system", "cluster-autoscaler-status")
            .is_some()
    })
    .await;

    // The API server stops answering the Lease renewal.
    api.hold("PUT /apis/coordination.k8s.io/v1/namespaces/kube-system/leases");
    let outcome = tokio::time::timeout(Duration::from_secs(9), running)
        .await
        .expect("the replica stopped acting before its 10s Lease expired")
        .unwrap();
    assert!(
        outcome.unwrap_err().to_string().contains("leadership lost"),
        "it says why"
    );
    let after = api.requests().len();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        mutations(&api, after),
        Vec::<String>::new(),
        "nothing changed after"
    );
    api.release();
    drop(stop);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_taken_mid_drain_stops_evictions_and_the_deletion() {
    let api = KubeApi::start().await;
    pool(&api, 1).await;
    let h = Harness::new(api.clone(), POOL, eager(), leased()).await;
    let cloud = h.cloud.clone();
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(h.runner.run(async {
        let _ = stopped.await;
    }));
    // One pod goes at once; the budget then refuses the other.
    api.wait_for("a drain refused by the budget", |a| evictions(a) >= 3)
        .await;
    assert!(has_deletion_taint(&api, "pool-b"));

    // Another replica holds the Lease now.
    let now = serde_json::to_value(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
        k8s_openapi::jiff::Timestamp::now(),
    ))
    .unwrap();
    api.update(
        LEASES,
        "kube-system",
        "cluster-autoscaler",
        json!({"spec": {"holderIdentity": "other-replica", "renewTime": now, "leaseDurationSeconds": 10}}),
    );
    let outcome = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the replica noticed")
        .unwrap();
    assert!(outcome.is_err());
    let after = api.requests().len();
    // The budget would allow the evictions now: nobody may make them.
    api.update(
        PDBS,
        "default",
        "web",
        json!({"status": {"disruptionsAllowed": 2}}),
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(mutations(&api, after), Vec::<String>::new());
    assert_eq!(
        cloud.snapshot().group("pool").unwrap().target_size,
        2,
        "no DeleteNodes"
    );
    assert!(
        has_deletion_taint(&api, "pool-b"),
        "the taint stays for the next leader to clean"
    );
}

/// Waits until the runner's watches report exactly `doubts`.
async fn until_doubts(h: &Harness, doubts: &[Doubt]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while h.watches.doubts() != doubts {
        assert!(
            Instant::now() < deadline,
            "doubts: {:?}",
            h.watches.doubts()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_pod_watch_holds_scale_down_back_but_not_scale_up() {
    let api = KubeApi::start().await;
    pool(&api, 1).await;
    api.put(PODS, pod("wants-more", "3800m", None, "more"));
    let mut h = Harness::new(api.clone(), POOL, eager(), run_settings()).await;
    h.synced(2, 4).await;

    api.fail_watches(PODS, true);
    let failing = [Doubt::WatchFailing {
        kind: "pods".into(),
    }];
    until_doubts(&h, &failing).await;
    let now = ferroscale::time::unix_now();
    let d = h.runner.run_once(now).await.unwrap();
    assert_eq!(d.scale_up.len(), 1, "scale-up still works: {d:?}");
    let d = h.runner.run_once(now + 1).await.unwrap();
    assert!(d.scale_up.is_empty(), "{d:?}");
    assert!(
        d.scale_down.is_empty(),
        "nothing removed while the pod watch is broken: {d:?}"
    );
    assert_eq!(d.held_back, failing);
    assert!(
        h.status().message.contains("scale-down held back"),
        "{:?}",
        h.status()
    );
    let metrics = h.metrics.encode();
    assert!(
        metrics.contains("ferroscale_scale_down_held_back 1"),
        "{metrics}"
    );

    // The watch recovers: the same node goes.
    api.fail_watches(PODS, false);
    until_doubts(&h, &[]).await;
    let d = h.runner.run_once(now + 2).await.unwrap();
    assert!(d.held_back.is_empty());
    assert_eq!(d.scale_down.len(), 1, "{d:?}");
}

#[tokio::test]
async fn an_unreadable_pod_keeps_its_node() {
    let api = KubeApi::start().await;
    pool(&api, 1).await;
    let mut bad = pod("odd", "200m", Some("pool-b"), "web");
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("lots");
    api.put(PODS, bad);
    let mut h = Harness::new(api.clone(), POOL, eager(), run_settings()).await;
    h.synced(2, 4).await;
    let d = h
        .runner
        .run_once(ferroscale::time::unix_now())
        .await
        .unwrap();
    assert!(d.scale_down.is_empty(), "{d:?}");
    assert!(
        matches!(d.held_back.as_slice(), [Doubt::Unreadable { count: 1, first }] if first.contains("odd")),
        "{:?}",
        d.held_back
    );
    assert!(!has_deletion_taint(&api, "pool-b"));
}

/// Waits until the runner's pod cache holds every pod of `present` and none of `absent`.
async fn until_pods(h: &Harness, present: &[&str], absent: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = |name: &&str| h.watches.pods.contains(&format!("default/{name}"));
        if present.iter().all(seen) && !absent.iter().any(seen) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the pod watch did not see the change: {present:?} present, {absent:?} absent"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

const POOL3: &str = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 5, targetSize: 3, instances: [{id: i-a}, {id: i-b}, {id: i-c}],
     capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.192}
"#;

#[tokio::test]
async fn drains_are_capped_across_loops() {
    let api = KubeApi::start().await;
    pool(&api, 1).await;
    api.put(NODES, node("pool-c", "memory:///pool/i-c", "4", "16Gi"));
    // Busy at first; later its load goes and it could be drained at once (no budget covers it).
    api.put(PODS, pod("batch-1", "2500m", Some("pool-c"), "batch"));
    let mut h = Harness::new(api.clone(), POOL3, eager(), run_settings()).await;
    h.synced(3, 4).await;
    let now = ferroscale::time::unix_now();
    let d = h.runner.run_once(now).await.unwrap();
    assert_eq!(d.scale_down.len(), 1, "one drain per loop: {d:?}");
    let draining = d.scale_down[0].node.clone();
    assert_eq!(draining, "pool-b");
    // pool-b's second pod waits for its budget: the drain stays in flight.
    api.wait_for("the drain under way", |a| evictions(a) >= 3)
        .await;
    api.delete(PODS, "default", "batch-1");
    api.put(PODS, pod("batch-2", "200m", Some("pool-c"), "batch"));
    until_pods(&h, &["batch-2"], &["batch-1"]).await;
    // The next loop finds the first drain still in flight: --max-drain-parallelism 1 stops a second.
    let d = h.runner.run_once(now + 1).await.unwrap();
    assert!(d.scale_down.is_empty(), "{d:?}");
    let why = &d.unremovable.iter().find(|(n, _)| n == "pool-c").unwrap().1;
    assert_eq!(*why, Unremovable::ParallelismReached);
    assert!(!has_deletion_taint(&api, "pool-c"));
}

#[tokio::test]
async fn a_pod_scheduled_onto_a_draining_node_stops_its_deletion() {
    let api = KubeApi::start().await;
    pool(&api, 1).await;
    let mut h = Harness::new(api.clone(), POOL, eager(), run_settings()).await;
    h.synced(2, 3).await;
    let d = h
        .runner
        .run_once(ferroscale::time::unix_now())
        .await
        .unwrap();
    assert_eq!(d.scale_down[0].node, "pool-b");
    api.wait_for("a drain refused by the budget", |a| evictions(a) >= 3)
        .await;
    // A pod lands on the node (bound before the taint was seen), then the budget opens.
    api.put(PODS, pod("late", "100m", Some("pool-b"), "late"));
    api.update(
        PDBS,
        "default",
        "web",
        json!({"status": {"disruptionsAllowed": 2}}),
    );
    let results = h.runner.settle().await;
    let e = results[0].as_ref().unwrap_err().to_string();
    assert!(e.contains("default/late"), "{e}");
    assert_eq!(h.group("pool").target_size, 2, "not deleted");
    assert!(!has_deletion_taint(&api, "pool-b"), "untainted");
    assert!(
        api.get(PODS, "default", "late").is_some(),
        "the late pod lives"
    );
    api.wait_for("ScaleDownFailed", |a| {
        !a.events("ScaleDownFailed").is_empty()
    })
    .await;
}

#[tokio::test]
async fn an_unhealthy_cluster_gets_no_action_and_says_so() {
    let api = KubeApi::start().await;
    api.put(NODES, node("small-a", "memory:///small/i-a", "2", "8Gi"));
    for n in ["x1", "x2", "x3", "x4"] {
        let mut unready = node(n, &format!("memory:///none/{n}"), "2", "8Gi");
        unready["status"]["conditions"][0]["status"] = json!("False");
        api.put(NODES, unready);
    }
    api.put(PODS, pod("needs-big", "3", None, "a"));
    let mut h = Harness::new(api.clone(), GROUPS, eager(), run_settings()).await;
    h.synced(5, 1).await;
    let d = h
        .runner
        .run_once(ferroscale::time::unix_now())
        .await
        .unwrap();
    assert!(d.scale_up.is_empty() && d.scale_down.is_empty(), "{d:?}");
    let u = d.unhealthy.expect("unhealthy");
    assert_eq!((u.unready, u.total), (4, 5));
    let status = h.status();
    assert_eq!(status.cluster_wide.health.status, "Unhealthy");
    assert!(
        status.message.contains("4 of 5 nodes unready"),
        "{}",
        status.message
    );
    assert!(h
        .metrics
        .encode()
        .contains("cluster_autoscaler_cluster_safe_to_autoscale 0"));
    assert_eq!(h.group("big").target_size, 0, "no scale-up");
}

const POOL_MIN1: &str = r#"
nodeGroups:
  - {name: pool, minSize: 1, maxSize: 5, targetSize: 2, instances: [{id: i-a}, {id: i-b}],
     capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.192}
"#;

#[tokio::test]
async fn a_node_being_drained_counts_against_min_size() {
    let api = KubeApi::start().await;
    pool(&api, 1).await;
    let mut h = Harness::new(api.clone(), POOL_MIN1, eager(), run_settings()).await;
    h.synced(2, 3).await;
    let now = ferroscale::time::unix_now();
    let d = h.runner.run_once(now).await.unwrap();
    assert_eq!(d.scale_down.len(), 1, "{d:?}");
    assert_eq!(d.scale_down[0].node, "pool-b");
    // The budget holds pool-b's second pod: its drain stays in flight.
    api.wait_for("the drain under way", |a| evictions(a) >= 3)
        .await;
    // pool-a empties; removing it too would take the group of min 1 to 0.
    api.delete(PODS, "default", "anchor");
    until_pods(&h, &[], &["anchor"]).await;
    let d = h.runner.run_once(now + 1).await.unwrap();
    assert!(d.scale_down.is_empty(), "{d:?}");
    let why = &d.unremovable.iter().find(|(n, _)| n == "pool-a").unwrap().1;
    assert_eq!(
        *why,
        Unremovable::AtMinSize {
            group: "pool".into()
        }
    );
    assert!(!has_deletion_taint(&api, "pool-a"));
}

#[tokio::test]
async fn an_expendable_pod_goes_down_with_its_node_unevicted() {
    let api = KubeApi::start().await;
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    api.put(NODES, node("pool-b", "memory:///pool/i-b", "4", "16Gi"));
    api.put(PODS, pod("anchor", "3", Some("pool-a"), "anchor"));
    // Below --expendable-pods-priority-cutoff (-10): it neither counts nor moves.
    let mut filler = pod("filler", "3", Some("pool-b"), "filler");
    filler["spec"]["priority"] = json!(-100);
    api.put(PODS, filler);
    let mut h = Harness::new(api.clone(), POOL, eager(), run_settings()).await;
    h.synced(2, 2).await;
    let d = h
        .runner
        .run_once(ferroscale::time::unix_now())
        .await
        .unwrap();
    assert_eq!(d.scale_down.len(), 1, "{d:?}");
    let down = &d.scale_down[0];
    assert_eq!(down.node, "pool-b");
    assert!(down.evict.is_empty(), "{down:?}");
    assert_eq!(down.left, vec!["default/filler".to_string()]);
    let results = h.runner.settle().await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(h.group("pool").target_size, 1, "deleted with the pod on it");
    assert_eq!(evictions(&api), 0);
}

#[tokio::test]
async fn an_eviction_carries_the_pods_uid_and_spares_a_same_named_replacement() {
    let api = KubeApi::start().await;
    let first = api.put(PODS, pod("db-0", "500m", Some("n1"), "db"));
    let listed = ferroscale::actuator::Evictee {
        namespace: "default".into(),
        name: "db-0".into(),
        uid: first["metadata"]["uid"].as_str().map(String::from),
        grace_period: Some(0),
        node: Some("n1".into()),
    };
    // The StatefulSet's next db-0 replaces the pod listed for the drain, under the same name.
    api.delete(PODS, "default", "db-0");
    let second = api.put(PODS, pod("db-0", "500m", Some("n2"), "db"));
    assert_ne!(second["metadata"]["uid"], first["metadata"]["uid"]);
    let settings = ferroscale::actuator::DrainSettings {
        max_pod_eviction_time: Duration::from_secs(30),
        max_graceful_termination: Duration::from_secs(30),
    };
    let fence = ferroscale::k8s::lease::Fence::open();
    ferroscale::k8s::drain::evict(&api.client(), &listed, &settings, &fence)
        .await
        .expect("the pod meant is gone: done");
    let left = api
        .get(PODS, "default", "db-0")
        .expect("the replacement lives");
    assert_eq!(left["metadata"]["uid"], second["metadata"]["uid"]);
    assert_eq!(evictions(&api), 1, "one eviction, refused 409, not retried");

    // The replacement itself, named by its own UID, is evicted.
    let current = ferroscale::actuator::Evictee {
        uid: second["metadata"]["uid"].as_str().map(String::from),
        ..listed
    };
    ferroscale::k8s::drain::evict(&api.client(), &current, &settings, &fence)
        .await
        .unwrap();
    assert!(api.get(PODS, "default", "db-0").is_none());
}
