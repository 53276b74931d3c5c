//! `ferroscale deschedule` and `run --deschedule-policy` as an operator runs them: a policy file that
//! cannot be used stops the process at start (exit 2) naming the file and the field; `deschedule` with
//! no interval runs one cycle against the cluster and exits, as the descheduler does, with only the API
//! calls `k8s::DESCHEDULE_PERMISSIONS` (its chart RBAC) lists.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::fixtures::kube::{node, pod};
use crate::support::kube_api::{assert_permitted_by, KubeApi, NODES, PODS};
use crate::support::process::{run_failing, BIN};

#[test]
fn a_bad_policy_file_stops_deschedule_and_run_naming_the_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.yaml");
    std::fs::write(&path, "apiVersion: descheduler/v1alpha2\nkind: Policy\n").unwrap();
    let file = path.to_str().unwrap();
    let (code, err) = run_failing(&["deschedule", "--policy-config-file", file]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(file) && err.contains("kind"), "{err}");
    let (code, err) = run_failing(&["run", "--cloud", "memory", "--deschedule-policy", file]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--deschedule-policy") && err.contains(file) && err.contains("kind"),
        "{err}"
    );
    let (code, err) = run_failing(&["deschedule"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--policy-config-file"), "{err}");
}

/// A policy removing failed pods at once, as the descheduler's README writes one.
const FAILED_PODS: &str = r#"apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
profiles:
  - name: default
    pluginConfig:
      - name: "RemoveFailedPods"
        args:
          minPodLifetimeSeconds: 0
    plugins:
      deschedule:
        enabled:
          - "RemoveFailedPods"
"#;

#[tokio::test]
async fn deschedule_with_no_interval_runs_one_cycle_and_exits() {
    let api = KubeApi::start().await;
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    api.put(PODS, pod("web-1", "200m", Some("pool-a"), "web"));
    let mut failed = pod("job-1", "100m", Some("pool-a"), "job");
    failed["status"] = json!({"phase": "Failed", "reason": "Error"});
    failed["metadata"]["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job",
        "name": "job", "uid": "job-uid", "controller": true}]);
    api.put(PODS, failed);
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, FAILED_PODS).unwrap();
    let kubeconfig = api.kubeconfig(dir.path());
    let mut child = Command::new(BIN)
        .args([
            "deschedule",
            "--address",
            "127.0.0.1:0",
            "--policy-config-file",
        ])
        .arg(&policy)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "still running after 60 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status}");
    assert!(
        api.get(PODS, "default", "job-1").is_none(),
        "the failed pod is evicted"
    );
    assert!(api.get(PODS, "default", "web-1").is_some());
    let events = api.events("RemoveFailedPods");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].0, "job-1");
    assert_permitted_by(
        &api,
        ferroscale::k8s::DESCHEDULE_PERMISSIONS,
        "k8s::DESCHEDULE_PERMISSIONS",
    );
}
