//! Actual usage, for `LowNodeUtilization`'s `metricsUtilization` (source `KubernetesMetrics`, or the
//! older `metricsServer: true`), as the descheduler reads it from metrics-server (`metrics.k8s.io`):
//! each node's cpu and memory from its `NodeMetrics`, smoothed by its metrics collector (an
//! exponentially weighted average over the collections, [`Usage::collect`]); each pod's from its
//! `PodMetrics`, the sum of its containers', as it is now. The caller reads the objects (`run` and
//! `deschedule` poll the API, `simulate` takes a dump's) and hands them in as typed amounts.
//!
//! When metrics are missing the descheduler's behaviour is kept: a node not in the collected metrics
//! stops the plugin for the cycle (`plan::Unavailable`, reported by the plan); a pod without
//! metrics, or with a container that lacks cpu or memory, is not evicted by it
//! (`strategies::measured`).

use std::collections::{BTreeMap, HashMap};

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

#[cfg(test)]
mod tests;
