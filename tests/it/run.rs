//! `ferroscale run` against a Kubernetes API on loopback (`kube_api`): pending pods scale a group up and
//! are told why (events), scale-downs taint, evict through PodDisruptionBudgets (429 until the budget
//! allows) and delete, failed drains untaint, `--dry-run` writes nothing, the status ConfigMap follows
//! upstream's schema; and the binary end to end with its Lease, metrics and `/health-check`.

use std::sync::Arc;
use std::time::Duration;

use ferroscale::cloud::memory::{MemoryCloud, MemoryConfig};
use ferroscale::cloud::Cloud;
use ferroscale::engine::status::ClusterScaleUp;
use ferroscale::engine::Settings;
use ferroscale::k8s::status::Status;
use ferroscale::k8s::watch::Watches;
use ferroscale::metrics::Metrics;
use ferroscale::run::{Health, RunSettings, Runner};
use ferroscale::time::unix_now as now;
use serde_json::{json, Value};

use crate::kube_api::{assert_permitted, KubeApi, CONFIGMAPS, NODES, PDBS, PODS};

pub(crate) const GROUPS: &str = r#"
nodeGroups:
  - {name: small, minSize: 0, maxSize: 5, targetSize: 1, instances: [{id: i-a}],
     capacity: {cpu: 2, memory: 8Gi, pods: 20}, pricePerHour: 0.096}
  - {name: big, minSize: 0, maxSize: 2, targetSize: 0,
     capacity: {cpu: 8, memory: 32Gi, pods: 50}, pricePerHour: 0.384}
"#;

pub(crate) const POOL: &str = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 5, targetSize: 2, instances: [{id: i-a}, {id: i-b}],
     capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.192}
"#;

pub fn node(name: &str, provider_id: &str, cpu: &str, memory: &str) -> Value {
    json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"providerID": provider_id},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "20"},
            "capacity": {"cpu": cpu, "memory": memory, "pods": "20"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    })
}

/// A pod owned by a ReplicaSet; pending (marked unschedulable by the scheduler) without a node.
pub fn pod(name: &str, cpu: &str, node: Option<&str>, app: &str) -> Value {
    let status = match node {
        Some(_) => json!({"phase": "Running"}),
        None => json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}),
    };
    json!({
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                "uid": "rs-uid", "controller": true}]},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "app",
            "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}]},
        "status": status,
    })
}

pub(crate) fn run_settings() -> RunSettings {
    RunSettings {
        scan_interval: Duration::from_secs(1),
        dry_run: false,
        namespace: "kube-system".into(),
        status_config_map: Some("cluster-autoscaler-status".into()),
        lease: None,
        drain: ferroscale::k8s::drain::DrainSettings {
            max_pod_eviction_time: Duration::from_secs(3),
            max_graceful_termination: Duration::from_secs(5),
        },
        max_inactivity: Duration::from_secs(600),
        max_failing_time: Duration::from_secs(900),
        instance: "test-replica".into(),
    }
}

/// Scale-down with no waiting, for tests.
pub(crate) fn eager() -> Settings {
    let mut s = Settings {
        scale_down_delay_after_add: Duration::ZERO,
        ..ferroscale::cli::flags::default_engine()
    };
    s.defaults.scale_down_unneeded_time = Duration::ZERO;
    s
}

pub(crate) struct Harness {
    pub(crate) api: KubeApi,
    pub(crate) cloud: Arc<dyn Cloud>,
    pub(crate) watches: Watches,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) runner: Runner,
}

impl Harness {
    /// A runner on `groups` against `api`, its watches synced with what `api` holds now.
    pub(crate) async fn new(
        api: KubeApi,
        groups: &str,
        settings: Settings,
        run: RunSettings,
    ) -> Harness {
        let cloud = Arc::new(MemoryCloud::new(&MemoryConfig::parse(groups).unwrap()).unwrap());
        Harness::with_cloud(api, cloud, settings, run).await
    }

    /// A runner on any cloud against `api`.
    pub(crate) async fn with_cloud(
        api: KubeApi,
        cloud: Arc<dyn Cloud>,
        settings: Settings,
        run: RunSettings,
    ) -> Harness {
        let client = api.client();
        let owners = settings.min_replica_count > 0;
        let watches = Watches::start(&client, owners);
        watches
            .ready(tokio::time::sleep(Duration::from_secs(10)))
            .await
            .unwrap();
        let metrics = Arc::new(Metrics::for_run());
        let health = Arc::new(Health::new(run.max_inactivity, run.max_failing_time));
        let runner = Runner::new(
            cloud.clone(),
            client,
            watches.clone(),
            settings,
            run,
            metrics.clone(),
            health,
        );
        Harness {
            api,
            cloud,
            watches,
            metrics,
            runner,
        }
    }

    pub(crate) fn group(&self, id: &str) -> Arc<ferroscale::model::NodeGroup> {
        self.cloud.snapshot().group(id).unwrap().clone()
    }

    pub(crate) fn status(&self) -> Status {
        let cm = self
            .api
            .get(CONFIGMAPS, "kube-system", "cluster-autoscaler-status")
            .expect("the status ConfigMap");
        assert!(
            cm["metadata"]["annotations"]["cluster-autoscaler.kubernetes.io/last-updated"]
                .is_string()
        );
        serde_norway::from_str(cm["data"]["status"].as_str().unwrap()).unwrap()
    }

    /// Waits until the watches have seen `n` nodes and `p` pods.
    pub(crate) async fn synced(&self, n: usize, p: usize) {
        for _ in 0..200 {
            if self.watches.nodes.len() == n
                && self.watches.pods.len() == p
                && self.watches.doubts().is_empty()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("watches did not catch up");
    }
}

pub(crate) fn group_status<'a>(
    s: &'a Status,
    name: &str,
) -> &'a ferroscale::k8s::status::NodeGroupStatus {
    s.node_groups.iter().find(|g| g.name == name).unwrap()
}

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

/// Pool of two nodes: `pool-a` half used (kept), `pool-b` with two small web pods under a budget that
/// allows one disruption.
pub(crate) async fn pool(api: &KubeApi, allowed: i64) {
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    api.put(NODES, node("pool-b", "memory:///pool/i-b", "4", "16Gi"));
    // Above half of pool-a's 4 cpu: kept (a node at the threshold would go).
    api.put(PODS, pod("anchor", "2100m", Some("pool-a"), "anchor"));
    api.put(PODS, pod("web-1", "200m", Some("pool-b"), "web"));
    api.put(PODS, pod("web-2", "200m", Some("pool-b"), "web"));
    api.put(
        PDBS,
        json!({"metadata": {"name": "web", "namespace": "default"},
               "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1},
               "status": {"disruptionsAllowed": allowed}}),
    );
}

pub(crate) fn has_deletion_taint(api: &KubeApi, node: &str) -> bool {
    api.get(NODES, "", node).unwrap()["spec"]["taints"]
        .as_array()
        .is_some_and(|ts| {
            ts.iter()
                .any(|t| t["key"] == "ToBeDeletedByClusterAutoscaler")
        })
}

pub(crate) fn evictions(api: &KubeApi) -> usize {
    api.requests()
        .iter()
        .filter(|r| r.starts_with("POST") && r.contains("/eviction"))
        .count()
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
