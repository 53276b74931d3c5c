//! What the autoscaler remembers between loops: when nodes became unneeded, when scale-ups and removals
//! happened or failed, which groups back off and which instance types ran out of capacity where.

use std::collections::HashMap;

use super::templates::GroupTemplate;
use crate::labels;
use crate::model::{NodeGroup, TemplateNode};

/// What the autoscaler remembers between loops.
#[derive(Debug, Clone, Default)]
pub struct Memory {
    /// Node → when it was first seen unneeded (seconds).
    pub unneeded_since: HashMap<String, i64>,
    pub last_scale_up: Option<i64>,
    /// When a node was last removed, and when a removal last failed (set by whoever carries them out).
    pub last_scale_down_delete: Option<i64>,
    pub last_scale_down_failure: Option<i64>,
    /// Group → (backed off until, current backoff, last failure).
    pub backoff: HashMap<String, (i64, i64, i64)>,
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
}

/// The (instance type, zone) of a template, when its labels say.
fn type_and_zone(t: &TemplateNode) -> Option<(String, String)> {
    Some((
        t.labels.get(labels::INSTANCE_TYPE)?.clone(),
        t.labels.get(labels::ZONE)?.clone(),
    ))
}

/// First backoff after a failed scale-up, doubled per failure up to the max; forgotten after the reset.
const BACKOFF_INITIAL: i64 = 300;
const BACKOFF_MAX: i64 = 1800;
const BACKOFF_RESET: i64 = 3 * 3600;

impl Memory {
    /// Records that a scale-up of `group` failed at `now`: it is skipped for 5m, 10m, ... up to 30m.
    pub fn scale_up_failed(&mut self, group: &str, now: i64) {
        let next = match self.backoff.get(group) {
            Some(&(_, d, last)) if now - last < BACKOFF_RESET => (d * 2).min(BACKOFF_MAX),
            _ => BACKOFF_INITIAL,
        };
        self.backoff
            .insert(group.to_string(), (now + next, next, now));
    }

    /// Records that `group` could not launch for lack of capacity: it backs off, and its instance type
    /// in its zone is avoided by every group for as long.
    pub fn capacity_exhausted(&mut self, group: &NodeGroup, now: i64) {
        self.scale_up_failed(&group.id, now);
        if let (Some(key), Some(&(until, _, _))) =
            (type_and_zone(&group.template), self.backoff.get(&group.id))
        {
            self.out_of_capacity.insert(key, until);
        }
    }

    /// Until when a template's instance type and zone are out of capacity, if they are.
    pub(super) fn capacity_out(&self, t: &TemplateNode, now: i64) -> Option<(String, String, i64)> {
        let (ty, zone) = type_and_zone(t)?;
        let until = *self.out_of_capacity.get(&(ty.clone(), zone.clone()))?;
        (now < until).then_some((ty, zone, until))
    }

    /// Until when `group` is backed off after failed scale-ups, if it is at `now`.
    pub fn backed_off(&self, group: &str, now: i64) -> Option<i64> {
        self.backoff
            .get(group)
            .map(|&(until, _, _)| until)
            .filter(|until| now < *until)
    }
}
