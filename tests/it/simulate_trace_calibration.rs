//! `simulate --trace` calibrates start-up times group by group: a timeline where one group's nodes
//! start in 40 s and another's in three minutes replays each group's new nodes at its own speed (a
//! group that launched none at the cluster's), says so in the answers' `calibrated` and on stderr, and
//! a flag given wins for every group.

use std::process::Command;

use serde_json::{json, Value};

use crate::simulate_report::{json_lines, ok};
use crate::support::process::BIN;

/// 2026-11-20T00:00:00Z.
const T0: i64 = 1_795_132_800;

const GROUPS: &str = r#"
nodeGroups:
  - {name: fast, minSize: 1, maxSize: 5, capacity: {cpu: "4", memory: 16Gi, pods: "20"}, pricePerHour: 0.1}
  - {name: slow, minSize: 1, maxSize: 5, capacity: {cpu: "4", memory: 16Gi, pods: "20"}, pricePerHour: 0.1}
  - {name: idle, minSize: 0, maxSize: 5, capacity: {cpu: "4", memory: 16Gi, pods: "20"}, pricePerHour: 0.1}
"#;

fn time(at: i64) -> String {
    k8s_openapi::jiff::Timestamp::from_second(T0 + at)
        .unwrap()
        .to_string()
}

/// A node of `group` registered at `at`, Ready since `ready` if it is.
fn node(name: &str, group: &str, at: i64, ready: Option<i64>) -> Value {
    let condition = match ready {
        Some(r) => json!({"type": "Ready", "status": "True", "lastTransitionTime": time(r)}),
        None => json!({"type": "Ready", "status": "False", "lastTransitionTime": time(at)}),
    };
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "creationTimestamp": time(at),
            "labels": {"ferroscale.io/node-group": group, "kubernetes.io/hostname": name}},
        "spec": {},
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "20"},
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "20"}, "conditions": [condition]}})
}

/// A 3-cpu pod for `group`'s nodes, created at `at`, on `node` if bound.
fn pod(name: &str, group: &str, at: i64, node: Option<&str>) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": time(at),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                "uid": "rs-uid", "controller": true}]},
        "spec": {"nodeName": node, "nodeSelector": {"ferroscale.io/node-group": group},
            "containers": [{"name": "c", "image": "app",
                "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}]},
        "status": {"phase": if node.is_some() { "Running" } else { "Pending" }}})
}

/// What really happened: each group starts with a full node; a pod for `fast` comes at +60 s and at
/// +600 s, one for `slow` at +300 s; `fast`'s nodes register 30 s after and are Ready 10 s later,
/// `slow`'s take 120 s and 60 s.
fn timeline() -> String {
    let mut lines: Vec<(i64, &str, Value)> = vec![
        (0, "ADDED", node("fast-1", "fast", -3600, Some(-3600))),
        (0, "ADDED", node("slow-1", "slow", -3600, Some(-3600))),
        (0, "ADDED", pod("base-fast", "fast", -3600, Some("fast-1"))),
        (0, "ADDED", pod("base-slow", "slow", -3600, Some("slow-1"))),
    ];
    let launch = |lines: &mut Vec<(i64, &str, Value)>, name: &str, group: &str, at, up, ready| {
        lines.push((at, "ADDED", pod(name, group, at, None)));
        let node_name = format!("{name}-node");
        lines.push((at + up, "ADDED", node(&node_name, group, at + up, None)));
        let ready_at = at + up + ready;
        lines.push((
            ready_at,
            "MODIFIED",
            node(&node_name, group, at + up, Some(ready_at)),
        ));
        lines.push((ready_at, "MODIFIED", pod(name, group, at, Some(&node_name))));
    };
    launch(&mut lines, "web-1", "fast", 60, 30, 10);
    launch(&mut lines, "batch", "slow", 300, 120, 60);
    launch(&mut lines, "web-2", "fast", 600, 30, 10);
    lines.push((
        900,
        "MODIFIED",
        pod("base-fast", "fast", -3600, Some("fast-1")),
    ));
    lines.sort_by_key(|l| l.0);
    lines
        .into_iter()
        .map(|(at, change, object)| {
            json!({"time": time(at), "type": change, "object": object}).to_string() + "\n"
        })
        .collect()
}

