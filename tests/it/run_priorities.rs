//! `ferroscale run` with the priority expander and no priority file reads upstream's ConfigMap
//! `cluster-autoscaler-priority-expander` in its namespace: the scale-up goes to the group it prefers,
//! follows a change, keeps the last good priorities (and says so with an event) when it breaks; and the
//! binary wires it up with only the API calls `k8s::PERMISSIONS` lists.

use std::time::Duration;

use ferroscale::engine::expander::Strategy;
use ferroscale::engine::Settings;
use ferroscale::k8s::priorities::{PriorityWatch, CONFIG_MAP};
use serde_json::{json, Value};

use crate::support::fixtures::kube::pod;
use crate::support::kube_api::{assert_permitted, KubeApi, CONFIGMAPS, PODS};
use crate::support::process::Served;
use crate::support::run_harness::{run_settings, Harness};

/// Two groups alike: only the priorities tell them apart.
const TWINS: &str = r#"
nodeGroups:
  - {name: a, minSize: 0, maxSize: 5, targetSize: 0, capacity: {cpu: 2, memory: 8Gi, pods: 20}}
  - {name: b, minSize: 0, maxSize: 5, targetSize: 0, capacity: {cpu: 2, memory: 8Gi, pods: 20}}
"#;

fn priorities(yaml: &str) -> Value {
    json!({
        "metadata": {"name": CONFIG_MAP, "namespace": "kube-system"},
        "data": {"priorities": yaml},
    })
}

fn ups(d: &ferroscale::engine::Decisions) -> Vec<(&str, i32)> {
    d.scale_up
        .iter()
        .map(|u| (u.group.as_str(), u.delta))
        .collect()
}

/// Waits until `pred` holds for the watch, up to 10 seconds.
async fn until(watch: &PriorityWatch, what: &str, pred: impl Fn(&PriorityWatch) -> bool) {
    for _ in 0..200 {
        if pred(watch) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the priority watch never saw {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scale_up_follows_the_config_map_and_a_broken_one_keeps_the_last_good_priorities() {
    let api = KubeApi::start().await;
    // Another ConfigMap of the namespace (the status) is no priority ConfigMap.
    api.put(
        CONFIGMAPS,
        json!({"metadata": {"name": "cluster-autoscaler-status", "namespace": "kube-system"}, "data": {"status": "x"}}),
    );
    api.put(CONFIGMAPS, priorities("10: ['^a$']\n1: ['.*']\n"));
    // 1500m: each pod needs a node of its own.
    api.put(PODS, pod("p1", "1500m", None, "p1"));
    let settings = Settings {
        expander: Strategy::parse_chain("priority").unwrap(),
        ..ferroscale::cli::flags::default_engine()
    };
    let Harness {
        api,
        cloud,
        watches,
        metrics,
        runner,
    } = Harness::new(api, TWINS, settings, run_settings()).await;
    let watch = PriorityWatch::start(&api.client(), "kube-system");
    watch
        .ready(tokio::time::sleep(Duration::from_secs(10)))
        .await
        .unwrap();
    let runner = runner.with_priority_config_map(watch.clone());
    let mut h = Harness {
        api,
        cloud,
        watches,
        metrics,
        runner,
    };
    h.synced(0, 1).await;
    let now = ferroscale::time::unix_now();
    let d = h.runner.run_once(now).await.unwrap();
    assert_eq!(ups(&d), vec![("a", 1)], "{d:?}");

    // The ConfigMap now prefers b: the next pod's node comes from b.
    h.api.update(
        CONFIGMAPS,
        "kube-system",
        CONFIG_MAP,
        json!({"data": {"priorities": "10: ['^b$']\n1: ['.*']\n"}}),
    );
    until(&watch, "the change", |w| {
        w.tiers().read().of("b") == Some(10)
    })
    .await;
    h.api.put(PODS, pod("p2", "1500m", None, "p2"));
    h.synced(0, 2).await;
    let d = h.runner.run_once(now + 10).await.unwrap();
    assert_eq!(ups(&d), vec![("b", 1)], "{d:?}");

    // Broken: b stays preferred, and the loop says why with an event on the ConfigMap.
    h.api.update(
        CONFIGMAPS,
        "kube-system",
        CONFIG_MAP,
        json!({"data": {"priorities": "10: ['(']\n"}}),
    );
    until(&watch, "the broken version", |w| w.broken().is_some()).await;
    assert!(watch.broken().unwrap().contains("priorities[10]"));
    h.api.put(PODS, pod("p3", "1500m", None, "p3"));
    h.synced(0, 3).await;
    let d = h.runner.run_once(now + 20).await.unwrap();
    assert_eq!(ups(&d), vec![("b", 1)], "the last good priorities: {d:?}");
    h.api
        .wait_for("the PriorityConfigMapInvalid event", |a| {
            a.events("PriorityConfigMapInvalid")
                .iter()
                .any(|(name, note)| name == CONFIG_MAP && note.contains("keeping the last good"))
        })
        .await;
    // Fixed again, it applies again.
    h.api.update(
        CONFIGMAPS,
        "kube-system",
        CONFIG_MAP,
        json!({"data": {"priorities": "10: ['^a$']\n"}}),
    );
    until(&watch, "the fix", |w| {
        w.broken().is_none() && w.tiers().read().of("a") == Some(10)
    })
    .await;
    assert_eq!(h.api.events("PriorityConfigMapInvalid").len(), 1, "once");
    assert_permitted(&h.api);
    // The watch asked for that one ConfigMap only.
    let asked: Vec<String> = h
        .api
        .requests()
        .into_iter()
        .filter(|r| r.starts_with("GET /api/v1/namespaces/kube-system/configmaps"))
        .collect();
    assert!(!asked.is_empty());
    assert!(
        asked
            .iter()
            .all(|r| r
                .contains("fieldSelector=metadata.name%3Dcluster-autoscaler-priority-expander")),
        "{asked:?}"
    );
}

/// Least-waste alone picks a (the tighter fit for a 1500m pod); only the priorities pick b.
const A_FITS_BETTER: &str = r#"
nodeGroups:
  - {name: a, minSize: 0, maxSize: 5, targetSize: 0, capacity: {cpu: 2, memory: 8Gi, pods: 20}}
  - {name: b, minSize: 0, maxSize: 5, targetSize: 0, capacity: {cpu: 4, memory: 16Gi, pods: 20}}
"#;

// Two workers: the API server keeps answering while a worker blocks waiting for the child to exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_reads_the_priority_config_map_in_its_namespace() {
    let api = KubeApi::start().await;
    api.put(CONFIGMAPS, priorities("10: ['^b$']\n1: ['.*']\n"));
    api.put(PODS, pod("p1", "1500m", None, "p1"));
    let dir = tempfile::tempdir().unwrap();
    let groups = dir.path().join("groups.yaml");
    std::fs::write(&groups, A_FITS_BETTER).unwrap();
    let kubeconfig = api.kubeconfig(dir.path());
    let mut served = Served::spawn(
        &[
            "run",
            "--cloud",
            "memory",
            "--expander",
            "priority,least-waste",
            "--scan-interval",
            "500ms",
            "--leader-elect=false",
            "--memory-config",
            groups.to_str().unwrap(),
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--address",
            "127.0.0.1:0",
        ],
        &[],
    )
    .await;
    api.wait_for("TriggeredScaleUp", |a| {
        !a.events("TriggeredScaleUp").is_empty()
    })
    .await;
    let events = api.events("TriggeredScaleUp");
    assert!(events[0].1.contains("{b 0->1"), "{events:?}");
    assert!(served.terminate().success());
    assert_permitted(&api);
}
