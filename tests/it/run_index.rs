//! `ferroscale run`'s index fed by its watches: lists come in pages (the loopback API pages as the real
//! one does), every event is converted once when it arrives, and a loop in which nothing changed converts
//! nothing.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod as KubePod;
use kube::api::{Api, ListParams};
use serde_json::json;

use crate::support::fixtures::kube::{node, pod, POOL};
use crate::support::kube_api::{KubeApi, CLAIMS, NODES, PODS, VOLUMES};
use crate::support::run_harness::{eager, run_settings, Harness};
use ferroscale::engine::reasons::Doubt;
use ferroscale::time::unix_now as now;

/// Pods in two namespaces (so pages cross a namespace boundary), on two nodes they fill.
fn many_pods(api: &KubeApi, n: usize) -> BTreeSet<String> {
    (0..n)
        .map(|i| {
            let on = if i % 3 == 0 { "pool-a" } else { "pool-b" };
            let mut p = pod(&format!("p-{i:05}"), "10m", Some(on), "web");
            let ns = if i % 2 == 0 { "default" } else { "other" };
            p["metadata"]["namespace"] = json!(ns);
            api.put(PODS, p);
            format!("{ns}/p-{i:05}")
        })
        .collect()
}

#[tokio::test]
async fn lists_come_in_pages_that_together_hold_every_object_once() {
    let api = KubeApi::start().await;
    let want = many_pods(&api, 1234);
    let pods: Api<KubePod> = Api::all(api.client());
    let mut seen = Vec::new();
    let mut params = ListParams::default().limit(500);
    let mut pages = 0;
    loop {
        let page = pods.list(&params).await.unwrap();
        pages += 1;
        assert!(page.items.len() <= 500);
        seen.extend(page.items.iter().map(|p| {
            format!(
                "{}/{}",
                p.metadata.namespace.as_deref().unwrap(),
                p.metadata.name.as_deref().unwrap()
            )
        }));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), want.len(), "no object twice");
    assert_eq!(seen.into_iter().collect::<BTreeSet<_>>(), want);
}

#[tokio::test]
async fn the_index_follows_the_watches_and_a_quiet_loop_converts_nothing() {
    let api = KubeApi::start().await;
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    api.put(NODES, node("pool-b", "memory:///pool/i-b", "4", "16Gi"));
    many_pods(&api, 1200);
    let mut h = Harness::new(api.clone(), POOL, eager(), run_settings()).await;
    h.synced(2, 1200).await;
    h.runner.run_once(now()).await.unwrap();
    assert_eq!(h.runner.indexed(), (2, 1200));
    // Nothing changed: nothing to apply.
    h.runner.run_once(now()).await.unwrap();
    assert_eq!(h.runner.last_update().changes, 0);
    // One pod goes, one comes, one finishes: three changes, and the index has what the API has.
    let events = h.watches.pods.events();
    api.delete(PODS, "default", "p-00000");
    api.put(PODS, pod("late", "10m", None, "web"));
    let mut done = pod("p-00001", "10m", Some("pool-b"), "web");
    done["metadata"]["namespace"] = json!("other");
    done["status"] = json!({"phase": "Succeeded"});
    api.put(PODS, done);
    for _ in 0..400 {
        if h.watches.pods.events() >= events + 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let d = h.runner.run_once(now()).await.unwrap();
    assert_eq!(h.runner.last_update().changes, 3);
    assert_eq!(h.runner.indexed(), (2, 1199));
    assert!(
        d.scale_up
            .iter()
            .any(|s| s.pods.contains(&"default/late".to_string()))
            || d.not_triggered().any(|(k, _)| k == "default/late"),
        "the new pending pod is seen: {d:?}"
    );
}

/// A volume whose node affinity cannot be read.
fn volume(operator: &str) -> serde_json::Value {
    json!({
        "metadata": {"name": "pv-0"},
        "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
            "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": operator, "values": ["us-east-1a"]}]}]}}},
    })
}

#[tokio::test]
async fn a_pod_whose_volume_cannot_be_read_holds_scale_down_back_until_the_volume_is_fixed() {
    let api = KubeApi::start().await;
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    api.put(NODES, node("pool-b", "memory:///pool/i-b", "4", "16Gi"));
    let mut db = pod("db-0", "100m", Some("pool-a"), "db");
    db["spec"]["volumes"] =
        json!([{"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}}]);
    api.put(PODS, db);
    api.put(VOLUMES, volume("Sometimes"));
    api.put(
        CLAIMS,
        json!({
            "metadata": {"name": "data-0", "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": "pv-0",
                "resources": {"requests": {"storage": "10Gi"}}},
            "status": {"phase": "Bound"},
        }),
    );
    let mut h = Harness::new(api.clone(), POOL, eager(), run_settings()).await;
    h.synced(2, 1).await;
    // pool-b is empty and could go, but a pod the loop cannot read is left out: nothing is removed.
    let d = h.runner.run_once(now()).await.unwrap();
    assert!(d.scale_down.is_empty(), "{d:?}");
    assert!(
        matches!(d.held_back.as_slice(), [Doubt::Unreadable { count: 1, first }] if first.contains("Sometimes")),
        "{:?}",
        d.held_back
    );
    assert_eq!(h.runner.indexed(), (2, 0));
    // The volume is fixed: the storage kinds changed, so the pod is read again and counted.
    let changes = h.watches.storage_changes();
    api.put(VOLUMES, volume("In"));
    for _ in 0..400 {
        if h.watches.storage_changes() > changes {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let d = h.runner.run_once(now()).await.unwrap();
    assert!(d.held_back.is_empty(), "{:?}", d.held_back);
    assert_eq!(h.runner.indexed(), (2, 1));
    assert_eq!(h.runner.last_update().claims_resolved, 1);
}
