//! Drifted and expired nodes replaced by `ferroscale run` against the loopback Kubernetes API: surge
//! first (the group grows by one), the old node drained and deleted only once the new one has registered
//! and is ready, one at a time under a budget of one, and nothing while the group's window is closed.

use ferroscale::model::lifecycle::DisruptionReason;
use ferroscale::time::unix_now as now;

use crate::support::fixtures::kube::{node, pod};
use crate::support::kube_api::{KubeApi, NODES, PODS};
use crate::support::run_harness::{run_settings, Harness};

const DRIFTED: &str = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 5, capacity: {cpu: 4, memory: 16Gi, pods: 20},
     revision: "lt-0a1:2", drift: Replace, disruptionBudget: "1",
     instances: [{id: i-a, revision: "lt-0a1:1"}, {id: i-b, revision: "lt-0a1:1"}, {id: i-c, revision: "lt-0a1:2"}]}
"#;

#[tokio::test]
async fn drifted_nodes_are_replaced_surge_first_one_at_a_time() {
    let api = KubeApi::start().await;
    for k in ["a", "b", "c"] {
        api.put(
            NODES,
            node(
                &format!("pool-{k}"),
                &format!("memory:///pool/i-{k}"),
                "4",
                "16Gi",
            ),
        );
    }
    let mut h = Harness::new(
        api,
        DRIFTED,
        ferroscale::cli::flags::default_engine(),
        run_settings(),
    )
    .await;
    h.synced(3, 0).await;
    let t0 = now();

    // Surge: one more node for pool-a, nothing removed yet.
    let d = h.runner.run_once(t0).await.unwrap();
    assert_eq!(d.replacements.len(), 1, "{d:?}");
    assert_eq!(d.replacements[0].for_nodes, vec!["pool-a"]);
    assert!(d.scale_down.is_empty());
    assert_eq!(h.group("pool").target_size, 4);

    // The new instance has no node yet: pool-a stays, and pool-b waits for the budget.
    let d = h.runner.run_once(t0 + 10).await.unwrap();
    assert!(
        d.scale_down.is_empty() && d.replacements.is_empty(),
        "{d:?}"
    );

    // It registers: pool-a goes (drained, deleted, the group back to 3).
    let new = h
        .group("pool")
        .instances
        .iter()
        .map(|i| i.id.clone())
        .find(|id| {
            !["a", "b", "c"]
                .iter()
                .any(|k| id.ends_with(&format!("/i-{k}")))
        })
        .unwrap();
    let mut joined = node("pool-d", &new, "4", "16Gi");
    // Registered after the surge was asked for.
    joined["metadata"]["creationTimestamp"] =
        serde_json::json!(k8s_openapi::jiff::Timestamp::from_second(t0 + 15)
            .unwrap()
            .to_string());
    h.api.put(NODES, joined);
    h.synced(4, 0).await;
    let d = h.runner.run_once(t0 + 20).await.unwrap();
    assert_eq!(d.disruptions.len(), 1, "{d:?}");
    assert_eq!(d.disruptions[0].node, "pool-a");
    assert_eq!(d.disruptions[0].reason, DisruptionReason::Drift);
    assert_eq!(d.scale_down.len(), 1);
    h.api.wait_for("pool-a's instance deleted", |_| true).await;
    for _ in 0..100 {
        if h.group("pool").target_size == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let group = h.group("pool");
    assert_eq!(group.target_size, 3, "{group:?}");
    assert!(!group.instances.iter().any(|i| i.id.ends_with("/i-a")));
    assert!(!h.api.events("Drifted").is_empty());

    // The node object goes with its instance (the kubelet's job in a cluster); then pool-b's turn.
    h.api.delete(NODES, "", "pool-a");
    h.synced(3, 0).await;
    let d = h.runner.run_once(t0 + 30).await.unwrap();
    assert_eq!(d.replacements.len(), 1, "{d:?}");
    assert_eq!(d.replacements[0].for_nodes, vec!["pool-b"]);
    let m = h.metrics.encode();
    assert!(
        m.contains("ferroscale_nodes_disrupted_total{reason=\"drift\",node_group=\"pool\"} 1"),
        "{m}"
    );
}

const EXPIRING: &str = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 5, capacity: {cpu: 4, memory: 16Gi, pods: 20},
     options: {maxNodeLifetime: 24h},
     disruptionWindow: {schedule: "0 2 * * *", duration: 1h},
     instances: [{id: i-a}, {id: i-b}]}
"#;

#[tokio::test]
async fn expired_nodes_are_replaced_only_inside_the_groups_window() {
    let api = KubeApi::start().await;
    for k in ["a", "b"] {
        api.put(
            NODES,
            node(
                &format!("pool-{k}"),
                &format!("memory:///pool/i-{k}"),
                "4",
                "16Gi",
            ),
        );
        // Busy: neither node is a scale-down candidate.
        api.put(
            PODS,
            pod(&format!("web-{k}"), "3", Some(&format!("pool-{k}")), "web"),
        );
    }
    let mut h = Harness::new(
        api,
        EXPIRING,
        ferroscale::cli::flags::default_engine(),
        run_settings(),
    )
    .await;
    h.synced(2, 2).await;
    // Two days on, both nodes are past their 24h; at 12:00 UTC the window (02:00-03:00) is closed.
    let day = (now() / 86_400 + 2) * 86_400;
    let d = h.runner.run_once(day + 12 * 3600).await.unwrap();
    assert!(
        d.replacements.is_empty() && d.scale_down.is_empty(),
        "{d:?}"
    );
    assert_eq!(h.group("pool").target_size, 2);
    // At 02:30 the next day it is open: one surge (the default budget, 10% of 2, is one node).
    let d = h
        .runner
        .run_once(day + 86_400 + 2 * 3600 + 1800)
        .await
        .unwrap();
    assert_eq!(d.replacements.len(), 1, "{d:?}");
    assert_eq!(d.replacements[0].delta, 1);
    assert_eq!(h.group("pool").target_size, 3);
}
