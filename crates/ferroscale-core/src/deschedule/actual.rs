//! Actual usage, for `LowNodeUtilization`'s `metricsUtilization` (source `KubernetesMetrics`, or the
//! older `metricsServer: true`), as the descheduler reads it from metrics-server (`metrics.k8s.io`):
//! each node's cpu and memory from its `NodeMetrics`, smoothed by its metrics collector (an
//! exponentially weighted average over the collections, [`Usage::collect`]); each pod's from its
//! `PodMetrics`, the sum of its containers', as it is now. The caller reads the objects (`run` and
//! `deschedule` poll the API, `simulate` takes a dump's) and hands them in as typed amounts.
//!
//! When metrics are missing the descheduler's behaviour is kept: a node not in the collected metrics
//! stops the plugin for the cycle ([`Unavailable`], reported by the plan); a pod without metrics,
//! or with a container that lacks cpu or memory, is not evicted by it.

use std::collections::{BTreeMap, HashMap};

use thiserror::Error;

use super::args::{Problems, Strategy, Thresholds};
use super::policy::Policy;
use super::strategies::low_utilization::MetricsUtilization;
use super::strategies::usage::{Amounts, CPU, MEMORY, PODS};
use super::strategies::PluginArgs;
use super::view::View;
use crate::model::workload::Pod;

/// The weight of the previous value in each collection (the descheduler's `beta`).
pub const BETA: f64 = 0.9;

/// The seconds between two collections of the nodes' metrics (the descheduler's).
pub const COLLECT_EVERY_SECS: u64 = 5;

/// Cpu (millicores) and memory (bytes) used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Measured {
    pub cpu_milli: i64,
    pub memory: i64,
}

/// What metrics-server says the nodes and pods use.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    /// Node name → its usage, smoothed over the collections.
    pub nodes: BTreeMap<String, Measured>,
    /// `namespace/name` → the sum of its containers' usage; None: a container lacks cpu or memory.
    pub pods: HashMap<String, Option<Measured>>,
}

/// `round(BETA * prev + (1 - BETA) * value)`, the descheduler's weighted average.
pub fn weighted(prev: i64, value: i64) -> i64 {
    (BETA * prev as f64 + (1.0 - BETA) * value as f64).round() as i64
}

impl Usage {
    /// One collection of the nodes' metrics: a node seen for the first time takes its sample, a known
    /// one moves a tenth of the way to it; a node without a sample this time keeps its value (as the
    /// descheduler's collector does when a node's metrics cannot be read).
    pub fn collect(&mut self, samples: impl IntoIterator<Item = (String, Measured)>) {
        for (node, m) in samples {
            self.nodes
                .entry(node)
                .and_modify(|prev| {
                    prev.cpu_milli = weighted(prev.cpu_milli, m.cpu_milli);
                    prev.memory = weighted(prev.memory, m.memory);
                })
                .or_insert(m);
        }
    }

    /// The pods' usage as metrics-server reports it now (not smoothed, as the descheduler reads
    /// them at eviction).
    pub fn set_pods(&mut self, pods: impl IntoIterator<Item = (String, Option<Measured>)>) {
        self.pods = pods.into_iter().collect();
    }

    /// A node's usage, if it was collected.
    pub fn node(&self, name: &str) -> Option<Measured> {
        self.nodes.get(name).copied()
    }

    /// A pod's usage; None when it has no metrics or a container lacks cpu or memory.
    pub fn pod(&self, pod: &Pod) -> Option<Measured> {
        self.pods.get(&pod.key()).copied().flatten()
    }
}

/// Why a strategy did not run this cycle.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Unavailable {
    /// It reads actual usage and none has been collected.
    #[error("metricsUtilization: no metrics collected (metrics.k8s.io)")]
    NoMetrics,
    /// It reads actual usage and this node is not in the collected metrics.
    #[error("metricsUtilization: node {0} is not in the collected metrics (metrics.k8s.io)")]
    NodeMissing(String),
}

/// A strategy that did not run this cycle, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub profile: String,
    pub strategy: Strategy,
    pub why: Unavailable,
}

/// Whether a configured strategy has what it reads: one that reads actual usage needs every node
/// it looks at in the collected metrics, or it does nothing this cycle (as the descheduler's
/// plugin fails its `Balance`).
pub fn check(args: &PluginArgs, view: &View) -> Result<(), Unavailable> {
    let PluginArgs::LowNodeUtilization(a) = args else {
        return Ok(());
    };
    if !a.reads_metrics() {
        return Ok(());
    }
    let usage = view.cluster.usage.ok_or(Unavailable::NoMetrics)?;
    match view.nodes().iter().find(|n| usage.node(&n.name).is_none()) {
        Some(n) => Err(Unavailable::NodeMissing(n.name.clone())),
        None => Ok(()),
    }
}

/// Whether a profile of the policy has a strategy reading actual usage: `run` and `deschedule`
/// collect the metrics only then.
pub fn wanted(policy: &Policy) -> bool {
    policy.profiles.iter().any(|p| {
        p.strategies.iter().any(|s| match s {
            PluginArgs::LowNodeUtilization(a) => a.reads_metrics(),
            _ => false,
        })
    })
}

/// A node's usage of `names` with its measured cpu and memory in place of its pods' requests
/// (`pods` stays the count of its pods); false when the node was not collected.
pub fn measured_amounts(usage: &Usage, node: &str, amounts: &mut Amounts) -> bool {
    let Some(m) = usage.node(node) else {
        return false;
    };
    for (name, v) in amounts.iter_mut() {
        match name.as_str() {
            CPU => *v = m.cpu_milli,
            MEMORY => *v = m.memory,
            _ => {}
        }
    }
    true
}

/// What a pod uses of resource `name` as the eviction loop subtracts it: measured cpu and memory,
/// one pod; None when the pod has no metrics (the loop leaves it, as the descheduler does).
pub fn pod_amount(usage: &Usage, pod: &Pod, name: &str) -> Option<i64> {
    let m = usage.pod(pod)?;
    Some(match name {
        CPU => m.cpu_milli,
        MEMORY => m.memory,
        PODS => 1,
        _ => 0,
    })
}

/// The checks of `metricsUtilization` beyond the descheduler's own (`MetricsUtilization::validate`):
/// what ferroscale cannot honour is refused by name. Prometheus is not read; a source must be
/// named (the descheduler's plugin fails every cycle without one); metrics-server measures cpu
/// and memory only, so thresholds on other resources (which make the descheduler's plugin fail
/// every cycle) are refused.
pub fn refusals(m: &MetricsUtilization, thresholds: &Thresholds, out: &mut Problems) {
    match (m.source.as_str(), m.metrics_server) {
        ("Prometheus", _) => out.add(
            "metricsUtilization.source",
            "Prometheus is not supported: ferroscale reads actual usage from metrics-server \
             (source: KubernetesMetrics)",
        ),
        ("", false) => out.add(
            "metricsUtilization",
            "no source: set source: KubernetesMetrics (or metricsServer: true)",
        ),
        _ => {}
    }
    for name in thresholds.keys() {
        if ![CPU, MEMORY, PODS].contains(&name.as_str()) {
            out.add(
                format!("thresholds.{name}"),
                "metricsUtilization measures cpu and memory (and counts pods) only",
            );
        }
    }
}

#[cfg(test)]
mod tests;
