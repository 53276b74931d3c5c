use std::collections::HashMap;
use std::sync::Arc;

use super::*;
use crate::engine::memory::Backoff;
use crate::engine::reasons::{Pending, Unhealthy};
use crate::engine::ScaleUp;
use crate::model::{Instance, InstanceState, TemplateNode};

const NOW: i64 = 1_800_000_000;

/// A group of `target` between 0 and 10 whose instances are `i-<name>` for each of `instances`.
fn group(id: &str, target: i32, instances: &[&str]) -> Arc<NodeGroup> {
    Arc::new(NodeGroup {
        min_size: 0,
        max_size: 10,
        target_size: target,
        instances: instances
            .iter()
            .map(|n| Instance {
                id: format!("aws:///z/i-{n}"),
                state: InstanceState::Running,
                error: None,
            })
            .collect(),
        ..NodeGroup::new(id, TemplateNode::default(), "aws:///z/")
    })
}

/// A node of instance `i-<name>`, created `age` seconds ago.
fn node(name: &str, ready: bool, age: i64) -> Node {
    Node {
        name: name.into(),
        provider_id: format!("aws:///z/i-{name}"),
        ready,
        created: NOW - age,
        seen: NOW - age,
        ..Default::default()
    }
}

/// The nodes, the groups and which group each node is in.
struct Cluster {
    nodes: Vec<Node>,
    groups: Vec<Arc<NodeGroup>>,
    node_groups: HashMap<String, String>,
}

impl Cluster {
    /// Each group with its nodes; every node has an instance of its group.
    fn new(groups: &[(&str, i32, Vec<Node>)]) -> Cluster {
        let mut c = Cluster {
            nodes: Vec::new(),
            groups: Vec::new(),
            node_groups: HashMap::new(),
        };
        for (id, target, nodes) in groups {
            let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
            c.groups.push(group(id, *target, &names));
            for n in nodes {
                c.node_groups.insert(n.name.clone(), id.to_string());
            }
            c.nodes.extend(nodes.iter().cloned());
        }
        c
    }

    fn status(
        &self,
        decisions: &Decisions,
        memory: &Memory,
        now: i64,
        previous: Option<&ClusterAutoscalerStatus>,
    ) -> ClusterAutoscalerStatus {
        let world = World {
            nodes: &self.nodes,
            node_groups: &self.node_groups,
            pods: &[],
            pdbs: &[],
            daemon_pods: &[],
            groups: &self.groups,
            removing: &HashMap::new(),
            doubts: &[],
            interrupted: &HashMap::new(),
        };
        let settings = Settings::upstream();
        ClusterAutoscalerStatus::compute(&world, decisions, memory, &settings, now, previous)
    }
}

fn cluster_wide(s: &ClusterAutoscalerStatus) -> &ClusterWideStatus {
    s.cluster_wide.as_ref().expect("cluster-wide conditions")
}

fn group_of<'a>(s: &'a ClusterAutoscalerStatus, name: &str) -> &'a NodeGroupStatus {
    s.group(name).expect("the group's status")
}

#[test]
fn an_unhealthy_loop_makes_the_cluster_unhealthy_and_says_why() {
    let c = Cluster::new(&[("a", 1, vec![node("a-1", true, 1000)])]);
    let healthy = c.status(&Decisions::default(), &Memory::default(), NOW, None);
    assert_eq!(cluster_wide(&healthy).health.status, Health::Healthy);
    assert_eq!(healthy.message, "");
    let d = Decisions {
        unhealthy: Some(Unhealthy {
            unready: 4,
            total: 5,
        }),
        ..Default::default()
    };
    let s = c.status(&d, &Memory::default(), NOW, None);
    assert_eq!(cluster_wide(&s).health.status, Health::Unhealthy);
    assert!(s.message.contains("4 of 5 nodes unready"), "{}", s.message);
}

