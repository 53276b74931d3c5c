//! `ferroscale simulate`: the autoscaling loop on a cluster snapshot with a virtual clock. The snapshot's
//! nodes are adopted by the groups of a memory-cloud file (by provider id or the `ferroscale.io/node-group`
//! label); each loop the simulated scheduler binds pending pods, the engine decides, and its decisions are
//! applied: new nodes join after `--provision-delay`, removed nodes' pods go back to pending.

use crate::labels;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::cloud::memory::{MemoryCloud, MemoryConfig};
use crate::cloud::Cloud;
use crate::engine::predicates::{first_fit, fits, NodeInfo};
use crate::engine::{run_once, template_node, Memory, Settings, World};
use crate::error::{Error, Result};
use crate::k8s::documents::Objects;
use crate::k8s::objects::Inputs;
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

/// One pod or node with why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Reasoned {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScaleUpReport {
    pub group: String,
    pub delta: i32,
    /// Nodes the cloud could not launch (the group is backed off).
    #[serde(skip_serializing_if = "is_zero")]
    pub failed: i32,
    pub pods: Vec<String>,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScaleDownReport {
    pub node: String,
    pub group: String,
    pub reason: String,
    pub evicted: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeleteReport {
    pub group: String,
    pub instance: String,
    pub reason: String,
}

/// Capacity given up in one group.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CancelReport {
    pub group: String,
    pub count: i32,
    pub reason: String,
}

/// What one loop decided, as printed on stdout (one JSON object per loop).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LoopReport {
    #[serde(rename = "loop")]
    pub loop_number: u32,
    /// Seconds of virtual time since the simulation started.
    pub time: i64,
    pub scale_up: Vec<ScaleUpReport>,
    pub scale_down: Vec<ScaleDownReport>,
    /// Instances deleted because they failed or never registered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub delete_instances: Vec<DeleteReport>,
    /// Capacity given up because its launch failed or it was not delivered in time.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cancel: Vec<CancelReport>,
    /// Set when too many nodes are unready: the loop decided nothing else.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unhealthy: Option<String>,
    pub pending: Vec<Reasoned>,
    pub unremovable: Vec<Reasoned>,
    /// Nodes after the loop's decisions, by group (`-` for nodes of no group).
    pub nodes: BTreeMap<String, usize>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub expander: Vec<String>,
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
            for n in nodes.iter_mut() {
                if node_groups.get(&n.name) == Some(&gc.name) {
                    if n.provider_id.is_empty() {
                        n.provider_id = format!("sim:///{}/{}", gc.name, n.name);
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
            cloud.adopt(&gc.name, instances, target)?;
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
    pub fn step(&mut self, settings: &Settings, pacing: &Pacing) -> LoopReport {
        self.loop_number += 1;
        self.cloud.set_provision_delay(pacing.provision_delay);
        self.join_nodes();
        self.schedule();
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
            interrupted: &HashMap::new(),
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
        for down in &d.scale_down {
            let provider_id = self
                .nodes
                .iter()
                .find(|n| n.name == down.node)
                .map(|n| n.provider_id.clone());
            if let Some(id) = provider_id {
                let _ = self.cloud.delete(&down.group, &[id]);
            }
            self.nodes.retain(|n| n.name != down.node);
            self.node_groups.remove(&down.node);
            // DaemonSet, mirror and terminating pods go with the node; the others come back pending.
            self.pods.retain(|p| {
                !(p.node_name.as_deref() == Some(down.node.as_str())
                    && (p.node_bound() || p.meta.deleted.is_some()))
            });
            for p in &mut self.pods {
                if p.node_name.as_deref() == Some(down.node.as_str()) {
                    Arc::make_mut(p).node_name = None;
                }
            }
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
}

/// A person's summary of one loop, for stderr.
pub fn summary(r: &LoopReport) -> String {
    let ups: Vec<String> = r
        .scale_up
        .iter()
        .map(|u| {
            let failed = if u.failed > 0 {
                format!(" ({} failed)", u.failed)
            } else {
                String::new()
            };
            format!("+{} {}{failed} for {} pods", u.delta, u.group, u.pods.len())
        })
        .collect();
    let downs: Vec<String> = r
        .scale_down
        .iter()
        .map(|s| format!("-{}", s.node))
        .collect();
    format!(
        "loop {} at +{}s: scale-up [{}], scale-down [{}], {} pods pending, {} nodes",
        r.loop_number,
        r.time,
        ups.join(", "),
        downs.join(", "),
        r.pending.len(),
        r.nodes.values().sum::<usize>()
    )
}
