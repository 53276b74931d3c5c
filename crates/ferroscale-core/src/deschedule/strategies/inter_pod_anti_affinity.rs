//! `RemovePodsViolatingInterPodAntiAffinity`, as the descheduler's plugin of that name proposes
//! evictions: node by node, lowest priority first, a pod whose required anti-affinity selects a pod in
//! its topology domain (its own node always counts as one). A pod proposed is taken out, so the pods it
//! repelled no longer count against the others.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

use serde::Deserialize;

use super::scope::Scope;
use super::Plugin;
use crate::deschedule::args::{ArgsError, Namespaces, Problems, Selector, Strategy};
use crate::deschedule::policy::decode;
use crate::deschedule::policy::field::Object;
use crate::deschedule::policy::PolicyError;
use crate::deschedule::validate;
use crate::deschedule::{Evictor, Proposal, View};
use crate::model::workload::{Node, Pod, PodAffinityTerm, SelectorOp};
use serde_norway::Mapping;

/// `RemovePodsViolatingInterPodAntiAffinity`'s arguments, as the policy's `pluginConfig` writes them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct RemovePodsViolatingInterPodAntiAffinityArgs {
    pub namespaces: Option<Namespaces>,
    pub label_selector: Option<Selector>,
}

impl RemovePodsViolatingInterPodAntiAffinityArgs {
    /// The descheduler's validation, naming the field at fault.
    pub fn validate(&self) -> Result<(), ArgsError> {
        let mut out = Problems::default();
        validate::scope(&self.namespaces, &self.label_selector, &mut out);
        out.done()
    }
}

/// The descheduler's eviction order on a node (`SortPodsBasedOnPriorityLowToHigh`), as the
/// node-utilization strategies sort.
pub(super) fn priority_low_to_high(pods: &mut [Arc<Pod>]) {
    super::usage::sort_for_eviction(pods);
}

/// Whether nodes `a` and `b` are in one domain of `key` (the descheduler's reading: one node is always
/// one domain, even without the label).
fn same_domain(a: &Node, b: &Node, key: &str) -> bool {
    a.name == b.name
        || matches!((a.labels.get(key), b.labels.get(key)), (Some(x), Some(y)) if x == y)
}

/// One domain of a topology key: its nodes and how many pods in scope they hold.
struct Domain<'v> {
    nodes: Vec<&'v Node>,
    pods: usize,
}

/// The pods in scope, by node and by label, and the domains of each topology key, asked for lazily.
struct Neighbours<'v> {
    view: &'v View<'v>,
    scoped: HashMap<&'v str, Vec<Arc<Pod>>>,
    /// (label, value) → the pods in scope carrying it, so a term whose selector names a label looks
    /// at those pods, not at every pod of a wide domain.
    by_label: HashMap<(String, String), Vec<Arc<Pod>>>,
    /// Topology key → each of its values' domain, made in one pass over the nodes when the key is
    /// first asked for (a pass per domain would be quadratic in nodes for `kubernetes.io/hostname`).
    domains: HashMap<String, HashMap<String, Rc<Domain<'v>>>>,
    /// The pods proposed already, by address.
    gone: HashSet<*const Pod>,
}

impl<'v> Neighbours<'v> {
    fn new(view: &'v View<'v>, scoped: HashMap<&'v str, Vec<Arc<Pod>>>) -> Self {
        let mut by_label: HashMap<(String, String), Vec<Arc<Pod>>> = HashMap::new();
        for p in scoped.values().flatten() {
            for (k, v) in p.labels.iter() {
                by_label
                    .entry((k.clone(), v.clone()))
                    .or_default()
                    .push(p.clone());
            }
        }
        Neighbours {
            view,
            scoped,
            by_label,
            domains: HashMap::new(),
            gone: HashSet::new(),
        }
    }

