//! A node's life beyond scaling: notices that its instance is going away (spot interruptions,
//! rebalance recommendations, scheduled changes, the instance stopping) and the reasons a node is taken
//! out of service other than for scale-down.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::time::Duration;

/// What a notice about an instance says.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NoticeKind {
    /// `EC2 Spot Instance Interruption Warning`: the instance goes in two minutes.
    SpotInterruption,
    /// `EC2 Instance Rebalance Recommendation`: the instance is at elevated risk of interruption.
    Rebalance,
    /// An `AWS Health Event` scheduled change (retirement, stop, maintenance) for the instance.
    ScheduledChange(ScheduledChange),
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
            NoticeKind::ScheduledChange(_) => DisruptionReason::ScheduledChange,
            NoticeKind::StateChange(_) => DisruptionReason::InstanceStopping,
        }
    }

    /// From when the notice takes its node out (seconds since the epoch), or `None` when it never does:
    /// a scheduled change from [`SCHEDULED_CHANGE_LEAD`] before its start, a reboot-only one never; any
    /// other notice at once (`i64::MIN`).
    pub fn due_from(&self) -> Option<i64> {
        match self {
            NoticeKind::ScheduledChange(c) if c.reboot_only() => None,
            NoticeKind::ScheduledChange(c) => Some(
                c.start
                    .map_or(i64::MIN, |s| s.saturating_sub(SCHEDULED_CHANGE_LEAD)),
            ),
            _ => Some(i64::MIN),
        }
    }

    /// The `kind` label of `ferroscale_interruption_messages_total`.
    pub fn label(&self) -> &'static str {
        match self {
            NoticeKind::SpotInterruption => "spot-interruption",
            NoticeKind::Rebalance => "rebalance",
            NoticeKind::ScheduledChange(_) => "scheduled-change",
            NoticeKind::StateChange(_) => "state-change",
        }
    }
}

/// What an AWS Health scheduled change says about an instance (`detail.eventTypeCode`,
/// `detail.startTime`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ScheduledChange {
    /// `AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED`, `AWS_EC2_INSTANCE_STOP_SCHEDULED`,
    /// `AWS_EC2_SYSTEM_REBOOT_MAINTENANCE_SCHEDULED`, ... (empty when the event does not say).
    pub code: String,
    /// When the change starts (seconds since the epoch), when the event says.
    pub start: Option<i64>,
}

impl ScheduledChange {
    /// Whether the instance only reboots (`AWS_EC2_INSTANCE_REBOOT_MAINTENANCE_SCHEDULED`,
    /// `AWS_EC2_SYSTEM_REBOOT_MAINTENANCE_SCHEDULED`, ...): it comes back with its node and pods, so
    /// nothing is drained. Retirements, stops and codes not known to be harmless take the node out.
    pub fn reboot_only(&self) -> bool {
        self.code.starts_with("AWS_EC2_") && self.code.contains("_REBOOT_")
    }
}

/// How long before a scheduled change starts its node is taken out (2 h): a voluntary drain under the
/// group's budget takes minutes per node, so a group whose nodes all retire at once still drains them in
/// turn before the start; a node is not given up weeks ahead of a change that AWS may still move.
pub const SCHEDULED_CHANGE_LEAD: i64 = 2 * 3600;

/// Why a node is taken out of service other than for scale-down.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum DisruptionReason {
    SpotInterruption,
    Rebalance,
    ScheduledChange,
    InstanceStopping,
    /// Its launch template or configuration is not its group's current one.
    Drift,
    /// Older than its maximum lifetime.
    Expired,
    /// Replaced by cheaper capacity, or deleted, by consolidation.
    Consolidation,
    /// Emptied by the descheduler (`HighNodeUtilization`): removed through scale-down's path.
    Descheduled,
}

