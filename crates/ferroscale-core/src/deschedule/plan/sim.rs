//! The cluster as a plan will leave it, for placing each proposed pod.

use std::collections::HashMap;
use std::sync::Arc;

use crate::engine::predicates::{fits_among, repelling, Cluster as Nodes, NodeInfo, Repel, Unfit};
use crate::model::workload::{Node, Pod};

/// The cluster as it will be: every node with its pods, changed as evictions are planned.
pub(super) struct Sim {
    pub infos: Vec<NodeInfo>,
    pub index: HashMap<String, usize>,
    pub repel: Repel,
}

impl Sim {
    pub fn new(nodes: &[Node], pods: &[Arc<Pod>]) -> Self {
        let index: HashMap<String, usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i))
            .collect();
        let mut infos: Vec<NodeInfo> = nodes.iter().cloned().map(NodeInfo::new).collect();
        for p in pods {
            if let Some(&i) = p.node_name.as_deref().and_then(|n| index.get(n)) {
                infos[i].add(Arc::clone(p));
            }
        }
        let repel = repelling(&infos);
        Sim {
            infos,
            index,
            repel,
        }
    }

    /// Takes the pod off its node.
    pub fn remove(&mut self, pod: &Pod, node: usize) {
        let info = &self.infos[node];
        let mut out = NodeInfo::new(info.node.clone());
        for p in &info.pods {
            if !(p.namespace == pod.namespace && p.name == pod.name) {
                out.add(Arc::clone(p));
            }
        }
        self.infos[node] = out;
    }

    /// The node the scheduler would pick for `pod` among `candidates` (its resources fit, every filter
    /// passes), scored as its default `LeastAllocated` (or `MostAllocated` when packing), or the first
    /// refusal.
    pub fn place(
        &self,
        pod: &Pod,
        candidates: &[usize],
        pack: bool,
    ) -> Result<usize, Option<Unfit>> {
        // Best score first; the first node every filter passes is the scheduler's pick, so most
        // placements check one node. Ties keep the candidates' order.
        let mut scored: Vec<(f64, usize)> = candidates
            .iter()
            .map(|&j| {
                let s = free_share(&self.infos[j], pod);
                (if pack { s } else { -s }, j)
            })
            .collect();
        scored.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut first: Option<Unfit> = None;
        for (_, j) in scored {
            match fits_among(pod, Nodes::of(&self.infos), &self.infos[j], self.repel) {
                Ok(()) => return Ok(j),
                Err(u) => {
                    first.get_or_insert(u);
                }
            }
        }
        Err(first)
    }
}

/// The share of cpu and memory left free on a node once the pod is there (the scheduler's
/// `LeastAllocated` score, 0..1).
fn free_share(info: &NodeInfo, pod: &Pod) -> f64 {
    let share = |used: i64, want: i64, total: i64| {
        if total > 0 {
            ((total - used - want) as f64 / total as f64).max(0.0)
        } else {
            0.0
        }
    };
    let a = &info.node.allocatable;
    (share(
        info.requested.cpu_milli,
        pod.requests.cpu_milli,
        a.cpu_milli,
    ) + share(info.requested.memory, pod.requests.memory, a.memory))
        / 2.0
}
