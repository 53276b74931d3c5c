//! What one loop works with, below the loop and its rooms (cleanup, scale-up, scale-down) so none of them
//! imports another: the world, the settings, the time, each group's template and nodes made of it.

use std::collections::HashMap;
use std::sync::Arc;

use super::memory::Memory;
use super::predicates::{fits, NodeInfo};
use super::reasons::Doubt;
use super::settings::Settings;
use super::taints::TaintConfig;
use super::templates::{good_candidate, GroupTemplate};
use crate::clock::Clock;
use crate::labels;
use crate::model::lifecycle::DisruptionReason;
use crate::model::workload::{Node, Pdb, Pod};
use crate::model::{NodeGroup, TemplateNode};

/// What the loop sees.
pub struct World<'a> {
    pub nodes: &'a [Node],
    /// Node name → id of the group it belongs to (nodes of no group are kept and never scaled).
    pub node_groups: &'a HashMap<String, String>,
    /// Every live pod, bound or pending.
    pub pods: &'a [Arc<Pod>],
    pub pdbs: &'a [Pdb],
    /// The pods DaemonSets would start on a new node.
    pub daemon_pods: &'a [Pod],
    pub groups: &'a [Arc<NodeGroup>],
    /// Nodes being removed in the background (drained or deleted), by name, with whether they are
    /// drained (had pods): never candidates again, and counted against min size and the parallelism caps.
    pub removing: &'a HashMap<String, bool>,
    /// Why the state read this loop cannot be trusted: while any, nothing is removed.
    pub doubts: &'a [Doubt],
    /// Nodes whose instance is going away (an interruption notice), by name, with why: their pods are
    /// placed again this loop, elsewhere or on new nodes, before the instance dies.
    pub interrupted: &'a HashMap<String, DisruptionReason>,
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
    /// Each group's template this loop, by group id (every group of the world has one).
    pub templates: HashMap<String, GroupTemplate>,
}

impl Ctx<'_> {
    /// The template of `g` this loop.
    pub fn template(&self, g: &NodeGroup) -> &GroupTemplate {
        &self.templates[&g.id]
    }
}

/// Each group's template at `now` (see `templates`): a copy of its first good node by age then name,
/// else the copy `memory` remembers from an earlier loop, else the cloud's. Copies of good nodes are
/// remembered for when the group has none (scaled to zero, all nodes starting or going), and forgotten
/// with their group, as upstream's template cache does.
pub(super) fn group_templates<'p>(
    world: &World,
    pods_on: impl Fn(&str) -> Vec<&'p Pod>,
    memory: &mut Memory,
    now: i64,
    taints: &TaintConfig,
) -> HashMap<String, GroupTemplate> {
    let mut best: HashMap<&str, &Node> = HashMap::new();
    for n in world.nodes {
        let Some(g) = world.node_groups.get(&n.name) else {
            continue;
        };
        if !good_candidate(n, now, world.removing.contains_key(&n.name), taints) {
            continue;
        }
        let e = best.entry(g.as_str()).or_insert(n);
        if (n.created, &n.name) < (e.created, &e.name) {
            *e = n;
        }
    }
    // The chosen nodes' pods, from the loop's NodeInfos (`pods_on`): not a walk over every pod.
    let mut bound: HashMap<&str, Vec<&Pod>> =
        best.iter().map(|(g, n)| (*g, pods_on(&n.name))).collect();
    memory
        .templates
        .retain(|id, _| world.groups.iter().any(|g| g.id == *id));
    let mut out = HashMap::with_capacity(world.groups.len());
    for g in world.groups {
        let t = match best.get(g.id.as_str()) {
            Some(n) => {
                let pods = bound.remove(g.id.as_str()).unwrap_or_default();
                let t = GroupTemplate::from_node(n, pods, &g.id, taints);
                memory.templates.insert(g.id.clone(), t.clone());
                t
            }
            None => memory
                .templates
                .get(&g.id)
                .cloned()
                .unwrap_or_else(|| GroupTemplate::cloud(g, taints)),
        };
        out.insert(g.id.clone(), t);
    }
    out
}