impl DisruptionReason {
    /// Every reason.
    pub const ALL: [DisruptionReason; 8] = [
        DisruptionReason::SpotInterruption,
        DisruptionReason::Rebalance,
        DisruptionReason::ScheduledChange,
        DisruptionReason::InstanceStopping,
        DisruptionReason::Drift,
        DisruptionReason::Expired,
        DisruptionReason::Consolidation,
        DisruptionReason::Descheduled,
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
            DisruptionReason::Consolidation => "consolidation",
            DisruptionReason::Descheduled => "descheduled",
        }
    }

    /// How strong a notice is, the one order escalation follows: a rebalance recommendation, then a
    /// scheduled change, then a spot interruption warning, then the instance already stopping. Drift and
    /// expiry (the autoscaler's own) are below every notice.
    pub fn strength(self) -> u8 {
        match self {
            DisruptionReason::Drift
            | DisruptionReason::Expired
            | DisruptionReason::Consolidation
            | DisruptionReason::Descheduled => 0,
            DisruptionReason::Rebalance => 1,
            DisruptionReason::ScheduledChange => 2,
            DisruptionReason::SpotInterruption => 3,
            DisruptionReason::InstanceStopping => 4,
        }
    }

    /// The stronger of two reasons for the same node (`self` when equal): a later, stronger notice
    /// upgrades a node's reason, a weaker one never downgrades it.
    pub fn escalate(self, other: DisruptionReason) -> DisruptionReason {
        if other.strength() > self.strength() {
            other
        } else {
            self
        }
    }

    /// Whether it comes from a notice about the instance (the interruption queue, `--events`): taken out
    /// at the interruption's pace; drift and expiry are the autoscaler's own.
    pub fn from_notice(self) -> bool {
        !matches!(
            self,
            DisruptionReason::Drift
                | DisruptionReason::Expired
                | DisruptionReason::Consolidation
                | DisruptionReason::Descheduled
        )
    }

    /// Whether the cloud takes the instance whatever the autoscaler does (a spot interruption, the
    /// instance stopping): it is deleted even when its pods could not all be evicted. A rebalance
    /// recommendation or a scheduled change may not come to that: their drains follow the drainability
    /// rules and budgets (as do involuntary ones beyond `--max-interruptions-per-minute`).
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

/// The notices about nodes, as the loop keeps them until their node is gone (`run`'s interruption queue
/// and `simulate --events` alike): each node's strongest notice due by now, and scheduled changes held
/// until their lead before the start.
#[derive(Debug, Clone, Default)]
pub struct Noticed {
    /// Node → its strongest notice, and from when it is due.
    nodes: HashMap<String, Vec<(DisruptionReason, i64)>>,
}

impl Noticed {
    /// Records a notice about `node`; whether it will ever take the node out (a reboot-only scheduled
    /// change does not).
    pub fn note(&mut self, node: &str, kind: &NoticeKind) -> bool {
        let Some(from) = kind.due_from() else {
            return false;
        };
        let held = self.nodes.entry(node.to_string()).or_default();
        let reason = kind.reason();
        match held.iter_mut().find(|(r, _)| *r == reason) {
            Some(h) => h.1 = h.1.min(from),
            None => held.push((reason, from)),
        }
        true
    }

