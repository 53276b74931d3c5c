//! A node's life beyond scaling: notices that its instance is going away (spot interruptions,
//! rebalance recommendations, scheduled changes, the instance stopping) and the reasons a node is taken
//! out of service other than for scale-down.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

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
    /// Every reason.
    pub const ALL: [DisruptionReason; 6] = [
        DisruptionReason::SpotInterruption,
        DisruptionReason::Rebalance,
        DisruptionReason::ScheduledChange,
        DisruptionReason::InstanceStopping,
        DisruptionReason::Drift,
        DisruptionReason::Expired,
    ];

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

    /// Whether it comes from a notice about the instance (the interruption queue, `--events`), taken
    /// out at once and never waiting for the budget; drift and expiry are the autoscaler's own.
    pub fn from_notice(self) -> bool {
        !matches!(self, DisruptionReason::Drift | DisruptionReason::Expired)
    }

    /// Whether the cloud takes the instance whatever the autoscaler does (a spot interruption, the
    /// instance stopping): it is deleted even when its pods could not all be evicted. A rebalance
    /// recommendation or a scheduled change may not come to that: their drains honour budgets.
    pub fn involuntary(self) -> bool {
        matches!(
            self,
            DisruptionReason::SpotInterruption | DisruptionReason::InstanceStopping
        )
    }
}

impl fmt::Display for DisruptionReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for DisruptionReason {
    type Err = crate::Error;
    /// The reason by its name ([`DisruptionReason::as_str`]), as a stored status names it.
    fn from_str(s: &str) -> crate::Result<Self> {
        DisruptionReason::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| crate::Error::invalid("disruption reason", format!("unknown {s:?}")))
    }
}

/// How many of a group's nodes may be out of service at once (`--max-disruption`, a group's
/// `disruptionBudget`): a count, or a share of the group's nodes rounded up, as Karpenter's budgets;
/// `0` (or `0%`) blocks voluntary disruptions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    Count(u32),
    Percent(f64),
}

impl Default for Budget {
    /// 10%.
    fn default() -> Self {
        Budget::Percent(10.0)
    }
}

impl Budget {
    /// `"20%"` or `"3"`.
    pub fn parse(text: &str) -> Result<Budget, String> {
        let t = text.trim();
        let bad = || format!("{text:?}: a count (3) or a percentage (20%) of at least 0");
        match t.strip_suffix('%') {
            Some(p) => match p.trim().parse::<f64>() {
                Ok(p) if p.is_finite() && (0.0..=100.0).contains(&p) => Ok(Budget::Percent(p)),
                _ => Err(bad()),
            },
            None => t.parse::<u32>().map(Budget::Count).map_err(|_| bad()),
        }
    }

    /// How many of `nodes` may be disrupted at once: the count, or the share rounded up (Karpenter's
    /// `GetScaledValueFromIntOrPercent(..., roundUp=true)`); 0 blocks.
    pub fn allowed(self, nodes: usize) -> usize {
        match self {
            Budget::Count(n) => n as usize,
            Budget::Percent(p) => (p / 100.0 * nodes as f64).ceil() as usize,
        }
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Budget::Count(n) => write!(f, "{n}"),
            Budget::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// When voluntary disruptions (replacements, scale-down) are allowed: from each time `schedule` (cron,
/// UTC) matches, for `duration`.
#[derive(Clone, PartialEq)]
pub struct Window {
    pub schedule: String,
    cron: croner::Cron,
    pub duration: Duration,
}

impl fmt::Debug for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Window({:?} for {:?})", self.schedule, self.duration)
    }
}

impl Window {
    /// `schedule` in cron's five fields (or six, with seconds first).
    pub fn parse(schedule: &str, duration: Duration) -> Result<Window, String> {
        let cron = schedule
            .parse::<croner::Cron>()
            .map_err(|e| format!("{schedule:?}: not a cron schedule: {e}"))?;
        if duration.is_zero() {
            return Err("the window's duration must be above 0".into());
        }
        Ok(Window {
            schedule: schedule.to_string(),
            cron,
            duration,
        })
    }

