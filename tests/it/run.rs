//! `ferroscale run` against a Kubernetes API on loopback (`kube_api`): pending pods scale a group up and
//! are told why (events), scale-downs taint, evict through PodDisruptionBudgets (429 until the budget
//! allows) and delete, failed drains untaint, `--dry-run` writes nothing, the status ConfigMap follows
//! upstream's schema; and the binary end to end with its Lease, metrics and `/health-check`.

use std::time::Duration;

use ferroscale::engine::status::ClusterScaleUp;
use ferroscale::time::unix_now as now;
use serde_json::json;

use crate::support::fixtures::kube::{node, pod, GROUPS, POOL};
use crate::support::kube_api::{assert_permitted, KubeApi, NODES, PDBS, PODS};
use crate::support::run_harness::{
    eager, evictions, group_status, has_deletion_taint, pool, run_settings, Harness,
};

#[tokio::test]
async fn pending_pods_scale_up_the_group_that_fits_and_are_told_why() {
    let api = KubeApi::start().await;
    api.put(NODES, node("small-a", "memory:///small/i-a", "2", "8Gi"));
    api.put(PODS, pod("needs-big", "3", None, "a"));
    api.put(PODS, pod("too-big", "16", None, "b"));
    let mut h = Harness::new(
        api,
        GROUPS,
        ferroscale::cli::flags::default_engine(),
        run_settings(),
    )
    .await;

    let d = h.runner.run_once(now()).await.unwrap();
    assert_eq!(d.scale_up.len(), 1, "{d:?}");
    assert_eq!(
        (d.scale_up[0].group.as_str(), d.scale_up[0].delta),
        ("big", 1)
    );
    assert_eq!(h.group("big").target_size, 1);

    // The pods hear why, as upstream tells them.
    h.api
        .wait_for("the events", |a| {
            !a.events("TriggeredScaleUp").is_empty() && !a.events("NotTriggerScaleUp").is_empty()
        })
        .await;
    let up = h.api.events("TriggeredScaleUp");
    assert_eq!(up[0].0, "needs-big");
    assert!(up[0].1.contains("big 0->1 (max: 2)"), "{up:?}");
    let not = h.api.events("NotTriggerScaleUp");
    assert_eq!(not.len(), 1, "{not:?}");
    assert_eq!(not[0].0, "too-big");
    assert!(not[0].1.contains("no group fits"), "{not:?}");

    // The status ConfigMap, upstream's schema.
    let s = h.status();
    assert_eq!(s.autoscaler_status, "Running");
    assert_eq!(
        group_status(&s, "big").conditions.scale_up.status,
        "InProgress"
    );
    let health = &group_status(&s, "big").conditions.health;
    assert_eq!(
        (
            health.cloud_provider_target,
            health.min_size,
            health.max_size
        ),
        (Some(1), Some(0), Some(2))
    );
    assert_eq!(health.node_counts.as_ref().unwrap().unregistered, 1);
    let metrics = h.metrics.encode();
    assert!(
        metrics.contains("cluster_autoscaler_scaled_up_nodes_total 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("cluster_autoscaler_unschedulable_pods_count{type=\"unschedulable\"} 1"),
        "{metrics}"
    );

    // The new instance registers and the scheduler binds the pod; the watches deliver both.
    let instance = h.group("big").instances[0].id.clone();
    h.api.put(NODES, node("big-1", &instance, "8", "32Gi"));
    h.api.put(PODS, pod("needs-big", "3", Some("big-1"), "a"));
    h.synced(2, 2).await;
    let d = h.runner.run_once(now()).await.unwrap();
    assert!(d.scale_up.is_empty(), "{d:?}");
    let s = h.status();
    let big = group_status(&s, "big");
    assert_eq!(big.conditions.scale_up.status, "NoActivity");
    assert_eq!(
        big.conditions
            .health
            .node_counts
            .as_ref()
            .unwrap()
            .registered
            .ready,
        1
    );
    // The same reason is not repeated on every loop.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(h.api.events("NotTriggerScaleUp").len(), 1);
    let requests = h.api.requests();
    for kind in ["pods", "nodes", "poddisruptionbudgets", "daemonsets"] {
        assert!(
            requests.iter().any(|r| r.contains(&format!("/{kind}?"))
                && r.contains("watch=true")
                && r.contains("resourceVersion=")),
            "no watch of {kind}: {requests:#?}"
        );
    }
    assert_permitted(&h.api);
}

#[tokio::test]
async fn scale_down_taints_evicts_through_the_budget_then_deletes() {
    let api = KubeApi::start().await;
    pool(&api, 1).await;
    let mut h = Harness::new(api, POOL, eager(), run_settings()).await;

    let d = h.runner.run_once(now()).await.unwrap();
    assert_eq!(d.scale_down.len(), 1, "{d:?}");
    assert_eq!(d.scale_down[0].node, "pool-b");
    // One pod goes at once; the budget then answers 429 for the other until a replacement is ready.
    h.api
        .wait_for("a refused eviction retried", |a| evictions(a) >= 3)
        .await;
    assert!(has_deletion_taint(&h.api, "pool-b"));
    assert_eq!(
        h.api.list(PODS).len(),
        2,
        "one web pod evicted, one waiting"
    );
    assert_eq!(
        h.group("pool").target_size,
        2,
        "no delete before the node is drained"
    );
    h.api.update(
        PDBS,
        "default",
        "web",
        json!({"status": {"disruptionsAllowed": 1}}),
    );

    let results = h.runner.settle().await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let pool = h.group("pool");
    assert_eq!(pool.target_size, 1);
    assert!(pool.instances.iter().all(|i| !i.id.ends_with("i-b")));
    let names: Vec<String> = h
        .api
        .list(PODS)
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["anchor"]);
    h.api
        .wait_for("ScaleDown events", |a| a.events("ScaleDown").len() == 3)
        .await;
    let metrics = h.metrics.encode();
    assert!(
        metrics.contains(r#"cluster_autoscaler_evicted_pods_total{eviction_result="succeeded"} 2"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"cluster_autoscaler_scaled_down_nodes_total{reason="underutilized"} 1"#),
        "{metrics}"
    );
    // The taint patch carried the resourceVersion it was computed from.
    assert!(h
        .api
        .requests()
        .iter()
        .any(|r| r.starts_with("PATCH /api/v1/nodes/pool-b")));
    assert_permitted(&h.api);
}

#[tokio::test]
async fn a_drain_the_budget_never_allows_untaints_and_keeps_the_node() {
    let api = KubeApi::start().await;
    pool(&api, 1).await;
    let mut run = run_settings();
    run.drain.max_pod_eviction_time = Duration::from_secs(1);
    let mut h = Harness::new(api, POOL, eager(), run).await;

    let d = h.runner.run_once(now()).await.unwrap();
    assert_eq!(d.scale_down.len(), 1, "{d:?}");
    let results = h.runner.settle().await;
    let err = results[0].as_ref().unwrap_err().to_string();
    assert!(err.contains("disruption budget"), "{err}");
    assert!(
        !has_deletion_taint(&h.api, "pool-b"),
        "the taint is taken off again"
    );
    let pool = h.group("pool");
    assert_eq!((pool.target_size, pool.instances.len()), (2, 2));
    h.api
        .wait_for("ScaleDownFailed", |a| {
            !a.events("ScaleDownFailed").is_empty()
        })
        .await;
    let failed = h.api.events("ScaleDownFailed");
    assert_eq!(failed[0].0, "pool-b");
    assert!(failed[0].1.contains("disruption budget"), "{failed:?}");
    let metrics = h.metrics.encode();
    assert!(
        metrics.contains(r#"cluster_autoscaler_evicted_pods_total{eviction_result="failed"} 1"#),
        "{metrics}"
    );
    // The failure pauses scale-down for --scale-down-delay-after-failure (3m), even once the budget
    // allows a disruption again.
    let pdb_events = h.watches.pdbs.events();
    h.api.update(
        PDBS,
        "default",
        "web",
        json!({"status": {"disruptionsAllowed": 1}}),
    );
    h.synced(2, 2).await;
    for _ in 0..200 {
        if h.watches.pdbs.events() > pdb_events {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let d = h.runner.run_once(now()).await.unwrap();
    assert!(d.scale_down.is_empty(), "{d:?}");
    let why = &d.unremovable.iter().find(|(n, _)| n == "pool-b").unwrap().1;
    assert_eq!(
        *why,
        ferroscale::engine::reasons::Unremovable::Paused(
            ferroscale::engine::reasons::Pause::AfterFailure
        ),
        "{why}"
    );
    assert_permitted(&h.api);
}

#[tokio::test]
async fn dry_run_decides_but_writes_nothing() {
    let api = KubeApi::start().await;
    api.put(NODES, node("small-a", "memory:///small/i-a", "2", "8Gi"));
    api.put(PODS, pod("needs-big", "3", None, "a"));
    let mut run = run_settings();
    run.dry_run = true;
    let mut h = Harness::new(api, GROUPS, ferroscale::cli::flags::default_engine(), run).await;
    let d = h.runner.run_once(now()).await.unwrap();
    assert_eq!(d.scale_up.len(), 1, "{d:?}");
    assert_eq!(h.group("big").target_size, 0);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let writes: Vec<String> = h
        .api
        .requests()
        .into_iter()
        .filter(|r| !r.starts_with("GET"))
        .collect();
    assert!(writes.is_empty(), "{writes:#?}");
    let status = h.runner.status().unwrap().cluster_wide.as_ref().unwrap();
    assert_eq!(status.scale_up.status, ClusterScaleUp::InProgress);
}

/// The taint `key` on `node` in the API, as (value set, effect).
fn taint_effect(api: &KubeApi, node: &str, key: &str) -> Option<String> {
    api.get(NODES, "", node).unwrap()["spec"]["taints"]
        .as_array()?
        .iter()
        .find(|t| t["key"] == key)
        .map(|t| t["effect"].as_str().unwrap_or_default().to_string())
}

/// Upstream's soft taints (core/scaledown/actuation/softtaint.go): an unneeded node not yet removed gets
/// `DeletionCandidateOfClusterAutoscaler:PreferNoSchedule`, and loses it once it is needed again.
#[tokio::test]
async fn an_unneeded_node_is_soft_tainted_until_it_is_needed_again() {
    let api = KubeApi::start().await;
    pool(&api, 1).await;
    let mut h = Harness::new(
        api,
        POOL,
        ferroscale::cli::flags::default_engine(),
        run_settings(),
    )
    .await;
    h.synced(2, 3).await;
    let d = h.runner.run_once(now()).await.unwrap();
    assert!(d.scale_down.is_empty(), "not unneeded for 10m yet: {d:?}");
    assert_eq!(
        taint_effect(&h.api, "pool-b", "DeletionCandidateOfClusterAutoscaler").as_deref(),
        Some("PreferNoSchedule")
    );
    assert_eq!(
        taint_effect(&h.api, "pool-a", "DeletionCandidateOfClusterAutoscaler"),
        None
    );

    // pool-b fills up: needed again, the taint goes.
    h.api.put(PODS, pod("big", "3", Some("pool-b"), "big"));
    h.synced(2, 4).await;
    h.runner.run_once(now()).await.unwrap();
    assert_eq!(
        taint_effect(&h.api, "pool-b", "DeletionCandidateOfClusterAutoscaler"),
        None
    );
    assert_permitted(&h.api);
}
