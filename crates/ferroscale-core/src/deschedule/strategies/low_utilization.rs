//! `LowNodeUtilization`, as the descheduler's plugin of that name proposes evictions: nodes under
//! `thresholds` (all resources) are underutilized, nodes over `targetThresholds` (any resource) are
//! overutilized; pods leave the overutilized nodes, fullest first, lowest priority first, until each
//! is back under its target or the underutilized nodes have no room left (up to their target).
//! Usage is the sum of the pods' requests, or with `metricsUtilization` what metrics-server measures
//! (`strategies::measured`).

use serde::Deserialize;

use super::measured;
use super::usage::{self, Loop, NodeFit, NodeUsage};
use crate::deschedule::args::{ArgsError, Namespaces, Problems, Strategy, Thresholds};
use crate::deschedule::validate;
use crate::deschedule::view::Verdict;
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
    /// Actual usage from metrics-server (`source: KubernetesMetrics` or `metricsServer: true`);
    /// Prometheus is refused.
    pub metrics_utilization: Option<MetricsUtilization>,
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

/// `metricsUtilization`: where the descheduler would read nodes' actual usage.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct MetricsUtilization {
    pub metrics_server: bool,
    pub source: String,
    pub prometheus: Option<PrometheusQuery>,
}

/// `metricsUtilization.prometheus`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PrometheusQuery {
    pub query: String,
}

impl LowNodeUtilizationArgs {
    /// The descheduler's checks of these arguments.
    pub fn validate(&self) -> Result<(), ArgsError> {
        let mut out = Problems::default();
        validate::namespaces(
            &self.evictable_namespaces,
            "evictableNamespaces",
            false,
            &mut out,
        );
        let (low, high) = (&self.thresholds, &self.target_thresholds);
        let low_valid = thresholds(low, "thresholds", &mut out);
        let valid = thresholds(high, "targetThresholds", &mut out) && low_valid;
        if valid && (low.len() != high.len() || low.keys().any(|r| !high.contains_key(r))) {
            out.add(
                "targetThresholds",
                "thresholds and targetThresholds configure different resources",
            );
        } else if valid && !self.use_deviation_thresholds {
            for (r, v) in low {
                let target = high[r];
                if *v > target {
                    out.add(
                        format!("thresholds.{r}"),
                        format!("{v} is greater than targetThresholds' {target}"),
                    );
                }
            }
        }
        if let Some(m) = &self.metrics_utilization {
            m.validate(&mut out);
            measured::refusals(&m.source, m.metrics_server, &self.thresholds, &mut out);
        }
        out.done()
    }

    /// Whether usage is read from metrics-server rather than counted from requests.
    pub fn reads_metrics(&self) -> bool {
        self.metrics_utilization
            .as_ref()
            .is_some_and(|m| m.metrics_server || m.source == "KubernetesMetrics")
    }
}

impl MetricsUtilization {
    /// The descheduler's checks (`ValidateLowNodeUtilizationArgs`).
    fn validate(&self, out: &mut Problems) {
        let source = self.source.as_str();
        let query = self.prometheus.as_ref().map(|p| p.query.as_str());
        match source {
            "KubernetesMetrics" if self.metrics_server => out.add(
                "metricsUtilization.metricsServer",
                "not allowed with source KubernetesMetrics",
            ),
            "KubernetesMetrics" if query.is_some() => out.add(
                "metricsUtilization.prometheus",
                "not allowed with source KubernetesMetrics",
            ),
            "Prometheus" if query.is_none_or(str::is_empty) => out.add(
                "metricsUtilization.prometheus",
                "prometheus query is required when source is Prometheus",
            ),
            "" | "KubernetesMetrics" | "Prometheus" => {}
            other => out.add(
                "metricsUtilization.source",
                format!("unknown source {other:?} (known: KubernetesMetrics, Prometheus)"),
            ),
        }
    }
}

/// Resource → percent at `field`, each in [0, 100], at least one; whether they are.
pub(super) fn thresholds(t: &Thresholds, field: &str, out: &mut Problems) -> bool {
    if t.is_empty() {
        out.add(field, "no resource threshold is configured");
        return false;
    }
    let mut valid = true;
    for (name, pct) in t {
        if !(0.0..=100.0).contains(pct) {
            out.add(format!("{field}.{name}"), format!("{pct} not in [0, 100]"));
            valid = false;
        }
    }
    valid
}

/// The pods `LowNodeUtilization` would evict, in the order it would evict them; `onto`: the
/// underutilized nodes.
pub fn propose(args: &LowNodeUtilizationArgs, view: &View, evictor: &Evictor) -> Vec<Proposal> {
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
    args: &LowNodeUtilizationArgs,
    view: &View,
    evictor: &Evictor,
    sink: &mut dyn FnMut(Proposal) -> Verdict,
) {
    let names = usage::counted(&args.thresholds);
    let mut snapshot = usage::snapshot(view, &names);
    let measured = args.reads_metrics().then_some(view.cluster.usage);
    if let Some(u) = measured {
        let Some(u) = u else { return };
        for (node, _, used) in &mut snapshot {
            if !measured::measured_amounts(u, &node.name, used) {
                return;
            }
        }
    }
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
        return;
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
        measured: measured.flatten(),
    }
    .run(over, &under, sink);
}

mod plugin;

#[cfg(test)]
mod tests;
