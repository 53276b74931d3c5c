//! `ferroscale run`'s `Runner` against the loopback Kubernetes API (`kube_api`) on a memory cloud (or any
//! cloud), its watches synced before the first loop; the settings tests run it with, and what they read
//! back (the status ConfigMap, deletion taints, evictions).

use std::sync::Arc;
use std::time::Duration;

use ferroscale::cloud::memory::{MemoryCloud, MemoryConfig};
use ferroscale::cloud::Cloud;
use ferroscale::engine::Settings;
use ferroscale::k8s::status::Status;
use ferroscale::k8s::watch::Watches;
use ferroscale::metrics::Metrics;
use ferroscale::run::{Health, RunSettings, Runner};
use serde_json::json;

use super::fixtures::kube::{node, pod};
use super::kube_api::{KubeApi, CONFIGMAPS, NODES, PDBS, PODS};

/// A one-second loop writing the status ConfigMap, no Lease, drains capped at seconds.
pub fn run_settings() -> RunSettings {
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
        deschedule: None,
    }
}

/// Scale-down with no waiting, for tests.
pub fn eager() -> Settings {
    let mut s = Settings {
        scale_down_delay_after_add: Duration::ZERO,
        ..ferroscale::cli::flags::default_engine()
    };
    s.defaults.scale_down_unneeded_time = Duration::ZERO;
    s
}

/// A `Runner` and what it works on, for a test to drive loop by loop.
pub struct Harness {
    pub api: KubeApi,
    pub cloud: Arc<dyn Cloud>,
    pub watches: Watches,
    pub metrics: Arc<Metrics>,
    pub runner: Runner,
}

impl Harness {
    /// A runner on `groups` against `api`, its watches synced with what `api` holds now.
    pub async fn new(api: KubeApi, groups: &str, settings: Settings, run: RunSettings) -> Harness {
        let cloud = Arc::new(MemoryCloud::new(&MemoryConfig::parse(groups).unwrap()).unwrap());
        Harness::with_cloud(api, cloud, settings, run).await
    }

    /// A runner on any cloud against `api`.
    pub async fn with_cloud(
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
        let metrics = match run.deschedule {
            Some(_) => Metrics::for_run().with_descheduler(),
            None => Metrics::for_run(),
        };
        let metrics = Arc::new(metrics);
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

    pub fn group(&self, id: &str) -> Arc<ferroscale::model::NodeGroup> {
        self.cloud.snapshot().group(id).unwrap().clone()
    }

    pub fn status(&self) -> Status {
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
    pub async fn synced(&self, n: usize, p: usize) {
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

/// Group `name`'s entry in the status ConfigMap.
pub fn group_status<'a>(s: &'a Status, name: &str) -> &'a ferroscale::k8s::status::NodeGroupStatus {
    s.node_groups.iter().find(|g| g.name == name).unwrap()
}

/// Pool of two nodes: `pool-a` half used (kept), `pool-b` with two small web pods under a budget that
/// allows one disruption.
pub async fn pool(api: &KubeApi, allowed: i64) {
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

/// Whether `node` carries cluster-autoscaler's deletion taint.
pub fn has_deletion_taint(api: &KubeApi, node: &str) -> bool {
    api.get(NODES, "", node).unwrap()["spec"]["taints"]
        .as_array()
        .is_some_and(|ts| {
            ts.iter()
                .any(|t| t["key"] == "ToBeDeletedByClusterAutoscaler")
        })
}

/// Evictions asked of the API so far.
pub fn evictions(api: &KubeApi) -> usize {
    api.requests()
        .iter()
        .filter(|r| r.starts_with("POST") && r.contains("/eviction"))
        .count()
}
