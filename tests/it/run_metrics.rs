//! `ferroscale run`'s cluster totals under upstream's names and labels: the cores and memory of the
//! nodes (a node being removed left out), the `--cores-total` / `--memory-total` limits, and the labels of
//! the counts.

use crate::kube_api::{KubeApi, NODES, PODS};
use crate::run::{eager, node, pod, run_settings, Harness, POOL};
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
