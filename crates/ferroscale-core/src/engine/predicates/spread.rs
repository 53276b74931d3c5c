//! The scheduler's PodTopologySpread filter (`whenUnsatisfiable: DoNotSchedule`): placing the pod in the
//! node's domain must not make that domain exceed the least populated eligible domain by more than
//! `maxSkew`. Counting the selected pods over the whole cluster is the expensive part, so the estimator
//! keeps the counts in a [`SpreadMemo`], updated as it adds nodes and places pods.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::{placement, Cluster, NodeInfo, Unfit};
use crate::model::shared::Shared;
use crate::model::workload::{Node, Pod, Requirement, SpreadConstraint, Toleration};
use crate::model::TaintEffect;

/// What decides which domains a constraint counts and how many pods each holds.
#[derive(Debug, Clone, PartialEq)]
struct Key {
    namespace: crate::model::shared::SharedName,
    constraint: SpreadConstraint,
    /// The topology keys of all the pod's constraints: a node lacking one is not counted.
    keys: Vec<String>,
    node_selector: BTreeMap<String, String>,
    node_affinity: Vec<Vec<Requirement>>,
    tolerations: Shared<Vec<Toleration>>,
}

impl Key {
    /// Whether `pod`'s constraint `c` has this key, compared in place: a check must not copy the pod's
    /// selectors to find its entry.
    fn is_of(&self, pod: &Pod, c: &SpreadConstraint) -> bool {
        self.namespace == pod.namespace
            && self.constraint == *c
            && self
                .keys
                .iter()
                .eq(pod.spread.iter().map(|k| &k.topology_key))
            && self.node_selector == pod.node_selector
            && self.node_affinity == pod.node_affinity
            && self.tolerations == pod.tolerations
    }
}

/// Whether `c` counts `node`'s pods (upstream's PreFilter): the node has the topology key of every
/// constraint of the pod, and passes the pod's node selector and affinity (`nodeAffinityPolicy:
/// Honor`, the default) and tolerations (`nodeTaintsPolicy: Honor`). Public for the descheduler's
/// topology spread strategy, which counts the same domains.
pub fn counts_node(pod: &Pod, c: &SpreadConstraint, node: &Node) -> bool {
    pod.spread
        .iter()
        .all(|k| node.labels.contains_key(&k.topology_key))
        && (c.ignore_node_affinity || placement(pod, node).is_ok())
        && (!c.honor_taints
            || node.taints.iter().all(|t| {
                !matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute)
                    || pod.tolerations.iter().any(|tol| tol.tolerates(t))
            }))
}

/// Whether `c` counts `other`: in the pod's namespace, selected, and not being deleted.
fn selects(pod: &Pod, c: &SpreadConstraint, other: &Pod) -> bool {
    other.namespace == pod.namespace
        && other.meta.deleted.is_none()
        && c.selector.matches(&other.labels)
}

/// Per-domain counts of the selected pods, and the domains ordered by count, kept as pods are placed so
/// a check reads its domain's count and the least populated domain without walking any node.
#[derive(Debug, Default)]
struct Totals {
    by_domain: HashMap<String, i32>,
    ascending: BTreeSet<(i32, String)>,
}

impl Totals {
    fn add(&mut self, domain: &str, k: i32) {
        let old = self.by_domain.get(domain).copied();
        if let Some(old) = old {
            self.ascending.remove(&(old, domain.to_string()));
        }
        let new = old.unwrap_or(0) + k;
        self.by_domain.insert(domain.to_string(), new);
        self.ascending.insert((new, domain.to_string()));
    }

    /// Counts `n` as [`add`] does.
    fn count(&mut self, pod: &Pod, c: &SpreadConstraint, n: &NodeInfo) {
        if let Some((domain, k)) = selected(pod, c, n) {
            self.add(domain, k);
        }
    }
}

