//! The simulated cluster: nodes and pods under a virtual clock, with a kubelet (new instances join as
//! nodes, with their DaemonSet pods, NotReady until they have started), a scheduler (pending pods bound to the first node they fit), a
//! node lifecycle controller (nodes whose instance is gone leave) and, as the actuator's [`Cluster`],
//! the API `run` talks to: taints, cordons, evictions (`evictions`: through the PodDisruptionBudgets,
//! an evicted pod comes back pending, as its controller recreates it) and events (dropped).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;

use super::Pacing;
use crate::actuator::{
    Attempt, Cluster, DrainSettings, EventKind, Evictee, Lookup, Mark, NodeRef, Regarding,
};
use crate::cloud::{Cloud, WriteGuard};
use crate::engine::intents::Intent;
use crate::engine::placement::{Placed, Placement};
use crate::engine::predicates::{first_fit, fits, NodeInfo};
use crate::engine::taints::TaintConfig;
use crate::engine::{template_node, Decisions, Memory};
use crate::error::{Error, Result};
use crate::model::duration::secs;
use crate::model::workload::{Node, Pdb, Pod};
use crate::model::{Snapshot, Taint, TaintEffect};

/// The taint the node lifecycle controller puts on a node that is not Ready.
const NOT_READY: &str = "node.kubernetes.io/not-ready";

/// The cluster's objects.
#[derive(Debug, Default)]
pub struct State {
    pub nodes: Vec<Node>,
    /// Node name → its group.
    pub node_groups: HashMap<String, String>,
    pub pods: Vec<Arc<Pod>>,
    /// Pods in phase `Failed` still bound to their node (the dump's; the descheduler's
    /// `RemoveFailedPods` deletes them, the pod garbage collector when their node goes).
    pub failed: Vec<Arc<Pod>>,
    /// Nodes still starting, by name, with when they become Ready (seconds since the epoch).
    pub booting: HashMap<String, i64>,
    /// Groups whose new nodes never become Ready (`--events` `neverReady`).
    pub never_ready: HashSet<String>,
    /// The PodDisruptionBudgets, their `disruptionsAllowed` as the eviction API counts it down and the
    /// PDB controller recomputes it ([`State::recount_budgets`]).
    pub pdbs: Vec<Pdb>,
    /// Each budget as the dump gave it (in `pdbs`' order).
    pub baselines: Vec<Baseline>,
    /// Each pod's incarnation (by key; 0 when absent): its UID, for the eviction's precondition.
    pub incarnations: HashMap<String, u32>,
    /// Evictions refused since the loop's report last took them.
    pub refused: Vec<Refusal>,
    /// The simulation's time (seconds since the epoch), as of the loop running.
    pub now: i64,
    /// Each node's `ferroscale.io/intent` annotation, as the actuator wrote it.
    pub intents: HashMap<String, String>,
    /// Evictions the simulated API carried out, by any method, since the start.
    pub evicted: u64,
    /// Which pods are bound where, kept between loops for the engine and the scheduler: each reads
    /// only the pods that changed since.
    pub placement: Placement,
}

/// A budget as the dump gave it: the pods it covered that were running, and what it allowed (see
/// `evictions` for how the allowance recovers).
#[derive(Debug, Clone, Copy, Default)]
pub struct Baseline {
    pub running: i32,
    pub allowed: i32,
}

/// An eviction the simulated API refused, for the loop's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub pod: String,
    pub node: String,
    pub reason: String,
}

/// Each node with the pods bound to it (in `nodes`' order), and each node's index by name: what the
/// scheduler and the descheduler's moves place pods on.
pub fn bound<'a>(
    nodes: &'a [Node],
    pods: &'a [Arc<Pod>],
) -> (Vec<NodeInfo>, foldhash::HashMap<&'a str, usize>) {
    let placed = Placed::fresh(nodes, pods, i32::MIN);
    (placed.infos, placed.index)
}

/// How nodes joining in one loop start: at `now`, Ready their group's `node_ready_delay` (`pacing`
/// says it) later, with the group's start-up taints (`taints` says which) until then.
#[derive(Clone, Copy)]
pub struct Boot<'a> {
    pub now: i64,
    pub pacing: &'a Pacing,
    pub taints: &'a TaintConfig,
}

/// The simulated cluster, shared by the simulation and its actuator.
#[derive(Clone, Default)]
pub struct SimCluster(Arc<Mutex<State>>);

