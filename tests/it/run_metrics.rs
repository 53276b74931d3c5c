//! `ferroscale run`'s cluster totals under upstream's names and labels: the cores and memory of the
//! nodes (a node being removed left out), the `--cores-total` / `--memory-total` limits, and the labels of
//! the counts.

use crate::support::fixtures::kube::{node, pod, POOL};
use crate::support::kube_api::{KubeApi, NODES, PODS};
use crate::support::run_harness::{eager, run_settings, Harness};
use ferroscale::time::unix_now as now;

/// The value of one exported sample, by its name and labels as written.
fn sample(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in\n{metrics}"))
}

#[tokio::test]
async fn the_clusters_cores_memory_and_their_limits_are_exported_as_upstream_names_them() {
    let api = KubeApi::start().await;
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    // 2.5 cores count as 3, as a quantity's whole value does.
    api.put(NODES, node("pool-b", "memory:///pool/i-b", "2500m", "8Gi"));
    // Both nodes busy: nothing is removed, so both count.
    api.put(PODS, pod("a", "3", Some("pool-a"), "web"));
    api.put(PODS, pod("b", "2", Some("pool-b"), "web"));
    let mut settings = eager();
    settings.cores_total = (2, 100);
    settings.memory_total_gib = (1, 400);
    let mut h = Harness::new(api, POOL, settings, run_settings()).await;
    h.synced(2, 2).await;
    let d = h.runner.run_once(now()).await.unwrap();
    assert!(d.scale_down.is_empty(), "{d:?}");
    let m = h.metrics.encode();
    let p = "cluster_autoscaler_";
    assert_eq!(sample(&m, &format!("{p}cluster_cpu_current_cores")), 7.0);
    assert_eq!(
        sample(&m, &format!("{p}cluster_memory_current_bytes")),
        24.0 * (1u64 << 30) as f64
    );
    assert_eq!(
        sample(&m, &format!("{p}cpu_limits_cores{{direction=\"minimum\"}}")),
        2.0
    );
    assert_eq!(
        sample(&m, &format!("{p}cpu_limits_cores{{direction=\"maximum\"}}")),
        100.0
    );
    assert_eq!(
        sample(
            &m,
            &format!("{p}memory_limits_bytes{{direction=\"maximum\"}}")
        ),
        400.0 * (1u64 << 30) as f64
    );
    assert_eq!(
        sample(
            &m,
            &format!("{p}memory_limits_bytes{{direction=\"minimum\"}}")
        ),
        (1u64 << 30) as f64
    );
    // Upstream's label names on the counts.
    assert_eq!(
        sample(
            &m,
            &format!("{p}node_groups_count{{node_group_type=\"autoscaled\"}}")
        ),
        1.0
    );
    assert_eq!(
        sample(
            &m,
            &format!("{p}unschedulable_pods_count{{type=\"unschedulable\"}}")
        ),
        0.0
    );
}

/// A group that runs out of capacity at once, one too big for `--cores-total`, one whose instances never
/// become nodes (kept: it is at min size), and the usual pool.
const MIXED: &str = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 5, targetSize: 2, instances: [{id: i-a}, {id: i-b}],
     capacity: {cpu: 4, memory: 16Gi, pods: 20}}
  - {name: dry, minSize: 0, maxSize: 3, targetSize: 0, launchCapacity: 0,
     capacity: {cpu: 4, memory: 16Gi, pods: 20}, labels: {tier: dry}}
  - {name: huge, minSize: 0, maxSize: 2, targetSize: 0,
     capacity: {cpu: 64, memory: 256Gi, pods: 50}, labels: {tier: huge}}
  - {name: stuck, minSize: 4, maxSize: 5, targetSize: 4,
     capacity: {cpu: 4, memory: 16Gi, pods: 20}, labels: {tier: stuck}}
"#;

fn pending_for(name: &str, tier: &str) -> serde_json::Value {
    let mut p = pod(name, "1", None, name);
    p["spec"]["nodeSelector"] = serde_json::json!({ "tier": tier });
    p
}

