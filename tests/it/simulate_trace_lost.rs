//! A node the recording lost (deleted with no autoscaler's deletion taint: the example day's spot
//! interruption) is lost in the replay at the same time, its pods placed again; a node an autoscaler
//! removed (tainted `ToBeDeletedByClusterAutoscaler`) is the simulated autoscaler's to keep or remove.

use std::process::Command;

use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use crate::simulate_report::{json_lines, ok};
use crate::support::process::BIN;

const DAY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/day.jsonl");
const GROUPS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/day-groups.yaml");

/// The example day's lines, with the loss's line (the one node deleted untainted) and its time since
/// the start; the loss marked as an autoscaler's removal when `marked`.
fn day(marked: bool) -> (Vec<String>, String, i64) {
    let text = std::fs::read_to_string(DAY).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let at = |l: &Value| {
        l["time"]
            .as_str()
            .unwrap()
            .parse::<Timestamp>()
            .unwrap()
            .as_second()
    };
    let start = at(&lines[0]);
    let k = lines
        .iter()
        .position(|l| {
            l["type"] == "DELETED"
                && l["object"]["kind"] == "Node"
                && l["object"]["spec"]["taints"].is_null()
        })
        .expect("the example day loses a node");
    let node = lines[k]["object"]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let since = at(&lines[k]) - start;
    if marked {
        lines[k]["object"]["spec"]["taints"] = serde_json::json!([
            {"key": "ToBeDeletedByClusterAutoscaler", "value": "1", "effect": "NoSchedule"}
        ]);
    }
    (lines.iter().map(Value::to_string).collect(), node, since)
}

/// The loops of a replay of `lines` up to a minute past `since`, without the answers' line.
fn replay(lines: &[String], since: i64) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("day.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let loops = (since / 10 + 6).to_string();
    let out = Command::new(BIN)
        .args([
            "simulate",
            "--trace",
            path.to_str().unwrap(),
            "--node-groups",
            GROUPS,
        ])
        .args(["--loops", &loops])
        .output()
        .unwrap();
    let mut lines = json_lines(&ok(&out));
    lines.pop();
    lines
}

/// The loops' (time, node, reason) of every disruption.
fn disruptions(loops: &[Value]) -> Vec<(i64, String, String)> {
    loops
        .iter()
        .flat_map(|l| {
            let time = l["time"].as_i64().unwrap();
            let list = l["disruptions"].as_array().cloned().unwrap_or_default();
            list.into_iter().map(move |d| {
                let s = |k: &str| d[k].as_str().unwrap().to_string();
                (time, s("node"), s("reason"))
            })
        })
        .collect()
}

#[test]
fn a_node_the_recording_lost_is_lost_in_the_replay_and_one_an_autoscaler_removed_is_not() {
    let (lines, node, since) = day(false);
    let loops = replay(&lines, since);
    let lost = disruptions(&loops);
    assert_eq!(lost.len(), 1, "{lost:?}");
    let (time, name, reason) = &lost[0];
    assert_eq!(name, &node);
    // The loop of the recorded deletion (loop times count from the simulation's start, the first
    // loop's at the timeline's); the node was not labelled spot.
    let at = loops[0]["time"].as_i64().unwrap() + since;
    assert!((at..at + 10).contains(time), "{time} against {at}");
    assert_eq!(reason, "instance-stopping");
    let last = loops.last().unwrap();
    assert!(
        !last.to_string().contains(&format!("\"{node}\"")),
        "the node is gone: {last}"
    );

    let (lines, node, since) = day(true);
    let loops = replay(&lines, since);
    assert_eq!(disruptions(&loops), vec![]);
    let last = loops.last().unwrap();
    assert!(
        last["unremovable"]
            .to_string()
            .contains(&format!("\"{node}\"")),
        "the simulated autoscaler still has it: {last}"
    );
}
