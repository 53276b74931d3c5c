//! Why consolidation took no node, or not this one.

use std::fmt;

use crate::engine::limits::Resource;
use crate::engine::reasons::{Blocker, Pause, Unremovable};

/// Why a node consolidation would have taken stays.
#[derive(Debug, Clone, PartialEq)]
pub enum Declined {
    /// The best plan for it saves less than `--consolidation-min-savings` of its nodes' price.
    SavingTooSmall {
        saving: f64,
        price: f64,
        min_share: f64,
    },
    /// Or less than `--consolidation-min-savings-per-pod` per pod evicted.
    SavingPerPodTooSmall {
        saving: f64,
        pods: usize,
        min_per_pod: f64,
    },
    /// No placement of its pods, on the other nodes and new ones of any group, costs less than its
    /// nodes' `price`: the cheapest found (None: no group may take the pods the others cannot).
    NothingCheaper {
        price: f64,
        cheapest: Option<Placement>,
    },
    /// A spot node's cheaper home is spot capacity of a pool (type × zone) interrupted or short more
    /// recently than its own, within three hours: `count` nodes of `group` for `cost` of `price`.
    SpotRule {
        group: String,
        count: i32,
        instance_type: String,
        zone: String,
        cost: f64,
        price: f64,
    },
    /// Bound in the scheduler's queue order (priority, then age), `pod` would fit on none of the
    /// other nodes and the `count` new nodes of `group` the cheapest placement counted on.
    Stranded {
        pod: String,
        group: String,
        count: usize,
    },
    /// The cluster would go below `--cores-total`, `--memory-total` or `--gpu-total`'s minimum.
    ClusterLimit(Resource),
    /// Its group has its disruption budget's worth of nodes out already.
    DisruptionBudget { group: String, allowed: usize },
    /// Its group would go below its min size.
    AtMinSize { group: String },
    /// Its group's disruption window is closed.
    OutsideDisruptionWindow { group: String },
    /// A pod annotated `karpenter.sh/do-not-disrupt` or `ferroscale.io/do-not-disrupt`.
    DoNotDisrupt { pod: String },
    /// The node itself is annotated `karpenter.sh/do-not-disrupt` or `ferroscale.io/do-not-disrupt`.
    NodeDoNotDisrupt,
    /// A pod the drainability rules forbid evicting.
    Blocked(Blocker),
    /// A pod that runs to completion (`safe-to-evict: "on-completion"`).
    OnCompletion { pod: String },
    /// The new nodes of its replacement were not ready within the group's `maxNodeProvisionTime`: the
    /// node stays, and is no candidate again for its group's `after`.
    NotReadyInTime { group: String },
    /// When the new nodes of its replacement joined, its pods no longer fit on them and the rest of
    /// the cluster (scale-down or new pods took the room meanwhile): the node stays, and is no
    /// candidate again for its group's `after`.
    RoomTaken { group: String },
    /// `--max-scale-down-parallelism` or `--max-drain-parallelism` removals are under way.
    Parallelism,
    /// `--max-evictions-per-loop` is reached this loop.
    EvictionLimit { max: usize },
    /// The new nodes it needs may not be asked for now (group health, backoff, capacity, max size,
    /// the cluster's maxima).
    NoNewNodes(crate::engine::reasons::Refusal),
    /// A pod the descheduler moved here within `--deschedule-cooldown`.
    Descheduled { pod: String },
}

/// The cheapest placement of a node's pods: `count` new nodes of `group` (none when they all fit on
/// the other nodes) for `cost` dollars an hour.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    pub group: Option<String>,
    pub count: i32,
    pub cost: f64,
}

impl fmt::Display for Declined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Declined::SavingTooSmall {
                saving,
                price,
                min_share,
            } => write!(
                f,
                "saving too small: ${saving:.4}/h of ${price:.4}/h is below {}%",
                min_share * 100.0
            ),
            Declined::SavingPerPodTooSmall {
                saving,
                pods,
                min_per_pod,
            } => write!(
                f,
                "saving too small: ${saving:.4}/h for {pods} pods evicted is below ${min_per_pod}/h per pod"
            ),
            Declined::NothingCheaper { price, cheapest } => match cheapest {
                None => write!(
                    f,
                    "no cheaper placement: no group may take the pods the other nodes cannot (${price:.4}/h now)"
                ),
                Some(Placement {
                    group: Some(g),
                    count,
                    cost,
                }) => write!(
                    f,
                    "no cheaper placement: {count} new node(s) of group {g} would cost ${cost:.4}/h, not less than its ${price:.4}/h"
                ),
                Some(Placement { cost, .. }) => write!(
                    f,
                    "no cheaper placement: its pods fit on the other nodes, but it costs ${price:.4}/h and that saves ${:.4}/h",
                    price - cost
                ),
            },
            Declined::SpotRule {
                group,
                count,
                instance_type,
                zone,
                cost,
                price,
            } => write!(
                f,
                "spot to spot: {count} node(s) of group {group} would cost ${cost:.4}/h of its ${price:.4}/h, \
                 but spot {instance_type} in {zone} was interrupted or short more recently than its own pool"
            ),
            Declined::Stranded { pod, group, count } => write!(
                f,
                "bound in the scheduler's order (priority, then age), pod {pod} would fit on none of the other \
                 nodes and {count} new node(s) of group {group}"
            ),
            Declined::ClusterLimit(r) => write!(f, "the cluster would go below its minimum {r}"),
            Declined::DisruptionBudget { group, allowed } => write!(
                f,
                "group {group} has its disruption budget ({allowed}) of nodes out"
            ),
            Declined::AtMinSize { group } => write!(f, "group {group} is at its min size"),
            Declined::OutsideDisruptionWindow { group } => {
                write!(f, "group {group}'s disruption window is closed")
            }
            Declined::DoNotDisrupt { pod } => write!(f, "pod {pod} is marked do-not-disrupt"),
            Declined::NodeDoNotDisrupt => f.write_str("the node is annotated do-not-disrupt"),
            Declined::Blocked(b) => write!(f, "{b}"),
            Declined::OnCompletion { pod } => write!(f, "pod {pod} runs to completion"),
            Declined::NotReadyInTime { group } => write!(
                f,
                "the new nodes of group {group} were not ready within maxNodeProvisionTime: kept"
            ),
            Declined::RoomTaken { group } => write!(
                f,
                "its pods no longer fit with the new nodes of group {group} (the room was taken meanwhile): kept"
            ),
            Declined::Parallelism => f.write_str(
                "--max-scale-down-parallelism or --max-drain-parallelism removals under way",
            ),
            Declined::EvictionLimit { max } => {
                write!(f, "--max-evictions-per-loop ({max}) reached this loop")
            }
            Declined::NoNewNodes(r) => write!(f, "no new nodes may be asked for: {r}"),
            Declined::Descheduled { pod } => {
                write!(f, "pod {pod} was moved by the descheduler within its cooldown")
            }
        }
    }
}

