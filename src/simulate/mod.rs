//! `ferroscale simulate`: the autoscaling loop on a cluster snapshot with a virtual clock. The snapshot's
//! nodes are adopted by the groups of a memory-cloud file (by provider id or the `ferroscale.io/node-group`
//! label); each loop the simulated scheduler binds pending pods, the engine decides, and its decisions are
//! applied: new nodes join after `--provision-delay`, removed nodes' pods go back to pending.

use crate::labels;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

mod events;
mod report;

pub use events::{load_events, parse_events, Scheduled};
pub use report::*;

use crate::cloud::memory::{MemoryCloud, MemoryConfig};
use crate::cloud::Cloud;
use crate::engine::predicates::{first_fit, fits, NodeInfo};
use crate::engine::{run_once, template_node, Memory, Settings, World};
use crate::error::{Error, Result};
use crate::k8s::documents::Objects;
use crate::k8s::objects::Inputs;
use crate::model::instance_id;
use crate::model::lifecycle::{DisruptionReason, NoticeKind};
use crate::model::workload::{Node, Pdb, Pod};
use crate::model::{Instance, InstanceState, NodeGroup};
use crate::pricing::PriceOverrides;

/// The clock and pacing of a simulation.
#[derive(Debug, Clone)]
pub struct Pacing {
    pub loops: u32,
    /// `--scan-interval`: virtual time between loops.
    pub scan_interval: Duration,
    /// `--provision-delay`: from scale-up to the node joining (0: at the next loop).
    pub provision_delay: Duration,
}

/// A cluster and its groups under simulation: the groups live in a [`MemoryCloud`] on the simulation's
/// virtual clock, so every decision goes through the same checks, launch capacity and instance lifecycle
/// as `serve` and `run` on the memory cloud.
pub struct Simulation {
    nodes: Vec<Node>,
    node_groups: HashMap<String, String>,
    pods: Vec<Arc<Pod>>,
    pdbs: Vec<Pdb>,
    daemon_pods: Vec<Pod>,
    cloud: MemoryCloud,
    /// Group ids in the order of the node-groups file (the engine sees them so).
    order: Vec<String>,
    memory: Memory,
    start: i64,
    now: i64,
    loop_number: u32,
    /// `--events` not replayed yet, in time order.
    events: std::collections::VecDeque<Scheduled>,
    /// `--handle-rebalance-recommendations`.
    handle_rebalance: bool,
    /// Nodes an event named, until they are gone.
    interrupted: HashMap<String, DisruptionReason>,
}

