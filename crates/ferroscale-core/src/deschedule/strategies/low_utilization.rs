//! `LowNodeUtilization`, as the descheduler's plugin of that name proposes evictions: nodes under
//! `thresholds` (all resources) are underutilized, nodes over `targetThresholds` (any resource) are
//! overutilized; pods leave the overutilized nodes, fullest first, lowest priority first, until each
//! is back under its target or the underutilized nodes have no room left (up to their target).
//! Usage is the sum of the pods' requests; actual usage (`metricsUtilization`) is refused.

use serde::{Deserialize, Deserializer};

use super::usage::{self, Loop, NodeFit, NodeUsage};
use crate::deschedule::args::{Namespaces, Strategy, Thresholds};
use crate::deschedule::{Evictor, Proposal, View};

/// `LowNodeUtilization`'s arguments, as the policy's `pluginConfig` writes them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct LowNodeUtilizationArgs {
    /// `thresholds` and `targetThresholds` are deviations from the nodes' average usage.
    pub use_deviation_thresholds: bool,
    pub thresholds: Thresholds,
    pub target_thresholds: Thresholds,
    /// Do nothing unless more than this many nodes are underutilized.
    pub number_of_nodes: i64,
    /// Refused when present: usage from metrics-server or Prometheus is not read.
    #[serde(deserialize_with = "refuse_metrics")]
    pub metrics_utilization: Option<()>,
    /// Only `exclude`: pods of these namespaces count toward usage but are not evicted.
    pub evictable_namespaces: Option<Namespaces>,
    pub eviction_limits: Option<EvictionLimits>,
}

/// `evictionLimits`: the most evictions per domain.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EvictionLimits {
    /// Per overutilized node, per run.
    pub node: Option<u32>,
}

fn refuse_metrics<'de, D: Deserializer<'de>>(_: D) -> Result<Option<()>, D::Error> {
    Err(serde::de::Error::custom(
        "metricsUtilization is not supported: ferroscale counts a node's usage from its pods' \
         requests (the descheduler's default); remove metricsUtilization",
    ))
}

impl LowNodeUtilizationArgs {
    /// The descheduler's checks of these arguments.
    pub fn validate(&self) -> Result<(), String> {
        if self
            .evictable_namespaces
            .as_ref()
            .is_some_and(|n| !n.include.is_empty())
        {
            return Err(
                "evictableNamespaces: only exclude can be set, inclusion is not supported".into(),
            );
        }
        validate_thresholds(&self.thresholds)
            .map_err(|e| format!("thresholds config is not valid: {e}"))?;
        validate_thresholds(&self.target_thresholds)
            .map_err(|e| format!("targetThresholds config is not valid: {e}"))?;
        if self.thresholds.len() != self.target_thresholds.len() {
            return Err("thresholds and targetThresholds configured different resources".into());
        }
        for (name, value) in &self.thresholds {
            match self.target_thresholds.get(name) {
                None => {
                    return Err(
                        "thresholds and targetThresholds configured different resources".into(),
                    )
                }
                Some(t) if value > t && !self.use_deviation_thresholds => {
                    return Err(format!(
                        "thresholds' {name} percentage is greater than targetThresholds'"
                    ))
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

/// Some thresholds, each within 0..100.
pub(super) fn validate_thresholds(t: &Thresholds) -> Result<(), String> {
    if t.is_empty() {
        return Err("no resource threshold is configured".into());
    }
    for (name, pct) in t {
        if !(0.0..=100.0).contains(pct) {
            return Err(format!("{name} threshold not in [0, 100] range"));
        }
    }
    Ok(())
}

/// The pods `LowNodeUtilization` would evict, in the order it would evict them; `onto`: the
/// underutilized nodes.
pub fn propose(args: &LowNodeUtilizationArgs, view: &View, evictor: &Evictor) -> Vec<Proposal> {
    let names = usage::counted(&args.thresholds);
    let snapshot = usage::snapshot(view, &names);
    let pct: Vec<_> = snapshot
        .iter()
        .map(|(node, _, used)| {
            let mut p = usage::percents(node, used);
            if args.use_deviation_thresholds {
                p.retain(|k, _| args.thresholds.contains_key(k));
            }
            p
        })
        .collect();
    let [low, high] = if args.use_deviation_thresholds {
        let only: Vec<String> = args.thresholds.keys().cloned().collect();
        usage::deviation(&pct, &only, &args.thresholds, &args.target_thresholds)
    } else {
        [args.thresholds.clone(), args.target_thresholds.clone()]
    };
    let (mut under, mut over) = (Vec::new(), Vec::new());
    for ((node, pods, used), p) in snapshot.into_iter().zip(&pct) {
        let group = if !node.unschedulable && usage::below(p, &low) {
            &mut under
        } else if usage::above(p, &high) {
            &mut over
        } else {
            continue;
        };
        group.push(NodeUsage {
            node,
            pods,
            usage: used,
            available: usage::capped(node, &high, &names),
        });
    }
    if under.is_empty()
        || under.len() as i64 <= args.number_of_nodes
        || under.len() == view.nodes().len()
        || over.is_empty()
    {
        return Vec::new();
    }
    usage::sort_by_usage(&mut over, false);
    let go_on = |n: &NodeUsage, available: &usage::Amounts| {
        let over_target = n
            .usage
            .iter()
            .any(|(k, v)| n.available.get(k).copied().unwrap_or(0) < *v);
        over_target && usage::room_left(available)
    };
    let fit = NodeFit::new(view, evictor);
    Loop {
        strategy: Strategy::LowNodeUtilization,
        evictor,
        fit: &fit,
        eligible: &|_| true,
        evictable_namespaces: &args.evictable_namespaces,
        names: &names,
        go_on: &go_on,
        node_limit: args.eviction_limits.as_ref().and_then(|l| l.node),
    }
    .run(over, &under)
}

#[cfg(test)]
mod tests;
