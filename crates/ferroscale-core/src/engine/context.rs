//! What one loop works with, below the loop and its rooms (cleanup, scale-up, scale-down) so none of them
//! imports another: the world, the settings, the time, and nodes of a group's template.

use std::collections::HashMap;
use std::sync::Arc;

use super::predicates::{fits, NodeInfo};
use super::reasons::Doubt;
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
    /// Nodes being removed in the background (drained or deleted), by name, with whether they are
    /// drained (had pods): never candidates again, and counted against min size and the parallelism caps.
    pub removing: &'a HashMap<String, bool>,
    /// Why the state read this loop cannot be trusted: while any, nothing is removed.
    pub doubts: &'a [Doubt],
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
        capacity: t.capacity.clone(),
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
