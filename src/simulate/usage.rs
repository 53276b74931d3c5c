//! A dump's metrics-server usage as the simulated cluster changes (`metricsUtilization`): what a
//! node uses beside its pods (its NodeMetrics less its pods' PodMetrics when the dump was taken)
//! stays with it, and each pod's usage goes where the pod goes; a node that joins later uses
//! nothing beside its pods. A node of the dump without NodeMetrics stays without (the strategy
//! does not run, as the descheduler's does not without a node's metrics).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use crate::deschedule::actual::{Measured, Usage};
use crate::model::workload::{Node, Pod};

/// The dump's usage and each measured node's usage beside its pods.
#[derive(Debug, Clone)]
pub struct DumpUsage {
    pods: Usage,
    beside: BTreeMap<String, Measured>,
    /// The dump's nodes (a node of the dump not in `beside` has no metrics).
    dumped: HashSet<String>,
}

/// The sum of the measured usage of the pods bound to each node.
fn by_node<'a>(
    usage: &Usage,
    pods: impl IntoIterator<Item = &'a Pod>,
) -> BTreeMap<String, Measured> {
    let mut out: BTreeMap<String, Measured> = BTreeMap::new();
    for p in pods {
        let (Some(node), Some(m)) = (p.node_name.as_ref(), usage.pod(p)) else {
            continue;
        };
        let e = out.entry(node.clone()).or_default();
        e.cpu_milli = e.cpu_milli.saturating_add(m.cpu_milli);
        e.memory = e.memory.saturating_add(m.memory);
    }
    out
}

impl DumpUsage {
    /// The dump's usage, with its nodes and pods as the dump has them.
    pub fn new(usage: Usage, nodes: &[Node], pods: &[Pod]) -> Self {
        let on = by_node(&usage, pods);
        let beside = usage
            .nodes
            .iter()
            .map(|(n, m)| {
                let p = on.get(n).copied().unwrap_or_default();
                let left = Measured {
                    cpu_milli: (m.cpu_milli - p.cpu_milli).max(0),
                    memory: (m.memory - p.memory).max(0),
                };
                (n.clone(), left)
            })
            .collect();
        DumpUsage {
            pods: usage,
            beside,
            dumped: nodes.iter().map(|n| n.name.clone()).collect(),
        }
    }

    /// The usage now, the pods where they are.
    pub fn now(&self, nodes: &[Node], pods: &[Arc<Pod>]) -> Usage {
        let on = by_node(&self.pods, pods.iter().map(|p| &**p));
        let mut out = Usage {
            pods: self.pods.pods.clone(),
            ..Usage::default()
        };
        for n in nodes {
            let beside = match self.beside.get(&n.name) {
                Some(m) => *m,
                None if self.dumped.contains(&n.name) => continue,
                None => Measured::default(),
            };
            let p = on.get(&n.name).copied().unwrap_or_default();
            out.nodes.insert(
                n.name.clone(),
                Measured {
                    cpu_milli: beside.cpu_milli.saturating_add(p.cpu_milli),
                    memory: beside.memory.saturating_add(p.memory),
                },
            );
        }
        out
    }
}
