//! What becomes of each pod of a node that would be removed: upstream's drainability rules
//! (`simulator/drainability/rules`, `Default`), in its order, the first that decides wins.
//!
//! 1. mirror: a static pod's mirror is left alone.
//! 2. long terminating: a pod deleted more than its grace period (30s when unset) plus 30s ago is left
//!    alone (upstream's `IsPodLongTerminating`).
//! 3. replica count (with `--skip-nodes-with-custom-controller-pods`): a pod of a ReplicaSet or
//!    ReplicationController with fewer than `--min-replica-count` replicas blocks. The count is the one
//!    the adapter read (`PodMeta::owner_replicas`); when it is not known the rule does not apply, as
//!    upstream without listers.
//! 4. Interrupting: a DaemonSet pod stays with its node; `safe-to-evict: "true"` moves at once, before
//!    any rule below (PodDisruptionBudgets included); terminal pods (Succeeded, Failed) never get here,
//!    the adapters leave them out as upstream's pod lister does; `safe-to-evict: "on-completion"` is
//!    waited for.
//! 5. Blocking: no controller, or with `--skip-nodes-with-custom-controller-pods` one that is not a
//!    ReplicaSet, ReplicationController, Job or StatefulSet; a kube-system pod matched by no
//!    PodDisruptionBudget until `--blocking-system-pod-distruption-timeout` after its creation (then it
//!    moves, no rule below is asked), with `--skip-nodes-with-system-pods`; `safe-to-evict: "false"`; a
//!    local volume (emptyDir not in memory, hostPath) not named in `safe-to-evict-local-volumes`, with
//!    `--skip-nodes-with-local-storage`; a PodDisruptionBudget that allows no disruption.
//!
//! Expendable pods (priority below `--expendable-pods-priority-cutoff`) never get here either: upstream
//! leaves them out of the scale-down simulation, they go down with the node.

use std::sync::Arc;

use super::context::Ctx;
use super::predicates::{NodeInfo, PodList};
use super::reasons::Blocker;
use super::settings::Settings;
use crate::model::duration::secs;
use class::{Class, DrainRules, REPLICATED_KINDS};

use crate::model::workload::{Pdb, Pod, SafeToEvict};
pub use class::long_terminating;

/// What the drain does with a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drain {
    /// Evicted and placed on another node.
    Move,
    /// Neither moved nor evicted; it goes down with the node (mirror and DaemonSet pods, pods
    /// terminating past their grace period).
    Stay,
    /// Not evicted; the node is kept until it is done (`safe-to-evict: "on-completion"`).
    Wait,
    /// Keeps the node.
    Block(Blocker),
}

/// What the drain does with `p` at `now`.
pub fn drainability(p: &Pod, pdbs: &[Pdb], s: &Settings, now: i64) -> Drain {
    let pod = || p.key();
    let owner = p.meta.controller.as_deref().map(String::as_str);
    if p.meta.mirror || long_terminating(p, now) {
        return Drain::Stay;
    }
    if s.skip_nodes_with_custom_controller_pods {
        if let (Some(kind @ ("ReplicaSet" | "ReplicationController")), Some(replicas)) =
            (owner, p.meta.owner_replicas)
        {
            if replicas < s.min_replica_count {
                return Drain::Block(Blocker::MinReplicas {
                    pod: pod(),
                    owner: kind.to_string(),
                    replicas,
                    min: s.min_replica_count,
                });
            }
        }
    }
    if p.is_daemon_set() {
        return Drain::Stay;
    }
    match p.meta.safe_to_evict {
        Some(SafeToEvict::Yes) => return Drain::Move,
        Some(SafeToEvict::OnCompletion) => return Drain::Wait,
        _ => {}
    }
    let replicated = match owner {
        None => false,
        Some(kind) => !s.skip_nodes_with_custom_controller_pods || REPLICATED_KINDS.contains(&kind),
    };
    if !replicated {
        return Drain::Block(Blocker::NotReplicated {
            pod: pod(),
            owner: owner.map(str::to_string),
        });
    }
    let mut budgets = pdbs.iter().filter(|b| b.covers(p)).peekable();
    if s.skip_nodes_with_system_pods && p.namespace == "kube-system" && budgets.peek().is_none() {
        // Past the timeout the rule finds the pod drainable, which ends the chain: the rules below
        // (safe-to-evict "false", local storage) are not asked (upstream's `system` rule returns
        // `NewDrainableStatus`).
        let timeout = secs(s.blocking_system_pod_disruption_timeout);
        if p.meta.created == 0 || now <= p.meta.created.saturating_add(timeout) {
            return Drain::Block(Blocker::SystemPodWithoutBudget { pod: pod() });
        }
        return Drain::Move;
    }
    if p.meta.safe_to_evict == Some(SafeToEvict::No) {
        return Drain::Block(Blocker::NotSafeToEvict { pod: pod() });
    }
    if s.skip_nodes_with_local_storage {
        let safe = &p.meta.safe_local_volumes;
        if let Some(v) = p.meta.local_volumes.iter().find(|v| !safe.contains(v)) {
            return Drain::Block(Blocker::LocalStorage {
                pod: pod(),
                volume: v.clone(),
            });
        }
    }
    if let Some(b) = budgets.find(|b| b.disruptions_allowed < 1) {
        return Drain::Block(Blocker::Budget {
            pod: pod(),
            namespace: b.namespace.clone(),
            name: b.name.clone(),
        });
    }
    Drain::Move
}

