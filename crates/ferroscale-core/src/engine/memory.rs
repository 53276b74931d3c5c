//! What the autoscaler remembers between loops: when nodes became unneeded, when scale-ups and removals
//! happened or failed, which groups back off and which instance types ran out of capacity where.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::time::Duration;

use super::settings::{NodeGroupBackoff, Settings};
use super::templates::GroupTemplate;
use crate::backoff::Exponential;
use crate::labels;
use crate::model::duration::secs;
use crate::model::lifecycle::DisruptionReason;
use crate::model::{NodeGroup, TemplateNode};

/// What the autoscaler remembers between loops.
#[derive(Debug, Clone, Default)]
pub struct Memory {
    /// Node → when it was first seen unneeded (seconds).
    pub unneeded_since: HashMap<String, i64>,
    pub last_scale_up: Option<i64>,
    /// When new nodes were last asked for a replacement or a consolidation (a surge): scale-down
    /// pauses after it as after any scale-up, consolidation does not (its own surge is no sign the
    /// cluster is short).
    pub last_surge: Option<i64>,
    /// A deletion consolidation found and holds until it is validated again
    /// ([`crate::engine::consolidate::VALIDATION`] later), as Karpenter validates its commands.
    pub validating: Option<Validating>,
    /// When a node was last removed, and when a removal last failed (set by whoever carries them out).
    pub last_scale_down_delete: Option<i64>,
    pub last_scale_down_failure: Option<i64>,
    /// Group → its backoff after failed scale-ups.
    pub backoff: HashMap<String, Backoff>,
    /// How long groups back off: the settings' of the last loop (`run_once` sets it), so a failure
    /// the actuator records after the loop backs off by the same flags as the engine's own.
    pub backoff_policy: NodeGroupBackoff,
    /// Instance (provider id) → when it was first seen without a node.
    pub unregistered_since: HashMap<String, i64>,
    /// (instance type, zone) → until when it is taken as out of capacity: a launch that failed for lack
    /// of capacity keeps every group of that type in that zone out, not only the group that tried.
    pub out_of_capacity: HashMap<(String, String), i64>,
    /// Group → since when it has had capacity asked for and not delivered.
    pub unfulfilled_since: HashMap<String, i64>,
    /// Group → the template last copied from one of its real nodes, used while it has no good node
    /// (upstream's template cache; one template and its DaemonSet pods per group).
    pub templates: HashMap<String, GroupTemplate>,
    /// Nodes being replaced (drift, expiry): their surge was asked for, they go once it has joined.
    pub replacing: HashMap<String, Replacing>,
    /// New nodes that already let an old node go, with the old node (a consolidation's first): each
    /// counts for one replacement only.
    pub surge_claimed: HashMap<String, String>,
    /// Nodes taken out for an involuntary notice, with when: what `--max-interruptions-per-minute`
    /// counts (each node once, for as long as it is there).
    pub involuntary: HashMap<String, i64>,
    /// Nodes with a notice due, with its reason and since when it was first acted on: what their
    /// intents say (`intents`), so a notice outlives a restart.
    pub noticed: HashMap<String, (DisruptionReason, i64)>,
    /// Consolidations whose new nodes were asked for and whose old nodes wait for them.
    pub consolidating: Vec<Consolidating>,
    /// Nodes a consolidation took or gave up on, with when: not candidates again for their group's
    /// `after`.
    pub consolidated: HashMap<String, i64>,
    /// Nodes the descheduler emptied (`HighNodeUtilization`, in `run` and `simulate`), with since when:
    /// scale-down removes them through its path at once, under its rules and the disruption budgets.
    pub emptying: HashMap<String, i64>,
    /// Workloads (`Pod::owner_key`) the descheduler moved within `--deschedule-cooldown`, set by the
    /// caller before each loop from the descheduler's history: scale-down and consolidation do not move
    /// them again meanwhile (they keep their nodes), as the descheduler leaves alone what they moved.
    pub descheduled: HashSet<String>,
    /// Whether the nodes' soft taints were read back into `unneeded_since` (once, at the first loop,
    /// with `--node-deletion-candidate-ttl`).
    pub candidates_loaded: bool,
    /// Node → its bound pods as last seen, and when they last changed (a pod added or removed), if this
    /// memory saw it: what consolidation's `after` counts from, as Karpenter's `consolidateAfter`
    /// resets on a pod's removal too (a snapshot alone keeps no trace of a deleted pod).
    pub pod_changes: HashMap<String, PodChange>,
    /// Pod changes before this time are unknown to this memory (`run` sets its start: a node first seen
    /// then counts as changed then, so a node emptied just before a restart is not taken at once).
    /// None (`simulate`): a node first seen counts from its pods' and its own creation.
    pub pod_changes_known_from: Option<i64>,
}