/// Two loops of [`MIXED`], 1,000 s apart: the first asks `dry` for a node it cannot launch and skips
/// `huge`; by the second the instances of `stuck` are past the provision time. Returns the scrape.
async fn mixed_run() -> (Harness, String) {
    let api = KubeApi::start().await;
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    api.put(NODES, node("pool-b", "memory:///pool/i-b", "4", "16Gi"));
    api.put(PODS, pod("busy", "3", Some("pool-a"), "web"));
    api.put(PODS, pending_for("wants-dry", "dry"));
    api.put(PODS, pending_for("wants-huge", "huge"));
    let mut settings = eager();
    settings.cores_total = (0, 40);
    settings.scale_down_delay_after_add = std::time::Duration::from_secs(3600);
    let mut h = Harness::new(api, MIXED, settings, run_settings()).await;
    h.synced(2, 3).await;
    let t0 = now();
    let d = h.runner.run_once(t0).await.unwrap();
    assert_eq!(d.scale_up.len(), 1, "{d:?}");
    assert_eq!(d.scale_up[0].group, "dry");
    let d = h.runner.run_once(t0 + 1000).await.unwrap();
    assert_eq!(d.cancel.len(), 1, "dry's capacity is given up: {d:?}");
    assert!(d.scale_up.is_empty(), "dry is backed off: {d:?}");
    // As `/metrics` does before it encodes.
    h.metrics.set_groups(&h.cloud.snapshot());
    let m = h.metrics.encode();
    (h, m)
}

#[tokio::test]
async fn group_health_backoff_failures_skips_and_kept_nodes_are_exported_as_upstream_says() {
    let (h, m) = mixed_run().await;
    let p = "cluster_autoscaler_";
    let ice = "InsufficientInstanceCapacity";
    // The failed launch: one scale-up, one node, under the cloud's code; the group backed off with it.
    assert_eq!(
        sample(
            &m,
            &format!("{p}failed_scale_ups_total{{reason=\"{ice}\"}}")
        ),
        1.0
    );
    assert_eq!(
        sample(
            &m,
            &format!("{p}failed_node_creations_total{{reason=\"{ice}\"}}")
        ),
        1.0
    );
    assert_eq!(
        sample(
            &m,
            &format!("{p}node_group_backoff_status{{node_group=\"dry\",reason=\"{ice}\"}}")
        ),
        1.0
    );
    assert_eq!(
        sample(
            &m,
            &format!("{p}node_group_backoff_status{{node_group=\"pool\",reason=\"\"}}")
        ),
        0.0
    );
    let status = h.status();
    let dry = crate::support::run_harness::group_status(&status, "dry");
    assert_eq!(
        dry.conditions
            .scale_up
            .backoff_info
            .as_ref()
            .unwrap()
            .error_code,
        ice
    );
    // Four instances expected, none a node after the provision time: more than
    // --ok-total-unready-count, so `stuck` is unhealthy; the others are healthy.
    assert_eq!(
        sample(
            &m,
            &format!("{p}node_group_healthiness{{node_group=\"stuck\"}}")
        ),
        0.0
    );
    assert_eq!(
        crate::support::run_harness::group_status(&status, "stuck")
            .conditions
            .health
            .status,
        "Unhealthy"
    );
    assert_eq!(
        sample(
            &m,
            &format!("{p}node_group_healthiness{{node_group=\"pool\"}}")
        ),
        1.0
    );
    // `huge` would take 64 cores of the 40 allowed: skipped in both loops.
    assert_eq!(
        sample(
            &m,
            &format!(
                "{p}skipped_scale_events_count{{direction=\"up\",reason=\"CpuResourceLimit\"}}"
            )
        ),
        2.0
    );
    // Scale-down waits an hour after the scale-up: pool-b (empty) is kept for that, pool-a for its load.
    assert_eq!(sample(&m, &format!("{p}scale_down_in_cooldown")), 1.0);
    assert_eq!(
        sample(
            &m,
            &format!("{p}unremovable_nodes_count{{reason=\"NotUnneededOtherReason\"}}")
        ),
        1.0
    );
    assert_eq!(
        sample(
            &m,
            &format!("{p}unremovable_nodes_count{{reason=\"NotUnderutilized\"}}")
        ),
        1.0
    );
    assert_eq!(
        sample(
            &m,
            &format!("{p}unremovable_nodes_count{{reason=\"BlockedByPod\"}}")
        ),
        0.0
    );
    // 5 + 3 + 2 + 5 nodes at most; two pods no node takes; none left unprocessed by the scheduler.
    assert_eq!(sample(&m, &format!("{p}max_nodes_count")), 15.0);
    assert_eq!(
        sample(
            &m,
            &format!("{p}unschedulable_pods_count{{type=\"unschedulable\"}}")
        ),
        2.0
    );
    assert_eq!(
        sample(
            &m,
            &format!("{p}unschedulable_pods_count{{type=\"scheduler_unprocessed\"}}")
        ),
        0.0
    );
}