/// One kind of constraint's counts: the pod it was made for stands for the key (namespace, node
/// placement) when later nodes and pods are counted.
#[derive(Debug)]
struct Entry {
    key: Key,
    pod: Pod,
    totals: Totals,
}

/// Topology spread counts over the cluster's nodes and the nodes a simulation adds, per kind of
/// constraint, for the estimator: made once per kind from every node, then kept up to date as the
/// estimator reports each node it adds ([`SpreadMemo::node_added`]) and each pod it places
/// ([`SpreadMemo::pod_placed`]), so one check costs a lookup and not a count over the nodes.
#[derive(Debug, Default)]
pub struct SpreadMemo {
    entries: RefCell<Vec<Entry>>,
    /// The added nodes the entries count (the estimator's nodes, by name).
    counted: RefCell<HashSet<String>>,
    /// Every node a check is asked about is among the counted ones (`SpreadMemo::over_base`).
    all_counted: bool,
}

impl SpreadMemo {
    /// Counts for callers whose candidate nodes are all among the cluster's own (`Cluster::base`), kept
    /// as long as the caller reports each pod it places on or takes off a node
    /// ([`SpreadMemo::pod_placed`], [`SpreadMemo::pod_removed`]): the descheduler's planner checks each
    /// proposed pod against every node with one count per constraint for the whole cycle.
    pub fn over_base() -> Self {
        SpreadMemo {
            all_counted: true,
            ..SpreadMemo::default()
        }
    }

    /// The index of `pod`'s entry for `c`, made from `nodes` when it is the first of its kind.
    fn entry(&self, pod: &Pod, c: &SpreadConstraint, nodes: Cluster) -> usize {
        if let Some(i) = self
            .entries
            .borrow()
            .iter()
            .position(|e| e.key.is_of(pod, c))
        {
            return i;
        }
        let key = Key {
            namespace: pod.namespace.clone(),
            constraint: c.clone(),
            keys: pod.spread.iter().map(|k| k.topology_key.clone()).collect(),
            node_selector: pod.node_selector.clone(),
            node_affinity: pod.node_affinity.clone(),
            tolerations: pod.tolerations.clone(),
        };
        let mut totals = Totals::default();
        for n in nodes.iter() {
            totals.count(pod, c, n);
        }
        let mut entries = self.entries.borrow_mut();
        entries.push(Entry {
            key,
            pod: pod.clone(),
            totals,
        });
        entries.len() - 1
    }

    /// The estimator added `node` (with no pod placed yet) to its nodes.
    pub fn node_added(&self, node: &NodeInfo) {
        self.counted.borrow_mut().insert(node.node.name.clone());
        for e in self.entries.borrow_mut().iter_mut() {
            e.totals.count(&e.pod, &e.key.constraint, node);
        }
    }

    /// The estimator placed `pod` on `node`, one of the nodes it added (or, for a memo
    /// [`SpreadMemo::over_base`], the caller placed it on one of the cluster's nodes).
    pub fn pod_placed(&self, node: &NodeInfo, pod: &Pod) {
        self.moved(node, pod, 1);
    }

    /// `pod` left `node`, one of the nodes counted: the descheduler's planner keeps its memo
    /// [`SpreadMemo::over_base`] as it moves pods off the cluster's nodes.
    pub fn pod_removed(&self, node: &NodeInfo, pod: &Pod) {
        self.moved(node, pod, -1);
    }

    fn moved(&self, node: &NodeInfo, pod: &Pod, k: i32) {
        for e in self.entries.borrow_mut().iter_mut() {
            let c = &e.key.constraint;
            if !selects(&e.pod, c, pod) || !counts_node(&e.pod, c, &node.node) {
                continue;
            }
            if let Some(domain) = node.node.labels.get(&c.topology_key) {
                e.totals.add(domain, k);
            }
        }
    }
}