/// Why consolidation looked for no new plan this loop.
#[derive(Debug, Clone, PartialEq)]
pub enum Waits {
    /// A group backs off after failed scale-ups: capacity is uncertain.
    BackingOff { group: String },
    /// The loop scales up (pending pods, surges): the cluster is short, not oversized.
    ScalingUp,
    /// Scale-down's cooldown (`--scale-down-delay-after-*`) applies to consolidation too.
    Paused(Pause),
    /// An earlier consolidation's new nodes are on their way: one at a time.
    InProgress,
    /// Nodes are retired this loop (a replacement's old nodes, drift, a notice): where their pods
    /// will run is not known yet, and a new plan could count on the same room.
    Retiring,
    /// A deletion of `nodes` was found; it is acted on if it is found again from `until` (seconds),
    /// [`super::VALIDATION`] after it was first, as Karpenter validates a command before acting.
    Validating { nodes: Vec<String>, until: i64 },
}

impl fmt::Display for Waits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Waits::BackingOff { group } => write!(f, "group {group} backs off"),
            Waits::ScalingUp => f.write_str("the cluster scales up"),
            Waits::Paused(p) => write!(f, "{p}"),
            Waits::InProgress => f.write_str("a consolidation is under way"),
            Waits::Retiring => f.write_str("nodes are retired this loop; their pods move first"),
            Waits::Validating { nodes, until } => {
                let at = jiff::Timestamp::from_second(*until)
                    .map_or_else(|_| format!("{until}s"), |t| t.to_string());
                write!(
                    f,
                    "deleting {} is validated again at {at} before it is acted on",
                    nodes.join(", ")
                )
            }
        }
    }
}

impl Declined {
    /// Every [`Declined::label`], for series set to 0 before the first.
    pub const LABELS: [&'static str; 18] = [
        "saving_too_small",
        "saving_per_pod_too_small",
        "nothing_cheaper",
        "spot_rule",
        "stranded",
        "cluster_limit",
        "disruption_budget",
        "min_size",
        "window_closed",
        "do_not_disrupt",
        "blocked",
        "on_completion",
        "not_ready_in_time",
        "room_taken",
        "parallelism",
        "eviction_limit",
        "no_new_nodes",
        "descheduled",
    ];

    /// A stable name of the reason, without its figures: a metric label, a summary's key.
    pub fn label(&self) -> &'static str {
        match self {
            Declined::SavingTooSmall { .. } => "saving_too_small",
            Declined::SavingPerPodTooSmall { .. } => "saving_per_pod_too_small",
            Declined::NothingCheaper { .. } => "nothing_cheaper",
            Declined::SpotRule { .. } => "spot_rule",
            Declined::Stranded { .. } => "stranded",
            Declined::ClusterLimit(_) => "cluster_limit",
            Declined::DisruptionBudget { .. } => "disruption_budget",
            Declined::AtMinSize { .. } => "min_size",
            Declined::OutsideDisruptionWindow { .. } => "window_closed",
            Declined::DoNotDisrupt { .. } | Declined::NodeDoNotDisrupt => "do_not_disrupt",
            Declined::Blocked(_) => "blocked",
            Declined::OnCompletion { .. } => "on_completion",
            Declined::NotReadyInTime { .. } => "not_ready_in_time",
            Declined::RoomTaken { .. } => "room_taken",
            Declined::Parallelism => "parallelism",
            Declined::EvictionLimit { .. } => "eviction_limit",
            Declined::NoNewNodes(_) => "no_new_nodes",
            Declined::Descheduled { .. } => "descheduled",
        }
    }
}

impl From<Unremovable> for Declined {
    /// Why an old node of a consolidation stays this loop (the drain or the ledger said so), in
    /// consolidation's terms.
    fn from(why: Unremovable) -> Self {
        match why {
            Unremovable::Blocked(b) => Declined::Blocked(b),
            Unremovable::OnCompletion { pod } => Declined::OnCompletion { pod },
            Unremovable::EvictionLimit { max } => Declined::EvictionLimit { max },
            Unremovable::Descheduled { pod } => Declined::Descheduled { pod },
            Unremovable::AtMinSize { group } => Declined::AtMinSize { group },
            Unremovable::DisruptionBudget { group, allowed } => {
                Declined::DisruptionBudget { group, allowed }
            }
            Unremovable::OutsideDisruptionWindow { group } => {
                Declined::OutsideDisruptionWindow { group }
            }
            _ => Declined::Parallelism,
        }
    }
}
