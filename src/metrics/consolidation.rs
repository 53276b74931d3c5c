//! Consolidation's metrics (`ferroscale run`, issue #29): the plans started and given up, the hourly
//! saving of the last plan, and the nodes the last loop declined, by why.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::engine::consolidate::Declined;
use crate::engine::{ConsolidationAction, Decisions};

/// Labels of `ferroscale_consolidation_actions_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ActionLabels {
    /// `delete`, `replace`, or `give_up` (a replacement whose new nodes were not ready in time: the old
    /// nodes are kept).
    pub action: &'static str,
    /// `empty` (nothing to evict), `underutilized` (pods evicted onto the other nodes or the new ones),
    /// or, for `give_up`, `not_ready_in_time`.
    pub reason: &'static str,
}

/// Label of `ferroscale_consolidation_declined_nodes`: a [`Declined::label`].
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeclinedLabel {
    pub reason: &'static str,
}

/// Registered with the loop's metrics.
#[derive(Clone)]
pub struct ConsolidationMetrics {
    actions: Family<ActionLabels, Counter>,
    savings: Gauge<f64, AtomicU64>,
    declined: Family<DeclinedLabel, Gauge>,
}

/// The `reason` of a plan: whether it evicts anything.
fn plan_reason(pods_evicted: usize) -> &'static str {
    if pods_evicted == 0 {
        "empty"
    } else {
        "underutilized"
    }
}

impl ConsolidationMetrics {
    pub(super) fn register(registry: &mut Registry) -> Self {
        let m = ConsolidationMetrics {
            actions: Family::default(),
            savings: Gauge::default(),
            declined: Family::default(),
        };
        registry.register(
            "ferroscale_consolidation_actions",
            "Consolidation plans started (delete, replace) by whether their nodes were empty or underutilized, and replacements given up (give_up, not_ready_in_time)",
            m.actions.clone(),
        );
        registry.register(
            "ferroscale_consolidation_savings_dollars_per_hour",
            "Hourly saving (USD) of the last consolidation plan: the taken nodes' price less the new nodes'",
            m.savings.clone(),
        );
        registry.register(
            "ferroscale_consolidation_declined_nodes",
            "Nodes the last loop's consolidation would have taken and did not, by why",
            m.declined.clone(),
        );
        for action in ["delete", "replace"] {
            for reason in ["empty", "underutilized"] {
                m.actions
                    .get_or_create(&ActionLabels { action, reason })
                    .inc_by(0);
            }
        }
        m.actions
            .get_or_create(&ActionLabels {
                action: "give_up",
                reason: "not_ready_in_time",
            })
            .inc_by(0);
        m.loop_done(&Decisions::default());
        m
    }

    /// What one loop's consolidation decided: each plan counted once, the saving of the last one, a
    /// replacement given up once per group, and the declined nodes by reason (every reason set, 0 when
    /// none).
    pub fn loop_done(&self, d: &Decisions) {
        for plan in &d.consolidations {
            let action = match plan.action {
                ConsolidationAction::Delete => "delete",
                ConsolidationAction::Replace => "replace",
            };
            self.actions
                .get_or_create(&ActionLabels {
                    action,
                    reason: plan_reason(plan.pods_evicted.len()),
                })
                .inc();
            self.savings.set(plan.savings_per_hour);
        }
        let mut counts: BTreeMap<&str, i64> = Declined::LABELS.iter().map(|&r| (r, 0)).collect();
        let mut given_up = BTreeSet::new();
        for (_, why) in &d.consolidation_declined {
            *counts.entry(why.label()).or_default() += 1;
            if let Declined::NotReadyInTime { group } = why {
                given_up.insert(group.as_str());
            }
        }
        for (reason, n) in counts {
            self.declined
                .get_or_create(&DeclinedLabel { reason })
                .set(n);
        }
        self.actions
            .get_or_create(&ActionLabels {
                action: "give_up",
                reason: "not_ready_in_time",
            })
            .inc_by(given_up.len() as u64);
    }
}