/// A node's bound pods (DaemonSet and mirror pods left out) in one figure, and when they last changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodChange {
    /// How many pods, and the sum of a hash of each (namespace, name, creation): a pod added, removed
    /// or recreated changes it. None while the node's group does not consolidate (not watched).
    pub signature: Option<(usize, u64)>,
    /// When the change was seen (the loop's time); None when none was seen since the node was first
    /// seen by a memory that knows no earlier changes.
    pub at: Option<i64>,
}

/// A consolidation under way: `count` new nodes of `group` were asked for `since`; `nodes` go once
/// they have joined, or stay if they have not within the group's `maxNodeProvisionTime`.
#[derive(Debug, Clone, PartialEq)]
pub struct Consolidating {
    pub nodes: Vec<String>,
    pub group: String,
    pub count: i32,
    pub since: i64,
}

/// A deletion held for validation: its nodes, sorted, and when it was first found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validating {
    pub nodes: Vec<String>,
    pub since: i64,
}

/// A replacement under way: the surge was asked for `since`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacing {
    pub group: String,
    pub reason: DisruptionReason,
    pub since: i64,
}

/// A group's backoff after failed scale-ups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backoff {
    /// Backed off until (seconds).
    pub until: i64,
    /// The current backoff, doubled per failure.
    pub seconds: i64,
    /// When the last failure happened.
    pub last_failure: i64,
    /// Upstream's error code of the last failure (`cloudProviderError`, `timeout`, or the cloud's
    /// launch error code), for `node_group_backoff_status{reason}` and the status ConfigMap.
    pub reason: String,
}

/// The (instance type, zone) of a template, when its labels say.
fn type_and_zone(t: &TemplateNode) -> Option<(String, String)> {
    Some((
        t.labels.get(labels::INSTANCE_TYPE)?.clone(),
        t.labels.get(labels::ZONE)?.clone(),
    ))
}

impl Memory {
    /// Records that a scale-up of `group` failed at `now` for `reason` (upstream's error code): it is
    /// skipped for `--initial-node-group-backoff-duration`; a failure after that backoff ended doubles
    /// it, up to `--max-node-group-backoff-duration`, and one while it lasts keeps its length (upstream:
    /// concurrent failures do not compound). A group without a failure for
    /// `--node-group-backoff-reset-timeout` starts again from the first.
    pub fn scale_up_failed(&mut self, group: &str, reason: &str, now: i64) {
        let policy = self.backoff_policy;
        let pauses = Exponential::new(policy.initial, policy.max);
        let seconds = match self
            .backoff
            .get(group)
            .filter(|b| now.saturating_sub(b.last_failure) <= secs(policy.reset))
        {
            None => secs(pauses.first),
            Some(b) if now < b.until => b.seconds,
            Some(b) => secs(pauses.after(Some(Duration::from_secs(
                u64::try_from(b.seconds).unwrap_or(0),
            )))),
        };
        self.backoff.insert(
            group.to_string(),
            Backoff {
                until: now.saturating_add(seconds),
                seconds,
                last_failure: now,
                reason: reason.to_string(),
            },
        );
    }

    /// Records that `group` could not launch for lack of capacity (`reason` the cloud's code): it backs
    /// off, and its instance type in its zone is avoided by every group for as long.
    pub fn capacity_exhausted(&mut self, group: &NodeGroup, reason: &str, now: i64) {
        self.scale_up_failed(&group.id, reason, now);
        if let (Some(key), Some(b)) = (type_and_zone(&group.template), self.backoff.get(&group.id))
        {
            self.out_of_capacity.insert(key, b.until);
        }
    }

