//! `ferroscale simulate`: the autoscaling loop on a cluster snapshot with a virtual clock. The snapshot's
//! nodes are adopted by the groups of a memory-cloud file (by provider id or the `ferroscale.io/node-group`
//! label); each loop the simulated scheduler binds pending pods, the engine decides, and its decisions are
//! applied: new nodes join after `--provision-delay` (NotReady, Ready `--node-ready-delay` later; a
//! replay's groups each at their own calibrated times), removed nodes' pods go back to pending.

use crate::labels;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

mod cluster;
mod descheduling;
mod events;
mod evictions;
mod loop_report;
mod pacing;
mod real;
mod replay;
mod report;
mod timeline;
mod usage;

pub use cluster::{Boot, Refusal, SimCluster, SimView, State};
pub use events::{load_events, parse_events, Scheduled};
pub use pacing::{Pacing, StartUp};
pub use replay::{Answers, Figures, Replay};
pub use report::*;
pub use timeline::{calibrate, Calibration, GroupCalibration};

use crate::actuator::{Actuator, DrainSettings};
use crate::cloud::memory::{instance_price, InstanceLifecycle, MemoryCloud, MemoryConfig};
use crate::cloud::Cloud;
use crate::descheduler::Descheduler;
use crate::engine::taints::TaintConfig;
use crate::engine::{run_once_kept, Memory, Settings, World};
use crate::error::{Error, Result};
use crate::k8s::documents::Objects;
use crate::k8s::objects::Inputs;
use crate::metrics::LoopMetrics;
use crate::model::lifecycle::{NoticeKind, Noticed};
use crate::model::workload::Pod;
use crate::model::{instance_id, provider_id};
use crate::model::{Instance, InstanceState, NodeGroup};
use crate::pricing::PriceOverrides;

/// Whether any group of `config` consolidates under `settings` (its own policy, else `--consolidation`):
/// `simulate` then also runs without, for the report.
pub fn consolidates(
    config: &MemoryConfig,
    prices: &PriceOverrides,
    settings: &Settings,
) -> Result<bool> {
    let cloud = MemoryCloud::for_simulation(config, prices, 0)?;
    let any = cloud
        .snapshot()
        .groups()
        .any(|g| settings.consolidation_of(g).enabled());
    Ok(any)
}

/// A cluster and its groups under simulation: the groups live in a [`MemoryCloud`] on the simulation's
/// virtual clock, so every decision goes through the same checks, launch capacity and instance lifecycle
/// as `serve` and `run` on the memory cloud.
pub struct Simulation {
    /// The nodes and pods, shared with the actuator.
    cluster: SimCluster,
    daemon_pods: Vec<Pod>,
    cloud: Arc<MemoryCloud>,
    /// Carries decisions out as `run` does, on the simulated cluster.
    actuator: Actuator<SimCluster>,
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
    /// Nodes an event named, until they are gone (as `run` keeps them).
    interrupted: Noticed,
    /// Whether pending pods are bound before a loop (see [`Simulation::set_binding`]).
    binding: bool,
    /// `--deschedule-policy`: the descheduler (`run`'s, evicting through the simulated cluster) run
    /// after the loops its interval says.
    descheduler: Option<Descheduler<SimCluster>>,
    /// The dump's PriorityClasses (name → value), for the policy's `priorityThreshold.name`.
    priority_classes: std::collections::BTreeMap<String, i32>,
    /// The dump's metrics-server usage, for `metricsUtilization` (None: it has none).
    usage: Option<usage::DumpUsage>,
}

impl Simulation {
    /// Builds the simulation; errors name the document, object or group at fault.
    pub fn new(objects: &Objects, config: &MemoryConfig, prices: &PriceOverrides) -> Result<Self> {
        Self::from_inputs(objects.inputs()?, config, prices)
    }

