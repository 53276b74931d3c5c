//! Node usage as the descheduler's node-utilization plugins count it (its requests-based usage client:
//! the sum of the requests of the pods bound to a node, `pods` counting them), the thresholds they
//! classify nodes with, and the eviction loop `LowNodeUtilization` and `HighNodeUtilization` share
//! (`evictPodsFromSourceNodes`): sources in order, each node's evictable pods lowest priority first,
//! until the destinations' room or the strategy's condition runs out.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use crate::deschedule::actual::Usage;
use crate::deschedule::args::{Namespaces, Strategy, Thresholds};
use crate::deschedule::view::Verdict;
use crate::deschedule::{Evictor, Proposal, View};
use crate::model::workload::{Node, Pod, PodPhase, Qos};
use crate::model::{Resources, TaintEffect};

pub const CPU: &str = "cpu";
pub const MEMORY: &str = "memory";
pub const PODS: &str = "pods";
const EPHEMERAL_STORAGE: &str = "ephemeral-storage";

/// Resource name → amount: cpu in millicores, memory and storage in bytes, pods and extended
/// resources in units.
pub type Amounts = BTreeMap<String, i64>;

/// Resource name → percent of the node's allocatable.
pub type Percents = BTreeMap<String, f64>;

/// The resources a plugin counts: those it has thresholds for, plus cpu, memory and pods.
pub fn counted(thresholds: &Thresholds) -> Vec<String> {
    let mut names: Vec<String> = [CPU, MEMORY, PODS].map(String::from).into();
    for k in thresholds.keys() {
        if !names.contains(k) {
            names.push(k.clone());
        }
    }
    names
}

/// What a node has of a resource; None when it has none of that name (an extended resource it does
/// not advertise).
pub fn capacity(node: &Node, name: &str) -> Option<i64> {
    amount(&node.allocatable, name)
}

fn amount(r: &Resources, name: &str) -> Option<i64> {
    match name {
        CPU => Some(r.cpu_milli),
        MEMORY => Some(r.memory),
        PODS => Some(r.pods),
        EPHEMERAL_STORAGE => (r.ephemeral_storage > 0).then_some(r.ephemeral_storage),
        other => r.extended.get(other).copied(),
    }
}

/// What a pod requests of a resource (`pods`: nothing, as the descheduler's pod usage has it).
pub fn request(pod: &Pod, name: &str) -> i64 {
    if name == PODS {
        return 0;
    }
    amount(&pod.requests, name).unwrap_or(0)
}

/// One node as the plugins see it: its pods (the snapshot its usage was counted from), its usage and
/// what it may hold before it crosses the plugin's upper threshold (`available`).
#[derive(Debug, Clone)]
pub struct NodeUsage<'a> {
    pub node: &'a Node,
    pub pods: Vec<Arc<Pod>>,
    pub usage: Amounts,
    pub available: Amounts,
}

/// Each node's pods (not finished ones) and the sum of their requests of `names`.
pub fn snapshot<'a>(view: &View<'a>, names: &[String]) -> Vec<(&'a Node, Vec<Arc<Pod>>, Amounts)> {
    view.nodes()
        .iter()
        .map(|node| {
            let pods: Vec<Arc<Pod>> = view
                .pods_on(&node.name)
                .iter()
                .filter(|p| !matches!(p.meta.phase, PodPhase::Succeeded | PodPhase::Failed))
                .cloned()
                .collect();
            let usage = names
                .iter()
                .map(|n| {
                    let used = if n == PODS {
                        pods.len() as i64
                    } else {
                        pods.iter().map(|p| request(p, n)).sum()
                    };
                    (n.clone(), used)
                })
                .collect();
            (node, pods, usage)
        })
        .collect()
}

/// Usage as percents of the node's allocatable (a resource the node lacks is left out).
pub fn percents(node: &Node, usage: &Amounts) -> Percents {
    usage
        .iter()
        .filter_map(|(name, used)| {
            let cap = capacity(node, name)?;
            let pct = if cap > 0 {
                *used as f64 / cap as f64 * 100.0
            } else {
                0.0
            };
            Some((name.clone(), pct))
        })
        .collect()
}

/// Every threshold resource at or under its threshold.
pub fn below(usage: &Percents, threshold: &Thresholds) -> bool {
    threshold
        .iter()
        .all(|(n, t)| *t >= usage.get(n).copied().unwrap_or(0.0))
}