impl Simulation {
    /// Builds the simulation; errors name the document, object or group at fault.
    pub fn new(objects: &Objects, config: &MemoryConfig, prices: &PriceOverrides) -> Result<Self> {
        let Inputs {
            mut nodes,
            mut pods,
            pdbs,
            daemon_pods,
        } = Inputs::convert(
            &objects.nodes,
            &objects.pods,
            &objects.pdbs,
            &objects.daemonsets,
            &objects.storage(),
            Err,
        )?;
        crate::k8s::owners::set_owner_replicas(
            &mut pods,
            objects.replicasets.iter(),
            objects.replication_controllers.iter(),
        );
        let start = pods
            .iter()
            .map(|p| p.meta.created)
            .chain(nodes.iter().map(|n| n.created))
            .max()
            .unwrap_or(0);
        // Templates, bounds, options and prices come from the memory cloud; sizes from the nodes adopted.
        let cloud = MemoryCloud::for_simulation(config, prices, start)?;
        let snapshot = cloud.snapshot();
        let mut node_groups = HashMap::new();
        for n in &nodes {
            let by_label = n.labels.get(labels::NODE_GROUP).cloned();
            let by_instance = config.node_groups.iter().find(|g| {
                g.instances.iter().any(|i| {
                    !n.provider_id.is_empty() && n.provider_id.ends_with(&format!("/{}", i.id))
                })
            });
            let group = by_instance.map(|g| g.name.clone()).or(by_label);
            if let Some(g) = group {
                if snapshot.group(&g).is_err() {
                    return Err(Error::config(format!(
                        "node {}: label {}={g} names no group of the node-groups file",
                        n.name,
                        labels::NODE_GROUP
                    )));
                }
                node_groups.insert(n.name.clone(), g);
            }
        }
        for gc in &config.node_groups {
            // The group's instances are its nodes, plus listed instances no node has (never registered).
            let mut instances = Vec::new();
            // The revision each was launched from: its entry's, else the group's (not drifted).
            let mut revisions = BTreeMap::new();
            for n in nodes.iter_mut() {
                if node_groups.get(&n.name) == Some(&gc.name) {
                    if n.provider_id.is_empty() {
                        n.provider_id = format!("sim:///{}/{}", gc.name, n.name);
                    }
                    let listed = gc
                        .instances
                        .iter()
                        .find(|i| n.provider_id.ends_with(&format!("/{}", i.id)));
                    if let Some(rev) = listed
                        .and_then(|i| i.revision.clone())
                        .or_else(|| gc.revision.clone())
                    {
                        revisions.insert(n.provider_id.clone(), rev);
                    }
                    instances.push(Instance {
                        id: n.provider_id.clone(),
                        state: InstanceState::Running,
                        error: None,
                    });
                }
            }
            for i in &gc.instances {
                if !nodes
                    .iter()
                    .any(|n| n.provider_id.ends_with(&format!("/{}", i.id)))
                {
                    instances.push(Instance {
                        id: format!("sim:///{}/{}", gc.name, i.id),
                        state: i.state,
                        error: i.error.clone(),
                    });
                }
            }
            let known = instances.len() as i32;
            let target = gc.target_size.unwrap_or(known).max(known);
            cloud.adopt(&gc.name, instances, target, revisions)?;
        }
        Ok(Simulation {
            nodes,
            node_groups,
            pods: pods.into_iter().map(Arc::new).collect(),
            pdbs,
            daemon_pods,
            cloud,
            order: config.node_groups.iter().map(|g| g.name.clone()).collect(),
            memory: Memory::default(),
            start,
            now: start,
            loop_number: 0,
            events: Default::default(),
            handle_rebalance: false,
            interrupted: HashMap::new(),
        })
    }

    /// The groups as the cloud holds them now, in the node-groups file's order.
    fn groups(&self) -> Vec<Arc<NodeGroup>> {
        let snapshot = self.cloud.snapshot();
        self.order
            .iter()
            .filter_map(|id| snapshot.group(id).ok().cloned())
            .collect()
    }

    /// Each group's price of one node per hour (after `--price-overrides`), in the node-groups file's order.
    pub fn prices(&self) -> Vec<(String, Option<f64>)> {
        self.groups()
            .iter()
            .map(|g| (g.id.clone(), g.price_per_hour))
            .collect()
    }

    /// Nodes of the instances that started running, with the DaemonSet pods that start on them. A node
    /// joins as the engine's template of its group said it would: like the group's real nodes when it
    /// had one (their labels, taints, allocatable and DaemonSet pods), else as the cloud's template.
    fn join_nodes(&mut self) {
        let now = self.now;
        let snapshot = self.cloud.snapshot();
        for (group, instance) in self.cloud.advance_to(now) {
            let Ok(g) = snapshot.group(&group) else {
                continue;
            };
            let name = format!("{group}-{}", instance.rsplit('/').next().unwrap_or("node"));
            let copied = self.memory.templates.get(&group);
            let template = copied.map_or(&g.template, |t| &t.node);
            let mut node = template_node(template, &name, &group);
            node.created = now;
            node.ready_since = now;
            node.provider_id = instance.clone();
            let mut info = NodeInfo::new(node.clone());
            let starting: Vec<&Pod> = match copied.and_then(|t| t.pods.as_ref()) {
                Some(pods) => pods.iter().collect(),
                None => self
                    .daemon_pods
                    .iter()
                    .filter(|d| fits(d, &[], &info).is_ok())
                    .collect(),
            };
            let mut started = Vec::with_capacity(starting.len());
            for d in starting {
                let mut p = d.clone();
                p.name = format!("{}-{name}", d.name);
                p.node_name = Some(name.clone());
                p.meta.created = now;
                info.add(&p);
                started.push(p);
            }
            self.pods.extend(started.into_iter().map(Arc::new));
            self.node_groups.insert(name, group);
            self.nodes.push(node);
        }
    }