    /// The domain of `node` under `key` (one node when it lacks the key).
    fn domain(&mut self, node: &'v Node, key: &str) -> Rc<Domain<'v>> {
        let count = |scoped: &HashMap<&str, Vec<Arc<Pod>>>, nodes: &[&Node]| {
            nodes
                .iter()
                .map(|n| scoped.get(n.name.as_str()).map_or(0, Vec::len))
                .sum()
        };
        let Some(value) = node.labels.get(key) else {
            let nodes = vec![node];
            let pods = count(&self.scoped, &nodes);
            return Rc::new(Domain { nodes, pods });
        };
        let (view, scoped) = (self.view, &self.scoped);
        if !self.domains.contains_key(key) {
            let mut nodes: HashMap<&str, Vec<&Node>> = HashMap::new();
            for n in view.nodes() {
                if let Some(v) = n.labels.get(key) {
                    nodes.entry(v.as_str()).or_default().push(n);
                }
            }
            let by_value = nodes
                .into_iter()
                .map(|(v, nodes)| {
                    let pods = count(scoped, &nodes);
                    (v.to_string(), Rc::new(Domain { nodes, pods }))
                })
                .collect();
            self.domains.insert(key.to_string(), by_value);
        }
        let by_value = &self.domains[key];
        // `node` is among the view's nodes, so its value has a domain.
        by_value.get(value).cloned().unwrap_or_else(|| {
            Rc::new(Domain {
                nodes: Vec::new(),
                pods: 0,
            })
        })
    }

    /// The pods in scope a term can select at all, by a label its selector requires, when it names
    /// one: the lists of pods by each label value it admits.
    fn candidates(&self, term: &PodAffinityTerm) -> Option<Vec<&Vec<Arc<Pod>>>> {
        let sel = &term.selector;
        let pairs: Vec<(String, String)> = match sel.match_labels.iter().next() {
            Some((k, v)) => vec![(k.clone(), v.clone())],
            None => {
                let r = sel.requirements.iter().find(|r| r.op == SelectorOp::In)?;
                r.values
                    .iter()
                    .map(|v| (r.key.clone(), v.clone()))
                    .collect()
            }
        };
        Some(pairs.iter().filter_map(|p| self.by_label.get(p)).collect())
    }

    /// Whether a term of `pod`'s (on `node`) selects a pod still there in its domain.
    fn repelled(&mut self, pod: &Pod, node: &'v Node) -> bool {
        let live = |other: &Arc<Pod>, gone: &HashSet<*const Pod>| {
            !std::ptr::eq(&**other, pod) && !gone.contains(&Arc::as_ptr(other))
        };
        pod.anti_affinity.iter().any(|term| {
            let domain = self.domain(node, &term.topology_key);
            // Whichever is fewer: the pods carrying the term's label, or the domain's pods.
            if let Some(c) = self
                .candidates(term)
                .filter(|c| c.iter().map(|l| l.len()).sum::<usize>() < domain.pods)
            {
                return c.into_iter().flatten().any(|other| {
                    let there = other.node_name.as_deref().and_then(|n| self.view.node(n));
                    live(other, &self.gone)
                        && there.is_some_and(|t| same_domain(node, t, &term.topology_key))
                        && pod.term_selects(term, other)
                });
            }
            domain.nodes.iter().any(|n| {
                self.scoped.get(n.name.as_str()).is_some_and(|pods| {
                    pods.iter()
                        .any(|other| live(other, &self.gone) && pod.term_selects(term, other))
                })
            })
        })
    }
}

/// The pods `RemovePodsViolatingInterPodAntiAffinity` would evict, in the order it would evict them.
pub fn propose(
    args: &RemovePodsViolatingInterPodAntiAffinityArgs,
    view: &View,
    evictor: &Evictor,
) -> Vec<Proposal> {
    let scope = Scope::new(&args.namespaces, &args.label_selector);
    let scoped: HashMap<&str, Vec<Arc<Pod>>> = view
        .nodes()
        .iter()
        .map(|n| {
            let pods = view.pods_on(&n.name).iter().filter(|p| scope.admits(p));
            (n.name.as_str(), pods.cloned().collect())
        })
        .collect();
    let mut near = Neighbours::new(view, scoped);
    let mut out = Vec::new();
    for node in view.nodes() {
        let mut pods = near
            .scoped
            .get(node.name.as_str())
            .cloned()
            .unwrap_or_default();
        priority_low_to_high(&mut pods);
        for pod in &pods {
            if !pod.anti_affinity.is_empty() && near.repelled(pod, node) && evictor.allows(pod) {
                near.gone.insert(Arc::as_ptr(pod));
                out.push(Proposal::anywhere(
                    pod,
                    Strategy::RemovePodsViolatingInterPodAntiAffinity,
                ));
            }
        }
    }
    out
}

impl Plugin for RemovePodsViolatingInterPodAntiAffinityArgs {
    const STRATEGY: Strategy = Strategy::RemovePodsViolatingInterPodAntiAffinity;
    const BALANCES: bool = false;
    const FIELDS: &'static [&'static str] = &["namespaces", "labelSelector"];
    const V1ALPHA1_PARAMS: &'static [&'static str] = &["namespaces", "labelSelector"];

    fn decode(o: &Object) -> Result<(), PolicyError> {
        decode::scope(o)?;
        Ok(())
    }

    fn from_v1alpha1(p: &Object, out: &mut Mapping) -> Result<(), PolicyError> {
        decode::v1alpha1_scope(p, out, true);
        Ok(())
    }

    fn check(&self) -> Result<(), ArgsError> {
        self.validate()
    }

    fn proposals(&self, view: &View, evictor: &Evictor) -> Vec<Proposal> {
        propose(self, view, evictor)
    }
}

#[cfg(test)]
mod tests;
