//! `ferroscale deschedule` with `LowNodeUtilization`'s `metricsUtilization` against an API server
//! that serves metrics-server's `metrics.k8s.io`: one cycle classes the nodes by their NodeMetrics
//! and evicts from the node that uses the most, not the one whose pods request the most, with only
//! the API calls `k8s::DESCHEDULE_PERMISSIONS` (the chart's RBAC) lists.

use serde_json::json;

use crate::support::fixtures::kube::{node, pod};
use crate::support::kube_api::{
    assert_permitted_by, KubeApi, NODES, NODE_METRICS, PODS, POD_METRICS,
};
use crate::support::process::deschedule_once;

const POLICY: &str = r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
metricsProviders: [{source: KubernetesMetrics}]
profiles:
- name: by-usage
  pluginConfig:
  - name: LowNodeUtilization
    args:
      thresholds: {cpu: 30}
      targetThresholds: {cpu: 50}
      metricsUtilization: {source: KubernetesMetrics}
  plugins:
    balance: {enabled: [LowNodeUtilization]}
"#;

fn node_metrics(name: &str, cpu: &str) -> serde_json::Value {
    json!({"metadata": {"name": name}, "timestamp": "2026-11-23T00:00:00Z", "window": "20s",
        "usage": {"cpu": cpu, "memory": "2Gi"}})
}

fn pod_metrics(name: &str, cpu: &str) -> serde_json::Value {
    json!({"metadata": {"name": name, "namespace": "default"},
        "containers": [{"name": "c", "usage": {"cpu": cpu, "memory": "100Mi"}}]})
}

/// Runs one cycle (no interval) and waits for the process to end.
async fn one_cycle(api: &KubeApi, dir: &std::path::Path) {
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let kubeconfig = api.kubeconfig(dir);
    let status = deschedule_once(&policy, &kubeconfig).await;
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn deschedule_moves_pods_off_the_node_that_uses_the_most() {
    let api = KubeApi::start().await;
    let dir = tempfile::tempdir().unwrap();
    // Requests: a 20%, b 60%, c 40% of 2 cpus. Usage: a 80%, b 20%, c 40%.
    for (n, used) in [("pool-a", "1600m"), ("pool-b", "400m"), ("pool-c", "800m")] {
        api.put(NODES, node(n, &format!("memory:///pool/{n}"), "2", "8Gi"));
        api.put(NODE_METRICS, node_metrics(n, used));
    }
    for i in 1..=4 {
        let name = format!("hot-{i}");
        api.put(PODS, pod(&name, "100m", Some("pool-a"), "hot"));
        api.put(POD_METRICS, pod_metrics(&name, "400m"));
    }
    api.put(PODS, pod("big", "1200m", Some("pool-b"), "big"));
    api.put(POD_METRICS, pod_metrics("big", "200m"));
    api.put(PODS, pod("mid", "800m", Some("pool-c"), "mid"));
    api.put(POD_METRICS, pod_metrics("mid", "700m"));
    one_cycle(&api, dir.path()).await;
    let left: Vec<String> = (1..=4)
        .map(|i| format!("hot-{i}"))
        .filter(|n| api.get(PODS, "default", n).is_some())
        .collect();
    assert_eq!(
        left.len(),
        2,
        "two of pool-a's pods bring it to its target: {left:?}"
    );
    assert!(
        api.get(PODS, "default", "big").is_some(),
        "requests do not class the nodes"
    );
    let reads: Vec<String> = api
        .requests()
        .into_iter()
        .filter(|r| r.contains("metrics.k8s.io"))
        .collect();
    assert!(reads.iter().any(|r| r.contains("/nodes")), "{reads:?}");
    assert!(reads.iter().any(|r| r.contains("/pods")), "{reads:?}");
    assert_permitted_by(
        &api,
        ferroscale::k8s::DESCHEDULE_PERMISSIONS,
        "k8s::DESCHEDULE_PERMISSIONS",
    );
}

#[tokio::test]
async fn deschedule_without_a_nodes_metrics_evicts_nothing_by_usage() {
    let api = KubeApi::start().await;
    let dir = tempfile::tempdir().unwrap();
    for (n, used) in [
        ("pool-a", Some("1600m")),
        ("pool-b", None),
        ("pool-c", Some("800m")),
    ] {
        api.put(NODES, node(n, &format!("memory:///pool/{n}"), "2", "8Gi"));
        if let Some(u) = used {
            api.put(NODE_METRICS, node_metrics(n, u));
        }
    }
    for i in 1..=4 {
        let name = format!("hot-{i}");
        api.put(PODS, pod(&name, "100m", Some("pool-a"), "hot"));
        api.put(POD_METRICS, pod_metrics(&name, "400m"));
    }
    api.put(PODS, pod("big", "1200m", Some("pool-b"), "big"));
    one_cycle(&api, dir.path()).await;
    assert_eq!(
        api.list(PODS).len(),
        5,
        "nothing evicted: pool-b has no metrics"
    );
}
