//! Consolidation through `ferroscale run` against the loopback Kubernetes API and the memory cloud: three
//! half-empty m5.4xlarge-like nodes are replaced by one node of a cheaper group, surge first — the new
//! node is asked for, and only once it has joined are the old nodes tainted, drained (evictions through
//! the API) and deleted — with the plan on the nodes' events, in the status ConfigMap and in the metrics.

use std::time::Duration;

use ferroscale::engine::ConsolidationAction;
use ferroscale::model::lifecycle::DisruptionReason;
use ferroscale::time::unix_now as now;

use crate::support::fixtures::kube::{node, pod};
use crate::support::kube_api::{KubeApi, NODES, PODS};
use crate::support::run_harness::{evictions, has_deletion_taint, run_settings, Harness};

/// Group `m5` (16 cores, $0.768/h) with three instances, opted in; group `big` (32 cores, $1.224/h)
/// with none.
pub(crate) const GROUPS: &str = r#"
nodeGroups:
  - {name: m5, minSize: 0, maxSize: 6, capacity: {cpu: 16, memory: 64Gi, pods: 110}, pricePerHour: 0.768,
     disruptionBudget: "100%", consolidation: {policy: WhenEmptyOrUnderutilized, after: 0s},
     instances: [{id: i-0}, {id: i-1}, {id: i-2}]}
  - {name: big, minSize: 0, maxSize: 6, capacity: {cpu: 32, memory: 128Gi, pods: 110}, pricePerHour: 1.224}
"#;

pub(crate) const OLD: [&str; 3] = ["m5-0", "m5-1", "m5-2"];

/// The old nodes, each with a 9-core pod of `web`: it fits on no other m5 node, and is above
/// scale-down's threshold.
pub(crate) fn put_old_nodes(api: &KubeApi) {
    for (k, name) in OLD.iter().enumerate() {
        api.put(
            NODES,
            node(name, &format!("memory:///m5/i-{k}"), "16", "64Gi"),
        );
        api.put(PODS, pod(&format!("web-{k}"), "9", Some(name), "web"));
    }
}

