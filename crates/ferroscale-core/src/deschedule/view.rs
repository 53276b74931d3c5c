//! What a descheduling cycle reads: the cluster (`Cluster`, given by the caller) and an index of it
//! (`View`) the strategies share, with what they propose (`Proposal`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use super::actual::Usage;
use super::args::Strategy;
use crate::model::workload::{Node, Pdb, Pod};

/// The cluster as a descheduling cycle sees it.
pub struct Cluster<'a> {
    pub nodes: &'a [Node],
    /// Every live pod, bound or pending.
    pub pods: &'a [Arc<Pod>],
    /// Pods finished (phase `Failed` or `Succeeded`), still bound to their node (`RemoveFailedPods`
    /// and `PodLifeTime` read them; the autoscaling engine never sees them).
    pub failed: &'a [Arc<Pod>],
    pub pdbs: &'a [Pdb],
    /// Nodes being removed (scale-down, replacement, an interruption): no pod is planned onto them.
    pub removing: &'a HashSet<String>,
    /// PriorityClass name → value, for the evictor's `priorityThreshold.name`.
    pub priority_classes: &'a BTreeMap<String, i32>,
    /// Namespace name → labels, for the evictor's `namespaceLabelSelector` (`run` lists them);
    /// None: each pod's `namespace_labels` (a dump's loader sets them).
    pub namespaces: Option<&'a BTreeMap<String, BTreeMap<String, String>>>,
    /// What metrics-server says nodes and pods use (`metricsUtilization`); None: not collected.
    pub usage: Option<&'a Usage>,
    /// Seconds since the epoch.
    pub now: i64,
}

/// An index of a [`Cluster`]: nodes by name and the pods bound to each.
pub struct View<'a> {
    pub cluster: &'a Cluster<'a>,
    nodes: HashMap<&'a str, &'a Node>,
    bound: HashMap<&'a str, Vec<Arc<Pod>>>,
    failed: HashMap<&'a str, Vec<Arc<Pod>>>,
}

impl<'a> View<'a> {
    pub fn new(cluster: &'a Cluster<'a>) -> Self {
        let nodes = cluster.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
        let index = |pods: &'a [Arc<Pod>]| {
            let mut by: HashMap<&'a str, Vec<Arc<Pod>>> = HashMap::new();
            for p in pods {
                if let Some(n) = p.node_name.as_deref() {
                    by.entry(n).or_default().push(p.clone());
                }
            }
            by
        };
        View {
            cluster,
            nodes,
            bound: index(cluster.pods),
            failed: index(cluster.failed),
        }
    }

    /// Every node, in the cluster's order.
    pub fn nodes(&self) -> &'a [Node] {
        self.cluster.nodes
    }

    pub fn node(&self, name: &str) -> Option<&'a Node> {
        self.nodes.get(name).copied()
    }

    /// The live pods bound to a node.
    pub fn pods_on(&self, node: &str) -> &[Arc<Pod>] {
        self.bound.get(node).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The finished (failed or succeeded) pods still bound to a node.
    pub fn failed_on(&self, node: &str) -> &[Arc<Pod>] {
        self.failed.get(node).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Seconds since the epoch.
    pub fn now(&self) -> i64 {
        self.cluster.now
    }
}

/// A strategy's wish to evict a pod from its node.
#[derive(Debug, Clone)]
pub struct Proposal {
    pub pod: Arc<Pod>,
    /// The node it is on.
    pub node: String,
    pub strategy: Strategy,
    /// The nodes the strategy means it to move to (`LowNodeUtilization`: the underutilized ones);
    /// None: any node the scheduler would pick.
    /// Shared by the proposals of one strategy run (one copy, however many pods).
    pub onto: Option<Arc<[String]>>,
}

impl Proposal {
    /// A proposal to move `pod` anywhere else.
    pub fn anywhere(pod: &Arc<Pod>, strategy: Strategy) -> Self {
        Proposal {
            pod: pod.clone(),
            node: pod.node_name.clone().unwrap_or_default(),
            strategy,
            onto: None,
        }
    }
}

/// What the plan made of a proposal, told back to the strategy that made it: the node-utilization
/// strategies count only evictions made (as the descheduler counts its evictor's successes) and go
/// on to their next candidate when one is declined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Planned: the pod leaves its node.
    Evicted,
    /// Declined (no place, a budget, a cooldown, …): the strategy may try its next pod.
    Declined,
    /// Declined by a limit that holds for the rest of this node's pods (`maxNoOfPodsToEvictPerNode`,
    /// `maxNoOfPodsToEvictTotal`): the strategy moves on to its next node.
    NodeDone,
}

/// Whether scale-down (ours or another autoscaler's) is taking `node`: it carries the deletion taint,
/// the first step of a removal.
pub fn being_removed(node: &Node) -> bool {
    node.marked_for_deletion()
}

/// The nodes nothing is planned onto: `removing` (what the caller is taking out) and every node
/// [`being_removed`], as `run`, `deschedule` and `simulate` read them alike.
pub fn removing_nodes(nodes: &[Node], removing: &HashSet<String>) -> HashSet<String> {
    let mut out = removing.clone();
    out.extend(
        nodes
            .iter()
            .filter(|n| being_removed(n))
            .map(|n| n.name.clone()),
    );
    out
}
