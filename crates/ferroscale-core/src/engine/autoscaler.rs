//! One autoscaling loop, upstream's RunOnce, as a pure function of the world, the settings, what the
//! autoscaler remembers, the time and a clock for time budgets: which groups grow (`scale_up`), which nodes
//! go (`scale_down`), which instances are given up (`cleanup`), and a typed reason for every pod left
//! pending and every node kept (`reasons`). Shared by `ferroscale run` and `ferroscale simulate`.

use std::collections::HashMap;
use std::sync::Arc;

use super::cleanup::cleanup_instances;
use super::decisions::Decisions;
use super::memory::Memory;
use super::predicates::{first_fit, fits, NodeInfo};
use super::reasons::Pending;
use super::scale_down::scale_down;
use super::scale_up::scale_up;
use super::settings::Settings;
use crate::clock::Clock;
use crate::labels;
use crate::model::workload::{Node, Pdb, Pod};
use crate::model::{NodeGroup, TemplateNode};

/// What the loop sees.
pub struct World<'a> {
    pub nodes: &'a [Node],
    /// Node name → id of the group it belongs to (nodes of no group are kept and never scaled).
    pub node_groups: &'a HashMap<String, String>,
    /// Every live pod, bound or pending.
    pub pods: &'a [Pod],
    pub pdbs: &'a [Pdb],
    /// The pods DaemonSets would start on a new node.
    pub daemon_pods: &'a [Pod],
    pub groups: &'a [Arc<NodeGroup>],
}

/// What one loop works with: the world, the settings, the time, and the groups by id.
pub(super) struct Ctx<'a> {
    pub world: &'a World<'a>,
    pub settings: &'a Settings,
    /// Seconds since the epoch.
    pub now: i64,
    /// For time budgets.
    pub clock: &'a dyn Clock,
    pub groups: HashMap<&'a str, &'a NodeGroup>,
}

/// A node of a template, for simulations.
pub fn template_node(t: &TemplateNode, name: &str, group: &str) -> Node {
    let mut labels = t.labels.clone();
    labels.insert(labels::HOSTNAME.into(), name.into());
    labels.insert(labels::NODE_GROUP.into(), group.into());
    Node {
        name: name.into(),
        labels,
        taints: t.taints.clone(),
        allocatable: t.allocatable.clone(),
        ready: true,
        ..Default::default()
    }
}

/// A new node of a group with the DaemonSet pods that would start on it.
pub(super) fn new_node(group: &NodeGroup, name: &str, daemon_pods: &[Pod]) -> NodeInfo {
    let mut info = NodeInfo::new(template_node(&group.template, name, &group.id));
    for d in daemon_pods {
        if fits(d, &[], &info).is_ok() {
            info.add(d);
        }
    }
    info
}

/// One loop at `now` (seconds since the epoch); time budgets are measured on `clock`.
pub fn run_once(
    world: &World,
    settings: &Settings,
    memory: &mut Memory,
    now: i64,
    clock: &dyn Clock,
) -> Decisions {
    let ctx = Ctx {
        world,
        settings,
        now,
        clock,
        groups: world
            .groups
            .iter()
            .map(|g| (g.id.as_str(), g.as_ref()))
            .collect(),
    };
    let mut d = Decisions::default();

    // Cluster state: instances that failed or never registered go, and their group backs off.
    cleanup_instances(&ctx, memory, &mut d);
    let deleting: HashMap<&str, i32> =
        d.delete_instances.iter().fold(HashMap::new(), |mut m, x| {
            *m.entry(x.group.as_str()).or_default() += 1;
            m
        });

    // Existing nodes with their pods, then the nodes asked for but not registered yet.
    let mut infos: Vec<NodeInfo> = world.nodes.iter().cloned().map(NodeInfo::new).collect();
    let index: HashMap<&str, usize> = world
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    for p in world.pods {
        if let Some(&i) = p.node_name.as_deref().and_then(|n| index.get(n)) {
            infos[i].add(p);
        }
    }
    let existing = infos.len();
    let mut registered: HashMap<&str, i32> = HashMap::new();
    for g in world.node_groups.values() {
        *registered.entry(g.as_str()).or_default() += 1;
    }
    for g in world.groups {
        let upcoming = g.target_size
            - registered.get(g.id.as_str()).copied().unwrap_or(0)
            - deleting.get(g.id.as_str()).copied().unwrap_or(0);
        for k in 0..upcoming.max(0) {
            infos.push(new_node(
                g,
                &format!("{}-upcoming-{k}", g.id),
                world.daemon_pods,
            ));
        }
    }

    // Pods that need a scale-up: unschedulable, old enough, not expendable, and fitting nowhere now.
    let mut waiting: Vec<&Pod> = Vec::new();
    for p in world
        .pods
        .iter()
        .filter(|p| p.node_name.is_none() && p.meta.unschedulable)
    {
        if p.meta.priority < settings.expendable_pods_priority_cutoff {
            d.pending.push((p.key(), Pending::Expendable));
            continue;
        }
        if now - p.meta.created < settings.new_pod_scale_up_delay.as_secs() as i64 {
            d.pending.push((p.key(), Pending::TooNew));
            continue;
        }
        waiting.push(p);
    }
    let mut candidates: Vec<&Pod> = Vec::new();
    for (p, placed) in waiting
        .iter()
        .zip(first_fit(&waiting, &mut infos, |_| true))
    {
        match placed {
            Some(i) if i < existing => d
                .pending
                .push((p.key(), Pending::FitsOnNode(infos[i].node.name.clone()))),
            Some(i) => d.pending.push((
                p.key(),
                Pending::FitsOnUpcoming {
                    group: infos[i].node.labels[labels::NODE_GROUP].clone(),
                },
            )),
            None => candidates.push(p),
        }
    }

    scale_up(&ctx, memory, &candidates, &infos, existing, &mut d);
    if settings.scale_down_enabled && d.scale_up.is_empty() {
        scale_down(&ctx, memory, &mut infos, existing, &mut d);
    }
    d
}