/// Some threshold resource over its threshold.
pub fn above(usage: &Percents, threshold: &Thresholds) -> bool {
    threshold
        .iter()
        .any(|(n, t)| *t < usage.get(n).copied().unwrap_or(0.0))
}

/// Thresholds as deviations from the average usage of the nodes (`useDeviationThresholds`): the
/// average over the nodes of each resource in `names`, minus `low` and plus `high`, within 0..100.
pub fn deviation(
    all: &[Percents],
    names: &[String],
    low: &Thresholds,
    high: &Thresholds,
) -> [Thresholds; 2] {
    let mut sum: BTreeMap<&str, (f64, usize)> = BTreeMap::new();
    for usage in all {
        for (n, v) in usage.iter().filter(|(n, _)| names.contains(n)) {
            let e = sum.entry(n.as_str()).or_default();
            e.0 += v;
            e.1 += 1;
        }
    }
    let around = |span: &Thresholds, sign: f64| -> Thresholds {
        sum.iter()
            .map(|(n, (s, c))| {
                let avg = s / *c as f64;
                let v = avg + sign * span.get(*n).copied().unwrap_or(0.0);
                (n.to_string(), v.clamp(0.0, 100.0))
            })
            .collect()
    };
    [around(low, -1.0), around(high, 1.0)]
}

/// The node's allocatable of each of `names` capped to `threshold` percent where it has one (none:
/// all of it; a resource the node lacks: nothing).
pub fn capped(node: &Node, threshold: &Thresholds, names: &[String]) -> Amounts {
    names
        .iter()
        .map(|n| {
            let v = match (capacity(node, n), threshold.get(n)) {
                (None, _) => 0,
                (Some(c), None) => c,
                (Some(c), Some(t)) => (t * 0.01 * c as f64) as i64,
            };
            (n.clone(), v)
        })
        .collect()
}

/// Orders nodes by the sum of their usage's amounts (cpu in millicores), as the descheduler does.
pub fn sort_by_usage(nodes: &mut [NodeUsage], ascending: bool) {
    let total = |n: &NodeUsage| n.usage.values().sum::<i64>();
    if ascending {
        nodes.sort_by_key(total);
    } else {
        nodes.sort_by_key(|n| std::cmp::Reverse(total(n)));
    }
}

/// The descheduler's order of eviction on a node: pods with no priority first, then lowest
/// priority first, then BestEffort, Burstable, Guaranteed. Within a class, pods annotated
/// prefer-no-eviction go last (`noEvictionPolicy: Preferred`).
pub fn sort_for_eviction(pods: &mut [Arc<Pod>]) {
    pods.sort_by_key(|p| {
        let priority = (!p.meta.no_priority).then_some(p.meta.priority);
        (priority, qos(p), p.meta.prefer_no_eviction)
    });
}

/// The pod's QoS class; when not known, no cpu or memory requested reads as BestEffort, anything
/// else as Burstable.
fn qos(p: &Pod) -> Qos {
    p.meta
        .qos
        .unwrap_or(if p.requests.cpu_milli == 0 && p.requests.memory == 0 {
            Qos::BestEffort
        } else {
            Qos::Burstable
        })
}

/// Whether the pod tolerates every taint (any effect) of at least one of the nodes, with as many
/// tolerations as the node has taints (the descheduler's `PodToleratesTaints`).
fn tolerates_some(pod: &Pod, nodes: &[&Node]) -> bool {
    nodes.iter().any(|n| {
        pod.tolerations.len() >= n.taints.len()
            && n.taints
                .iter()
                .all(|t| pod.tolerations.iter().any(|tol| tol.tolerates(t)))
    })
}

/// The evictor's `nodeFit` check (`Evictor::pre_evict`), for the strategies that ask it before
/// counting a pod as evicted.
pub struct NodeFit<'e> {
    evictor: &'e Evictor<'e>,
}

impl<'e> NodeFit<'e> {
    pub fn new(_view: &View, evictor: &'e Evictor<'e>) -> Self {
        NodeFit { evictor }
    }

    /// Whether the pod may be evicted as far as `nodeFit` (and the namespace selector) go; a
    /// refusal is noted for the plan.
    pub fn admits(&self, pod: &Arc<Pod>) -> bool {
        self.evictor.pre_evicts(pod)
    }
}

/// Whether the pod's taint tolerations admit the node for scheduling (`NoSchedule`, `NoExecute`).
pub fn tolerates_scheduling(pod: &Pod, node: &Node) -> bool {
    node.taints
        .iter()
        .filter(|t| matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute))
        .all(|t| pod.tolerations.iter().any(|tol| tol.tolerates(t)))
}

