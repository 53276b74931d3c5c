//! What rules other than the scheduler's filters read of a pod: autoscaling's (owner, priority,
//! safe-to-evict, local volumes) and the descheduler's (phase, restarts, container states, owners, images).

use thin_vec::ThinVec;

use super::selector::{Requirement, SpreadConstraint};
use super::shared::{Shared, SharedName};

/// What autoscaling rules (not the scheduler's filters) read of a pod.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodMeta {
    /// Kind of the controlling owner (`ReplicaSet`, `DaemonSet`, `StatefulSet`, `Job`, ...), if any.
    /// Shared, as every name below: replicas repeat them.
    pub controller: Option<SharedName>,
    /// Name of the controlling owner, if any.
    pub controller_name: Option<SharedName>,
    /// `spec.replicas` of the controlling ReplicaSet or ReplicationController, when the adapter read it
    /// (None: not known).
    pub owner_replicas: Option<i32>,
    pub priority: i32,
    /// `spec.priority` is absent (admission normally sets it; `priority` then reads 0): the
    /// descheduler lets such a pod through its priority threshold and evicts it before any pod
    /// with a priority.
    pub no_priority: bool,
    /// Its QoS class as the descheduler reads it (`status.qosClass`, else from its containers'
    /// requests and limits); None when not known (a pod built in code): then no cpu or memory
    /// requested reads as BestEffort, anything else as Burstable.
    pub qos: Option<Qos>,
    /// The scheduler marked it `PodScheduled=False` with reason `Unschedulable`.
    pub unschedulable: bool,
    /// `spec.schedulerName`, when set: pods of a scheduler in `--bypassed-scheduler-names` count as
    /// pending without waiting for that mark.
    pub scheduler_name: Option<SharedName>,
    /// Creation time, seconds since the epoch (0: not set).
    pub created: i64,
    /// `metadata.deletionTimestamp`, seconds since the epoch: the pod is being deleted.
    pub deleted: Option<i64>,
    /// `spec.terminationGracePeriodSeconds`, when set.
    pub grace_period: Option<i64>,
    /// `cluster-autoscaler.kubernetes.io/safe-to-evict`, when set to a value it knows.
    pub safe_to_evict: Option<SafeToEvict>,
    /// Names of its local volumes: emptyDir not in memory, hostPath.
    pub local_volumes: ThinVec<String>,
    /// `cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes`: local volumes that do not keep
    /// its node.
    pub safe_local_volumes: ThinVec<String>,
    /// A static pod's mirror (`kubernetes.io/config.mirror`).
    pub mirror: bool,
    /// Annotated `cluster-autoscaler.kubernetes.io/daemonset-pod: "true"`: a DaemonSet pod whatever
    /// owns it.
    pub daemon_set_annotation: bool,
    /// `cluster-autoscaler.kubernetes.io/enable-ds-eviction`, when set: whether a removal of its node
    /// evicts this DaemonSet pod (`"true"` only), whatever the `--daemonset-eviction-for-*` flags say.
    pub ds_eviction: Option<bool>,
    /// Its `cluster-autoscaler.kubernetes.io/pod-scale-up-delay` annotation, in seconds, when it parses.
    pub scale_up_delay: Option<i64>,
    /// `status.phase`.
    pub phase: PodPhase,
    /// `status.reason` (`Evicted`, `NodeLost`, ...), when set.
    pub status_reason: Option<SharedName>,
    /// Its containers' and init containers' states, in the pod's order (init containers first). Shared
    /// by the pods converted alike (most running replicas' states are equal).
    pub containers: Shared<Vec<ContainerState>>,
    /// Every owner reference (the controller among them), as the descheduler's duplicate check reads.
    /// Shared by the replicas converted together.
    pub owners: Shared<Vec<Owner>>,
    /// Its containers' images, in order: with the owner, what makes two pods duplicates. Shared by the
    /// replicas converted together.
    pub images: Shared<Vec<String>>,
    /// `karpenter.sh/do-not-disrupt` or `ferroscale.io/do-not-disrupt` is `"true"`: no voluntary
    /// disruption (descheduling, consolidation) evicts it.
    pub do_not_disrupt: bool,
    /// `controller.kubernetes.io/pod-deletion-cost` (0 when unset): a pod costing more to delete weighs
    /// more against consolidating its node.
    pub deletion_cost: i32,
    /// `descheduler.alpha.kubernetes.io/evict` is set: the descheduler's evictor admits it whatever
    /// else would keep it.
    pub evict_annotation: bool,
    /// `descheduler.alpha.kubernetes.io/prefer-no-eviction` is set (any value): the descheduler's
    /// evictor keeps it under `noEvictionPolicy: Mandatory`.
    pub prefer_no_eviction: bool,
    /// `spec.resourceClaims` is not empty: kept by the evictor's `PodsWithResourceClaims` protection.
    pub has_resource_claims: bool,
    /// `status.conditions`, as the descheduler's `PodLifeTime` `conditions` filter reads them (empty
    /// for most pods: nothing allocated).
    pub conditions: Box<[PodCondition]>,
    /// `status.nominatedNodeName`: the scheduler preempts pods on that node for this one, which waits
    /// for them to go (upstream places it there and asks no node for it).
    pub nominated_node: Option<Box<str>>,
    /// `whenUnsatisfiable: ScheduleAnyway` topology spread constraints: the scheduler only scores
    /// them, so no filter of the engine reads them; the descheduler's spread plugin balances them
    /// when its `constraints` names `ScheduleAnyway`.
    pub soft_spread: ThinVec<SpreadConstraint>,
    /// `preferredDuringSchedulingIgnoredDuringExecution` node affinity: each term's weight and
    /// requirements (ANDed). The scheduler only scores it; `RemovePodsViolatingNodeAffinity` moves a
    /// pod to a node it prefers more.
    pub preferred_node_affinity: ThinVec<(i32, Vec<Requirement>)>,
}

