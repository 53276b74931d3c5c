//! `ferroscale run` leading: the binary end to end, taints racing another writer, and a new leader
//! cleaning up after one that stopped mid-drain (but keeping the taint of a node whose instance is
//! terminating).

use std::time::Duration;

use serde_json::json;

use crate::support::fixtures::kube::{node, pod, GROUPS};
use crate::support::kube_api::{assert_permitted, KubeApi, CONFIGMAPS, LEASES, NODES, PODS};
use crate::support::process::Served;
use crate::support::run_harness::{has_deletion_taint, run_settings, Harness};
use crate::support::server::http_get;

// Two workers: the API server keeps answering while a worker blocks waiting for the child to exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_leads_scales_and_reports() {
    let api = KubeApi::start().await;
    api.put(NODES, node("small-a", "memory:///small/i-a", "2", "8Gi"));
    api.put(PODS, pod("needs-big", "3", None, "a"));
    let dir = tempfile::tempdir().unwrap();
    let groups = dir.path().join("groups.yaml");
    std::fs::write(&groups, GROUPS).unwrap();
    let kubeconfig = api.kubeconfig(dir.path());
    let mut served = Served::spawn(
        &[
            "run",
            "--cloud",
            "memory",
            "--scan-interval",
            "500ms",
            "--leader-elect-lease-duration",
            "3s",
            "--leader-elect-renew-deadline",
            "2s",
            "--leader-elect-retry-period",
            "200ms",
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
    let http = served.http;
    api.wait_for("the Lease", |a| {
        a.get(LEASES, "kube-system", "cluster-autoscaler")
            .is_some_and(|l| l["spec"]["holderIdentity"].is_string())
    })
    .await;
    api.wait_for("TriggeredScaleUp", |a| {
        !a.events("TriggeredScaleUp").is_empty()
    })
    .await;
    api.wait_for("the status ConfigMap", |a| {
        a.get(CONFIGMAPS, "kube-system", "cluster-autoscaler-status")
            .is_some()
    })
    .await;
    let (code, metrics) = http_get(http, "/metrics").await;
    assert_eq!(code, 200);
    assert!(
        metrics.contains("cluster_autoscaler_scaled_up_nodes_total 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("cluster_autoscaler_function_duration_seconds_bucket{"),
        "{metrics}"
    );
    let (code, body) = http_get(http, "/health-check").await;
    assert_eq!((code, body.as_str()), (200, "OK\n"));
    assert!(served.terminate().success());
    // Leaving gives the Lease up, so a follower need not wait for it to expire.
    let lease = api
        .get(LEASES, "kube-system", "cluster-autoscaler")
        .unwrap();
    assert!(lease["spec"]["holderIdentity"].is_null(), "{lease}");
    assert_permitted(&api);
}

#[tokio::test]
async fn a_taint_racing_another_writer_is_retried_and_loses_nothing() {
    let api = KubeApi::start().await;
    let mut n = node("busy", "memory:///pool/i-a", "4", "16Gi");
    n["spec"]["taints"] = json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]);
    api.put(NODES, n);
    // The node controller taints the node between our read and our patch: a patch computed from the
    // stale taint list would drop its taint.
    let unreachable = json!({"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"});
    let dedicated = json!({"key": "dedicated", "value": "db", "effect": "NoSchedule"});
    api.interfere_before_next_patch(
        NODES,
        "",
        "busy",
        json!({"metadata": {"labels": {"kubelet-was-here": "true"}},
               "spec": {"taints": [dedicated.clone(), unreachable.clone()]}}),
    );
    let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(api.client());
    ferroscale::k8s::drain::set_taint(
        &nodes,
        "busy",
        ferroscale::actuator::Mark::ToBeDeleted,
        true,
        1_700_000_000,
    )
    .await
    .unwrap();
    let got = api.get(NODES, "", "busy").unwrap();
    assert_eq!(
        got["metadata"]["labels"]["kubelet-was-here"], "true",
        "the other write survives"
    );
    let taints: Vec<&str> = got["spec"]["taints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        taints,
        [
            "dedicated",
            "node.kubernetes.io/unreachable",
            "ToBeDeletedByClusterAutoscaler"
        ]
    );
    assert_eq!(
        got["spec"]["taints"][2]["value"], "1700000000",
        "upstream's value: the Unix time of marking"
    );
    let patches = api
        .requests()
        .iter()
        .filter(|r| r.starts_with("PATCH /api/v1/nodes/busy"))
        .count();
    assert_eq!(
        patches, 2,
        "the first patch conflicted and was computed again"
    );
    // Untainting keeps the other taints.
    ferroscale::k8s::drain::set_taint(
        &nodes,
        "busy",
        ferroscale::actuator::Mark::ToBeDeleted,
        false,
        0,
    )
    .await
    .unwrap();
    let got = api.get(NODES, "", "busy").unwrap();
    assert_eq!(got["spec"]["taints"], json!([dedicated, unreachable]));
    assert_permitted(&api);
}

#[tokio::test]
async fn a_new_leader_removes_deletion_taints_left_behind() {
    let api = KubeApi::start().await;
    let mut n = node("small-a", "memory:///small/i-a", "2", "8Gi");
    n["spec"]["taints"] = json!([{"key": "ToBeDeletedByClusterAutoscaler", "value": "1700000000",
                                  "effect": "NoSchedule"}]);
    api.put(NODES, n);
    let h = Harness::new(
        api,
        GROUPS,
        ferroscale::cli::flags::default_engine(),
        run_settings(),
    )
    .await;
    let api = h.api.clone();
    h.runner
        .run(tokio::time::sleep(Duration::from_millis(300)))
        .await
        .unwrap();
    assert!(!has_deletion_taint(&api, "small-a"));
    assert_permitted(&api);
}

#[tokio::test]
async fn the_stale_taint_cleanup_keeps_the_taint_of_a_node_whose_instance_is_terminating() {
    let api = KubeApi::start().await;
    let taint = json!([{"key": "ToBeDeletedByClusterAutoscaler", "value": "1700000000",
                        "effect": "NoSchedule"}]);
    for (name, id) in [("small-a", "i-a"), ("small-b", "i-b")] {
        let mut n = node(name, &format!("memory:///small/{id}"), "2", "8Gi");
        n["spec"]["taints"] = taint.clone();
        api.put(NODES, n);
    }
    let groups = r#"
nodeGroups:
  - {name: small, minSize: 0, maxSize: 5, targetSize: 2,
     instances: [{id: i-a, state: deleting}, {id: i-b}],
     capacity: {cpu: 2, memory: 8Gi, pods: 20}, pricePerHour: 0.096}
"#;
    let h = Harness::new(
        api,
        groups,
        ferroscale::cli::flags::default_engine(),
        run_settings(),
    )
    .await;
    let api = h.api.clone();
    h.runner
        .run(tokio::time::sleep(Duration::from_millis(300)))
        .await
        .unwrap();
    // Untainted, small-a would take pods that die with its instance undrained.
    assert!(
        has_deletion_taint(&api, "small-a"),
        "its instance is terminating"
    );
    assert!(!has_deletion_taint(&api, "small-b"), "a stale taint goes");
    assert_permitted(&api);
}