/// Upstream's metrics (cluster-autoscaler/metrics/metrics.go and docs/proposals/metrics.md) with
/// their label names, as a sample of each must look. Left out, with why: `function_duration_quantile_seconds`
/// (a Summary, which the OpenMetrics client has not), the GPU variants (`scaled_up_gpu_nodes_total`,
/// `failed_gpu_scale_ups_total`, `scaled_down_gpu_nodes_total`, `failed_gpu_scale_down_total`),
/// `failed_scale_down_total`, `overflowing_controllers_count`, `node_taints_count`, the autoprovisioning
/// and GCE ones (`nap_enabled`, `created_node_groups_total`, `deleted_node_groups_total`,
/// `inconsistent_instances_migs_count`) and the 1.33+ additions (`binpacking_heterogeneity`,
/// `max_node_skip_eval_duration_seconds`, `node_removal_latency_seconds`,
/// `dra_node_template_resources_mismatch`).
const UPSTREAM: &[(&str, &[&str])] = &[
    ("cluster_safe_to_autoscale", &[]),
    ("nodes_count", &["state"]),
    ("node_groups_count", &["node_group_type"]),
    ("unschedulable_pods_count", &["type"]),
    ("max_nodes_count", &[]),
    ("cluster_cpu_current_cores", &[]),
    ("cpu_limits_cores", &["direction"]),
    ("cluster_memory_current_bytes", &[]),
    ("memory_limits_bytes", &["direction"]),
    ("node_group_min_count", &["node_group"]),
    ("node_group_max_count", &["node_group"]),
    ("node_group_target_count", &["node_group"]),
    ("node_group_healthiness", &["node_group"]),
    ("node_group_backoff_status", &["node_group", "reason"]),
    ("last_activity", &["activity"]),
    ("function_duration_seconds_count", &["function"]),
    ("pending_node_deletions", &[]),
    ("errors_total", &["type"]),
    ("scaled_up_nodes_total", &[]),
    ("failed_scale_ups_total", &["reason"]),
    ("failed_node_creations_total", &["reason"]),
    ("scaled_down_nodes_total", &["reason"]),
    ("evicted_pods_total", &["eviction_result"]),
    ("unneeded_nodes_count", &[]),
    ("unremovable_nodes_count", &["reason"]),
    ("scale_down_in_cooldown", &[]),
    ("old_unregistered_nodes_removed_count", &[]),
    ("skipped_scale_events_count", &["direction", "reason"]),
];

/// Each sample's name with its label names (sorted), as exported.
fn series(metrics: &str) -> std::collections::BTreeSet<(String, Vec<String>)> {
    let label = regex::Regex::new(r#"([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*""#).unwrap();
    metrics
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let end = l.find(['{', ' ']).unwrap_or(l.len());
            let labels = match l[end..].strip_prefix('{') {
                Some(rest) => {
                    let inner = &rest[..rest.rfind('}').unwrap()];
                    let mut names: Vec<String> = label
                        .captures_iter(inner)
                        .map(|c| c[1].to_string())
                        .collect();
                    names.sort();
                    names
                }
                None => Vec::new(),
            };
            (l[..end].to_string(), labels)
        })
        .collect()
}

#[tokio::test]
async fn every_upstream_metric_is_exported_under_its_name_with_its_labels() {
    let (_h, m) = mixed_run().await;
    let exported = series(&m);
    let mut missing = Vec::new();
    for (name, labels) in UPSTREAM {
        let name = format!("cluster_autoscaler_{name}");
        let mut labels: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
        labels.sort();
        if !exported.contains(&(name.clone(), labels.clone())) {
            missing.push(format!("{name}{labels:?}"));
        }
    }
    assert!(
        missing.is_empty(),
        "not exported as upstream does: {missing:?}\nexported: {exported:#?}"
    );
    // The counters upstream names without `_total` keep their names.
    assert!(m.contains("# TYPE cluster_autoscaler_old_unregistered_nodes_removed_count unknown"));
    // Cost, ferroscale's own.
    assert!(exported
        .iter()
        .any(|(n, _)| n == "ferroscale_cluster_cost_per_hour"));
}