/// Replays the timeline with `args`: (stdout's JSON lines, stderr).
fn replay(args: &[&str]) -> (Vec<Value>, String) {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    let groups = dir.path().join("groups.yaml");
    std::fs::write(&trace, timeline()).unwrap();
    std::fs::write(&groups, GROUPS).unwrap();
    let out = Command::new(BIN)
        .arg("simulate")
        .arg("--trace")
        .arg(&trace)
        .arg("--node-groups")
        .arg(&groups)
        .args(args)
        .output()
        .unwrap();
    let lines = json_lines(&ok(&out));
    (lines, String::from_utf8_lossy(&out.stderr).to_string())
}

/// A loop's time, in seconds since the timeline's start (its first loop).
fn at(loops: &[Value], l: &Value) -> i64 {
    l["time"].as_i64().unwrap() - loops[0]["time"].as_i64().unwrap()
}

/// The time of the first loop whose report counts `n` nodes of `group`.
fn first_with(loops: &[Value], group: &str, n: u64) -> Option<i64> {
    loops
        .iter()
        .find(|l| l["nodes"][group].as_u64() == Some(n))
        .map(|l| at(loops, l))
}

/// The time of the first loop after `after` in which `pod` no longer waits.
fn bound_at(loops: &[Value], pod: &str, after: i64) -> Option<i64> {
    let key = format!("default/{pod}");
    loops
        .iter()
        .filter(|l| at(loops, l) > after)
        .find(|l| {
            !l["pending"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["pod"] == key)
        })
        .map(|l| at(loops, l))
}

#[test]
fn each_group_replays_its_new_nodes_at_its_own_recorded_speed() {
    let (lines, stderr) = replay(&[]);
    let (answers, loops) = lines.split_last().unwrap();
    let calibrated = &answers["calibrated"];
    // The cluster's medians, as before: provision 30, 120, 30 s; ready 10, 60, 10 s.
    assert_eq!(calibrated["nodes"], 3, "{calibrated}");
    assert_eq!(calibrated["provisionDelaySeconds"], 30, "{calibrated}");
    assert_eq!(calibrated["nodeReadyDelaySeconds"], 10, "{calibrated}");
    let group = |g: &str| {
        let c = &calibrated["groups"][g];
        (
            c["nodes"].as_u64().unwrap(),
            c["provisionDelaySeconds"].as_i64().unwrap(),
            c["nodeReadyDelaySeconds"].as_i64().unwrap(),
        )
    };
    assert_eq!(group("fast"), (2, 30, 10));
    assert_eq!(group("slow"), (1, 120, 60));
    // A group that launched nothing starts at the cluster's speed.
    assert_eq!(group("idle"), (0, 30, 10));
    assert!(
        stderr.contains("slow: provision 120s, ready 60s"),
        "{stderr}"
    );
    assert!(
        stderr.contains("idle: provision 30s, ready 10s (none launched"),
        "{stderr}"
    );

    // The simulated `fast` node asked for at +60 s joins 30 s later and takes its pod 10 s after;
    // the `slow` one asked for at +300 s joins at +420 s and takes its pod at +480 s.
    assert_eq!(first_with(loops, "fast", 2), Some(90), "{loops:?}");
    assert_eq!(bound_at(loops, "web-1", 60), Some(100));
    assert_eq!(first_with(loops, "slow", 2), Some(420), "{loops:?}");
    assert_eq!(bound_at(loops, "batch", 300), Some(480));
    let sim = &answers["summary"];
    assert_eq!(sim["p50TimeToScheduleSeconds"], 40, "{sim}");
    assert_eq!(sim["p99TimeToScheduleSeconds"], 180, "{sim}");
}

#[test]
fn a_start_up_flag_given_wins_for_every_group() {
    let (lines, stderr) = replay(&["--provision-delay", "50s"]);
    let (answers, loops) = lines.split_last().unwrap();
    // The ready delays are still each group's own; the provision delay is the flag's everywhere.
    assert!(
        stderr.contains("slow: provision 50s, ready 60s (from 1 node; provision given)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("fast: provision 50s, ready 10s"),
        "{stderr}"
    );
    assert_eq!(first_with(loops, "fast", 2), Some(110), "{loops:?}");
    assert_eq!(first_with(loops, "slow", 2), Some(350), "{loops:?}");
    assert_eq!(bound_at(loops, "batch", 300), Some(410));
    assert_eq!(answers["summary"]["p99TimeToScheduleSeconds"], 110);
}