    /// Whether the window is open at `now` (seconds since the epoch).
    pub fn open(&self, now: i64) -> bool {
        let Ok(t) = jiff::Timestamp::from_second(now) else {
            return false;
        };
        let zoned = t.to_zoned(jiff::tz::TimeZone::UTC);
        match self.cron.find_previous_occurrence(&zoned, true) {
            Ok(start) => now - start.timestamp().as_second() < self.duration.as_secs() as i64,
            Err(_) => false,
        }
    }
}

/// What a group says about its nodes' lives: the revision new instances launch from (and each
/// instance's), and the group's own lifetime and budget, when set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupLifecycle {
    /// The group's current launch template (id and resolved version) or launch configuration.
    pub revision: Option<String>,
    /// Other revisions new instances launch from too: the launch templates a mixed-instances policy's
    /// overrides name for their instance types (resolved versions). An instance of one is current.
    pub also_current: BTreeSet<String>,
    /// Instance (provider id) → the revision it was launched from.
    pub instance_revisions: BTreeMap<String, String>,
    /// Nodes older than this are replaced (tag `ferroscale.io/max-node-lifetime`,
    /// memory cloud `options.maxNodeLifetime`); overrides `--node-max-lifetime`.
    pub max_node_lifetime: Option<Duration>,
    /// Overrides `--max-disruption`.
    pub disruption_budget: Option<Budget>,
    /// When set, voluntary disruptions happen only while it is open.
    pub disruption_window: Option<Window>,
}

impl GroupLifecycle {
    /// Whether `instance` was launched from another revision than the group's current ones.
    pub fn drifted(&self, instance: &str) -> bool {
        match (&self.revision, self.instance_revisions.get(instance)) {
            (Some(now), Some(then)) => now != then && !self.also_current.contains(then),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_of_any_current_revision_has_not_drifted() {
        let lifecycle = GroupLifecycle {
            revision: Some("lt:lt-main:5".into()),
            also_current: ["lt:lt-arm:3".to_string()].into(),
            instance_revisions: [
                ("main", "lt:lt-main:5"),
                ("arm", "lt:lt-arm:3"),
                ("old-main", "lt:lt-main:4"),
                ("old-arm", "lt:lt-arm:2"),
            ]
            .into_iter()
            .map(|(i, r)| (i.to_string(), r.to_string()))
            .collect(),
            ..Default::default()
        };
        assert!(!lifecycle.drifted("main"));
        assert!(
            !lifecycle.drifted("arm"),
            "an override's template is current"
        );
        assert!(lifecycle.drifted("old-main"));
        assert!(lifecycle.drifted("old-arm"));
        assert!(!lifecycle.drifted("unknown"));
    }

    #[test]
    fn a_window_is_open_from_each_match_for_its_duration() {
        // 02:00 UTC every day, for two hours.
        let w = Window::parse("0 2 * * *", Duration::from_secs(7200)).unwrap();
        let day = 1_790_000_000 - 1_790_000_000 % 86_400;
        assert!(!w.open(day + 3600), "01:00");
        assert!(w.open(day + 2 * 3600), "02:00");
        assert!(w.open(day + 3 * 3600 + 59 * 60), "03:59");
        assert!(!w.open(day + 4 * 3600), "04:00");
        assert!(Window::parse("every night", Duration::from_secs(1)).is_err());
    }

    #[test]
    fn budgets_parse_round_up_and_zero_blocks() {
        assert_eq!(Budget::parse("20%"), Ok(Budget::Percent(20.0)));
        assert_eq!(Budget::parse("3"), Ok(Budget::Count(3)));
        assert!(Budget::parse("-1").is_err());
        assert!(Budget::parse("150%").is_err());
        // Upstream: kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go (GetAllowedDisruptionsByReason:
        // percentages round up) and its budget tests ("0" blocks).
        assert_eq!(Budget::Percent(10.0).allowed(5), 1, "rounds up");
        assert_eq!(Budget::Percent(10.0).allowed(11), 2, "rounds up, not down");
        assert_eq!(Budget::Percent(20.0).allowed(50), 10);
        assert_eq!(Budget::Count(0).allowed(50), 0, "0 blocks");
        assert_eq!(Budget::Percent(0.0).allowed(50), 0);
        assert_eq!(Budget::Percent(10.0).allowed(0), 0);
    }
}