/// Whether the pod's node selector and required node affinity admit the node.
pub fn selects(pod: &Pod, node: &Node) -> bool {
    pod.node_selector
        .iter()
        .all(|(k, v)| node.labels.get(k) == Some(v))
        && (pod.node_affinity.is_empty()
            || pod.node_affinity.iter().any(|term| {
                term.iter()
                    .all(|r| r.admits_node(&node.labels, node.field_name()))
            }))
}

/// How the eviction loop of one plugin run goes.
pub struct Loop<'e, 'v> {
    pub strategy: Strategy,
    pub evictor: &'e Evictor<'v>,
    pub fit: &'e NodeFit<'e>,
    /// The plugin's pod filter beyond the evictor's.
    pub eligible: &'e dyn Fn(&Pod) -> bool,
    pub evictable_namespaces: &'e Option<Namespaces>,
    /// The resources counted.
    pub names: &'e [String],
    /// Keep evicting from this node, given what the destinations have left?
    pub go_on: &'e dyn Fn(&NodeUsage, &Amounts) -> bool,
    /// At most this many evictions per source node.
    pub node_limit: Option<u32>,
    /// Actual usage (`metricsUtilization`): each pod's measured usage is what its eviction frees,
    /// and a pod without metrics is left.
    pub measured: Option<&'e Usage>,
}

impl Loop<'_, '_> {
    /// The evictions from `sources` (in order) towards `destinations`, each told to `sink` as it is
    /// chosen. Only those the sink makes count (towards the usage left and `node_limit`): after a
    /// declined one the loop goes on to the node's next pod, as the descheduler goes on after a
    /// failed eviction, until the node is within its target, the limit is reached or no pod is left.
    pub fn run(
        &self,
        sources: Vec<NodeUsage>,
        destinations: &[NodeUsage],
        sink: &mut dyn FnMut(Proposal) -> Verdict,
    ) {
        let mut available: Amounts = Amounts::new();
        for d in destinations {
            for n in self.names {
                *available.entry(n.clone()).or_default() +=
                    d.available.get(n).copied().unwrap_or(0) - d.usage.get(n).copied().unwrap_or(0);
            }
        }
        let onto: Arc<[String]> = destinations.iter().map(|d| d.node.name.clone()).collect();
        let targets: Vec<&Node> = destinations.iter().map(|d| d.node).collect();
        let excluded: HashSet<&str> = self
            .evictable_namespaces
            .iter()
            .flat_map(|n| n.exclude.iter().map(String::as_str))
            .collect();
        for mut source in sources {
            let mut removable: Vec<Arc<Pod>> = source
                .pods
                .iter()
                .filter(|p| self.evictor.allows(p) && (self.eligible)(p))
                .cloned()
                .collect();
            if removable.is_empty() {
                continue;
            }
            sort_for_eviction(&mut removable);
            if !(self.go_on)(&source, &available) {
                continue;
            }
            let mut evicted = 0u32;
            for pod in removable {
                if self.node_limit.is_some_and(|l| evicted >= l) {
                    break;
                }
                if !tolerates_some(&pod, &targets)
                    || excluded.contains(pod.namespace.as_str())
                    || !self.fit.admits(&pod)
                    || self.measured.is_some_and(|u| u.pod(&pod).is_none())
                {
                    continue;
                }
                let verdict = sink(Proposal {
                    onto: Some(onto.clone()),
                    ..Proposal::anywhere(&pod, self.strategy)
                });
                match verdict {
                    Verdict::Evicted => {}
                    Verdict::Declined => continue,
                    Verdict::NodeDone => break,
                }
                for n in self.names {
                    let used = match (self.measured.and_then(|u| u.pod(&pod)), n.as_str()) {
                        (_, PODS) => 1,
                        (Some(m), CPU) => m.cpu_milli,
                        (Some(m), MEMORY) => m.memory,
                        (Some(_), _) => 0,
                        (None, _) => request(&pod, n),
                    };
                    *source.usage.entry(n.clone()).or_default() -= used;
                    *available.entry(n.clone()).or_default() -= used;
                }
                evicted += 1;
                if !(self.go_on)(&source, &available) {
                    break;
                }
            }
        }
    }
}

/// Every resource the destinations have left is above zero.
pub fn room_left(available: &Amounts) -> bool {
    available.values().all(|v| *v > 0)
}

#[cfg(test)]
pub(crate) mod testing;
