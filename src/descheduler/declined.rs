//! The proposals a cycle's plan declined, made visible beyond the log: an Event on the pod
//! (`DeschedulingDeclined`, naming the strategy, the node and the plan's typed reason) and the gauge
//! `ferroscale_descheduling_declined_pods` by strategy, profile, kind of reason and (for a pod no node
//! takes) each scheduler filter that kept it off some node. A steady cluster
//! declines the same proposals every cycle, so a pod's Event is written only when its reason (for that
//! strategy) differs from the last cycle's; pods the evictor keeps (`Why::Kept`: most pods, every
//! cycle, as the descheduler's own filters) are counted but get no Event. The Event's action is the
//! reason's kind, so a pod declined for another kind of reason gets a new Event rather than a count on
//! the last one's series.

use std::collections::{BTreeMap, HashMap};

use super::Identify;
use crate::actuator::{Cluster, EventKind, Regarding};
use crate::deschedule::{Declined, Why};
use crate::metrics::{DeclinedLabels, DeschedulerMetrics};

/// The reason of the Event on a pod whose proposed eviction the plan declined.
pub const DECLINED: &str = "DeschedulingDeclined";

/// A declined proposal as remembered between cycles: the pod (namespace/name), the strategy, the
/// profile.
type Key = (String, &'static str, String);

/// What the last cycle said of each declined proposal, so the next says it again only when it changed.
#[derive(Debug, Default)]
pub struct Reported {
    last: HashMap<Key, Why>,
}

impl Reported {
    /// Reports one cycle's declined proposals: an Event for each whose reason is new since the last
    /// cycle (none for pods the evictor keeps), and the gauge. Proposals not declined again are
    /// forgotten, so a pod declined anew later is reported again.
    pub fn report(
        &mut self,
        declined: &[Declined],
        ids: &dyn Identify,
        cluster: &impl Cluster,
        metrics: &DeschedulerMetrics,
    ) {
        let mut counts: BTreeMap<DeclinedLabels, i64> = BTreeMap::new();
        let mut now = HashMap::with_capacity(declined.len());
        for d in declined {
            let filters = match &d.why {
                Why::NoPlace(b) if !b.0.is_empty() => b.filters(),
                _ => vec![""],
            };
            for filter in filters {
                *counts
                    .entry(DeclinedLabels {
                        strategy: d.strategy.name(),
                        profile: d.profile.clone(),
                        reason: kind(&d.why),
                        filter,
                    })
                    .or_default() += 1;
            }
            if matches!(d.why, Why::Kept(_)) {
                continue;
            }
            let key = (
                crate::model::workload::pod_key(&d.pod.namespace, &d.pod.name),
                d.strategy.name(),
                d.profile.clone(),
            );
            if self.last.get(&key) != Some(&d.why) {
                cluster.event_action(
                    Regarding::Pod(ids.evictee(&d.pod)),
                    EventKind::Normal,
                    DECLINED,
                    kind(&d.why),
                    note(d),
                );
            }
            now.insert(key, d.why.clone());
        }
        self.last = now;
        metrics.declined(&counts);
    }
}

/// The Event's message: the strategy, the node and the plan's reason.
fn note(d: &Declined) -> String {
    format!(
        "Not descheduled by ferroscale ({}) from node {}: {}",
        d.strategy, d.node, d.why
    )
}

/// The reason's kind: the gauge's `reason` label, the Event's action.
fn kind(why: &Why) -> &'static str {
    match why {
        Why::Kept(_) => "Kept",
        Why::NoPlace(_) => "NoPlace",
        Why::WouldUndo { .. } => "WouldUndo",
        Why::WouldRecreate { .. } => "WouldRecreate",
        Why::Cooldown { .. } => "Cooldown",
        Why::Contested { .. } => "Contested",
        Why::Budget { .. } => "Budget",
        Why::Limit(_) => "Limit",
    }
}

/// The strategies a plan did not run, each logged with why (`metricsUtilization` without metrics).
pub(super) fn log_skipped(plan: &crate::deschedule::Plan) {
    for s in &plan.skipped {
        tracing::warn!(profile = s.profile, strategy = s.strategy.name(), reason = %s.why, "strategy not run this cycle");
    }
}