    /// Builds the simulation on a dump already converted (`documents::inputs`).
    pub fn from_inputs(
        inputs: Inputs,
        config: &MemoryConfig,
        prices: &PriceOverrides,
    ) -> Result<Self> {
        let Inputs {
            mut nodes,
            pods,
            pdbs,
            daemon_pods,
            failed,
            priority_classes,
            usage,
        } = inputs;
        let usage = usage.map(|u| usage::DumpUsage::new(u, &nodes, &pods));
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
                g.instances
                    .iter()
                    .any(|i| !n.provider_id.is_empty() && instance_id(&n.provider_id) == i.id)
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
            // What each costs: its entry's price or lifecycle, else its capacity-type label's.
            let mut own_prices = BTreeMap::new();
            for n in nodes.iter_mut() {
                if node_groups.get(&n.name) == Some(&gc.name) {
                    if n.provider_id.is_empty() {
                        n.provider_id = provider_id::format(provider_id::SIM, &gc.name, &n.name);
                    }
                    let listed = gc
                        .instances
                        .iter()
                        .find(|i| instance_id(&n.provider_id) == i.id);
                    if let Some(rev) = listed
                        .and_then(|i| i.revision.clone())
                        .or_else(|| gc.revision.clone())
                    {
                        revisions.insert(n.provider_id.clone(), rev);
                    }
                    let lifecycle = listed
                        .and_then(|i| i.lifecycle)
                        .or_else(|| InstanceLifecycle::of_labels(&n.labels));
                    let own = listed.and_then(|i| i.price_per_hour);
                    if let Some(p) = instance_price(gc.prices(), lifecycle, own, prices) {
                        own_prices.insert(n.provider_id.clone(), p);
                    }
                    instances.push(Instance {
                        id: n.provider_id.clone(),
                        state: InstanceState::Running,
                        error: None,
                    });
                }
            }
            for i in &gc.instances {
                if !nodes.iter().any(|n| instance_id(&n.provider_id) == i.id) {
                    instances.push(Instance {
                        id: provider_id::format(provider_id::SIM, &gc.name, &i.id),
                        state: i.state,
                        error: i.error.clone(),
                    });
                }
            }
            let known = instances.len() as i32;
            let target = gc.target_size.unwrap_or(known).max(known);
            cloud.adopt(&gc.name, instances, target, revisions, own_prices)?;
        }
        let pods: Vec<Arc<Pod>> = pods.into_iter().map(Arc::new).collect();
        let cluster = SimCluster::new(State {
            nodes,
            node_groups,
            baselines: evictions::baselines(&pdbs, &pods),
            pdbs,
            pods,
            failed: failed.into_iter().map(Arc::new).collect(),
            now: start,
            ..State::default()
        });
        let cloud = Arc::new(cloud);
        // Evictions in the simulated cluster never wait: the drain flags do not matter.
        let drain = DrainSettings {
            max_pod_eviction_time: Duration::from_secs(120),
            max_graceful_termination: Duration::from_secs(600),
        };
        let actuator = Actuator::new(
            cloud.clone(),
            cluster.clone(),
            LoopMetrics::unregistered(),
            drain,
            false,
        );
        Ok(Simulation {
            cluster,
            daemon_pods,
            cloud,
            actuator,
            order: config.node_groups.iter().map(|g| g.name.clone()).collect(),
            memory: Memory::default(),
            start,
            now: start,
            loop_number: 0,
            events: Default::default(),
            handle_rebalance: false,
            interrupted: Noticed::default(),
            binding: true,
            descheduler: None,
            priority_classes,
            usage,
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
            for g in &due.never_ready {
                if self.cloud.snapshot().group(g).is_err() {
                    eprintln!("event at +{}s: {g} is no group; ignored", due.at);
                }
                self.cluster.state().never_ready.insert(g.clone());
            }
            for n in due.notices {
                if n.kind == NoticeKind::Rebalance && !self.handle_rebalance {
                    continue;
                }
                let state = self.cluster.state();
                let node = state.nodes.iter().find(|node| {
                    instance_id(&node.provider_id) == n.instance_id
                        && state.node_groups.contains_key(&node.name)
                });
                match node {
                    Some(node) => {
                        self.interrupted.note(&node.name, &n.kind);
                    }
                    None => eprintln!(
                        "event at +{}s: instance {} is no node of a group; ignored",
                        due.at, n.instance_id
                    ),
                }
            }
        }
    }

    /// A node of the simulation lost now, as the recording lost its namesake (a spot interruption, an
    /// instance that died): its instance goes, as a `--events` notice of that kind takes it, and the
    /// engine places its pods again. A node the simulation does not have (its own nodes are named
    /// apart from the recording's) or that belongs to no group is left alone.
    pub fn lose(&mut self, node: &str, spot: bool) {
        let known = self.cluster.state().node_groups.contains_key(node);
        if known {
            let kind = if spot {
                NoticeKind::SpotInterruption
            } else {
                NoticeKind::StateChange("terminated".into())
            };
            self.interrupted.note(node, &kind);
        }
    }

    /// What the cluster does by itself before a loop at the simulation's time: instances whose launch
    /// is done join as nodes (like the group's real nodes, as the engine's `memory` copied them), nodes
    /// whose start-up is done become Ready, and pending pods are bound. `run`'s twin test drives its loopback cluster with this too.
    pub fn cluster_moves(&self, memory: &Memory, pacing: &Pacing, taints: &TaintConfig) {
        let own = pacing.by_group.iter();
        self.cloud.set_provision_delays(
            pacing.provision_delay,
            own.map(|(g, s)| (g.as_str(), s.provision_delay)),
        );
        let ran = self.cloud.advance_to(self.now);
        let snapshot = self.cloud.snapshot();
        self.cluster.join(
            ran,
            &snapshot,
            memory,
            &self.daemon_pods,
            Boot {
                now: self.now,
                pacing,
                taints,
            },
        );
        self.cluster.start(self.now, taints);
        if self.binding {
            self.cluster.schedule();
        }
        let mut state = self.cluster.state();
        state.now = self.now;
        state.recount_budgets();
    }