/// Waits until `pred` holds, up to a minute (the removals and the event writer run in the background).
async fn eventually(what: &str, pred: impl Fn() -> bool) {
    for _ in 0..1200 {
        if pred() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn three_half_empty_nodes_are_replaced_by_one_cheaper_node_new_capacity_first() {
    let api = KubeApi::start().await;
    put_old_nodes(&api);
    // Three drains at once (the default `--max-drain-parallelism` of 1 holds consolidation too, and
    // retires the old nodes one at a time: simulate_conductor shows that).
    let mut settings = ferroscale::cli::flags::default_engine();
    settings.max_drain_parallelism = 3;
    let mut h = Harness::new(api, GROUPS, settings, run_settings()).await;
    h.synced(3, 3).await;
    let t0 = now();

    // The plan: one big node for the three; the new node is asked for, nothing is touched yet.
    let d = h.runner.run_once(t0).await.unwrap();
    assert_eq!(d.consolidations.len(), 1, "{d:#?}");
    let plan = &d.consolidations[0];
    assert_eq!(plan.action, ConsolidationAction::Replace);
    assert_eq!(plan.nodes, OLD);
    assert_eq!(plan.into.len(), 1);
    assert_eq!(
        (plan.into[0].group.as_str(), plan.into[0].count),
        ("big", 1)
    );
    assert!((plan.savings_per_hour - (3.0 * 0.768 - 1.224)).abs() < 1e-9);
    assert!(d.scale_down.is_empty(), "surge first: {d:#?}");
    assert_eq!(h.group("big").target_size, 1);
    assert!(OLD.iter().all(|n| !has_deletion_taint(&h.api, n)));
    assert_eq!(evictions(&h.api), 0);

    let status = h.status();
    let c = status
        .consolidation
        .as_ref()
        .expect("consolidation in the status");
    let last = c.last_plan.as_ref().unwrap();
    assert_eq!(last.action, "replace");
    assert_eq!(last.nodes, OLD);
    assert_eq!(
        (last.into[0].group.as_str(), last.into[0].count),
        ("big", 1)
    );
    assert_eq!(last.pods_evicted, 3);
    assert!(!last.time.is_empty());

    let api = &h.api;
    eventually("a ConsolidationPlanned event on each old node", || {
        let planned = api.events("ConsolidationPlanned");
        OLD.iter().all(|n| {
            planned.iter().any(|(on, note)| {
                on == n && note.contains("group big") && note.contains("$1.0800/h")
            })
        })
    })
    .await;

    // The new instance has no node yet: the old nodes stay, and no other plan starts.
    let d = h.runner.run_once(t0 + 10).await.unwrap();
    assert!(
        d.scale_down.is_empty() && d.consolidations.is_empty(),
        "{d:#?}"
    );
    assert!(OLD.iter().all(|n| !has_deletion_taint(&h.api, n)));
    assert_eq!(
        h.status().consolidation.unwrap().waiting,
        "a consolidation is under way"
    );

    // It registers, ready: the old nodes are tainted, drained through the Eviction API and deleted.
    let new = h.group("big").instances[0].id.clone();
    let mut joined = node("big-0", &new, "32", "128Gi");
    joined["metadata"]["creationTimestamp"] =
        serde_json::json!(k8s_openapi::jiff::Timestamp::from_second(t0 + 15)
            .unwrap()
            .to_string());
    h.api.put(NODES, joined);
    h.synced(4, 3).await;
    let d = h.runner.run_once(t0 + 20).await.unwrap();
    let mut retired: Vec<(&str, &DisruptionReason)> = d
        .disruptions
        .iter()
        .map(|x| (x.node.as_str(), &x.reason))
        .collect();
    retired.sort();
    assert_eq!(
        retired,
        OLD.iter()
            .map(|n| (*n, &DisruptionReason::Consolidation))
            .collect::<Vec<_>>(),
        "{d:#?}"
    );
    assert_eq!(d.scale_down.len(), 3, "{d:#?}");

    let (cloud, api) = (&h.cloud, &h.api);
    eventually("the old instances deleted", || {
        let m5 = cloud.snapshot().group("m5").unwrap().clone();
        m5.target_size == 0 && m5.instances.is_empty()
    })
    .await;
    assert!(
        OLD.iter().all(|n| has_deletion_taint(api, n)),
        "tainted before they went"
    );
    assert_eq!(evictions(api), 3, "{:#?}", api.requests());
    assert!(api.list(PODS).is_empty(), "the evicted pods are gone");
    assert_eq!(h.group("big").target_size, 1);
    eventually("a Consolidated event on each old node", || {
        let done = api.events("Consolidated");
        OLD.iter().all(|n| done.iter().any(|(on, _)| on == n))
    })
    .await;

    // Counted as each removal finishes, just after its instance is deleted.
    let metrics = &h.metrics;
    let disrupted =
        "ferroscale_nodes_disrupted_total{reason=\"consolidation\",node_group=\"m5\"} 3";
    eventually("three consolidation disruptions counted", || {
        metrics.encode().contains(disrupted)
    })
    .await;
    let m = metrics.encode();
    for line in [
        "ferroscale_consolidation_actions_total{action=\"replace\",reason=\"underutilized\"} 1",
        "ferroscale_consolidation_actions_total{action=\"delete\",reason=\"empty\"} 0",
        "ferroscale_consolidation_actions_total{action=\"give_up\",reason=\"not_ready_in_time\"} 0",
        "ferroscale_consolidation_declined_nodes{reason=\"saving_too_small\"} 0",
    ] {
        assert!(m.contains(line), "{line} missing from\n{m}");
    }
    let saving: f64 = m
        .lines()
        .find_map(|l| l.strip_prefix("ferroscale_consolidation_savings_dollars_per_hour "))
        .expect("the savings gauge")
        .parse()
        .unwrap();
    assert!((saving - 1.08).abs() < 1e-9, "{saving}");
}