    /// Records that spot capacity of `instance_type` in `zone` is being taken back (a spot interruption
    /// warning): every group of that type in that zone is avoided for the first backoff
    /// (`--initial-node-group-backoff-duration`).
    pub fn capacity_lost(&mut self, instance_type: String, zone: String, now: i64) {
        let first = secs(self.backoff_policy.initial);
        let until = self
            .out_of_capacity
            .entry((instance_type, zone))
            .or_insert(now);
        *until = (*until).max(now.saturating_add(first));
    }

    /// Until when a template's instance type and zone are out of capacity, if they are.
    pub(super) fn capacity_out(&self, t: &TemplateNode, now: i64) -> Option<(String, String, i64)> {
        let (ty, zone) = type_and_zone(t)?;
        let until = *self.out_of_capacity.get(&(ty.clone(), zone.clone()))?;
        (now < until).then_some((ty, zone, until))
    }

    /// Until when `group` is backed off after failed scale-ups, if it is at `now`.
    pub fn backed_off(&self, group: &str, now: i64) -> Option<i64> {
        self.backoff_of(group, now).map(|b| b.until)
    }

    /// Why scale-down waits at `now` (`--scale-down-delay-after-add`, `-after-failure`,
    /// `-after-delete`), if it does: upstream's scale-down cooldown; and while a consolidation's new
    /// nodes are on their way, whose plan counts on the other nodes as they are.
    pub fn scale_down_paused(&self, s: &Settings, now: i64) -> Option<Pause> {
        let added = self.last_scale_up.max(self.last_surge);
        self.paused(s, now, added)
    }

    /// Why consolidation waits at `now`: scale-down's cooldown, but after a scale-up for pending pods
    /// only, not after a replacement's or consolidation's own surge (which would hold every plan for
    /// `--scale-down-delay-after-add` after the last).
    pub fn consolidation_paused(&self, s: &Settings, now: i64) -> Option<Pause> {
        self.paused(s, now, self.last_scale_up)
    }

    fn paused(&self, s: &Settings, now: i64, added: Option<i64>) -> Option<Pause> {
        let within = |t: Option<i64>, d: std::time::Duration| {
            t.is_some_and(|t| now.saturating_sub(t) < secs(d))
        };
        if within(added, s.scale_down_delay_after_add) {
            Some(Pause::AfterAdd)
        } else if within(
            self.last_scale_down_failure,
            s.scale_down_delay_after_failure,
        ) {
            Some(Pause::AfterFailure)
        } else if within(self.last_scale_down_delete, s.scale_down_delay_after_delete) {
            Some(Pause::AfterDelete)
        } else if !self.consolidating.is_empty() {
            Some(Pause::Consolidating)
        } else {
            None
        }
    }

    /// Whether `node` is on its way out for a replacement (drift, expiry, consolidation): it counts
    /// against its group's disruption budget.
    pub fn disrupting(&self, node: &str) -> bool {
        self.replacing.contains_key(node)
            || self
                .consolidating
                .iter()
                .any(|c| c.nodes.iter().any(|n| n == node))
    }

    /// Hands the nodes a descheduling cycle at `now` emptied to scale-down: they replace the last
    /// cycle's, each keeping since when it was first asked for.
    pub fn set_emptying(&mut self, nodes: &[String], now: i64) {
        let old = std::mem::take(&mut self.emptying);
        self.emptying = nodes
            .iter()
            .map(|n| (n.clone(), old.get(n).copied().unwrap_or(now)))
            .collect();
    }

    /// `group`'s backoff, while it lasts at `now`.
    pub fn backoff_of(&self, group: &str, now: i64) -> Option<&Backoff> {
        self.backoff.get(group).filter(|b| now < b.until)
    }
}

/// Why scale-down waits although nodes are unneeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pause {
    AfterAdd,
    AfterFailure,
    AfterDelete,
    /// A consolidation's new nodes are on their way: its plan places the old nodes' pods on the
    /// other nodes as they are.
    Consolidating,
}

impl fmt::Display for Pause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Pause::AfterAdd => {
                "unneeded, but a scale-up happened within --scale-down-delay-after-add"
            }
            Pause::AfterFailure => {
                "unneeded, but a removal failed within --scale-down-delay-after-failure"
            }
            Pause::AfterDelete => {
                "unneeded, but a node was removed within --scale-down-delay-after-delete"
            }
            Pause::Consolidating => {
                "unneeded, but a consolidation's new nodes are on their way and its plan counts on this node"
            }
        })
    }
}
