//! `RemovePodsViolatingInterPodAntiAffinity`, as the descheduler's plugin of that name proposes
//! evictions: node by node, lowest priority first, a pod whose required anti-affinity selects a pod in
//! its topology domain (its own node always counts as one). A pod proposed is taken out, so the pods it
//! repelled no longer count against the others.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::Deserialize;

use super::scope::Scope;
use crate::deschedule::args::{Namespaces, Selector, Strategy};
use crate::deschedule::{Evictor, Proposal, View};
use crate::model::workload::{Node, Pod, PodAffinityTerm};

/// `RemovePodsViolatingInterPodAntiAffinity`'s arguments, as the policy's `pluginConfig` writes them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct RemovePodsViolatingInterPodAntiAffinityArgs {
    pub namespaces: Option<Namespaces>,
    pub label_selector: Option<Selector>,
}

impl RemovePodsViolatingInterPodAntiAffinityArgs {
    /// The descheduler's validation, naming the field at fault.
    pub fn validate(&self) -> Result<(), String> {
        super::validate::scope(&self.namespaces, &self.label_selector)
    }
}

/// The descheduler's eviction order on a node: lower priority first, then BestEffort (no requests)
/// before the others; the pod model has no limits, so Burstable and Guaranteed are not told apart.
pub(super) fn priority_low_to_high(pods: &mut [Arc<Pod>]) {
    let best_effort = |p: &Pod| p.requests.cpu_milli == 0 && p.requests.memory == 0;
    pods.sort_by_key(|p| (p.meta.priority, !best_effort(p)));
}

/// Whether nodes `a` and `b` are in one domain of `key` (the descheduler's reading: one node is always
/// one domain, even without the label).
fn same_domain(a: &Node, b: &Node, key: &str) -> bool {
    a.name == b.name
        || matches!((a.labels.get(key), b.labels.get(key)), (Some(x), Some(y)) if x == y)
}

/// The pods in scope, by node, and the nodes of each domain of a topology key, asked for lazily.
struct Neighbours<'v> {
    view: &'v View<'v>,
    scoped: HashMap<&'v str, Vec<Arc<Pod>>>,
    domains: HashMap<(String, String), Vec<&'v Node>>,
    /// The pods proposed already, by address.
    gone: HashSet<*const Pod>,
}

impl<'v> Neighbours<'v> {
    /// Whether a term of `pod`'s (on `node`) selects a pod still there in its domain.
    fn repelled(&mut self, pod: &Pod, node: &'v Node) -> bool {
        let terms: &[PodAffinityTerm] = &pod.anti_affinity;
        terms.iter().any(|term| {
            let nodes: Vec<&Node> = match node.labels.get(&term.topology_key) {
                None => vec![node],
                Some(value) => {
                    let view = self.view;
                    self.domains
                        .entry((term.topology_key.clone(), value.clone()))
                        .or_insert_with(|| {
                            view.nodes()
                                .iter()
                                .filter(|n| same_domain(node, n, &term.topology_key))
                                .collect()
                        })
                        .clone()
                }
            };
            nodes.iter().any(|n| {
                self.scoped.get(n.name.as_str()).is_some_and(|pods| {
                    pods.iter().any(|other| {
                        !std::ptr::eq(&**other, pod)
                            && !self.gone.contains(&Arc::as_ptr(other))
                            && pod.term_selects(term, other)
                    })
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
    let mut near = Neighbours {
        view,
        scoped,
        domains: HashMap::new(),
        gone: HashSet::new(),
    };
    let mut out = Vec::new();
    for node in view.nodes() {
        let mut pods = near
            .scoped
            .get(node.name.as_str())
            .cloned()
            .unwrap_or_default();
        priority_low_to_high(&mut pods);
        for pod in &pods {
            if !pod.anti_affinity.is_empty()
                && near.repelled(pod, node)
                && evictor.filter(pod).is_ok()
            {
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

#[cfg(test)]
mod tests;
