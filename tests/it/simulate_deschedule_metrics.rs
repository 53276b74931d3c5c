//! `simulate --deschedule-policy` with `LowNodeUtilization`'s `metricsUtilization`: the dump's
//! `NodeMetrics` and `PodMetrics` class the nodes and say what each eviction frees, so pods move by
//! what they use, not what they request; without a node's metrics the strategy does not run and the
//! loop's report says why (as the descheduler's plugin fails its cycle).

use std::time::Duration;

use ferroscale::deschedule::{Policy, Settings};
use serde_json::Value;

use crate::simulate_deschedule::declined;
use crate::support::fixtures::dump::{node, pod};
use crate::support::simulate_harness::{pacing, sim};

const POLICY: &str = r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: by-usage
  pluginConfig:
  - name: LowNodeUtilization
    args:
      thresholds: {cpu: 30}
      targetThresholds: {cpu: 50}
      metricsUtilization: {metricsServer: true}
  plugins:
    balance: {enabled: [LowNodeUtilization]}
"#;

/// One group of 2-cpu nodes none of which scale-down marks as a candidate (a candidate carries a
/// taint the descheduler's pods do not tolerate, so it is no destination).
const GROUPS: &str = r#"
nodeGroups:
  - {name: small, minSize: 0, maxSize: 10, capacity: {cpu: 2, memory: 8Gi, pods: 20}, pricePerHour: 0.096,
     options: {scaleDownUtilizationThreshold: 0.1}}
"#;

fn node_metrics(name: &str, cpu: &str) -> String {
    format!(
        "apiVersion: metrics.k8s.io/v1beta1\nkind: NodeMetrics\nmetadata: {{name: {name}}}\n\
         timestamp: \"2024-01-02T00:00:00Z\"\nwindow: 20s\nusage: {{cpu: {cpu}, memory: 2Gi}}\n"
    )
}

fn pod_metrics(name: &str, cpu: &str) -> String {
    format!(
        "apiVersion: metrics.k8s.io/v1beta1\nkind: PodMetrics\nmetadata: {{name: {name}, namespace: d}}\n\
         containers: [{{name: c, usage: {{cpu: {cpu}, memory: 100Mi}}}}]\n"
    )
}

/// Three 2-cpu nodes. Requests: `a` 20% (four 100m pods), `b` 60% (two 600m pods), `c` 40%.
/// Usage: `a` 80% (its pods burn 400m each), `b` 20%, `c` 40%.
fn cluster(with_b_metrics: bool) -> Vec<String> {
    let mut c = vec![
        node("a", "small", "2", "8Gi"),
        node("b", "small", "2", "8Gi"),
        node("c", "small", "2", "8Gi"),
        node_metrics("a", "1600m"),
        node_metrics("c", "800m"),
        pod("d", "big-1", "600m", "1Gi", Some("b"), ""),
        pod("d", "big-2", "600m", "1Gi", Some("b"), ""),
        pod("d", "mid", "800m", "1Gi", Some("c"), ""),
        pod_metrics("big-1", "100m"),
        pod_metrics("big-2", "100m"),
        pod_metrics("mid", "700m"),
    ];
    if with_b_metrics {
        c.push(node_metrics("b", "400m"));
    }
    for i in 1..=4 {
        c.push(pod(
            "d",
            &format!("hot-{i}"),
            "100m",
            "256Mi",
            Some("a"),
            "",
        ));
        c.push(pod_metrics(&format!("hot-{i}"), "400m"));
    }
    c
}

fn first_loop(cluster: &[String], policy: &str) -> Value {
    let mut s = sim(cluster, GROUPS);
    let (policy, _) = Policy::parse(policy).unwrap();
    s.set_descheduler(policy, Duration::from_secs(300), Settings::default());
    let r = s.step(&ferroscale::cli::flags::default_engine(), &pacing());
    serde_json::to_value(&r).unwrap()
}

fn evicted(json: &Value) -> Vec<(String, String)> {
    json["evictions"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
                    (s("pod"), s("node"))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn pods_move_by_usage_not_requests() {
    let json = first_loop(&cluster(true), POLICY);
    let moved = evicted(&json);
    // `a` is at 80% used: two of its pods (400m each) bring it to its 50% target; `b`, full by
    // requests, is the underused node they go to.
    assert_eq!(moved.len(), 2, "{json:#}");
    assert!(
        moved
            .iter()
            .all(|(p, n)| p.starts_with("d/hot-") && n == "a"),
        "{moved:?}"
    );
    assert!(
        json["evictions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["to"] == "b"),
        "{json:#}"
    );
    assert!(json.get("deschedulingSkipped").is_none(), "{json:#}");
    // By requests the same cluster moves one of `b`'s pods instead, to `a`.
    let by_requests = POLICY.replace("      metricsUtilization: {metricsServer: true}\n", "");
    let json = first_loop(&cluster(true), &by_requests);
    assert_eq!(
        evicted(&json),
        [("d/big-1".to_string(), "b".to_string())],
        "{json:#}"
    );
}

#[test]
fn a_node_without_metrics_stops_the_strategy_and_says_so() {
    let json = first_loop(&cluster(false), POLICY);
    assert!(evicted(&json).is_empty(), "{json:#}");
    assert!(declined(&json).is_empty(), "{json:#}");
    let skipped = &json["deschedulingSkipped"][0];
    assert_eq!(skipped["strategy"], "LowNodeUtilization", "{json:#}");
    assert!(
        skipped["reason"]
            .as_str()
            .is_some_and(|r| r.contains("node b is not in the collected metrics")),
        "{json:#}"
    );
}

#[test]
fn a_pod_without_metrics_is_not_moved_by_usage() {
    let mut c = cluster(true);
    c.retain(|d| !d.contains("name: hot-1, namespace: d"));
    let moved = evicted(&first_loop(&c, POLICY));
    assert_eq!(moved.len(), 2, "{moved:?}");
    assert!(moved.iter().all(|(p, _)| p != "d/hot-1"), "{moved:?}");
}
