//! Why the loop decided as it did, typed: callers (`run`'s events and status, `simulate`'s report) match
//! on these; text is only their `Display`, worded as upstream's messages where there is one.

use std::fmt;

use super::limits::Resource;
use super::predicates::Unfit;
use crate::model::lifecycle::DisruptionReason;

pub use super::memory::Pause;

mod due;
mod pending;
pub use due::Due;
pub use pending::Pending;

/// Why one group cannot take a pod.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Refusal {
    /// The group's node would not fit the pod.
    Unfit(Unfit),
    /// The group failed to scale up lately and is backed off for `seconds` more.
    BackedOff {
        group: String,
        seconds: i64,
    },
    /// Its instance type in its zone recently ran out of capacity.
    OutOfCapacity {
        group: String,
        instance_type: String,
        zone: String,
        seconds: i64,
    },
    AtMaxSize {
        group: String,
    },
    /// Upstream's `IsNodeGroupHealthy` fails: `unready` of its nodes are not ready past both
    /// `--ok-total-unready-count` and `--max-total-unready-percentage` (a bad image, a broken
    /// bootstrap), so more of the same would not help.
    Unhealthy {
        group: String,
        unready: usize,
    },
    /// `--max-nodes-total` is reached.
    MaxNodesTotal,
    /// `--cores-total`, `--memory-total` or `--gpu-total` (or several) is reached.
    ResourceLimits {
        exceeded: Vec<Resource>,
    },
    /// More nodes would exceed one of the limits above.
    WouldExceedLimit {
        group: String,
    },
    /// The group's binpacking ran out of `--max-nodegroup-binpacking-duration`.
    TimeBudget {
        group: String,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Unfit(u) => write!(f, "{u}"),
            Refusal::BackedOff { group, seconds } => {
                write!(f, "group {group} backed off for {seconds}s")
            }
            Refusal::OutOfCapacity {
                group,
                instance_type,
                zone,
                seconds,
            } => write!(
                f,
                "group {group}: {instance_type} in {zone} out of capacity for {seconds}s"
            ),
            Refusal::AtMaxSize { group } => write!(f, "group {group} at max size"),
            Refusal::Unhealthy { group, unready } => write!(
                f,
                "group {group} not ready for scale-up: {unready} of its nodes unready"
            ),
            Refusal::MaxNodesTotal => write!(f, "--max-nodes-total reached"),
            Refusal::ResourceLimits { exceeded } => {
                for (k, r) in exceeded.iter().enumerate() {
                    write!(f, "{}--{r}-total", if k > 0 { " and " } else { "" })?;
                }
                write!(f, " reached")
            }
            Refusal::WouldExceedLimit { group } => {
                write!(f, "group {group} would exceed a limit")
            }
            Refusal::TimeBudget { group } => write!(
                f,
                "group {group}: binpacking ran out of --max-nodegroup-binpacking-duration"
            ),
        }
    }
}

