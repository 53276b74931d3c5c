//! The scheduler's PodTopologySpread filter (`whenUnsatisfiable: DoNotSchedule`): placing the pod in the
//! node's domain must not make that domain exceed the least populated eligible domain by more than
//! `maxSkew`. Counting the selected pods over the whole cluster is the expensive part, so the counts over
//! the cluster's unchanging nodes can be kept in a [`SpreadMemo`] while a simulation adds nodes.

use std::cell::RefCell;
use std::collections::BTreeMap;

use super::{placement, Cluster, NodeInfo, Unfit};
use crate::model::workload::{Pod, Requirement, SpreadConstraint};

/// What decides which domains a constraint counts and how many pods each holds.
#[derive(Debug, Clone, PartialEq)]
struct Key {
    namespace: String,
    constraint: SpreadConstraint,
    node_selector: BTreeMap<String, String>,
    node_affinity: Vec<Vec<Requirement>>,
}

/// Per-domain counts over a cluster's nodes, by domain and sorted by count.
#[derive(Debug, Clone, Default)]
struct Counts {
    by_domain: BTreeMap<String, i32>,
    ascending: Vec<(i32, String)>,
}

/// Topology spread counts over [`Cluster::base`], computed once per kind of constraint.
#[derive(Debug, Default)]
pub struct SpreadMemo {
    entries: RefCell<Vec<(Key, std::rc::Rc<Counts>)>>,
}

impl SpreadMemo {
    fn counts(&self, pod: &Pod, c: &SpreadConstraint, base: &[NodeInfo]) -> std::rc::Rc<Counts> {
        let key = Key {
            namespace: pod.namespace.clone(),
            constraint: c.clone(),
            node_selector: pod.node_selector.clone(),
            node_affinity: pod.node_affinity.clone(),
        };
        if let Some((_, counts)) = self.entries.borrow().iter().find(|(k, _)| *k == key) {
            return counts.clone();
        }
        let mut by_domain = BTreeMap::new();
        for n in base {
            add(&mut by_domain, pod, c, n);
        }
        let mut ascending: Vec<(i32, String)> =
            by_domain.iter().map(|(d, n)| (*n, d.clone())).collect();
        ascending.sort();
        let counts = std::rc::Rc::new(Counts {
            by_domain,
            ascending,
        });
        self.entries.borrow_mut().push((key, counts.clone()));
        counts
    }
}

/// Counts `n`'s pods selected by `c` into its domain, if the pod could go there at all.
fn add(counts: &mut BTreeMap<String, i32>, pod: &Pod, c: &SpreadConstraint, n: &NodeInfo) {
    if placement(pod, &n.node).is_err() {
        return;
    }
    if let Some(v) = n.node.labels.get(&c.topology_key) {
        let count = n
            .pods
            .iter()
            .filter(|o| o.namespace == pod.namespace && c.selector.matches(&o.labels))
            .count() as i32;
        *counts.entry(v.clone()).or_default() += count;
    }
}

/// Whether placing `pod` on `node` keeps constraint `c` within its skew, counting every node of
/// `nodes` (the version of `node` given, not an older one in `nodes`).
pub(super) fn fits(
    pod: &Pod,
    c: &SpreadConstraint,
    nodes: Cluster,
    node: &NodeInfo,
) -> Result<(), Unfit> {
    let refuse = || Err(Unfit::TopologySpread(c.topology_key.clone()));
    let Some(here) = node.node.labels.get(&c.topology_key) else {
        return refuse();
    };
    let others = |n: &&NodeInfo| n.node.name != node.node.name;
    // Counts beyond the memo's: the added nodes and `node` (or, without a memo, every node).
    let mut extra: BTreeMap<String, i32> = BTreeMap::new();
    let memo = nodes.memo.map(|m| m.counts(pod, c, nodes.base));
    if memo.is_none() {
        for n in nodes.base.iter().filter(others) {
            add(&mut extra, pod, c, n);
        }
    }
    for n in nodes.added.iter().filter(others) {
        add(&mut extra, pod, c, n);
    }
    add(&mut extra, pod, c, node);
    let base = |d: &str| {
        memo.as_ref()
            .and_then(|m| m.by_domain.get(d).copied())
            .unwrap_or(0)
    };
    // The least populated domain: among those with extra pods, or the emptiest memo domain without.
    let mut min = extra.iter().map(|(d, n)| base(d) + n).min();
    if let Some(m) = &memo {
        if let Some((n, _)) = m.ascending.iter().find(|(_, d)| !extra.contains_key(d)) {
            min = Some(min.map_or(*n, |x| x.min(*n)));
        }
    }
    let min = min.unwrap_or(0);
    let mine = base(here) + extra.get(here).copied().unwrap_or(0);
    let selfmatch = i32::from(c.selector.matches(&pod.labels));
    if mine + selfmatch - min > c.max_skew {
        return refuse();
    }
    Ok(())
}
