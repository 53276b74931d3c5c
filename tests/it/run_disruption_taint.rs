//! The disruption taint through `ferroscale run` against the loopback Kubernetes API and the memory
//! cloud (issue #41): from the loop that starts a consolidation, while its new node comes up, the old
//! nodes carry `ferroscale.io/disrupted:NoSchedule` so that nothing new lands where it would be
//! evicted again; when the plan is dropped (its new node never came) the taint goes. At start, a
//! taint no plan under way accounts for is taken off, and one whose plan is resumed stays.

use ferroscale::engine::ConsolidationAction;
use ferroscale::time::unix_now as now;

use crate::run_consolidation::{put_old_nodes, GROUPS, OLD};
use crate::support::fixtures::kube::node;
use crate::support::kube_api::{KubeApi, NODES};
use crate::support::run_harness::{has_deletion_taint, run_settings, Harness};

/// The effect of `node`'s disruption taint, if it has one.
fn disrupted(api: &KubeApi, node: &str) -> Option<String> {
    let n = api.get(NODES, "", node).unwrap();
    n["spec"]["taints"].as_array().and_then(|ts| {
        ts.iter()
            .find(|t| t["key"] == "ferroscale.io/disrupted")
            .map(|t| t["effect"].as_str().unwrap_or_default().to_string())
    })
}

/// Node writes (PATCH, PUT) the API has received.
fn node_writes(api: &KubeApi) -> u64 {
    api.requests()
        .iter()
        .filter(|r| {
            (r.starts_with("PATCH ") || r.starts_with("PUT ")) && r.contains("/api/v1/nodes/")
        })
        .count() as u64
}

/// Waits until the runner's node watch has seen every node write the API received (each write is one
/// watch event): the next loop sees the nodes as they are.
async fn watched(h: &Harness, events_before: u64, writes_before: u64) {
    let writes = node_writes(&h.api) - writes_before;
    for _ in 0..400 {
        if h.watches.nodes.events() >= events_before + writes {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("the node watch did not see the {writes} writes");
}

#[tokio::test]
async fn the_old_nodes_are_tainted_while_the_surge_comes_up_and_untainted_when_it_is_dropped() {
    let api = KubeApi::start().await;
    put_old_nodes(&api);
    let settings = ferroscale::cli::flags::default_engine();
    let mut h = Harness::new(api, GROUPS, settings, run_settings()).await;
    h.synced(3, 3).await;
    let t0 = now();
    assert!(OLD.iter().all(|n| disrupted(&h.api, n).is_none()));

    // The plan starts: its new node is asked for, and the old nodes are tainted at once.
    let (events, writes) = (h.watches.nodes.events(), node_writes(&h.api));
    let d = h.runner.run_once(t0).await.unwrap();
    assert_eq!(d.consolidations.len(), 1, "{d:#?}");
    assert_eq!(d.consolidations[0].action, ConsolidationAction::Replace);
    assert_eq!(h.group("big").target_size, 1);
    for n in OLD {
        assert_eq!(disrupted(&h.api, n).as_deref(), Some("NoSchedule"), "{n}");
        assert!(!has_deletion_taint(&h.api, n), "not drained yet: {n}");
    }

    // Still on while the new node is on its way.
    watched(&h, events, writes).await;
    h.synced(3, 3).await;
    let d = h.runner.run_once(t0 + 60).await.unwrap();
    assert!(d.scale_down.is_empty(), "{d:#?}");
    assert!(OLD.iter().all(|n| disrupted(&h.api, n).is_some()));

    // The new node never joins: after the group's maxNodeProvisionTime (15 minutes) the plan is
    // dropped, the old nodes stay, and their taint goes.
    h.synced(3, 3).await;
    let d = h.runner.run_once(t0 + 15 * 60 + 1).await.unwrap();
    let dropped: Vec<&str> = d
        .consolidation_declined
        .iter()
        .filter(|(_, why)| why.label() == "not_ready_in_time")
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(dropped, OLD, "{d:#?}");
    for n in OLD {
        assert_eq!(disrupted(&h.api, n), None, "{n}");
        assert!(!has_deletion_taint(&h.api, n), "{n}");
    }
}

#[tokio::test]
async fn at_start_a_stale_disruption_taint_goes_and_a_resumed_plans_stays() {
    let api = KubeApi::start().await;
    let t0 = now();
    // m5-0 and m5-1: the old nodes of a consolidation under way before a restart (its new node
    // asked for: big's target is 1); m5-2: tainted by a plan whose intent was lost.
    let intent = serde_json::json!({
        "action": "consolidation", "plan": format!("consolidate/m5-0/{t0}"),
        "since": k8s_openapi::jiff::Timestamp::from_second(t0).unwrap().to_string(),
        "reason": "consolidation", "surge": {"group": "big", "count": 1},
        "nodes": ["m5-0", "m5-1"],
    })
    .to_string();
    for (k, name) in OLD.iter().enumerate() {
        let mut n = node(name, &format!("memory:///m5/i-{k}"), "16", "64Gi");
        n["spec"]["taints"] = serde_json::json!([
            {"key": "ferroscale.io/disrupted", "effect": "NoSchedule"}
        ]);
        if k < 2 {
            n["metadata"]["annotations"] = serde_json::json!({ "ferroscale.io/intent": intent });
        }
        api.put(NODES, n);
    }
    let groups = GROUPS.replace(
        "pricePerHour: 1.224}",
        "pricePerHour: 1.224, targetSize: 1}",
    );
    let mut h = Harness::new(
        api,
        &groups,
        ferroscale::cli::flags::default_engine(),
        run_settings(),
    )
    .await;
    h.synced(3, 0).await;
    h.runner.start_acting(t0 + 5).await;
    assert_eq!(disrupted(&h.api, "m5-0").as_deref(), Some("NoSchedule"));
    assert_eq!(disrupted(&h.api, "m5-1").as_deref(), Some("NoSchedule"));
    assert_eq!(disrupted(&h.api, "m5-2"), None, "the stale taint goes");
}
