//! A node's life beyond scaling: notices that its instance is going away (spot interruptions,
//! rebalance recommendations, scheduled changes, the instance stopping) and the reasons a node is taken
//! out of service other than for scale-down.

use std::fmt;

/// What a notice about an instance says.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NoticeKind {
    /// `EC2 Spot Instance Interruption Warning`: the instance goes in two minutes.
    SpotInterruption,
    /// `EC2 Instance Rebalance Recommendation`: the instance is at elevated risk of interruption.
    Rebalance,
    /// An `AWS Health Event` scheduled change (retirement, maintenance) for the instance.
    ScheduledChange,
    /// `EC2 Instance State-change Notification` with this state (stopping, stopped, shutting-down,
    /// terminated).
    StateChange(String),
}

impl NoticeKind {
    /// Why the node is disrupted.
    pub fn reason(&self) -> DisruptionReason {
        match self {
            NoticeKind::SpotInterruption => DisruptionReason::SpotInterruption,
            NoticeKind::Rebalance => DisruptionReason::Rebalance,
            NoticeKind::ScheduledChange => DisruptionReason::ScheduledChange,
            NoticeKind::StateChange(_) => DisruptionReason::InstanceStopping,
        }
    }

    /// The `kind` label of `ferroscale_interruption_messages_total`.
    pub fn label(&self) -> &'static str {
        match self {
            NoticeKind::SpotInterruption => "spot-interruption",
            NoticeKind::Rebalance => "rebalance",
            NoticeKind::ScheduledChange => "scheduled-change",
            NoticeKind::StateChange(_) => "state-change",
        }
    }
}

/// Why a node is taken out of service other than for scale-down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DisruptionReason {
    SpotInterruption,
    Rebalance,
    ScheduledChange,
    InstanceStopping,
    /// Its launch template or configuration is not its group's current one.
    Drift,
    /// Older than its maximum lifetime.
    Expired,
}

impl DisruptionReason {
    /// The reason as `simulate`'s JSON, events and metrics name it.
    pub fn as_str(self) -> &'static str {
        match self {
            DisruptionReason::SpotInterruption => "spot-interruption",
            DisruptionReason::Rebalance => "rebalance",
            DisruptionReason::ScheduledChange => "scheduled-change",
            DisruptionReason::InstanceStopping => "instance-stopping",
            DisruptionReason::Drift => "drift",
            DisruptionReason::Expired => "expired",
        }
    }

    /// Whether the cloud takes the instance whatever the autoscaler does (no budget makes it wait).
    pub fn involuntary(self) -> bool {
        !matches!(self, DisruptionReason::Drift | DisruptionReason::Expired)
    }
}

impl fmt::Display for DisruptionReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