/// `n`'s domain under `c` and how many of its pods `c` selects, if `pod` could go there at all.
fn selected<'n>(pod: &Pod, c: &SpreadConstraint, n: &'n NodeInfo) -> Option<(&'n str, i32)> {
    if !counts_node(pod, c, &n.node) {
        return None;
    }
    let domain = n.node.labels.get(&c.topology_key)?;
    let count = n.pods.iter().filter(|o| selects(pod, c, o)).count() as i32;
    Some((domain, count))
}

/// Counts `n`'s pods selected by `c` into its domain, if the pod could go there at all.
fn add(counts: &mut BTreeMap<String, i32>, pod: &Pod, c: &SpreadConstraint, n: &NodeInfo) {
    if let Some((domain, k)) = selected(pod, c, n) {
        *counts.entry(domain.to_string()).or_default() += k;
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
    let Some(here) = node.node.labels.get(&c.topology_key) else {
        return Err(Unfit::TopologySpread(c.topology_key.clone()));
    };
    let (mine, min, domains) = match nodes.memo {
        Some(memo) => with_memo(memo, pod, c, nodes, node, here),
        None => counted(pod, c, nodes, node, here),
    };
    // Fewer eligible domains than `minDomains`: the global minimum counts as 0.
    let min = if (domains as i64) < i64::from(c.min_domains.unwrap_or(1)) {
        0
    } else {
        min
    };
    let selfmatch = i32::from(c.selector.matches(&pod.labels));
    if mine + selfmatch - min > c.max_skew {
        return Err(Unfit::TopologySpread(c.topology_key.clone()));
    }
    Ok(())
}

/// The pods in `node`'s domain and in the least populated domain, and how many domains are eligible,
/// from the memo's totals: `node` is either one the memo counts already or a new one, counted here.
fn with_memo(
    memo: &SpreadMemo,
    pod: &Pod,
    c: &SpreadConstraint,
    nodes: Cluster,
    node: &NodeInfo,
    here: &str,
) -> (i32, i32, usize) {
    let i = memo.entry(pod, c, nodes);
    let entries = memo.entries.borrow();
    let totals = &entries[i].totals;
    let new = if memo.all_counted || memo.counted.borrow().contains(&node.node.name) {
        None
    } else {
        selected(pod, c, node)
    };
    let mine = totals.by_domain.get(here).copied().unwrap_or(0) + new.map_or(0, |(_, k)| k);
    let exists = new.is_some() || totals.by_domain.contains_key(here);
    let others = totals
        .ascending
        .iter()
        .find(|(_, d)| d != here)
        .map(|(n, _)| *n);
    let min = match (others, exists) {
        (Some(o), true) => o.min(mine),
        (Some(o), false) => o,
        (None, true) => mine,
        (None, false) => 0,
    };
    let domains =
        totals.by_domain.len() + usize::from(exists && !totals.by_domain.contains_key(here));
    (mine, min, domains)
}

/// The same, counted over every node (for callers whose candidate nodes are among the cluster's).
fn counted(
    pod: &Pod,
    c: &SpreadConstraint,
    nodes: Cluster,
    node: &NodeInfo,
    here: &str,
) -> (i32, i32, usize) {
    let mut counts: BTreeMap<String, i32> = BTreeMap::new();
    for n in nodes.iter().filter(|n| n.node.name != node.node.name) {
        add(&mut counts, pod, c, n);
    }
    add(&mut counts, pod, c, node);
    let min = counts.values().copied().min().unwrap_or(0);
    (counts.get(here).copied().unwrap_or(0), min, counts.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{node, pod, selector};
    use proptest::prelude::*;

    /// The node a generated case names: `zone=z<zone>` when it has one, `tier=a` when on a tier.
    fn generated_node(name: String, zone: Option<u8>, tier: bool) -> NodeInfo {
        let mut n = node(name);
        if let Some(z) = zone {
            n = n.label("zone", &format!("z{z}"));
        }
        if tier {
            n = n.label("tier", "a");
        }
        n.info()
    }

    /// The pod a generated case names: app `a<app>` in namespace `ns<namespace>`.
    fn generated_pod(app: u8, namespace: u8) -> Pod {
        pod(&format!("ns{namespace}"), "")
            .label("app", &format!("a{app}"))
            .build()
    }

    /// The pod whose placement is checked: spread over zones, selecting `app`, maybe only on `tier` nodes
    /// (counting only those, or every node with `nodeAffinityPolicy: Ignore` when `skew` is 2), asking
    /// for 3 domains at least when `app` is 1.
    fn spreading(app: u8, skew: i32, tier: bool) -> (Pod, SpreadConstraint) {
        let mut p = generated_pod(app, 0);
        if tier {
            p.node_selector.insert("tier".into(), "a".into());
        }
        let c = SpreadConstraint {
            max_skew: skew,
            topology_key: "zone".into(),
            selector: selector(&[("app", &format!("a{app}"))]),
            min_domains: (app == 1).then_some(3),
            ignore_node_affinity: skew == 2,
            ..Default::default()
        };
        (p, c)
    }

    #[derive(Debug, Clone)]
    enum Op {
        AddNode(Option<u8>, bool),
        Place {
            node: usize,
            app: u8,
            namespace: u8,
        },
        Check {
            node: Option<usize>,
            app: u8,
            skew: i32,
            tier: bool,
        },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (proptest::option::of(0u8..4), any::<bool>()).prop_map(|(z, t)| Op::AddNode(z, t)),
            (0usize..16, 0u8..2, 0u8..2).prop_map(|(node, app, namespace)| Op::Place {
                node,
                app,
                namespace
            }),
            (
                proptest::option::of(0usize..16),
                0u8..2,
                1i32..3,
                any::<bool>()
            )
                .prop_map(|(node, app, skew, tier)| Op::Check {
                    node,
                    app,
                    skew,
                    tier
                }),
        ]
    }

    proptest! {
        /// The memo's running totals answer every check as counting every node does.
        #[test]
        fn the_memo_answers_as_counting_every_node(
            base in proptest::collection::vec((proptest::option::of(0u8..4), any::<bool>(), 0usize..4), 0..6),
            ops in proptest::collection::vec(op(), 0..60),
        ) {
            let base: Vec<NodeInfo> = base
                .into_iter()
                .enumerate()
                .map(|(i, (zone, tier, pods))| {
                    let mut n = generated_node(format!("base-{i}"), zone, tier);
                    for k in 0..pods {
                        n.add(generated_pod((k % 2) as u8, 0));
                    }
                    n
                })
                .collect();
            let memo = SpreadMemo::default();
            let mut added: Vec<NodeInfo> = Vec::new();
            for op in ops {
                match op {
                    Op::AddNode(zone, tier) => {
                        added.push(generated_node(format!("new-{}", added.len()), zone, tier));
                        memo.node_added(&added[added.len() - 1]);
                    }
                    Op::Place { node, app, namespace } if node < added.len() => {
                        let p = generated_pod(app, namespace);
                        added[node].add(p.clone());
                        memo.pod_placed(&added[node], &p);
                    }
                    Op::Place { .. } => {}
                    Op::Check { node: which, app, skew, tier } => {
                        let (p, c) = spreading(app, skew, tier);
                        let fresh = generated_node(format!("new-{}", added.len()), Some(app), true);
                        let candidate = match which {
                            Some(i) if i < added.len() => &added[i],
                            _ => &fresh,
                        };
                        let with = Cluster { base: &base, added: &added, memo: Some(&memo), overlay: None };
                        let without = Cluster { base: &base, added: &added, memo: None, overlay: None };
                        prop_assert_eq!(
                            fits(&p, &c, with, candidate),
                            fits(&p, &c, without, candidate),
                            "candidate {}", candidate.node.name
                        );
                    }
                }
            }
        }
    }
}
