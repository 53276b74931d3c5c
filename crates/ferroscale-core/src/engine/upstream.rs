//! Upstream cluster-autoscaler's names for the typed reasons: the label values of its metrics
//! (`unremovable_nodes_count{reason}`, `failed_scale_ups_total{reason}`,
//! `skipped_scale_events_count{direction,reason}`), so dashboards and alerts written for it keep working.

use super::cleanup::TIMEOUT;
use super::decisions::Direction;
use super::limits::Resource;
use super::reasons::{Cancel, InstanceFault, Removal, Unremovable};

/// Upstream's error type and code for a failed call to the cloud (`errors_total{type}`,
/// `failed_scale_ups_total{reason}`).
pub const CLOUD_PROVIDER_ERROR: &str = "cloudProviderError";

/// Upstream's `UnremovableReason` values that ferroscale gives, in upstream's order: the gauge is set
/// for each of them every loop (0 when no node is kept for it), so a series never goes stale.
pub const UNREMOVABLE_REASONS: [&str; 13] = [
    "ScaleDownDisabledAnnotation",
    "NotUnneededLongEnough",
    "NodeGroupMinSizeReached",
    "MinimalResourceLimitExceeded",
    "NotUnderutilized",
    "NotUnneededOtherReason",
    "NoPlaceToMovePods",
    "BlockedByPod",
    "NotUnreadyLongEnough",
    "CurrentlyBeingDeleted",
    "UnexpectedError",
    "ScaleDownUnreadyDisabled",
    "AtomicScaleDownFailed",
];

impl Unremovable {
    /// Upstream's `UnremovableReason` for this one. Reasons upstream has no value of its own for (a
    /// pause after a scale-up, a removal budget spent) are its `NotUnneededOtherReason`.
    pub fn upstream_reason(&self) -> &'static str {
        match self {
            // Upstream's nearest: a node annotation keeping the node.
            Unremovable::ScaleDownDisabled | Unremovable::DoNotDisrupt => {
                "ScaleDownDisabledAnnotation"
            }
            Unremovable::NotUnderutilized { .. } => "NotUnderutilized",
            Unremovable::Blocked(_) | Unremovable::OnCompletion { .. } => "BlockedByPod",
            Unremovable::NoPlaceFor { .. } => "NoPlaceToMovePods",
            Unremovable::NotUnneededLongEnough { .. } => "NotUnneededLongEnough",
            Unremovable::AtMinSize { .. } => "NodeGroupMinSizeReached",
            Unremovable::MinimalResourceLimit { .. } => "MinimalResourceLimitExceeded",
            Unremovable::NotUnreadyLongEnough { .. } => "NotUnreadyLongEnough",
            Unremovable::UnreadyKept => "ScaleDownUnreadyDisabled",
            Unremovable::BeingDeleted => "CurrentlyBeingDeleted",
            Unremovable::UtilizationUnknown { .. } => "UnexpectedError",
            Unremovable::AtomicScaleDownFailed { .. } => "AtomicScaleDownFailed",
            Unremovable::Paused(_)
            | Unremovable::WaitsForNextLoop
            | Unremovable::ParallelismReached
            | Unremovable::DisruptionBudget { .. }
            | Unremovable::OutsideDisruptionWindow { .. }
            | Unremovable::EvictionLimit { .. }
            | Unremovable::SurgeRefused(_)
            | Unremovable::Descheduled { .. } => "NotUnneededOtherReason",
        }
    }
}

impl Removal {
    /// Upstream's `scaled_down_nodes_total{reason}`: `unready`, `empty` or `underutilized`.
    pub fn upstream_reason(&self) -> &'static str {
        if self.unready {
            "unready"
        } else if self.empty {
            "empty"
        } else {
            "underutilized"
        }
    }
}

impl InstanceFault {
    /// Upstream's error code for the failed scale-up: the cloud's launch error code, or `timeout`.
    pub fn code(&self) -> &str {
        match self {
            InstanceFault::LaunchFailed { code } | InstanceFault::AtomicGroupFailed { code } => {
                code
            }
            InstanceFault::NotRegistered { .. } => TIMEOUT,
        }
    }
}

impl Cancel {
    /// Upstream's error code for the failed scale-up: the cloud's launch error code, or `timeout`.
    pub fn code(&self) -> &str {
        match self {
            Cancel::LaunchFailed { code } => code,
            Cancel::NotDelivered { .. } => TIMEOUT,
        }
    }
}

impl Resource {
    /// Upstream's reason of a scale event skipped for this resource's limit. Upstream counts no
    /// skipped event for a GPU limit (its `RegisterSkippedScaleUp*` know cores and memory only).
    pub fn skipped_reason(self) -> Option<&'static str> {
        match self {
            Resource::Cores => Some("CpuResourceLimit"),
            Resource::Memory => Some("MemoryResourceLimit"),
            Resource::Gpu => None,
        }
    }
}

impl Direction {
    /// Upstream's `direction` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Up => "up",
            Direction::Down => "down",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::reasons::Pause;

    #[test]
    fn unready_nodes_are_kept_for_upstreams_unready_reasons() {
        let waiting = Unremovable::NotUnreadyLongEnough {
            waited: 600,
            needed: 1200,
        };
        assert_eq!(waiting.upstream_reason(), "NotUnreadyLongEnough");
        assert_eq!(
            Unremovable::UnreadyKept.upstream_reason(),
            "ScaleDownUnreadyDisabled"
        );
        assert_eq!(
            Unremovable::BeingDeleted.upstream_reason(),
            "CurrentlyBeingDeleted"
        );
    }

    #[test]
    fn every_reason_given_is_one_the_gauge_is_set_for() {
        let all = [
            Unremovable::ScaleDownDisabled,
            Unremovable::DoNotDisrupt,
            Unremovable::NotUnderutilized {
                utilization: 0.9,
                threshold: 0.5,
                gpu: false,
            },
            Unremovable::NoPlaceFor {
                pod: "a/b".into(),
                why: None,
            },
            Unremovable::NotUnneededLongEnough {
                waited: 1,
                needed: 600,
            },
            Unremovable::Paused(Pause::AfterAdd),
            Unremovable::AtMinSize { group: "g".into() },
            Unremovable::MinimalResourceLimit {
                resource: Resource::Memory,
            },
            Unremovable::OnCompletion { pod: "a/b".into() },
            Unremovable::WaitsForNextLoop,
            Unremovable::UnreadyKept,
            Unremovable::NotUnreadyLongEnough {
                waited: 1,
                needed: 1200,
            },
            Unremovable::ParallelismReached,
            Unremovable::DisruptionBudget {
                group: "g".into(),
                allowed: 1,
            },
            Unremovable::OutsideDisruptionWindow { group: "g".into() },
            Unremovable::BeingDeleted,
            Unremovable::UtilizationUnknown { resource: "cpu" },
            Unremovable::AtomicScaleDownFailed { group: "g".into() },
        ];
        for u in all {
            assert!(
                UNREMOVABLE_REASONS.contains(&u.upstream_reason()),
                "{u:?} gives {}",
                u.upstream_reason()
            );
        }
    }
}
