//! `HighNodeUtilization`, as the descheduler's plugin of that name proposes evictions: nodes under
//! `thresholds` (all resources) are underutilized and are emptied, emptiest first, onto the other
//! schedulable nodes while those have room, so that fewer nodes hold the pods (and the emptied ones can
//! go). Usage is the sum of the pods' requests.

use serde::Deserialize;

use super::low_utilization::thresholds;
use super::usage::{self, Loop, NodeFit, NodeUsage};
use crate::deschedule::args::{ArgsError, Namespaces, Problems, Strategy, Thresholds};
use crate::deschedule::validate;
use crate::deschedule::view::Verdict;
use crate::deschedule::{Evictor, Proposal, View};
use crate::model::workload::Pod;

/// `HighNodeUtilization`'s arguments, as the policy's `pluginConfig` writes them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct HighNodeUtilizationArgs {
    pub thresholds: Thresholds,
    /// Do nothing unless more than this many nodes are underutilized.
    pub number_of_nodes: i64,
    pub eviction_modes: Vec<EvictionMode>,
    /// Only `exclude`: pods of these namespaces count toward usage but are not evicted.
    pub evictable_namespaces: Option<Namespaces>,
}

/// `evictionModes` entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum EvictionMode {
    /// Evict only pods that request one of the resources `thresholds` names.
    OnlyThresholdingResources,
}

impl HighNodeUtilizationArgs {
    /// The descheduler's checks of these arguments.
    pub fn validate(&self) -> Result<(), ArgsError> {
        let mut out = Problems::default();
        validate::namespaces(
            &self.evictable_namespaces,
            "evictableNamespaces",
            false,
            &mut out,
        );
        thresholds(&self.thresholds, "thresholds", &mut out);
        out.done()
    }
}

/// The pods `HighNodeUtilization` would evict, in the order it would evict them; `onto`: the
/// schedulable nodes that are not underutilized.
pub fn propose(args: &HighNodeUtilizationArgs, view: &View, evictor: &Evictor) -> Vec<Proposal> {
    let mut out = Vec::new();
    propose_into(args, view, evictor, &mut |p| {
        out.push(p);
        Verdict::Evicted
    });
    out
}

/// The pods this strategy would evict, each told to `sink` in turn: a declined one is replaced by
/// the node's next candidate, only the evictions made count.
pub fn propose_into(
    args: &HighNodeUtilizationArgs,
    view: &View,
    evictor: &Evictor,
    sink: &mut dyn FnMut(Proposal) -> Verdict,
) {
    let names = usage::counted(&args.thresholds);
    let full: Thresholds = args.thresholds.keys().map(|k| (k.clone(), 100.0)).collect();
    let (mut under, mut rest) = (Vec::new(), Vec::new());
    for (node, pods, used) in usage::snapshot(view, &names) {
        let pct = usage::percents(node, &used);
        let group = if usage::below(&pct, &args.thresholds) {
            &mut under
        } else if !node.unschedulable {
            &mut rest
        } else {
            continue;
        };
        group.push(NodeUsage {
            node,
            pods,
            usage: used,
            available: usage::capped(node, &full, &names),
        });
    }
    if under.is_empty()
        || under.len() as i64 <= args.number_of_nodes
        || under.len() == view.nodes().len()
        || rest.is_empty()
    {
        return;
    }
    usage::sort_by_usage(&mut under, true);
    let only_thresholding = args
        .eviction_modes
        .contains(&EvictionMode::OnlyThresholdingResources);
    let eligible =
        |p: &Pod| !only_thresholding || args.thresholds.keys().any(|k| usage::request(p, k) > 0);
    let fit = NodeFit::new(view, evictor);
    Loop {
        strategy: Strategy::HighNodeUtilization,
        evictor,
        fit: &fit,
        eligible: &eligible,
        evictable_namespaces: &args.evictable_namespaces,
        names: &names,
        go_on: &|_, available| usage::room_left(available),
        node_limit: None,
        measured: None,
    }
    .run(under, &rest, sink);
}

mod plugin;

#[cfg(test)]
mod tests;