/// A node of a template, for simulations.
pub fn template_node(t: &TemplateNode, name: &str, group: &str) -> Node {
    let mut labels = t.labels.clone();
    labels.insert(labels::HOSTNAME.into(), name.into());
    labels.insert(labels::NODE_GROUP.into(), group.into());
    Node {
        name: name.into(),
        labels: labels.into(),
        taints: t.taints.clone(),
        allocatable: t.allocatable.clone(),
        capacity: t.capacity.clone(),
        volume_limits: t.volume_limits.clone(),
        ready: true,
        ..Default::default()
    }
}

/// A new node of a group, of its template this loop, with the pods that start on it: those of the real
/// node the template was copied from, or those of the DaemonSets that would run there.
pub(super) fn new_node(ctx: &Ctx, group: &NodeGroup, name: &str) -> NodeInfo {
    let t = ctx.template(group);
    let mut info = NodeInfo::new(Node {
        template: true,
        ..template_node(&t.node, name, &group.id)
    });
    match &t.pods {
        Some(pods) => {
            for p in pods.iter() {
                info.add(Pod {
                    node_name: Some(name.into()),
                    ..p.clone()
                });
            }
        }
        None => {
            for d in ctx.world.daemon_pods {
                if fits(d, &[], &info).is_ok() {
                    info.add(d.clone());
                }
            }
        }
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{group, node, resources, TestWorld};

    /// Each group's template at 1000 with these nodes (all of group `g`) and these being removed.
    fn templates(
        nodes: &[Node],
        groups: &[Arc<NodeGroup>],
        removing: &HashMap<String, bool>,
        memory: &mut Memory,
    ) -> HashMap<String, GroupTemplate> {
        let mut world = nodes
            .iter()
            .fold(TestWorld::default(), |w, n| w.node_of("g", n.clone()));
        world.groups = groups.to_vec();
        world.removing = removing.clone();
        let world = world.world();
        let pods_on = |name: &str| {
            let on = world
                .pods
                .iter()
                .filter(|p| p.node_name.as_deref() == Some(name));
            on.map(|p| &**p).collect()
        };
        group_templates(&world, pods_on, memory, 1000, &TaintConfig::default())
    }

    #[test]
    fn the_oldest_good_node_is_copied_and_remembered_until_its_group_goes() {
        let groups = [group("g").arc()];
        let mut memory = Memory::default();
        let none = HashMap::new();
        let good = |name: &str, created: i64, cpu_milli: i64| {
            node(name)
                .allocatable(resources(cpu_milli, 8 << 30, 20))
                .ready()
                .created(created)
                .build()
        };
        let nodes = [
            good("b", 10, 1000),
            good("a", 10, 2000),
            good("old", 5, 3000),
        ];
        let t = templates(&nodes, &groups, &none, &mut memory);
        assert_eq!(t["g"].copied_from.as_deref(), Some("old"));
        // Being removed, it is no template: the next oldest, then first by name.
        let removing = HashMap::from([("old".to_string(), false)]);
        let t = templates(&nodes, &groups, &removing, &mut memory);
        assert_eq!(t["g"].copied_from.as_deref(), Some("a"));
        assert_eq!(t["g"].node.allocatable.cpu_milli, 2000);
        // No node left: the last copy serves; without the group it is forgotten.
        let t = templates(&[], &groups, &none, &mut memory);
        assert_eq!(t["g"].copied_from.as_deref(), Some("a"));
        assert!(templates(&[], &[], &none, &mut memory).is_empty());
        assert!(memory.templates.is_empty());
        let t = templates(&[], &groups, &none, &mut memory);
        assert_eq!(
            t["g"],
            GroupTemplate::cloud(&groups[0], &TaintConfig::default())
        );
    }
}