#[test]
fn a_group_missing_the_nodes_its_target_expects_is_unhealthy_and_the_others_are_not() {
    // `short` expects 6 nodes and has 1 ready and 5 unready for long; `fine` has its 2 ready.
    let mut short = vec![node("s-0", true, 1000)];
    short.extend((1..6).map(|i| node(&format!("s-{i}"), false, 3600)));
    let c = Cluster::new(&[
        ("short", 6, short),
        (
            "fine",
            2,
            vec![node("f-1", true, 1000), node("f-2", true, 1000)],
        ),
    ]);
    let s = c.status(&Decisions::default(), &Memory::default(), NOW, None);
    assert_eq!(group_of(&s, "short").health.status, Health::Unhealthy);
    assert!(!group_of(&s, "short").healthy());
    assert!(group_of(&s, "fine").healthy());
    let counts = &group_of(&s, "short").node_counts.registered;
    assert_eq!(
        (counts.total, counts.ready, counts.unready.total),
        (6, 1, 5)
    );
}

#[test]
fn a_backed_off_group_shows_its_error_code_and_until_when_and_not_after() {
    let c = Cluster::new(&[("a", 2, vec![node("a-1", true, 1000)])]);
    let mut memory = Memory::default();
    memory.backoff.insert(
        "a".into(),
        Backoff {
            until: NOW + 300,
            seconds: 300,
            last_failure: NOW - 10,
            reason: "InsufficientInstanceCapacity".into(),
        },
    );
    let s = c.status(&Decisions::default(), &memory, NOW, None);
    let a = group_of(&s, "a");
    assert_eq!(a.scale_up.status, GroupScaleUp::Backoff);
    assert_eq!(
        a.backoff,
        Some(BackoffInfo {
            error_code: "InsufficientInstanceCapacity".into(),
            until: NOW + 300,
        })
    );
    let later = c.status(&Decisions::default(), &memory, NOW + 300, Some(&s));
    let a = group_of(&later, "a");
    assert_eq!(a.backoff, None);
    assert_eq!(
        a.scale_up.status,
        GroupScaleUp::InProgress,
        "2 wanted, 1 there"
    );
}

#[test]
fn scale_up_is_in_progress_while_a_target_exceeds_the_registered_nodes() {
    let growing = Cluster::new(&[
        ("a", 3, vec![node("a-1", true, 1000)]),
        ("b", 1, vec![node("b-1", true, 1000)]),
    ]);
    let s = growing.status(&Decisions::default(), &Memory::default(), NOW, None);
    assert_eq!(group_of(&s, "a").scale_up.status, GroupScaleUp::InProgress);
    assert_eq!(group_of(&s, "b").scale_up.status, GroupScaleUp::NoActivity);
    assert_eq!(cluster_wide(&s).scale_up.status, ClusterScaleUp::InProgress);

    let steady = Cluster::new(&[("b", 1, vec![node("b-1", true, 1000)])]);
    let s = steady.status(&Decisions::default(), &Memory::default(), NOW, None);
    assert_eq!(cluster_wide(&s).scale_up.status, ClusterScaleUp::NoActivity);

    // A scale-up decided this loop is in progress before the cloud shows it.
    let decided = Decisions {
        scale_up: vec![ScaleUp {
            group: "b".into(),
            delta: 1,
            pods: vec!["shop/web".into()],
        }],
        ..Default::default()
    };
    let s = steady.status(&decided, &Memory::default(), NOW, None);
    assert_eq!(cluster_wide(&s).scale_up.status, ClusterScaleUp::InProgress);

    // A pod no node takes and no scale-up for it: needed.
    let stuck = Decisions {
        pending: vec![("shop/huge".into(), Pending::NoNodeGroup)],
        ..Default::default()
    };
    let s = steady.status(&stuck, &Memory::default(), NOW, None);
    assert_eq!(cluster_wide(&s).scale_up.status, ClusterScaleUp::Needed);
}

