//! `ferroscale run`'s decisions in its logs: each one line with its reason, as a log pipeline reads them
//! (`--log-format json`).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::fixtures::kube::{node, pod, GROUPS};
use crate::support::kube_api::{KubeApi, NODES, PODS};
use crate::support::process::BIN;

#[tokio::test]
async fn a_scale_up_and_the_pods_it_cannot_help_are_each_one_line_with_a_reason() {
    let api = KubeApi::start().await;
    api.put(NODES, node("small-a", "memory:///small/i-a", "2", "8Gi"));
    api.put(PODS, pod("needs-big", "3", None, "a"));
    api.put(PODS, pod("too-big-1", "64", None, "b"));
    api.put(PODS, pod("too-big-2", "64", None, "b"));
    let dir = tempfile::tempdir().unwrap();
    let groups = dir.path().join("groups.yaml");
    std::fs::write(&groups, GROUPS).unwrap();
    let kubeconfig = api.kubeconfig(dir.path());
    let path = dir.path().join("stderr.log");
    let mut child = Command::new(BIN)
        .args(["run", "--cloud", "memory", "--scan-interval", "500ms"])
        .args([
            "--leader-elect=false",
            "--dry-run",
            "--address",
            "127.0.0.1:0",
        ])
        .args(["--log-format", "json"])
        .arg("--memory-config")
        .arg(&groups)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&path).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let lines: Vec<serde_json::Value> = loop {
        let text = std::fs::read_to_string(&path).unwrap();
        if text.contains("did not trigger a scale-up") && text.contains("would scale up") {
            break text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
                .collect();
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("ferroscale exited ({status}):\n{text}");
        }
        assert!(Instant::now() < deadline, "no decision logged:\n{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let _ = child.kill();
    let _ = child.wait();
    let up = lines
        .iter()
        .find(|l| l["message"] == "would scale up")
        .unwrap();
    assert_eq!(
        (&up["group"], &up["delta"]),
        (&"big".into(), &1.into()),
        "{up}"
    );
    let reason = up["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("1 pending pods fit a new node") && reason.contains("expander:"),
        "{up}"
    );
    // Both pods that fit no group share one line for their reason, with the count.
    let stuck = lines
        .iter()
        .find(|l| l["message"] == "pods did not trigger a scale-up")
        .unwrap();
    assert_eq!(stuck["count"], 2, "{stuck}");
    assert!(
        stuck["first"]
            .as_str()
            .unwrap()
            .starts_with("default/too-big-"),
        "{stuck}"
    );
    assert!(
        stuck["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{stuck}"
    );
}
