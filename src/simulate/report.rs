//! What `simulate` prints: one JSON object per loop on stdout, a one-line summary on stderr.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::actuator::Acted;
use crate::engine::Decisions;

/// One pod or node with why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Reasoned {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScaleUpReport {
    pub group: String,
    pub delta: i32,
    /// Nodes the cloud could not launch (the group is backed off).
    #[serde(skip_serializing_if = "is_zero")]
    pub failed: i32,
    pub pods: Vec<String>,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScaleDownReport {
    pub node: String,
    pub group: String,
    pub reason: String,
    pub evicted: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeleteReport {
    pub group: String,
    pub instance: String,
    pub reason: String,
}

/// Capacity given up in one group.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CancelReport {
    pub group: String,
    pub count: i32,
    pub reason: String,
}

/// What one loop decided, as printed on stdout (one JSON object per loop).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LoopReport {
    #[serde(rename = "loop")]
    pub loop_number: u32,
    /// Seconds of virtual time since the simulation started.
    pub time: i64,
    pub scale_up: Vec<ScaleUpReport>,
    pub scale_down: Vec<ScaleDownReport>,
    /// Instances deleted because they failed or never registered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub delete_instances: Vec<DeleteReport>,
    /// Capacity given up because its launch failed or it was not delivered in time.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cancel: Vec<CancelReport>,
    /// Set when too many nodes are unready: the loop decided nothing else.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unhealthy: Option<String>,
    pub pending: Vec<Reasoned>,
    pub unremovable: Vec<Reasoned>,
    /// Nodes after the loop's decisions, by group (`-` for nodes of no group).
    pub nodes: BTreeMap<String, usize>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub expander: Vec<String>,
    /// Nodes taken out of service on an event (`--events`), with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disruptions: Vec<DisruptionReport>,
    /// The scale-ups that replace them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replacements: Vec<ReplacementReport>,
    /// The descheduler's evictions (`--deschedule-policy`), carried out after the decisions above.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evictions: Vec<EvictionReport>,
    /// The descheduler's proposals its plan declined, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub descheduling_declined: Vec<DeclinedReport>,
    /// The nodes the descheduler emptied (`HighNodeUtilization`), handed to scale-down: removed by a
    /// later loop (reason `descheduled`) when its rules allow; their pods are evicted by the drain.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub emptying: Vec<String>,
}

/// A pod the descheduler evicted: from which node, by which strategy, to where the scheduling
/// simulation places it (none for a failed pod, which is deleted).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EvictionReport {
    pub pod: String,
    pub node: String,
    pub strategy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

/// A pod a strategy proposed and the plan did not evict, with why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DeclinedReport {
    pub pod: String,
    pub node: String,
    pub strategy: String,
    pub reason: String,
}

/// Adds one descheduling cycle's plan to its loop's report.
pub fn add_descheduling(report: &mut LoopReport, plan: &crate::deschedule::Plan) {
    report
        .evictions
        .extend(plan.evictions.iter().map(|e| EvictionReport {
            pod: e.pod.key(),
            node: e.node.clone(),
            strategy: e.strategy.to_string(),
            to: Some(e.to.clone()).filter(|t| !t.is_empty()),
        }));
    report
        .descheduling_declined
        .extend(plan.declined.iter().map(|d| DeclinedReport {
            pod: d.pod.key(),
            node: d.node.clone(),
            strategy: d.strategy.to_string(),
            reason: d.why.to_string(),
        }));
    report.emptying.extend(plan.emptied.iter().cloned());
}

/// A node taken out of service.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DisruptionReport {
    pub node: String,
    pub group: String,
    /// `spot-interruption`, `rebalance`, `scheduled-change`, `instance-stopping`, `drift`, `expired`,
    /// `consolidation`, `descheduled`.
    pub reason: String,
}

/// A scale-up that replaces disrupted nodes.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ReplacementReport {
    pub group: String,
    pub delta: i32,
    /// The disrupted nodes whose pods it takes.
    #[serde(rename = "for")]
    pub for_nodes: Vec<String>,
}