impl SimCluster {
    pub fn new(state: State) -> Self {
        SimCluster(Arc::new(Mutex::new(state)))
    }

    /// The objects, locked while the guard lives.
    pub fn state(&self) -> parking_lot::MutexGuard<'_, State> {
        self.0.lock()
    }

    /// Nodes of the instances that started running (as the cloud's clock says at `now`), with the
    /// DaemonSet pods that start on them. A node joins as the engine's template of its group said it
    /// would: like the group's real nodes when it had one (their labels, taints, allocatable and
    /// DaemonSet pods), else as the cloud's template. It registers NotReady, with the
    /// `node.kubernetes.io/not-ready` taint and the group's start-up taints, until [`Self::start`]
    /// makes it Ready its group's ready delay later.
    pub fn join(
        &self,
        ran: Vec<(String, String)>,
        snapshot: &Snapshot,
        memory: &Memory,
        daemon_pods: &[Pod],
        boot: Boot,
    ) {
        let Boot {
            now,
            pacing,
            taints,
        } = boot;
        let mut state = self.state();
        for (group, instance) in ran {
            let Ok(g) = snapshot.group(&group) else {
                continue;
            };
            let name = format!("{group}-{}", crate::model::instance_id(&instance));
            let copied = memory.templates.get(&group);
            let template = copied.map_or(&g.template, |t| &t.node);
            let mut node = template_node(template, &name, &group);
            node.created = now;
            node.seen = now;
            node.ready_since = now;
            node.provider_id = instance.clone();
            node.ready = false;
            node.taints.push(Taint {
                key: NOT_READY.into(),
                value: String::new(),
                effect: TaintEffect::NoSchedule,
            });
            let startup = g.template.taints.iter().filter(|t| taints.is_startup(t));
            for t in startup {
                if !node.taints.contains(t) {
                    node.taints.push(t.clone());
                }
            }
            let mut info = NodeInfo::new(node.clone());
            let starting: Vec<&Pod> = match copied.and_then(|t| t.pods.as_ref()) {
                Some(pods) => pods.iter().collect(),
                None => daemon_pods
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
            state.pods.extend(started.into_iter().map(Arc::new));
            if !state.never_ready.contains(&group) {
                let ready_delay = secs(pacing.start_up(&group).node_ready_delay);
                state.booting.insert(name.clone(), now + ready_delay.max(0));
            }
            state.node_groups.insert(name, group);
            state.nodes.push(node);
        }
    }

    /// The kubelet: nodes whose start-up is done by `now` become Ready (since then), their not-ready
    /// and start-up taints gone.
    pub fn start(&self, now: i64, taints: &TaintConfig) {
        let mut guard = self.state();
        let state = &mut *guard;
        let booting = &mut state.booting;
        for n in state.nodes.iter_mut() {
            let Some(&at) = booting.get(&n.name).filter(|&&at| at <= now) else {
                continue;
            };
            booting.remove(&n.name);
            n.ready = true;
            n.ready_since = at;
            n.taints
                .retain(|t| t.key != NOT_READY && !taints.is_startup(t));
        }
        let names: HashSet<&str> = state.nodes.iter().map(|n| n.name.as_str()).collect();
        booting.retain(|n, _| names.contains(n.as_str()));
    }

    /// The scheduler: binds each pending pod to the first ready node it fits, by priority then age;
    /// the others are marked unschedulable, as the real scheduler would.
    pub fn schedule(&self) {
        let mut guard = self.state();
        let state = &mut *guard;
        state.placement.refresh(&state.pods);
        let mut pending: Vec<usize> = state.placement.pending().collect();
        if pending.is_empty() {
            return;
        }
        let Placed {
            mut infos,
            expendable,
            ..
        } = state.placement.placed(&state.nodes);
        // The scheduler sees every bound pod, the expendable ones too.
        for (i, p) in expendable {
            infos[i].add(Arc::clone(p));
        }
        pending.sort_by_key(|&i| (-state.pods[i].meta.priority, state.pods[i].meta.created));
        let ready: Vec<bool> = state.nodes.iter().map(|n| n.ready).collect();
        let placed = {
            let pods: Vec<&Pod> = pending.iter().map(|&i| &*state.pods[i]).collect();
            first_fit(&pods, &mut infos, |n| ready[n])
        };
        for (i, at) in pending.into_iter().zip(placed) {
            let name = at.map(|n| state.nodes[n].name.clone());
            let p = Arc::make_mut(&mut state.pods[i]);
            p.meta.unschedulable = name.is_none();
            p.node_name = name;
        }
    }

    /// The node lifecycle controller: nodes of a group whose instance the cloud no longer has leave;
    /// their DaemonSet, mirror and terminating pods go with them, the others come back pending.
    pub fn forget_gone(&self, cloud: &dyn Cloud) {
        let snapshot = cloud.snapshot();
        let mut state = self.state();
        // Every group's instances once (walking a group's instances for each node was quadratic).
        let instances: HashSet<(&str, &str)> = snapshot
            .groups()
            .flat_map(|g| g.instances.iter().map(|i| (g.id.as_str(), i.id.as_str())))
            .collect();
        let gone: Vec<String> = state
            .nodes
            .iter()
            .filter(|n| {
                state.node_groups.get(&n.name).is_some_and(|g| {
                    snapshot.group(g).is_ok()
                        && !instances.contains(&(g.as_str(), n.provider_id.as_str()))
                })
            })
            .map(|n| n.name.clone())
            .collect();
        if gone.is_empty() {
            return;
        }
        for node in gone {
            state.nodes.retain(|n| n.name != node);
            state.node_groups.remove(&node);
            state.pods.retain(|p| {
                !(p.node_name.as_deref() == Some(node.as_str())
                    && (p.node_bound() || p.meta.deleted.is_some()))
            });
            state
                .failed
                .retain(|p| p.node_name.as_deref() != Some(node.as_str()));
            for p in &mut state.pods {
                if p.node_name.as_deref() == Some(node.as_str()) {
                    Arc::make_mut(p).node_name = None;
                }
            }
        }
    }

    fn with_node(&self, name: &str, change: impl FnOnce(&mut Node)) {
        if let Some(n) = self.state().nodes.iter_mut().find(|n| n.name == name) {
            change(n);
        }
    }
}

