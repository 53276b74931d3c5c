//! The stored form is exactly what the status ConfigMap held before the status was typed (the files
//! beside this one were written by the former code), and it reads back into the same typed status.

use super::*;
use std::collections::HashMap;
use std::sync::Arc;

use crate::engine::memory::Backoff;
use crate::engine::reasons::Doubt;
use crate::engine::{Decisions, Memory, World};
use crate::model::workload::Node;
use crate::model::{Instance, InstanceState, NodeGroup, TemplateNode};

const NOW: i64 = 1_790_000_000;

fn group(id: &str, min: i32, max: i32, target: i32, instances: &[&str]) -> Arc<NodeGroup> {
    Arc::new(NodeGroup {
        min_size: min,
        max_size: max,
        target_size: target,
        instances: instances
            .iter()
            .map(|i| Instance {
                id: format!("aws:///us-east-1a/{i}"),
                state: InstanceState::Running,
                error: None,
            })
            .collect(),
        ..NodeGroup::new(id, TemplateNode::default(), "aws:///us-east-1a/")
    })
}

fn node(name: &str, instance: &str, ready: bool, created: i64) -> Node {
    Node {
        name: name.into(),
        provider_id: format!("aws:///us-east-1a/{instance}"),
        ready,
        created,
        seen: created,
        ..Default::default()
    }
}

/// Three groups and a node of none: `big` growing with an unready and a long-unregistered
/// instance, `small` backed off with a node still starting, `idle` with a scale-down candidate.
fn two_loops() -> (ClusterAutoscalerStatus, ClusterAutoscalerStatus) {
    let groups = [
        group("big", 0, 10, 3, &["i-b1", "i-b2", "i-b3"]),
        group("small", 1, 5, 2, &["i-s1", "i-s2"]),
        group("idle", 1, 3, 1, &["i-i1"]),
    ];
    let nodes = [
        node("big-1", "i-b1", true, NOW - 1000),
        node("big-2", "i-b2", false, 0),
        node("small-1", "i-s1", true, NOW - 1000),
        node("small-2", "i-s2", false, NOW - 10),
        node("idle-1", "i-i1", true, NOW - 1000),
        node("stray", "i-x", false, 0),
    ];
    let node_groups: HashMap<String, String> = [
        ("big-1", "big"),
        ("big-2", "big"),
        ("small-1", "small"),
        ("small-2", "small"),
        ("idle-1", "idle"),
    ]
    .into_iter()
    .map(|(n, g)| (n.to_string(), g.to_string()))
    .collect();
    let world = World {
        nodes: &nodes,
        node_groups: &node_groups,
        pods: &[],
        pdbs: &[],
        daemon_pods: &[],
        groups: &groups,
        removing: &HashMap::new(),
        doubts: &[],
        interrupted: &HashMap::new(),
    };
    let mut memory = Memory::default();
    memory
        .unregistered_since
        .insert("aws:///us-east-1a/i-b3".into(), NOW - 10_000);
    memory.unneeded_since.insert("idle-1".into(), NOW - 100);
    memory.backoff.insert(
        "small".into(),
        Backoff {
            until: NOW + 300,
            seconds: 300,
            last_failure: NOW - 60,
            reason: "InsufficientInstanceCapacity".into(),
        },
    );
    let decisions = Decisions {
        held_back: vec![Doubt::NotSynced {
            kind: "pods".into(),
        }],
        disruptions: vec![Disruption {
            node: "big-1".into(),
            group: Some("big".into()),
            reason: DisruptionReason::Drift,
            notice: None,
        }],
        ..Default::default()
    };
    let settings = crate::cli::flags::default_engine();
    let first = ClusterAutoscalerStatus::compute(
        &world,
        &Decisions::default(),
        &memory,
        &settings,
        NOW - 60,
        None,
    );
    let second =
        ClusterAutoscalerStatus::compute(&world, &decisions, &memory, &settings, NOW, Some(&first));
    (first, second)
}

fn yaml(s: &ClusterAutoscalerStatus) -> String {
    Status::from(s).to_yaml()
}

#[test]
fn the_stored_yaml_is_upstreams_schema_byte_for_byte() {
    let (first, second) = two_loops();
    assert_eq!(yaml(&first), include_str!("first-loop.yaml"));
    assert_eq!(yaml(&second), include_str!("two-loops.yaml"));
    let error = "cloud refresh failed: boom";
    let failed = ClusterAutoscalerStatus::failed(None, NOW, error);
    assert_eq!(yaml(&failed), include_str!("failed-first.yaml"));
    let failed = ClusterAutoscalerStatus::failed(Some(&second), NOW + 10, error);
    assert_eq!(yaml(&failed), include_str!("failed-after.yaml"));
}

#[test]
fn the_stored_yaml_reads_back_as_the_same_status() {
    let (first, second) = two_loops();
    let failed = ClusterAutoscalerStatus::failed(None, NOW, "cloud refresh failed: boom");
    for s in [first, second, failed] {
        assert_eq!(Status::parse(&yaml(&s)).unwrap(), s);
    }
}

#[test]
fn a_stored_status_that_does_not_read_names_the_field() {
    let text = include_str!("two-loops.yaml");
    let bad = text.replacen("status: Backoff", "status: Stuck", 1);
    let err = Status::parse(&bad).unwrap_err().to_string();
    assert!(err.contains("nodeGroups[small].scaleUp.status"), "{err}");
    assert!(err.contains("Stuck"), "{err}");
    let bad = text.replacen("lastProbeTime: 2026", "lastProbeTime: x2026", 1);
    let err = Status::parse(&bad).unwrap_err().to_string();
    assert!(err.contains("clusterWide.health.lastProbeTime"), "{err}");
    let bad = text.replacen("reason: drift", "reason: boredom", 1);
    let err = Status::parse(&bad).unwrap_err().to_string();
    assert!(err.contains("disruptions.reason"), "{err}");
}

#[test]
fn a_stored_status_too_deep_or_too_big_is_refused_before_it_is_parsed() {
    let err = Status::parse(&"{a: ".repeat(50_000))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("data.status")
            && err.contains("status: line 1 nests deeper than its depth limit of 32"),
        "{err}"
    );
    let err = Status::parse(&"#".repeat((1 << 20) + 1))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("over its size limit of 1048576 bytes"),
        "{err}"
    );
}