    /// The simulated scheduler: binds each pending pod to the first node it fits, by priority then age;
    /// the others are marked unschedulable, as the real scheduler would.
    fn schedule(&mut self) {
        let mut infos: Vec<NodeInfo> = self.nodes.iter().cloned().map(NodeInfo::new).collect();
        let index: HashMap<String, usize> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i))
            .collect();
        for p in &self.pods {
            if let Some(&i) = p.node_name.as_ref().and_then(|n| index.get(n)) {
                infos[i].add(Arc::clone(p));
            }
        }
        let mut pending: Vec<usize> = (0..self.pods.len())
            .filter(|&i| self.pods[i].node_name.is_none())
            .collect();
        pending.sort_by_key(|&i| (-self.pods[i].meta.priority, self.pods[i].meta.created));
        let ready: Vec<bool> = self.nodes.iter().map(|n| n.ready).collect();
        let placed = {
            let pods: Vec<&Pod> = pending.iter().map(|&i| &*self.pods[i]).collect();
            first_fit(&pods, &mut infos, |n| ready[n])
        };
        for (i, at) in pending.into_iter().zip(placed) {
            let p = Arc::make_mut(&mut self.pods[i]);
            match at {
                Some(n) => {
                    p.node_name = Some(self.nodes[n].name.clone());
                    p.meta.unschedulable = false;
                }
                None => p.meta.unschedulable = true,
            }
        }
    }

    /// Runs one loop and applies its decisions.
    /// Replays `events` (`--events`) as the clock reaches them; rebalance recommendations only with
    /// `handle_rebalance`.
    pub fn set_events(&mut self, events: Vec<Scheduled>, handle_rebalance: bool) {
        self.events = events.into();
        self.handle_rebalance = handle_rebalance;
    }

    /// Marks the nodes the events due by now name (by the instance id their provider id ends with).
    fn replay_events(&mut self) {
        while self
            .events
            .front()
            .is_some_and(|e| e.at <= self.now - self.start)
        {
            let Some(due) = self.events.pop_front() else {
                break;
            };
            for n in due.notices {
                if n.kind == NoticeKind::Rebalance && !self.handle_rebalance {
                    continue;
                }
                let node = self.nodes.iter().find(|node| {
                    instance_id(&node.provider_id) == n.instance_id
                        && self.node_groups.contains_key(&node.name)
                });
                match node {
                    Some(node) => {
                        self.interrupted
                            .entry(node.name.clone())
                            .or_insert(n.kind.reason());
                    }
                    None => eprintln!(
                        "event at +{}s: instance {} is no node of a group; ignored",
                        due.at, n.instance_id
                    ),
                }
            }
        }
    }

    pub fn step(&mut self, settings: &Settings, pacing: &Pacing) -> LoopReport {
        self.loop_number += 1;
        self.cloud.set_provision_delay(pacing.provision_delay);
        self.join_nodes();
        self.schedule();
        self.replay_events();
        let interrupted = std::mem::take(&mut self.interrupted);
        let groups = self.groups();
        let world = World {
            nodes: &self.nodes,
            node_groups: &self.node_groups,
            pods: &self.pods,
            pdbs: &self.pdbs,
            daemon_pods: &self.daemon_pods,
            groups: &groups,
            // Removals are carried out at once: none is ever in flight between loops.
            removing: &HashMap::new(),
            doubts: &[],
            interrupted: &interrupted,
        };
        let now = self.now;
        let d = run_once(
            &world,
            settings,
            &mut self.memory,
            now,
            &crate::time::MONOTONIC,
        );
        let mut report = LoopReport {
            loop_number: self.loop_number,
            time: now - self.start,
            scale_up: Vec::new(),
            scale_down: Vec::new(),
            delete_instances: Vec::new(),
            cancel: Vec::new(),
            unhealthy: d.unhealthy.as_ref().map(ToString::to_string),
            pending: d
                .pending
                .iter()
                .map(|(p, r)| Reasoned {
                    pod: Some(p.clone()),
                    node: None,
                    reason: r.to_string(),
                })
                .collect(),
            unremovable: d
                .unremovable
                .iter()
                .map(|(n, r)| Reasoned {
                    pod: None,
                    node: Some(n.clone()),
                    reason: r.to_string(),
                })
                .collect(),
            nodes: BTreeMap::new(),
            expander: d.expander.clone(),
            disruptions: Vec::new(),
            replacements: d
                .replacements
                .iter()
                .map(|r| ReplacementReport {
                    group: r.group.clone(),
                    delta: r.delta,
                    for_nodes: r.for_nodes.clone(),
                })
                .collect(),
        };
        for del in &d.delete_instances {
            if self
                .cloud
                .delete(&del.group, std::slice::from_ref(&del.instance))
                .is_ok()
            {
                report.delete_instances.push(DeleteReport {
                    group: del.group.clone(),
                    instance: del.instance.clone(),
                    reason: del.reason.to_string(),
                });
            }
        }
        for c in &d.cancel {
            if self.cloud.decrease(&c.group, -c.count).is_ok() {
                report.cancel.push(CancelReport {
                    group: c.group.clone(),
                    count: c.count,
                    reason: c.reason.to_string(),
                });
            }
        }
        for up in &d.scale_up {
            let unfulfilled = |cloud: &MemoryCloud| {
                cloud
                    .snapshot()
                    .group(&up.group)
                    .map_or(0, |g| g.placeholder_count() as i32)
            };
            let before = unfulfilled(&self.cloud);
            // What the cloud could not launch shows now; the engine gives it up and backs the group off
            // in the next loop, as it does in `run`.
            let failed = match self.cloud.increase(&up.group, up.delta) {
                Ok(()) => (unfulfilled(&self.cloud) - before).max(0),
                Err(_) => up.delta,
            };
            report.scale_up.push(ScaleUpReport {
                group: up.group.clone(),
                delta: up.delta,
                failed,
                pods: up.pods.clone(),
            });
        }
        if !d.scale_down.is_empty() {
            self.memory.last_scale_down_delete = Some(now);
        }
        // Disrupted nodes go at once (their instance is deleted, the group shrinks back): their pods
        // come back pending and take the replacement the loop asked for.
        for x in &d.disruptions {
            let Some(group) = x.group.clone() else {
                continue;
            };
            // Drifted and expired nodes go as the scale-downs below (after their replacement joined).
            if x.reason.from_notice() {
                self.take_out(&x.node, &group);
            }
            report.disruptions.push(DisruptionReport {
                node: x.node.clone(),
                group,
                reason: x.reason.to_string(),
            });
        }
        for down in &d.scale_down {
            self.take_out(&down.node, &down.group);
            report.scale_down.push(ScaleDownReport {
                node: down.node.clone(),
                group: down.group.clone(),
                reason: down.reason.to_string(),
                evicted: down.evict.clone(),
            });
        }
        for n in &self.nodes {
            let g = self
                .node_groups
                .get(&n.name)
                .cloned()
                .unwrap_or_else(|| "-".into());
            *report.nodes.entry(g).or_default() += 1;
        }
        self.now += pacing.scan_interval.as_secs().max(1) as i64;
        report
    }

    /// Deletes a node's instance (its group shrinks) and the node; DaemonSet, mirror and terminating pods
    /// go with it, the others come back pending.
    fn take_out(&mut self, node: &str, group: &str) {
        let provider_id = self
            .nodes
            .iter()
            .find(|n| n.name == node)
            .map(|n| n.provider_id.clone());
        if let Some(id) = provider_id {
            let _ = self.cloud.delete(group, &[id]);
        }
        self.nodes.retain(|n| n.name != node);
        self.node_groups.remove(node);
        self.pods.retain(|p| {
            !(p.node_name.as_deref() == Some(node) && (p.node_bound() || p.meta.deleted.is_some()))
        });
        for p in &mut self.pods {
            if p.node_name.as_deref() == Some(node) {
                Arc::make_mut(p).node_name = None;
            }
        }
    }
}