/// Why a node is kept.
#[derive(Debug, Clone, PartialEq)]
pub enum Unremovable {
    /// The node's `scale-down-disabled` annotation.
    ScaleDownDisabled,
    /// The node's `karpenter.sh/do-not-disrupt` (or `ferroscale.io/do-not-disrupt`) annotation.
    DoNotDisrupt,
    /// Utilization above the threshold (`gpu`: a GPU node, measured by GPU against
    /// `--scale-down-gpu-utilization-threshold`).
    NotUnderutilized {
        utilization: f64,
        threshold: f64,
        gpu: bool,
    },
    /// One of its pods may not be evicted.
    Blocked(Blocker),
    /// One of its pods fits no other node (`why` the last node's refusal, if any was tried).
    NoPlaceFor { pod: String, why: Option<Unfit> },
    /// Unneeded, but not for long enough yet.
    NotUnneededLongEnough { waited: i64, needed: i64 },
    /// Unready and unneeded, but not for `--scale-down-unready-time` yet (upstream's
    /// `NotUnreadyLongEnough`; said as [`Unremovable::NotUnneededLongEnough`] is).
    NotUnreadyLongEnough { waited: i64, needed: i64 },
    /// Unneeded, but scale-down is paused.
    Paused(Pause),
    /// Its group would go below its min size.
    AtMinSize { group: String },
    /// The cluster would go below the minimum of `--cores-total` (`cores`), `--memory-total` (`memory`)
    /// or `--gpu-total` (`gpu`).
    MinimalResourceLimit { resource: Resource },
    /// Unneeded, but a pod annotated `safe-to-evict: "on-completion"` runs on it until it is done.
    OnCompletion { pod: String },
    /// Unneeded; this loop's removal budget is spent.
    WaitsForNextLoop,
    /// Its group scales all or nothing (`zeroOrMaxNodeScaling`) and not every node of it can go now
    /// (upstream's `AtomicScaleDownFailed`).
    AtomicScaleDownFailed { group: String },
    /// Unready, and scale-down of unready nodes is disabled (`--scale-down-unready-enabled=false`).
    UnreadyKept,
    /// Unneeded, but `--max-scale-down-parallelism` or `--max-drain-parallelism` removals are in flight.
    ParallelismReached,
    /// Unneeded, but `allowed` nodes of its group are already on their way out (the group's own
    /// `disruptionBudget`; `--max-disruption` limits only replacements).
    DisruptionBudget { group: String, allowed: usize },
    /// Unneeded, but its group's disruption window is closed.
    OutsideDisruptionWindow { group: String },
    /// It carries a deletion taint set less than 5 minutes ago: a removal (another replica's, an
    /// earlier run's) is under way (upstream's `CurrentlyBeingDeleted`).
    BeingDeleted,
    /// Its utilization cannot be measured: it has no allocatable `resource` (cpu or memory), as
    /// upstream's `UnexpectedError` when it cannot calculate utilization.
    UtilizationUnknown { resource: &'static str },
    /// `--max-evictions-per-loop` is reached this loop.
    EvictionLimit { max: usize },
    /// Due for replacement (drift, expiry), but its surge may not be asked for (what scale-up obeys).
    SurgeRefused(Refusal),
    /// A pod the descheduler moved here within `--deschedule-cooldown`: not moved again meanwhile.
    Descheduled { pod: String },
}

impl Unremovable {
    /// Whether it keeps the node for now only: the caps of this loop or a PodDisruptionBudget's
    /// allowance, which a later loop may find room in (a consolidation held for these waits).
    pub fn for_now(&self) -> bool {
        matches!(
            self,
            Unremovable::ParallelismReached
                | Unremovable::WaitsForNextLoop
                | Unremovable::EvictionLimit { .. }
                | Unremovable::Blocked(Blocker::Budget { .. })
        )
    }
}

impl fmt::Display for Unremovable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unremovable::ScaleDownDisabled => write!(f, "scale-down disabled by annotation"),
            Unremovable::DoNotDisrupt => write!(f, "the node is annotated do-not-disrupt"),
            Unremovable::NotUnderutilized {
                utilization,
                threshold,
                gpu,
            } => write!(
                f,
                "{}utilization {utilization:.2} above threshold {threshold:.2}",
                if *gpu { "GPU " } else { "" }
            ),
            Unremovable::Blocked(b) => write!(f, "{b}"),
            Unremovable::NoPlaceFor { pod, why } => match why {
                Some(u) => write!(f, "pod {pod} fits no other node: {u}"),
                None => write!(f, "pod {pod} fits no other node: no other node"),
            },
            Unremovable::NotUnneededLongEnough { waited, needed }
            | Unremovable::NotUnreadyLongEnough { waited, needed } => {
                write!(f, "unneeded for {waited}s of {needed}s")
            }
            Unremovable::Paused(p) => write!(f, "{p}"),
            Unremovable::AtMinSize { group } => write!(f, "group {group} at min size"),
            Unremovable::MinimalResourceLimit { resource } => write!(
                f,
                "the cluster would go below the minimum of --{resource}-total"
            ),
            Unremovable::OnCompletion { pod } => write!(
                f,
                "unneeded, but pod {pod} (safe-to-evict: on-completion) runs until it is done"
            ),
            Unremovable::WaitsForNextLoop => write!(f, "unneeded; waits for the next loop"),
            Unremovable::AtomicScaleDownFailed { group } => write!(
                f,
                "group {group} scales all or nothing (zeroOrMaxNodeScaling) and not all its nodes can go"
            ),
            Unremovable::EvictionLimit { max } => write!(f, "--max-evictions-per-loop ({max}) reached"),
            Unremovable::SurgeRefused(r) => write!(f, "due for replacement, no new node now: {r}"),
            Unremovable::Descheduled { pod } => {
                write!(f, "pod {pod} was moved by the descheduler within its cooldown")
            }
            Unremovable::UnreadyKept => {
                write!(f, "unready, and --scale-down-unready-enabled is false")
            }
            Unremovable::DisruptionBudget { group, allowed } => write!(
                f,
                "unneeded, but {allowed} nodes of group {group} are already on their way out (its disruption budget)"
            ),
            Unremovable::OutsideDisruptionWindow { group } => write!(
                f,
                "unneeded, but group {group}'s disruption window is closed"
            ),
            Unremovable::ParallelismReached => write!(
                f,
                "unneeded, but --max-scale-down-parallelism or --max-drain-parallelism removals are in flight"
            ),
            Unremovable::BeingDeleted => write!(
                f,
                "being deleted: its deletion taint was set less than 5 minutes ago"
            ),
            Unremovable::UtilizationUnknown { resource } => {
                write!(f, "utilization unknown: no allocatable {resource}")
            }
        }
    }
}