#[test]
fn a_transition_time_is_kept_while_the_status_holds_and_reset_when_it_changes() {
    let c = Cluster::new(&[("a", 2, vec![node("a-1", true, 1000)])]);
    let memory = Memory::default();
    let d = Decisions::default();
    let first = c.status(&d, &memory, NOW, None);
    let second = c.status(&d, &memory, NOW + 10, Some(&first));
    let up = cluster_wide(&second).scale_up;
    assert_eq!(
        (up.last_probe_time, up.last_transition_time),
        (NOW + 10, NOW)
    );
    let a = group_of(&second, "a");
    assert_eq!(a.scale_up.last_transition_time, NOW);
    assert_eq!(a.health.last_transition_time, NOW);

    // The second node registers: scale-up goes quiet from now on.
    let grown = Cluster::new(&[("a", 2, vec![node("a-1", true, 1000), node("a-2", true, 5)])]);
    let third = grown.status(&d, &memory, NOW + 20, Some(&second));
    let up = cluster_wide(&third).scale_up;
    assert_eq!(up.status, ClusterScaleUp::NoActivity);
    assert_eq!(up.last_transition_time, NOW + 20);
    let a = group_of(&third, "a");
    assert_eq!(a.scale_up.last_transition_time, NOW + 20);
    assert_eq!(a.health.last_transition_time, NOW, "still healthy");
}

#[test]
fn nodes_are_counted_as_upstream_counts_them() {
    // `a`: one ready, one unready for an hour, one still starting, one instance unregistered for
    // long and one just launched; a node of no group, unready.
    let mut c = Cluster::new(&[(
        "a",
        5,
        vec![
            node("ready", true, 1000),
            node("broken", false, 3600),
            node("booting", false, 10),
        ],
    )]);
    c.groups = vec![group(
        "a",
        5,
        &["ready", "broken", "booting", "lost", "new"],
    )];
    c.nodes.push(node("stray", false, 10));
    let mut memory = Memory::default();
    memory
        .unregistered_since
        .insert("aws:///z/i-lost".into(), NOW - 3600);
    memory
        .unregistered_since
        .insert("aws:///z/i-new".into(), NOW - 5);
    memory.unneeded_since.insert("ready".into(), NOW - 60);
    memory.unneeded_since.insert("stray".into(), NOW - 60);
    let s = c.status(&Decisions::default(), &memory, NOW, None);
    let a = &group_of(&s, "a").node_counts;
    let r = &a.registered;
    assert_eq!(
        (r.total, r.ready, r.unready.total, r.not_started),
        (3, 1, 1, 1)
    );
    assert_eq!((a.unregistered, a.long_unregistered), (2, 1));
    let all = &cluster_wide(&s).node_counts.registered;
    assert_eq!(
        (all.total, all.unready.total),
        (4, 2),
        "a node of no group counts, unready at once"
    );
    assert_eq!(group_of(&s, "a").candidates, 1);
    assert_eq!(
        group_of(&s, "a").scale_down.status,
        ScaleDown::CandidatesPresent
    );
    assert_eq!(cluster_wide(&s).candidates, 1, "only the groups' nodes");
}

#[test]
fn a_failed_loop_keeps_the_last_conditions_and_says_why() {
    let c = Cluster::new(&[("a", 1, vec![node("a-1", true, 1000)])]);
    let last = c.status(&Decisions::default(), &Memory::default(), NOW, None);
    let failed = ClusterAutoscalerStatus::failed(Some(&last), NOW + 10, "cloud refresh failed: x");
    assert_eq!(failed.time, NOW + 10);
    assert_eq!(failed.message, "cloud refresh failed: x");
    assert_eq!(failed.cluster_wide, last.cluster_wide);
    assert_eq!(failed.node_groups, last.node_groups);
    let first = ClusterAutoscalerStatus::failed(None, NOW, "cloud refresh failed: x");
    assert_eq!(
        first.cluster_wide, None,
        "no conditions before a loop read the cloud"
    );
}

#[test]
fn condition_statuses_read_back_by_upstreams_names() {
    assert_eq!("Backoff".parse(), Ok(GroupScaleUp::Backoff));
    assert_eq!(ClusterScaleUp::Needed.to_string(), "Needed");
    let err = "Backoff".parse::<ClusterScaleUp>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown ClusterScaleUp condition status \"Backoff\""
    );
}
