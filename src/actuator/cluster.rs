//! The cluster side of the [`Actuator`](super::Actuator): what carrying a decision out asks of the
//! cluster (taints, cordons, evictions, a fresh list of a node's pods, events, whether this replica may
//! still act). `run` answers it with the live Kubernetes API (`k8s::cluster::LiveCluster`), `simulate`
//! with its simulated cluster, so the two commands carry decisions out with the same code.

use std::time::Duration;

use async_trait::async_trait;

use crate::cloud::WriteGuard;
use crate::engine::intents::Intent;
use crate::error::Result;

/// A pod to evict, as the loop's view of the cluster has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evictee {
    pub namespace: String,
    pub name: String,
    /// This incarnation of the pod: one recreated under the same name is not waited for.
    pub uid: Option<String>,
    /// `spec.terminationGracePeriodSeconds`.
    pub grace_period: Option<i64>,
    /// The node it is bound to in the view it was read from (None: pending, or not known).
    pub node: Option<String>,
}

impl Evictee {
    /// `namespace/name`, the engine's key of the pod.
    pub fn key(&self) -> String {
        crate::model::workload::pod_key(&self.namespace, &self.name)
    }
}

/// What one request to the eviction API came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// The API accepted the eviction: the pod is terminating.
    Evicted,
    /// The pod meant is gone already (deleted, or replaced under its name by another UID).
    Gone,
    /// 429: a PodDisruptionBudget allows no disruption now (or the API is throttling).
    Refused(String),
    /// Any other failure.
    Failed(String),
}

/// Upstream's drain flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainSettings {
    /// `--max-pod-eviction-time`: how long evictions are retried (a PDB may block them).
    pub max_pod_eviction_time: Duration,
    /// `--max-graceful-termination-sec`: the most a pod is given to terminate.
    pub max_graceful_termination: Duration,
}

impl DrainSettings {
    /// Pause between attempts: a twelfth of the eviction time, between 100ms and 5s.
    pub fn retry(&self) -> Duration {
        (self.max_pod_eviction_time / 12).clamp(Duration::from_millis(100), Duration::from_secs(5))
    }

    /// These settings with both times capped at `cap` (an interrupted node's two-minute warning).
    pub fn capped(&self, cap: Duration) -> Self {
        DrainSettings {
            max_pod_eviction_time: self.max_pod_eviction_time.min(cap),
            max_graceful_termination: self.max_graceful_termination.min(cap),
        }
    }
}

/// The object an event is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Regarding {
    Pod(Evictee),
    Node { name: String, uid: Option<String> },
}

/// An event's type, as Kubernetes has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Normal,
    Warning,
}

/// A node as the actuator needs it: its object's uid (for events) and its instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRef {
    pub uid: Option<String>,
    pub provider_id: String,
}

/// The loop's view of the cluster this loop (the watch-fed index, or the simulated cluster): finds the
/// pods and nodes the decisions name.
pub trait Lookup: Sync {
    /// The pod with this `namespace/name` key, with the node it is bound to now.
    fn pod(&self, key: &str) -> Option<Evictee>;
    /// The node with this name.
    fn node(&self, name: &str) -> Option<NodeRef>;
    /// The pods bound to `node` that an interruption evicts: all but DaemonSet and mirror pods.
    fn pods_to_evict(&self, node: &str) -> Vec<Evictee>;
    /// Every node's `ferroscale.io/intent` annotation, as the view has it (node, text).
    fn intents(&self) -> Vec<(String, String)>;
    /// The nodes carrying the disruption taint ([`Mark::Disrupted`]), as the view has them.
    fn disrupted(&self) -> Vec<String>;
}

/// The autoscaler's own taints, as upstream writes them: the value is the time it was added (seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// `ToBeDeletedByClusterAutoscaler:NoSchedule`: the node is being removed.
    ToBeDeleted,
    /// `DeletionCandidateOfClusterAutoscaler:PreferNoSchedule`: the node is unneeded (a soft taint).
    DeletionCandidate,
    /// `ferroscale.io/disrupted:NoSchedule`: the node is the old node of a replacement or
    /// consolidation under way (Karpenter's `karpenter.sh/disrupted`).
    Disrupted,
}

impl Mark {
    pub fn key(self) -> &'static str {
        match self {
            Mark::ToBeDeleted => crate::labels::TO_BE_DELETED,
            Mark::DeletionCandidate => crate::labels::DELETION_CANDIDATE,
            Mark::Disrupted => crate::labels::DISRUPTED,
        }
    }

    pub fn effect(self) -> crate::model::TaintEffect {
        match self {
            Mark::ToBeDeleted | Mark::Disrupted => crate::model::TaintEffect::NoSchedule,
            Mark::DeletionCandidate => crate::model::TaintEffect::PreferNoSchedule,
        }
    }
}

/// What carrying decisions out asks of the cluster.
#[async_trait]
pub trait Cluster: Clone + Send + Sync + 'static {
    /// Ok while this replica may change anything (it holds the Lease, or runs without one); an error
    /// saying `what` was not done otherwise.
    fn may_act(&self, what: &str) -> Result<()>;
    /// What cloud writes check, inside their group's lock right before each call: the same right as
    /// [`Cluster::may_act`], at the last moment it can be known.
    fn write_guard(&self) -> WriteGuard;
    /// Adds (`on`) or takes off one of the autoscaler's taints, keeping the node's other taints.
    async fn set_taint(&self, node: &str, mark: Mark, on: bool, now: i64) -> Result<()>;
    /// Writes the node's intent (the `ferroscale.io/intent` annotation), or clears it (`None`),
    /// keeping its other annotations.
    async fn set_intent(&self, node: &str, intent: Option<&Intent>) -> Result<()>;
    /// Marks the node unschedulable (`on`) or schedulable again; whether that changed it (a node
    /// someone else cordoned is not uncordoned by a failed removal).
    async fn cordon(&self, node: &str, on: bool) -> Result<bool>;
    /// Evicts one pod through its disruption budgets and waits until it is gone, within `settings`.
    async fn evict(&self, pod: &Evictee, settings: &DrainSettings) -> Result<()>;
    /// Asks once to evict one pod for the descheduler, giving it `grace` seconds to terminate: its UID
    /// is the precondition (another incarnation under its name is [`Attempt::Gone`]), a
    /// PodDisruptionBudget allowing no disruption answers [`Attempt::Refused`]; never retried nor waited
    /// for. `to` is where the descheduler's plan places the pod's replacement: the live API leaves that
    /// to kube-scheduler, the simulated cluster binds it there when it fits.
    async fn evict_once(&self, pod: &Evictee, grace: i64, to: &str) -> Attempt;
    /// The pods bound to `node` now (read afresh, not from a cache) that would die with it unevicted:
    /// all but DaemonSet, mirror and finished pods.
    async fn pods_on(&self, node: &str) -> Result<Vec<Evictee>>;
    /// Publishes an event without waiting for it.
    fn event(&self, regarding: Regarding, kind: EventKind, reason: &'static str, note: String);
    /// Publishes an event whose action differs from its reason (events folded into one series share
    /// both), without waiting for it.
    fn event_action(
        &self,
        regarding: Regarding,
        kind: EventKind,
        reason: &'static str,
        action: &'static str,
        note: String,
    ) {
        let _ = action;
        self.event(regarding, kind, reason, note);
    }
}