#[async_trait]
impl Cluster for SimCluster {
    fn may_act(&self, _what: &str) -> Result<()> {
        Ok(())
    }

    fn write_guard(&self) -> WriteGuard {
        WriteGuard::always()
    }

    async fn set_taint(&self, node: &str, mark: Mark, on: bool, now: i64) -> Result<()> {
        self.with_node(node, |n| {
            n.taints.retain(|t| t.key != mark.key());
            if on {
                n.taints.push(Taint {
                    key: mark.key().into(),
                    value: now.to_string(),
                    effect: mark.effect(),
                });
            }
        });
        Ok(())
    }

    async fn set_intent(&self, node: &str, intent: Option<&Intent>) -> Result<()> {
        let mut state = self.state();
        match intent {
            Some(i) if state.nodes.iter().any(|n| n.name == node) => {
                state.intents.insert(node.to_string(), i.encode());
            }
            _ => {
                state.intents.remove(node);
            }
        }
        Ok(())
    }

    async fn cordon(&self, node: &str, on: bool) -> Result<bool> {
        let mut changed = false;
        self.with_node(node, |n| {
            changed = n.unschedulable != on;
            n.unschedulable = on;
        });
        Ok(changed)
    }

    /// One request through the budgets (see `evictions`): the pod leaves its node at once, a
    /// terminating one is gone, any other comes back pending. A budget's refusal is final here: the
    /// simulation's budgets recover between loops only, and its clock does not move while it acts, so
    /// the drain's retries until `--max-pod-eviction-time` would all be refused too.
    async fn evict(&self, pod: &Evictee, settings: &DrainSettings) -> Result<()> {
        match self.state().evict(pod, None) {
            Attempt::Evicted | Attempt::Gone => Ok(()),
            Attempt::Refused(why) | Attempt::Failed(why) => Err(Error::Eviction {
                pod: pod.key(),
                reason: format!("gave up after {:?}: {why}", settings.max_pod_eviction_time),
            }),
        }
    }

    async fn evict_once(&self, pod: &Evictee, _grace: i64, to: &str) -> Attempt {
        self.state().evict(pod, Some(to))
    }

    async fn pods_on(&self, node: &str) -> Result<Vec<Evictee>> {
        let state = self.state();
        Ok(state
            .pods
            .iter()
            .filter(|p| p.node_name.as_deref() == Some(node) && !p.node_bound())
            .map(|p| state.evictee(p))
            .collect())
    }

