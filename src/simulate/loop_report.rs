//! A loop's report made from its decisions and what the actuator did.

use std::collections::BTreeMap;

use super::report::*;
use crate::actuator::Acted;
use crate::engine::Decisions;

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
                daemon_sets: down.daemon_sets.clone(),
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
                kind: "",
            })
            .collect(),
        unremovable: d
            .unremovable
            .iter()
            .map(|(n, r)| Reasoned {
                pod: None,
                node: Some(n.clone()),
                reason: r.to_string(),
                kind: r.upstream_reason(),
            })
            .collect(),
        nodes: BTreeMap::new(),
        cost_per_hour: None,
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
        due: d
            .due
            .iter()
            .map(|(n, why)| Reasoned {
                pod: None,
                node: Some(n.clone()),
                reason: why.to_string(),
                kind: why.label(),
            })
            .collect(),
        evictions: Vec::new(),
        evictions_refused: Vec::new(),
        descheduling_declined: Vec::new(),
        descheduling_skipped: Vec::new(),
        consolidations: d
            .consolidations
            .iter()
            .map(ConsolidationReport::of)
            .collect(),
        consolidation_declined: d
            .consolidation_declined
            .iter()
            .map(|(n, why)| Reasoned {
                pod: None,
                node: Some(n.clone()),
                reason: why.to_string(),
                kind: why.label(),
            })
            .collect(),
        consolidation_waits: d.consolidation_waits.as_ref().map(ToString::to_string),
        emptying: Vec::new(),
    }
}
