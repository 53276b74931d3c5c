//! `ferroscale deschedule` and `run --deschedule-policy` as an operator runs them: a policy file that
//! cannot be used stops the process at start (exit 2) naming the file and the field; `deschedule` with
//! no interval runs one cycle against the cluster and exits, as the descheduler does, with only the API
//! calls `k8s::DESCHEDULE_PERMISSIONS` (its chart RBAC) lists; the flags the chart renders for its
//! provider-mode Deployment run it leader-elected on the chart's Lease.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::fixtures::kube::{node, pod};
use crate::support::kube_api::{assert_permitted_by, KubeApi, LEASES, NODES, PODS};
use crate::support::process::{deschedule_once, run_failing, Served};

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

/// Two nodes (a cycle needs two, as the descheduler's), one with a web pod and a failed Job pod still
/// bound to it, and RemoveFailedPods' policy in `dir`.
fn failed_pod_cluster(api: &KubeApi, dir: &std::path::Path) -> std::path::PathBuf {
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    api.put(NODES, node("pool-b", "memory:///pool/i-b", "4", "16Gi"));
    api.put(PODS, pod("web-1", "200m", Some("pool-a"), "web"));
    let mut failed = pod("job-1", "100m", Some("pool-a"), "job");
    failed["status"] = json!({"phase": "Failed", "reason": "Error"});
    failed["metadata"]["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job",
        "name": "job", "uid": "job-uid", "controller": true}]);
    api.put(PODS, failed);
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, FAILED_PODS).unwrap();
    policy
}

#[tokio::test]
async fn the_charts_deschedule_flags_run_leader_elected_on_the_charts_lease() {
    let api = KubeApi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let policy = failed_pod_cluster(&api, dir.path());
    let objects =
        crate::support::chart::render_set(&["descheduler.enabled=true", "descheduler.interval=1s"])
            .unwrap();
    let d: k8s_openapi::api::apps::v1::Deployment =
        crate::support::chart::one(&objects, "Deployment", "fs-ferroscale-descheduler");
    // The rendered flags as they are, but the files and the address of this machine.
    let kubeconfig = api.kubeconfig(dir.path());
    let mut args: Vec<String> = d.spec.template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap()
        .into_iter()
        .map(|a| {
            if a.starts_with("--policy-config-file=") {
                format!("--policy-config-file={}", policy.display())
            } else if a.starts_with("--address=") {
                "--address=127.0.0.1:0".into()
            } else {
                a
            }
        })
        .collect();
    args.push(format!("--kubeconfig={}", kubeconfig.display()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut served = Served::spawn(&args, &[]).await;
    // Generous: the process starts, syncs its watches, takes the Lease, then cycles every second.
    let deadline = Instant::now() + Duration::from_secs(60);
    while api.get(LEASES, "autoscaling", "descheduler").is_none()
        || api.get(PODS, "default", "job-1").is_some()
    {
        assert!(
            Instant::now() < deadline,
            "no Lease or no eviction after 60 s: {:#?}",
            api.requests()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let lease = api.get(LEASES, "autoscaling", "descheduler").unwrap();
    assert!(lease["spec"]["holderIdentity"].is_string(), "{lease}");
    assert!(api.get(PODS, "default", "web-1").is_some());
    assert!(served.terminate().success());
    assert_permitted_by(
        &api,
        ferroscale::k8s::DESCHEDULE_PERMISSIONS,
        "k8s::DESCHEDULE_PERMISSIONS",
    );
}

#[tokio::test]
async fn deschedule_with_no_interval_runs_one_cycle_and_exits() {
    let api = KubeApi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let policy = failed_pod_cluster(&api, dir.path());
    let kubeconfig = api.kubeconfig(dir.path());
    let status = deschedule_once(&policy, &kubeconfig).await;
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
