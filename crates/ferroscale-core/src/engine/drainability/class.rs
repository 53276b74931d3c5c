//! What the drainability rules decide of a pod from the pod and the flags alone ([`Class`]), before
//! PodDisruptionBudgets and the clock are read. Each node's pod list keeps its pods' classes
//! (`predicates::PodList::classes`), so a loop that drains every node (consolidation's candidates,
//! scale-down's) reads again only the pods whose answer depends on budgets or time. The rules
//! themselves, in order, are [`super::drainability`]'s; a property test holds the two together.

use crate::model::workload::{Pod, SafeToEvict};

/// Upstream's `PodLongTerminatingExtraThreshold`: how long past its grace period a deleted pod is
/// still waited for.
pub const LONG_TERMINATING_EXTRA_SECS: i64 = 30;

/// The grace period of a pod that sets none (Kubernetes' default).
pub(super) const DEFAULT_GRACE_SECS: i64 = 30;

/// Owners whose pods are replicated with `--skip-nodes-with-custom-controller-pods` (upstream's
/// `replicatedKind`).
pub(super) const REPLICATED_KINDS: [&str; 4] =
    ["ReplicationController", "Job", "ReplicaSet", "StatefulSet"];

/// Whether a pod was deleted longer ago than its grace period and upstream's extra 30s.
pub fn long_terminating(p: &Pod, now: i64) -> bool {
    overdue_at(p).is_some_and(|at| at < now)
}

/// For a pod being deleted, the time after which it is [`long_terminating`].
pub fn overdue_at(p: &Pod) -> Option<i64> {
    p.meta.deleted.map(|at| {
        let grace = p.meta.grace_period.unwrap_or(DEFAULT_GRACE_SECS);
        at + grace + LONG_TERMINATING_EXTRA_SECS
    })
}

/// The flags the rules read before budgets and time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrainRules {
    /// `--skip-nodes-with-custom-controller-pods`.
    pub skip_custom_controllers: bool,
    /// `--min-replica-count`.
    pub min_replica_count: i32,
    /// `--skip-nodes-with-system-pods`.
    pub skip_system_pods: bool,
    /// `--skip-nodes-with-local-storage`.
    pub skip_local_storage: bool,
}

/// A pod's drain as far as the pod and the flags decide it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Goes down with the node, whatever the budgets and the time.
    Stay,
    /// Moves, whatever the budgets and the time (`safe-to-evict: "true"`).
    Move,
    /// Waited for (`safe-to-evict: "on-completion"`).
    Wait,
    /// Blocks the drain (the rules, asked again, say why).
    Block,
    /// Moves unless a budget covering it allows no more disruptions.
    Budgets,
    /// Depends on the time (a pod being deleted) or on whether a budget covers it (a kube-system pod
    /// with `--skip-nodes-with-system-pods`): the rules are asked again each time.
    Again,
}

/// The class of `p` under `rules`, the rules taken in upstream's order.
pub fn classify(p: &Pod, rules: &DrainRules) -> Class {
    if p.meta.mirror {
        return Class::Stay;
    }
    if p.meta.deleted.is_some() {
        return Class::Again;
    }
    let owner = p.meta.controller.as_deref().map(String::as_str);
    if rules.skip_custom_controllers
        && matches!(owner, Some("ReplicaSet" | "ReplicationController"))
        && p.meta
            .owner_replicas
            .is_some_and(|n| n < rules.min_replica_count)
    {
        return Class::Block;
    }
    if p.is_daemon_set() {
        return Class::Stay;
    }
    match p.meta.safe_to_evict {
        Some(SafeToEvict::Yes) => return Class::Move,
        Some(SafeToEvict::OnCompletion) => return Class::Wait,
        _ => {}
    }
    let replicated = match owner {
        None => false,
        Some(kind) => !rules.skip_custom_controllers || REPLICATED_KINDS.contains(&kind),
    };
    if !replicated {
        return Class::Block;
    }
    if rules.skip_system_pods && p.namespace == "kube-system" {
        return Class::Again;
    }
    if p.meta.safe_to_evict == Some(SafeToEvict::No) {
        return Class::Block;
    }
    if rules.skip_local_storage {
        let safe = &p.meta.safe_local_volumes;
        if p.meta.local_volumes.iter().any(|v| !safe.contains(v)) {
            return Class::Block;
        }
    }
    Class::Budgets
}