/// A pod that keeps its node (upstream's drainability rules, `engine::drainability`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocker {
    /// Its ReplicaSet or ReplicationController has fewer replicas than `--min-replica-count`.
    MinReplicas {
        pod: String,
        owner: String,
        replicas: i32,
        min: i32,
    },
    /// No controller (`owner` None), or with `--skip-nodes-with-custom-controller-pods` one that is not
    /// a ReplicaSet, ReplicationController, Job or StatefulSet.
    NotReplicated { pod: String, owner: Option<String> },
    /// A kube-system pod without a PodDisruptionBudget, with `--skip-nodes-with-system-pods`, younger
    /// than `--blocking-system-pod-distruption-timeout`.
    SystemPodWithoutBudget { pod: String },
    /// Annotated `safe-to-evict: "false"`.
    NotSafeToEvict { pod: String },
    /// A local volume (emptyDir or hostPath) not named in `safe-to-evict-local-volumes`, with
    /// `--skip-nodes-with-local-storage`.
    LocalStorage { pod: String, volume: String },
    /// Annotated `ferroscale.io/do-not-disrupt` or `karpenter.sh/do-not-disrupt` (kept by the removals
    /// ferroscale starts itself: a node the descheduler emptied).
    DoNotDisrupt { pod: String },
    /// A PodDisruptionBudget covering it allows no disruption.
    Budget {
        pod: String,
        namespace: String,
        name: String,
    },
}

impl fmt::Display for Blocker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Blocker::MinReplicas {
                pod,
                owner,
                replicas,
                min,
            } => write!(
                f,
                "pod {pod}: its {owner} has {replicas} replicas, fewer than --min-replica-count {min}"
            ),
            Blocker::NotReplicated { pod, owner: None } => {
                write!(f, "pod {pod} has no controller")
            }
            Blocker::NotReplicated {
                pod,
                owner: Some(kind),
            } => write!(
                f,
                "pod {pod} is owned by a {kind}, a custom controller (--skip-nodes-with-custom-controller-pods)"
            ),
            Blocker::SystemPodWithoutBudget { pod } => write!(
                f,
                "kube-system pod {pod} has no PodDisruptionBudget (younger than --blocking-system-pod-distruption-timeout)"
            ),
            Blocker::DoNotDisrupt { pod } => write!(f, "pod {pod} is annotated do-not-disrupt"),
            Blocker::NotSafeToEvict { pod } => {
                write!(f, "pod {pod} is annotated safe-to-evict=false")
            }
            Blocker::LocalStorage { pod, volume } => {
                write!(f, "pod {pod} has local storage (volume {volume})")
            }
            Blocker::Budget {
                pod,
                namespace,
                name,
            } => write!(
                f,
                "pod {pod}: PodDisruptionBudget {namespace}/{name} allows no disruption"
            ),
        }
    }
}