/// What draining a node would do with its pods: the one drain every disruption method plans with.
#[derive(Default)]
pub(super) struct Drained {
    /// Pods to evict and place elsewhere, unbound from the node (shared: a pod the loop's simulation
    /// already moved is not copied again).
    pub(super) movable: Vec<Arc<Pod>>,
    /// Pods that go down with the node unevicted (besides DaemonSet and mirror pods).
    pub(super) left: Vec<String>,
    /// A pod the node waits for (`safe-to-evict: "on-completion"`).
    pub(super) waits_for: Option<String>,
    /// The DaemonSet pods bound to the node, which stay with it, each with its own say on its eviction
    /// (`cluster-autoscaler.kubernetes.io/enable-ds-eviction`).
    pub(super) daemon_sets: Vec<(String, Option<bool>)>,
}

impl Drained {
    /// The DaemonSet pods a removal of the node evicts (best effort), as upstream's flags say: those of
    /// a node with pods to evict (`evicting`) with `--daemonset-eviction-for-occupied-nodes`, of an
    /// empty one with `--daemonset-eviction-for-empty-nodes`; a pod's
    /// `cluster-autoscaler.kubernetes.io/enable-ds-eviction` overrides the flag (only `"true"` evicts),
    /// as upstream's `daemonset.PodsToEvict`.
    pub(super) fn daemon_sets_evicted(&mut self, s: &Settings, evicting: bool) -> Vec<String> {
        let on = if evicting {
            s.daemonset_eviction_for_occupied_nodes
        } else {
            s.daemonset_eviction_for_empty_nodes
        };
        std::mem::take(&mut self.daemon_sets)
            .into_iter()
            .filter(|(_, own)| own.unwrap_or(on))
            .map(|(key, _)| key)
            .collect()
    }
}

/// The drain of `pods` against `pdbs` (the ledger's: what the loop's earlier actions left of them), or
/// the pod that forbids it. Expendable pods are left out of the drain as upstream leaves them out of
/// its simulation: they go down with the node.
pub(super) fn drain(pods: &PodList, pdbs: &[Pdb], ctx: &Ctx) -> Result<Drained, Blocker> {
    drain_of(pods, None, pdbs, ctx)
}

/// [`drain`] of the pods of `info` bound to its node (not those a simulation placed there).
pub(super) fn drain_node(info: &NodeInfo, pdbs: &[Pdb], ctx: &Ctx) -> Result<Drained, Blocker> {
    drain_of(&info.pods, Some(&info.node.name), pdbs, ctx)
}

/// The flags of `s` the rules read before budgets and time.
pub fn rules(s: &Settings) -> DrainRules {
    DrainRules {
        skip_custom_controllers: s.skip_nodes_with_custom_controller_pods,
        min_replica_count: s.min_replica_count,
        skip_system_pods: s.skip_nodes_with_system_pods,
        skip_local_storage: s.skip_nodes_with_local_storage,
    }
}

/// The pods moved are the list's kept copies of them unbound ([`PodList::unbound`]), and the rules
/// are asked only of the pods whose class ([`PodList::classes`]) leaves budgets or time to read: a
/// node drained in every loop (each loop's candidates) reads its pods once, not once a loop.
fn drain_of(
    pods: &PodList,
    only: Option<&str>,
    pdbs: &[Pdb],
    ctx: &Ctx,
) -> Result<Drained, Blocker> {
    let s = ctx.settings;
    let mut d = Drained::default();
    let unbound = pods.unbound();
    let classes = pods.classes(&rules(s));
    let facts = pods.facts();
    // A list of the node's pods alone (as a kept placement gives it) needs no pod read to filter.
    let all_bound = only.is_none_or(|n| pods.bound(n).all);
    for (k, p) in pods.iter().enumerate() {
        if !all_bound && only.is_some_and(|n| p.node_name.as_deref() != Some(n)) {
            continue;
        }
        if facts[k].priority < s.expendable_pods_priority_cutoff {
            d.left.push(p.key());
            continue;
        }
        let drain = match classes[k] {
            Class::Stay => Drain::Stay,
            Class::Move => Drain::Move,
            Class::Wait => Drain::Wait,
            Class::Budgets if pdbs.is_empty() => Drain::Move,
            Class::Budgets | Class::Block | Class::Again => drainability(p, pdbs, s, ctx.now),
        };
        match drain {
            Drain::Move => d.movable.push(match &unbound[k] {
                Some(c) => Arc::clone(c),
                None if p.node_name.is_none() => Arc::clone(p),
                None => Arc::new(Pod {
                    node_name: None,
                    ..(**p).clone()
                }),
            }),
            Drain::Stay if !facts[k].daemon_set && !facts[k].mirror => d.left.push(p.key()),
            Drain::Stay if facts[k].daemon_set && !facts[k].mirror && p.node_name.is_some() => {
                d.daemon_sets.push((p.key(), p.meta.ds_eviction))
            }
            Drain::Stay => {}
            Drain::Wait => {
                d.waits_for.get_or_insert_with(|| p.key());
            }
            Drain::Block(b) => return Err(b),
        }
    }
    Ok(d)
}

pub mod class;
#[cfg(test)]
mod tests;
