//! `ferroscale record` against the loopback API: a scripted stretch of a cluster's life (a workload
//! scaled, a job's pod finishing, a node added and removed, and a pod watch that fails and resumes while
//! pods change) comes out complete, in time order, each change once, with nothing secret in it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::kube_api::{KubeApi, NAMESPACES, NODES, PODS, REPLICASETS};
use ferroscale::k8s::record::Recorder;
use ferroscale::trace::{read_file, Change, Writer};

fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop",
                     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"env\":\"hunter2\"}"}},
        "spec": {"containers": [{
            "name": "app", "image": "shop:1",
            "command": ["/shop", "--password=hunter2"],
            "env": [{"name": "PASSWORD", "value": "hunter2"}],
            "resources": {"requests": {"cpu": "250m"}}}]},
        "status": {"phase": "Pending"}
    })
}

fn node(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
           "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}})
}

/// Each object's changes as recorded, by kind/namespace/name.
type Histories = BTreeMap<String, Vec<Change>>;

fn histories(path: &std::path::Path) -> (Histories, String) {
    let mut h = Histories::new();
    for entry in read_file(path).unwrap() {
        let entry = entry.unwrap();
        let (ns, name) = entry.key();
        h.entry(format!("{}/{ns}/{name}", entry.kind.name()))
            .or_default()
            .push(entry.change);
    }
    (h, std::fs::read_to_string(path).unwrap())
}

/// Waits (up to 30 s) until the recording's file holds `done`.
async fn until_recorded(path: &std::path::Path, done: impl Fn(&Histories) -> bool) {
    for _ in 0..300 {
        if path.exists() && done(&histories(path).0) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("not recorded: {:#?}", histories(path).0);
}

/// Waits until the API server has received a watch of every collection in `collections`.
async fn until_watched(api: &KubeApi, collections: &[&str]) {
    for _ in 0..300 {
        let requests = api.requests();
        let watched = |c: &&str| {
            requests
                .iter()
                .any(|r| r.starts_with(&format!("GET {c}?")) && r.contains("watch=true"))
        };
        if collections.iter().all(watched) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("not watched: {:#?}", api.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_stretch_is_complete_in_order_each_change_once_and_without_secrets() {
    let api = KubeApi::start().await;
    api.put(NAMESPACES, json!({"metadata": {"name": "shop"}}));
    api.put(NODES, node("n1"));
    api.put(
        REPLICASETS,
        json!({"metadata": {"name": "web", "namespace": "shop"},
               "spec": {"replicas": 2, "template": {"metadata": {}, "spec": pod("x")["spec"]}}}),
    );
    for p in ["web-1", "web-2", "job-1"] {
        api.put(PODS, pod(p));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stretch.jsonl");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let client = api.client();
    let writer = Writer::create(&path).unwrap();
    let recording = tokio::spawn(async move {
        let stop = async {
            let _ = stopped.await;
        };
        ferroscale::k8s::record::record(
            &client,
            Recorder::new(writer),
            stop,
            ferroscale::time::unix_now,
            ferroscale::k8s::record::FLUSH_EVERY,
        )
        .await
    });
    // Every kind is watched once the recording has listed them all.
    until_watched(&api, &[PODS, NODES, REPLICASETS, NAMESPACES]).await;

    // The workload scales out; the job's pod runs and finishes; a node comes and goes.
    api.update(REPLICASETS, "shop", "web", json!({"spec": {"replicas": 3}}));
    api.put(PODS, pod("web-3"));
    api.update(
        PODS,
        "shop",
        "job-1",
        json!({"status": {"phase": "Succeeded"}}),
    );
    api.delete(PODS, "shop", "job-1");
    api.put(NODES, node("n2"));
    api.delete(NODES, "", "n2");
    until_recorded(&path, |h| {
        h.contains_key("Node//n2") && h.get("Node//n2").unwrap().len() == 2
    })
    .await;

    // The pods' watch fails; while nothing watches, pods change; then it lists everything again.
    let before = api.requests().len();
    api.fail_watches(PODS, true);
    for _ in 0..300 {
        if api.requests()[before..]
            .iter()
            .any(|r| r.starts_with("GET /api/v1/pods"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    api.delete(PODS, "shop", "web-1");
    api.update(
        PODS,
        "shop",
        "web-2",
        json!({"status": {"phase": "Running"}}),
    );
    api.put(PODS, pod("web-4"));
    api.fail_watches(PODS, false);
    until_recorded(&path, |h| h.contains_key("Pod/shop/web-4")).await;
    api.put(NAMESPACES, json!({"metadata": {"name": "end"}}));
    until_recorded(&path, |h| h.contains_key("Namespace//end")).await;
    stop.send(()).unwrap();
    let recorded = recording.await.unwrap().unwrap();

    let (got, text) = histories(&path);
    use Change::*;
    let want: Histories = [
        ("Namespace//shop", vec![Added]),
        ("Namespace//end", vec![Added]),
        ("Node//n1", vec![Added]),
        ("Node//n2", vec![Added, Deleted]),
        ("ReplicaSet/shop/web", vec![Added, Modified]),
        ("Pod/shop/web-1", vec![Added, Deleted]),
        ("Pod/shop/web-2", vec![Added, Modified]),
        ("Pod/shop/web-3", vec![Added]),
        ("Pod/shop/web-4", vec![Added]),
        ("Pod/shop/job-1", vec![Added, Modified, Deleted]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(got, want);
    assert_eq!(
        recorded.lines as usize,
        want.values().map(Vec::len).sum::<usize>()
    );
    assert!(!text.contains("hunter2"), "a secret was recorded");
    // The start is one moment: everything listed first carries the same time.
    let first_times: Vec<_> = read_file(&path)
        .unwrap()
        .take(6)
        .map(|e| e.unwrap().time)
        .collect();
    assert!(
        first_times.windows(2).all(|w| w[0] == w[1]),
        "{first_times:?}"
    );
}