    /// The nodes `present` still has whose notices are due at `now`, each with its strongest reason due;
    /// nodes gone are forgotten.
    pub fn due(
        &mut self,
        now: i64,
        present: impl Fn(&str) -> bool,
    ) -> HashMap<String, DisruptionReason> {
        self.nodes.retain(|n, _| present(n));
        self.nodes
            .iter()
            .filter_map(|(node, held)| {
                let strongest = held
                    .iter()
                    .filter(|(_, from)| *from <= now)
                    .map(|(r, _)| *r)
                    .reduce(DisruptionReason::escalate)?;
                Some((node.clone(), strongest))
            })
            .collect()
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
    /// `GetScaledValueFromIntOrPercent(..., roundUp=true)`, percent × nodes / 100, so 7% of 100 is 7,
    /// not the 8 that `0.07 × 100` rounds up to); 0 blocks.
    pub fn allowed(self, nodes: usize) -> usize {
        match self {
            Budget::Count(n) => n as usize,
            Budget::Percent(p) => (p * nodes as f64 / 100.0).ceil() as usize,
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
            Ok(start) => {
                now.saturating_sub(start.timestamp().as_second())
                    < super::duration::secs(self.duration)
            }
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
    /// memory cloud `options.maxNodeLifetime`); overrides `--node-max-lifetime`. Zero means no
    /// lifetime, as `--node-max-lifetime 0` does: the group's nodes are never replaced for age.
    pub max_node_lifetime: Option<Duration>,
    /// Overrides `--max-disruption`.
    pub disruption_budget: Option<Budget>,
    /// When set, voluntary disruptions happen only while it is open.
    pub disruption_window: Option<Window>,
    /// Overrides `--consolidation` (tag `ferroscale.io/consolidation`, memory cloud `consolidation`).
    pub consolidation: Option<super::consolidation::Consolidation>,
    /// Overrides `--drift` (tag `ferroscale.io/drift`, memory cloud `drift`).
    pub drift: Option<super::drift::DriftPolicy>,
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
    fn a_stronger_notice_upgrades_a_node_and_a_weaker_one_never_downgrades_it() {
        use DisruptionReason::*;
        // The one order: rebalance, scheduled change, spot warning, stopping.
        let order = [
            Rebalance,
            ScheduledChange,
            SpotInterruption,
            InstanceStopping,
        ];
        for w in order.windows(2) {
            assert_eq!(w[0].escalate(w[1]), w[1]);
            assert_eq!(w[1].escalate(w[0]), w[1]);
        }
        let mut noticed = Noticed::default();
        assert!(noticed.note("a", &NoticeKind::Rebalance));
        assert!(noticed.note("a", &NoticeKind::SpotInterruption));
        assert!(noticed.note("a", &NoticeKind::Rebalance));
        let due = noticed.due(0, |_| true);
        assert_eq!(due["a"], SpotInterruption);
        assert!(
            noticed.due(0, |_| false).is_empty(),
            "a node gone is forgotten"
        );
    }

    #[test]
    fn scheduled_changes_count_near_their_start_and_reboots_never() {
        let change = |code: &str, start| {
            NoticeKind::ScheduledChange(ScheduledChange {
                code: code.into(),
                start,
            })
        };
        let start = 1_000_000;
        let mut noticed = Noticed::default();
        for code in [
            "AWS_EC2_INSTANCE_REBOOT_MAINTENANCE_SCHEDULED",
            "AWS_EC2_SYSTEM_REBOOT_MAINTENANCE_SCHEDULED",
        ] {
            assert!(!noticed.note("r", &change(code, Some(start))), "{code}");
        }
        assert!(noticed.note("s", &change("AWS_EC2_INSTANCE_STOP_SCHEDULED", Some(start))));
        assert!(noticed.note("u", &change("", None)), "no start: at once");
        let lead = start - SCHEDULED_CHANGE_LEAD;
        let at = |noticed: &mut Noticed, now| {
            let mut due: Vec<String> = noticed.due(now, |_| true).into_keys().collect();
            due.sort();
            due
        };
        assert_eq!(at(&mut noticed, lead - 1), ["u"]);
        assert_eq!(at(&mut noticed, lead), ["s", "u"]);
        // A spot warning meanwhile counts at once, whatever the change held.
        assert!(noticed.note("s", &NoticeKind::SpotInterruption));
        assert_eq!(
            noticed.due(0, |_| true).get("s"),
            Some(&DisruptionReason::SpotInterruption)
        );
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
        assert_eq!(
            Budget::Percent(7.0).allowed(100),
            7,
            "no float error rounded up"
        );
        assert_eq!(Budget::Count(0).allowed(50), 0, "0 blocks");
        assert_eq!(Budget::Percent(0.0).allowed(50), 0);
        assert_eq!(Budget::Percent(10.0).allowed(0), 0);
    }
}