    /// Whether the simulated kube-scheduler binds pending pods before each loop (on by default). Off, the
    /// pods stay as given: the conformance suite states a cluster as upstream's tests do, its pending
    /// pods already found unschedulable by a scheduler that may preempt, which this one does not.
    pub fn set_binding(&mut self, on: bool) {
        self.binding = on;
    }

    /// The simulated cluster's objects (shared: the actuator changes them).
    pub fn cluster(&self) -> &SimCluster {
        &self.cluster
    }

    /// The memory cloud the groups live in.
    pub fn cloud(&self) -> Arc<MemoryCloud> {
        self.cloud.clone()
    }

    /// The virtual time of the next loop (Unix seconds).
    pub fn now(&self) -> i64 {
        self.now
    }

    /// What the engine remembers between loops (backoffs, replacements under way): what tests check
    /// the loop's decisions against.
    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// The engine's memory to set up before a loop: a history the cluster does not show (an earlier
    /// scale-up, removal or failure), as upstream's tests register one before their first loop.
    pub fn memory_mut(&mut self) -> &mut Memory {
        &mut self.memory
    }

    /// Moves the virtual clock to `now` without running a loop.
    pub fn set_now(&mut self, now: i64) {
        self.now = now;
    }

    /// One loop: the kubelet and the scheduler run, due events are replayed, the engine decides and
    /// the actuator carries the decisions out as `run`'s does; then the clock moves on.
    pub fn step(&mut self, settings: &Settings, pacing: &Pacing) -> LoopReport {
        self.loop_number += 1;
        let now = self.now;
        self.cluster_moves(&self.memory, pacing, &settings.taints);
        self.replay_events();
        let interrupted = {
            let state = self.cluster.state();
            let present: std::collections::HashSet<&str> =
                state.nodes.iter().map(|n| n.name.as_str()).collect();
            self.interrupted.due(now, |n| present.contains(n))
        };
        self.actuator.book(&mut self.memory, now);
        if let Some(desched) = &self.descheduler {
            self.memory.descheduled = desched.recently_moved(now);
        }
        let groups = self.groups();
        let removing = self.actuator.in_flight();
        let d = {
            let mut guard = self.cluster.state();
            let state = &mut *guard;
            let world = World {
                nodes: &state.nodes,
                node_groups: &state.node_groups,
                pods: &state.pods,
                pdbs: &state.pdbs,
                daemon_pods: &self.daemon_pods,
                groups: &groups,
                removing: &removing,
                doubts: &[],
                interrupted: &interrupted,
            };
            run_once_kept(
                &world,
                settings,
                &mut self.memory,
                now,
                &crate::time::MONOTONIC,
                &mut state.placement,
            )
        };
        let view = SimView::of(&self.cluster, &d);
        // The report says what the actuator did: its log lines, meant for `run`'s operators, stay out of
        // the simulation's output.
        self.actuator
            .set_soft_taint_time(settings.max_bulk_soft_taint_time);
        let acted = tracing::dispatcher::with_default(&tracing::Dispatch::none(), || {
            futures::executor::block_on(self.actuator.act(&d, &view, &mut self.memory, now))
        });
        self.remember_moved(&acted, now);
        self.cluster.forget_gone(&*self.cloud);
        let mut report = loop_report::of_loop(self.loop_number, now - self.start, &d, &acted);
        // As `run`: nothing is planned onto nodes being removed, being emptied or whose instance is
        // going away; the nodes the plan empties go to scale-down.
        let removing = self
            .actuator
            .in_flight()
            .into_keys()
            .chain(interrupted.keys().cloned())
            .chain(self.memory.emptying.keys().cloned())
            .collect();
        if let Some((cycle, planned)) = self.deschedule(removing, &d, now) {
            self.memory.set_emptying(&planned.emptied, now);
            report::add_descheduling(&mut report, &planned, &cycle);
        }
        {
            let mut state = self.cluster.state();
            report.evictions_refused = std::mem::take(&mut state.refused)
                .into_iter()
                .map(|r| RefusedReport {
                    pod: r.pod,
                    node: r.node,
                    reason: r.reason,
                })
                .collect();
            let snapshot = self.cloud.snapshot();
            let mut cost = 0.0;
            for n in &state.nodes {
                let g = state.node_groups.get(&n.name).map_or("-", String::as_str);
                *report.nodes.entry(g.to_string()).or_default() += 1;
                if let Ok(group) = snapshot.group(g) {
                    cost += group.price_of(&n.provider_id).unwrap_or(0.0);
                }
            }
            report.cost_per_hour = Some(cost);
        }
        self.now += crate::model::duration::secs(pacing.scan_interval).max(1);
        report
    }
}