    fn event(&self, _: Regarding, _: EventKind, _: &'static str, _: String) {}
}

/// The pods and nodes one loop's decisions name, looked up once (the actuator asks for each).
pub struct SimView {
    pods: HashMap<String, Evictee>,
    nodes: HashMap<String, NodeRef>,
    on_node: HashMap<String, Vec<Evictee>>,
    intents: Vec<(String, String)>,
    disrupted: Vec<String>,
}

impl SimView {
    /// What `d` names, as the cluster holds it now.
    pub fn of(cluster: &SimCluster, d: &Decisions) -> Self {
        // The pods named, by namespace and name: no key is made for each of the cluster's pods below.
        let voluntary = d.disruptions.iter().filter_map(|x| match &x.notice {
            Some(crate::engine::NoticeDrain::Voluntary { evict, .. }) => Some(evict),
            _ => None,
        });
        let wanted: HashSet<(&str, &str)> = (d.scale_up.iter().flat_map(|s| &s.pods))
            .chain(d.scale_down.iter().flat_map(|s| &s.evict))
            .chain(voluntary.flatten())
            .filter_map(|k| k.split_once('/'))
            .collect();
        let nodes: HashSet<&str> = d
            .scale_down
            .iter()
            .map(|s| s.node.as_str())
            .chain(d.disruptions.iter().map(|x| x.node.as_str()))
            .chain(d.intents.iter().flat_map(|i| i.keys().map(String::as_str)))
            .collect();
        let mut guard = cluster.state();
        let state = &mut *guard;
        let present: HashSet<&str> = state.nodes.iter().map(|n| n.name.as_str()).collect();
        state.intents.retain(|n, _| present.contains(n.as_str()));
        let mut intents: Vec<(String, String)> = state
            .intents
            .iter()
            .map(|(n, i)| (n.clone(), i.clone()))
            .collect();
        intents.sort();
        let disrupted = state
            .nodes
            .iter()
            .filter(|n| n.taints.iter().any(|t| t.key == crate::labels::DISRUPTED))
            .map(|n| n.name.clone())
            .collect();
        let mut view = SimView {
            pods: HashMap::new(),
            nodes: HashMap::new(),
            on_node: HashMap::new(),
            intents,
            disrupted,
        };
        if wanted.is_empty() && nodes.is_empty() {
            return view;
        }
        // The pods of the nodes named and the pending ones, from the placement brought up to date:
        // the others are read only when a pod named is not among them.
        state.placement.refresh(&state.pods);
        let mut near = state.placement.positions_on(nodes.iter().copied());
        near.extend(state.placement.pending());
        near.sort_unstable();
        let mut found = 0;
        for &k in &near {
            let p = &state.pods[k];
            if wanted.contains(&(p.namespace.as_str(), p.name.as_str())) {
                found += usize::from(view.pods.insert(p.key(), state.evictee(p)).is_none());
            }
            if let Some(n) = p.node_name.as_deref().filter(|n| nodes.contains(n)) {
                if !p.node_bound() {
                    let list = view.on_node.entry(n.to_string()).or_default();
                    list.push(state.evictee(p));
                }
            }
        }
        if found < wanted.len() {
            for p in &state.pods {
                if wanted.contains(&(p.namespace.as_str(), p.name.as_str())) {
                    view.pods.entry(p.key()).or_insert_with(|| state.evictee(p));
                }
            }
        }
        for n in state
            .nodes
            .iter()
            .filter(|n| nodes.contains(n.name.as_str()))
        {
            let node = NodeRef {
                uid: None,
                provider_id: n.provider_id.clone(),
            };
            view.nodes.insert(n.name.clone(), node);
        }
        view
    }
}

impl Lookup for SimView {
    fn pod(&self, key: &str) -> Option<Evictee> {
        self.pods.get(key).cloned()
    }

    fn node(&self, name: &str) -> Option<NodeRef> {
        self.nodes.get(name).cloned()
    }

    fn intents(&self) -> Vec<(String, String)> {
        self.intents.clone()
    }

    fn disrupted(&self) -> Vec<String> {
        self.disrupted.clone()
    }

    fn pods_to_evict(&self, node: &str) -> Vec<Evictee> {
        self.on_node.get(node).cloned().unwrap_or_default()
    }
}
