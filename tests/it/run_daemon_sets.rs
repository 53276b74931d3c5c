//! A removed node's DaemonSet pods, as upstream's `--daemonset-eviction-for-occupied-nodes` (default
//! true) has them: evicted through the eviction API after the node's other pods, best effort; with the
//! flag false they stop with the node, unevicted.

use ferroscale::time::unix_now as now;
use serde_json::json;

use crate::support::fixtures::kube::{node, pod, POOL};
use crate::support::kube_api::{KubeApi, NODES, PODS};
use crate::support::run_harness::{eager, run_settings, Harness};

/// pool-a kept busy; pool-b with one web pod and a log agent of a DaemonSet.
async fn cluster() -> KubeApi {
    let api = KubeApi::start().await;
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    api.put(NODES, node("pool-b", "memory:///pool/i-b", "4", "16Gi"));
    api.put(PODS, pod("anchor", "2100m", Some("pool-a"), "anchor"));
    api.put(PODS, pod("web", "200m", Some("pool-b"), "web"));
    let mut agent = pod("agent-b", "50m", Some("pool-b"), "agent");
    agent["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "DaemonSet",
        "name": "agent", "uid": "ds-uid", "controller": true}]);
    api.put(PODS, agent);
    api
}

fn eviction_of(api: &KubeApi, pod: &str) -> Option<usize> {
    api.requests().iter().position(|r| {
        r.starts_with(&format!(
            "POST /api/v1/namespaces/default/pods/{pod}/eviction"
        ))
    })
}

async fn remove_pool_b(occupied: bool) -> KubeApi {
    let api = cluster().await;
    let mut settings = eager();
    settings.daemonset_eviction_for_occupied_nodes = occupied;
    let mut h = Harness::new(api.clone(), POOL, settings, run_settings()).await;
    h.synced(2, 3).await;
    let d = h.runner.run_once(now()).await.unwrap();
    assert_eq!(d.scale_down.len(), 1, "{d:?}");
    assert_eq!(d.scale_down[0].node, "pool-b");
    let results = h.runner.settle().await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert!(h
        .group("pool")
        .instances
        .iter()
        .all(|i| !i.id.ends_with("/i-b")));
    api
}

#[tokio::test]
async fn a_removed_nodes_daemon_set_pods_are_evicted_after_its_other_pods() {
    let api = remove_pool_b(true).await;
    let web = eviction_of(&api, "web").expect("web evicted");
    let agent = eviction_of(&api, "agent-b").expect("the DaemonSet pod evicted");
    assert!(
        web < agent,
        "the DaemonSet pod goes last: {:#?}",
        api.requests()
    );
    assert!(api.get(PODS, "default", "agent-b").is_none());
    assert!(eviction_of(&api, "anchor").is_none());
}

#[tokio::test]
async fn with_the_flag_off_daemon_set_pods_stop_with_the_node() {
    let api = remove_pool_b(false).await;
    assert!(eviction_of(&api, "web").is_some());
    assert!(
        eviction_of(&api, "agent-b").is_none(),
        "{:#?}",
        api.requests()
    );
}