/// Why a node goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Removal {
    pub utilization: f64,
    pub threshold: f64,
    /// Seconds it has been unneeded.
    pub waited: i64,
    /// It has no pods to evict.
    pub empty: bool,
    /// It is unready (removed after `--scale-down-unready-time`, whatever its utilization).
    pub unready: bool,
    /// Set when the node goes because it is replaced (drift, expiry), not because it is unneeded.
    pub disruption: Option<DisruptionReason>,
}

impl fmt::Display for Removal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.disruption {
            Some(DisruptionReason::Consolidation) => return f.write_str("consolidated"),
            Some(DisruptionReason::Descheduled) => {
                return f.write_str("emptied by the descheduler")
            }
            Some(reason) => return write!(f, "replaced ({reason}): its replacement has joined"),
            None => {}
        }
        if self.unready {
            write!(f, "unready for {}s, ", self.waited)?;
        }
        write!(
            f,
            "utilization {:.2} at or below {:.2} for {}s, {}",
            self.utilization,
            self.threshold,
            self.waited,
            if self.empty {
                "empty"
            } else {
                "its pods fit elsewhere"
            }
        )
    }
}

/// Why a cloud instance is deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstanceFault {
    /// The cloud failed to launch it, with its error code.
    LaunchFailed { code: String },
    /// No node registered for it within the group's `maxNodeProvisionTime`.
    NotRegistered { within_secs: i64 },
    /// Another instance of its atomic group (`zeroOrMaxNodeScaling`) failed to launch or register, with
    /// that error code (`timeout` for the latter): the group goes whole or not at all.
    AtomicGroupFailed { code: String },
}

impl fmt::Display for InstanceFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InstanceFault::LaunchFailed { code } => write!(f, "launch failed: {code}"),
            InstanceFault::NotRegistered { within_secs } => {
                write!(f, "no node registered within {within_secs}s")
            }
            InstanceFault::AtomicGroupFailed { code } => {
                write!(f, "another instance of its atomic group failed: {code}")
            }
        }
    }
}

/// Why the cluster's state cannot be trusted this loop. While there is any, the loop may scale up but
/// removes nothing: no scale-down, no deletion of instances without a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Doubt {
    /// The watch of this kind has not listed everything yet.
    NotSynced { kind: String },
    /// The watch of this kind failed and has not recovered.
    WatchFailing { kind: String },
    /// Objects that could not be read (a pod left out would make its node look emptier than it is).
    Unreadable { count: usize, first: String },
}

impl fmt::Display for Doubt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Doubt::NotSynced { kind } => write!(f, "the {kind} watch has not synced"),
            Doubt::WatchFailing { kind } => write!(f, "the {kind} watch is failing"),
            Doubt::Unreadable { count, first } => {
                write!(f, "{count} objects could not be read (first: {first})")
            }
        }
    }
}

/// Why the loop does nothing but report: too many unready nodes (upstream's cluster health check).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unhealthy {
    pub unready: usize,
    pub total: usize,
}

impl fmt::Display for Unhealthy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cluster unhealthy: {} of {} nodes unready, beyond --ok-total-unready-count and --max-total-unready-percentage",
            self.unready, self.total
        )
    }
}

/// Why capacity asked for is given up (its target lowered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cancel {
    /// The cloud could not launch it, with its error code.
    LaunchFailed { code: String },
    /// Not delivered within the group's `maxNodeProvisionTime`.
    NotDelivered { within_secs: i64 },
}

impl fmt::Display for Cancel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cancel::LaunchFailed { code } => write!(f, "launch failed: {code}"),
            Cancel::NotDelivered { within_secs } => {
                write!(f, "capacity not delivered within {within_secs}s")
            }
        }
    }
}