/// A person's summary of one loop, for stderr.
pub fn summary(r: &LoopReport) -> String {
    let ups: Vec<String> = r
        .scale_up
        .iter()
        .map(|u| {
            let failed = if u.failed > 0 {
                format!(" ({} failed)", u.failed)
            } else {
                String::new()
            };
            format!("+{} {}{failed} for {} pods", u.delta, u.group, u.pods.len())
        })
        .collect();
    let downs: Vec<String> = r
        .scale_down
        .iter()
        .map(|s| format!("-{}", s.node))
        .collect();
    let mut line = format!(
        "loop {} at +{}s: scale-up [{}], scale-down [{}], {} pods pending, {} nodes",
        r.loop_number,
        r.time,
        ups.join(", "),
        downs.join(", "),
        r.pending.len(),
        r.nodes.values().sum::<usize>()
    );
    if !r.evictions.is_empty() || !r.descheduling_declined.is_empty() {
        let moves: Vec<String> = r
            .evictions
            .iter()
            .map(|e| match &e.to {
                Some(to) => format!("{} {}->{to}", e.pod, e.node),
                None => format!("{} (deleted)", e.pod),
            })
            .collect();
        line.push_str(&format!(
            ", descheduled [{}], {} declined",
            moves.join(", "),
            r.descheduling_declined.len()
        ));
    }
    if !r.emptying.is_empty() {
        line.push_str(&format!(", emptying [{}]", r.emptying.join(", ")));
    }
    line
}

/// One loop's report: what the engine decided (`d`) and what carrying it out did (`acted`).
pub fn of_loop(loop_number: u32, time: i64, d: &Decisions, acted: &Acted) -> LoopReport {
    let done = |flags: &[bool], i: usize| flags.get(i).copied().unwrap_or(false);
    LoopReport {
        loop_number,
        time,
        scale_up: d
            .scale_up
            .iter()
            .enumerate()
            .map(|(i, up)| ScaleUpReport {
                group: up.group.clone(),
                delta: up.delta,
                failed: acted.unlaunched.get(i).copied().unwrap_or(up.delta),
                pods: up.pods.clone(),
            })
            .collect(),
        scale_down: d
            .scale_down
            .iter()
            .map(|down| ScaleDownReport {
                node: down.node.clone(),
                group: down.group.clone(),
                reason: down.reason.to_string(),
                evicted: down.evict.clone(),
            })
            .collect(),
        delete_instances: d
            .delete_instances
            .iter()
            .enumerate()
            .filter(|(i, _)| done(&acted.deleted_instances, *i))
            .map(|(_, del)| DeleteReport {
                group: del.group.clone(),
                instance: del.instance.clone(),
                reason: del.reason.to_string(),
            })
            .collect(),
        cancel: d
            .cancel
            .iter()
            .enumerate()
            .filter(|(i, _)| done(&acted.cancelled, *i))
            .map(|(_, c)| CancelReport {
                group: c.group.clone(),
                count: c.count,
                reason: c.reason.to_string(),
            })
            .collect(),
        unhealthy: d.unhealthy.as_ref().map(ToString::to_string),
        pending: d
            .pending
            .iter()
            .map(|(p, r)| Reasoned {
                pod: Some(p.clone()),
                node: None,
                reason: r.to_string(),
            })
            .collect(),
        unremovable: d
            .unremovable
            .iter()
            .map(|(n, r)| Reasoned {
                pod: None,
                node: Some(n.clone()),
                reason: r.to_string(),
            })
            .collect(),
        nodes: BTreeMap::new(),
        expander: d.expander.clone(),
        disruptions: d
            .disruptions
            .iter()
            .filter_map(|x| {
                Some(DisruptionReport {
                    node: x.node.clone(),
                    group: x.group.clone()?,
                    reason: x.reason.to_string(),
                })
            })
            .collect(),
        replacements: d
            .replacements
            .iter()
            .map(|r| ReplacementReport {
                group: r.group.clone(),
                delta: r.delta,
                for_nodes: r.for_nodes.clone(),
            })
            .collect(),
        evictions: Vec::new(),
        descheduling_declined: Vec::new(),
        emptying: Vec::new(),
    }
}