/// A pod's QoS class, in the descheduler's order of eviction at one priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Qos {
    BestEffort,
    Burstable,
    Guaranteed,
}

impl Qos {
    /// `status.qosClass` as the API writes it.
    pub fn parse(v: &str) -> Option<Qos> {
        match v {
            "BestEffort" => Some(Qos::BestEffort),
            "Burstable" => Some(Qos::Burstable),
            "Guaranteed" => Some(Qos::Guaranteed),
            _ => None,
        }
    }
}

/// One of a pod's `status.conditions`. Strings are the shared copies (conditions repeat across pods).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodCondition {
    /// `type` (`Ready`, `PodScheduled`, ...).
    pub kind: SharedName,
    /// `status` (`True`, `False`, `Unknown`).
    pub status: SharedName,
    /// `reason`, when set (empty otherwise, as the API's empty string).
    pub reason: SharedName,
    /// `lastTransitionTime`, seconds since the epoch; None when not set.
    pub last_transition: Option<i64>,
}

/// `status.phase` of a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PodPhase {
    Pending,
    /// The default for pods built without a status (fixtures): bound pods are running.
    #[default]
    Running,
    Succeeded,
    Failed,
    Unknown,
}

impl PodPhase {
    /// `Succeeded` or `Failed`: the pod's containers are done and it needs no node.
    pub fn finished(self) -> bool {
        matches!(self, PodPhase::Succeeded | PodPhase::Failed)
    }

    /// The phase as the API writes it (unknown words read as `Unknown`).
    pub fn parse(v: &str) -> PodPhase {
        match v {
            "Pending" => PodPhase::Pending,
            "Running" => PodPhase::Running,
            "Succeeded" => PodPhase::Succeeded,
            "Failed" => PodPhase::Failed,
            _ => PodPhase::Unknown,
        }
    }

    /// The API's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            PodPhase::Pending => "Pending",
            PodPhase::Running => "Running",
            PodPhase::Succeeded => "Succeeded",
            PodPhase::Failed => "Failed",
            PodPhase::Unknown => "Unknown",
        }
    }
}

/// One container's status, as the descheduler's restart and failure checks read it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ContainerState {
    /// An init container.
    pub init: bool,
    /// An ephemeral (debug) container: counted only where a strategy's
    /// `includingEphemeralContainers` asks.
    pub ephemeral: bool,
    pub restarts: i32,
    /// `state.waiting.reason`, when waiting.
    pub waiting: Option<String>,
    /// `state.terminated.reason`, when terminated.
    pub terminated: Option<String>,
    /// `state.terminated.exitCode`, when terminated.
    pub exit_code: Option<i32>,
}

/// An owner reference: kind and name (and whether it is the controller).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner {
    pub kind: String,
    pub name: String,
    pub controller: bool,
}

/// The values of the `cluster-autoscaler.kubernetes.io/safe-to-evict` annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SafeToEvict {
    /// `"true"`: evicted whatever else would keep its node.
    Yes,
    /// `"false"`: keeps its node.
    No,
    /// `"on-completion"`: not evicted; its node waits until it is done.
    OnCompletion,
}

impl SafeToEvict {
    /// The annotation's value as upstream reads it; other values mean nothing.
    pub fn parse(value: &str) -> Option<SafeToEvict> {
        match value {
            "true" => Some(SafeToEvict::Yes),
            "false" => Some(SafeToEvict::No),
            "on-completion" => Some(SafeToEvict::OnCompletion),
            _ => None,
        }
    }
}
