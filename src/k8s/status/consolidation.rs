//! ferroscale's own part of the status ConfigMap (issue #29): the last consolidation plan, and the
//! last loop's declined nodes summarized by reason. Upstream's readers ignore the field.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::rfc3339;
use crate::engine::{ConsolidationPlan, Decisions};

/// Consolidation as the status shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsolidationStatus {
    /// The last plan decided, kept until the next one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_plan: Option<PlanStatus>,
    /// The nodes the last loop declined, by reason; none when it declined none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declined: Vec<DeclinedStatus>,
    /// Why the last loop looked for no new plan (`a consolidation is under way`, ...), when it did not.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub waiting: String,
}

/// One plan: its nodes, what replaces them, the saving, and when (RFC 3339).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanStatus {
    pub time: String,
    /// `delete` or `replace`.
    pub action: String,
    pub nodes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub into: Vec<NewNodesStatus>,
    pub price_per_hour: f64,
    pub savings_per_hour: f64,
    pub pods_evicted: usize,
}

/// New nodes of one group.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NewNodesStatus {
    pub group: String,
    pub count: i32,
}

/// The nodes declined for one reason: how many, and the first with the full message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeclinedStatus {
    /// The reason's label, as in `ferroscale_consolidation_declined_nodes`.
    pub reason: String,
    pub nodes: usize,
    /// `node: message` of the first of them.
    pub first: String,
}

impl PlanStatus {
    /// The stored form of `plan`, decided at `now`.
    pub fn new(plan: &ConsolidationPlan, now: i64) -> Self {
        PlanStatus {
            time: rfc3339(now),
            action: plan.action.to_string(),
            nodes: plan.nodes.clone(),
            into: plan
                .into
                .iter()
                .map(|n| NewNodesStatus {
                    group: n.group.clone(),
                    count: n.count,
                })
                .collect(),
            price_per_hour: plan.price_per_hour,
            savings_per_hour: plan.savings_per_hour,
            pods_evicted: plan.pods_evicted.len(),
        }
    }
}

impl ConsolidationStatus {
    /// The status after a loop that decided `d` at `now`, `previous` the status before it (its last
    /// plan is kept when the loop decided none). None while consolidation never did anything to show.
    pub fn next(previous: Option<&Self>, d: &Decisions, now: i64) -> Option<Self> {
        let last_plan = d
            .consolidations
            .last()
            .map(|p| PlanStatus::new(p, now))
            .or_else(|| previous.and_then(|p| p.last_plan.clone()));
        let mut by_reason: BTreeMap<&str, DeclinedStatus> = BTreeMap::new();
        for (node, why) in &d.consolidation_declined {
            by_reason
                .entry(why.label())
                .or_insert_with(|| DeclinedStatus {
                    reason: why.label().to_string(),
                    nodes: 0,
                    first: format!("{node}: {why}"),
                })
                .nodes += 1;
        }
        let status = ConsolidationStatus {
            last_plan,
            declined: by_reason.into_values().collect(),
            waiting: d
                .consolidation_waits
                .as_ref()
                .map(|w| w.to_string())
                .unwrap_or_default(),
        };
        (status != ConsolidationStatus::default()).then_some(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::consolidate::Declined;
    use crate::engine::{ConsolidationAction, NewNodes};

    fn plan() -> ConsolidationPlan {
        ConsolidationPlan {
            action: ConsolidationAction::Replace,
            nodes: vec!["m5-0".into(), "m5-1".into()],
            into: vec![NewNodes {
                group: "big".into(),
                count: 1,
            }],
            price_per_hour: 1.536,
            savings_per_hour: 0.312,
            pods_evicted: vec!["shop/web-0".into(), "shop/web-1".into()],
        }
    }

    #[test]
    fn the_last_plan_stays_until_the_next_and_declined_nodes_are_summed_by_reason() {
        let d = Decisions {
            consolidations: vec![plan()],
            ..Default::default()
        };
        let first = ConsolidationStatus::next(None, &d, 1_790_000_000).unwrap();
        let last = first.last_plan.clone().unwrap();
        assert_eq!(last.action, "replace");
        assert_eq!(last.into[0].group, "big");
        assert_eq!(last.pods_evicted, 2);

        let window = |n: &str| {
            (
                n.to_string(),
                Declined::OutsideDisruptionWindow { group: "m5".into() },
            )
        };
        let d = Decisions {
            consolidation_declined: vec![window("m5-2"), window("m5-3")],
            ..Default::default()
        };
        let second = ConsolidationStatus::next(Some(&first), &d, 1_790_000_010).unwrap();
        assert_eq!(second.last_plan, first.last_plan, "kept");
        assert_eq!(second.declined.len(), 1);
        assert_eq!(second.declined[0].reason, "window_closed");
        assert_eq!(second.declined[0].nodes, 2);
        assert!(second.declined[0].first.starts_with("m5-2: group m5's"));

        assert_eq!(
            ConsolidationStatus::next(None, &Decisions::default(), 1_790_000_020),
            None,
            "nothing to show"
        );
    }
}
