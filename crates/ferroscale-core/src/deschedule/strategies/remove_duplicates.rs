//! `RemoveDuplicates`, as the descheduler's plugin of that name proposes evictions: pods of one owner
//! with the same images are duplicates when several share a node; each owner's pods are spread so that
//! no node keeps more than the average over the nodes they could run on (their taints and node
//! selectors admit them), rounded up.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use serde::Deserialize;

use super::scope::Scope;
use super::usage::{selects, tolerates_scheduling, NodeFit};
use super::Plugin;
use crate::deschedule::args::{ArgsError, Namespaces, Problems, Strategy};
use crate::deschedule::policy::decode::{self, copy};
use crate::deschedule::policy::field::Object;
use crate::deschedule::policy::PolicyError;
use crate::deschedule::validate;
use crate::deschedule::{Evictor, Proposal, View};
use crate::model::workload::{Node, Pod, PodPhase};
use serde_norway::Mapping;

/// `RemoveDuplicates`'s arguments, as the policy's `pluginConfig` writes them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct RemoveDuplicatesArgs {
    pub namespaces: Option<Namespaces>,
    /// Pods with an owner of one of these kinds are never duplicates.
    pub exclude_owner_kinds: Vec<String>,
}

impl RemoveDuplicatesArgs {
    /// The descheduler's checks of these arguments.
    pub fn validate(&self) -> Result<(), ArgsError> {
        let mut out = Problems::default();
        validate::namespaces(&self.namespaces, "namespaces", true, &mut out);
        out.done()
    }
}

/// Namespace, owner kind, owner name and the pod's sorted images joined.
type OwnerKey = (String, String, String, String);

/// An owner's duplicates: node index → its duplicates there (beyond the first), in order of sight.
type ByNode = Vec<(usize, Vec<Arc<Pod>>)>;

/// The pods `RemoveDuplicates` would evict, in the order it would evict them.
pub fn propose(args: &RemoveDuplicatesArgs, view: &View, evictor: &Evictor) -> Vec<Proposal> {
    let scope = Scope::new(&args.namespaces, &None);
    let fit = NodeFit::new(view, evictor);
    // Owner keys in order of first sight.
    let mut duplicates: Vec<(OwnerKey, ByNode)> = Vec::new();
    let mut index: HashMap<OwnerKey, usize> = HashMap::new();
    let mut occurrences: HashMap<OwnerKey, usize> = HashMap::new();
    for (ni, node) in view.nodes().iter().enumerate() {
        // First container key → the key lists of the pods seen on this node.
        let mut seen: HashMap<String, Vec<Vec<String>>> = HashMap::new();
        for pod in view.pods_on(&node.name) {
            let owners = &pod.meta.owners;
            if matches!(pod.meta.phase, PodPhase::Succeeded | PodPhase::Failed)
                || owners.is_empty()
                || owners
                    .iter()
                    .any(|o| args.exclude_owner_kinds.contains(&o.kind))
                || !scope.admits(pod)
                || !evictor.allows(pod)
                // The costliest check last.
                || !fit.admits(pod)
            {
                continue;
            }
            let mut images: Vec<String> = pod.meta.images.to_vec();
            if images.is_empty() {
                // A pod built without its images: one container of no image.
                images.push(String::new());
            }
            images.sort();
            let hash = images.join("#");
            let ns = pod.namespace.to_string();
            let mut keys = Vec::new();
            for o in owners {
                let key = (ns.clone(), o.kind.clone(), o.name.clone(), hash.clone());
                *occurrences.entry(key).or_default() += 1;
                for image in &images {
                    keys.push(format!("{ns}/{}/{}/{image}", o.kind, o.name));
                }
            }
            keys.sort();
            let lists = seen.entry(keys[0].clone()).or_default();
            if !lists.contains(&keys) {
                lists.push(keys);
                continue;
            }
            for o in owners {
                let key = (ns.clone(), o.kind.clone(), o.name.clone(), hash.clone());
                let i = *index.entry(key.clone()).or_insert_with(|| {
                    duplicates.push((key, Vec::new()));
                    duplicates.len() - 1
                });
                let nodes = &mut duplicates[i].1;
                match nodes.iter_mut().find(|(n, _)| *n == ni) {
                    Some((_, pods)) => pods.push(pod.clone()),
                    None => nodes.push((ni, vec![pod.clone()])),
                }
            }
        }
    }
    let mut out = Vec::new();
    // A pod with several owners is a duplicate of each: proposed once.
    let mut proposed: HashSet<*const Pod> = HashSet::new();
    for (key, nodes) in duplicates {
        let targets = target_nodes(nodes.iter().flat_map(|(_, p)| p), view.nodes().iter());
        if targets < 2 {
            continue;
        }
        let upper = occurrences[&key].div_ceil(targets);
        for (_, pods) in nodes {
            if pods.len() + 1 > upper {
                for pod in &pods[upper - 1..] {
                    if !proposed.insert(Arc::as_ptr(pod)) {
                        continue;
                    }
                    out.push(Proposal::anywhere(pod, Strategy::RemoveDuplicates));
                }
            }
        }
    }
    out
}

/// The nodes (indices into `nodes`, each with its pods as a plan leaves them) where placing `pod`
/// would make it a duplicate these arguments evict: its owner's pods of the same images there would
/// be more than the average over the nodes they could run on, rounded up. Empty for a pod the
/// strategy does not look at.
pub fn crowded(
    args: &RemoveDuplicatesArgs,
    pod: &Pod,
    nodes: &[(&Node, &[Arc<Pod>])],
) -> Vec<usize> {
    let owners = &pod.meta.owners;
    if owners.is_empty()
        || owners
            .iter()
            .any(|o| args.exclude_owner_kinds.contains(&o.kind))
        || !Scope::new(&args.namespaces, &None).admits(pod)
    {
        return Vec::new();
    }
    let images = sorted_images(pod);
    let alike = |p: &Pod| {
        p.namespace == pod.namespace
            && p.name != pod.name
            && !p.meta.phase.finished()
            && p.meta
                .owners
                .iter()
                .any(|o| owners.iter().any(|q| q.kind == o.kind && q.name == o.name))
            && sorted_images(p) == images
    };
    let mut same: Vec<&Arc<Pod>> = Vec::new();
    let counts: Vec<usize> = nodes
        .iter()
        .map(|(_, pods)| {
            let here: Vec<&Arc<Pod>> = pods.iter().filter(|p| alike(p)).collect();
            let n = here.len();
            same.extend(here);
            n
        })
        .collect();
    let me = Arc::new(pod.clone());
    let targets = target_nodes(same.into_iter().chain([&me]), nodes.iter().map(|(n, _)| *n));
    if targets < 2 {
        return Vec::new();
    }
    let upper = (counts.iter().sum::<usize>() + 1).div_ceil(targets);
    counts
        .iter()
        .enumerate()
        .filter(|(_, &c)| c + 1 > upper)
        .map(|(i, _)| i)
        .collect()
}

/// A pod's images, sorted (one of no image for a pod built without them).
fn sorted_images(pod: &Pod) -> Vec<String> {
    let mut images: Vec<String> = pod.meta.images.to_vec();
    if images.is_empty() {
        images.push(String::new());
    }
    images.sort();
    images
}

/// How many nodes some of the duplicates could run on, counting only those whose pods could run on
/// two nodes at least (`NoSchedule`/`NoExecute` taints, node selector and required node affinity).
fn target_nodes<'a, 'n>(
    pods: impl Iterator<Item = &'a Arc<Pod>>,
    nodes: impl Iterator<Item = &'n Node> + Clone,
) -> usize {
    let mut targets: BTreeMap<&str, ()> = BTreeMap::new();
    let mut distinct: Vec<&Pod> = Vec::new();
    for pod in pods {
        if distinct.iter().any(|d| {
            d.tolerations == pod.tolerations
                && d.node_affinity == pod.node_affinity
                && d.node_selector == pod.node_selector
        }) {
            continue;
        }
        distinct.push(pod);
        let matching: Vec<&str> = nodes
            .clone()
            .filter(|n| tolerates_scheduling(pod, n) && selects(pod, n))
            .map(|n| n.name.as_str())
            .collect();
        if matching.len() > 1 {
            targets.extend(matching.into_iter().map(|n| (n, ())));
        }
    }
    targets.len()
}

impl Plugin for RemoveDuplicatesArgs {
    const STRATEGY: Strategy = Strategy::RemoveDuplicates;
    const BALANCES: bool = true;
    const FIELDS: &'static [&'static str] = &["namespaces", "excludeOwnerKinds"];
    const V1ALPHA1_PARAMS: &'static [&'static str] = &["namespaces", "removeDuplicates"];

    fn decode(o: &Object) -> Result<(), PolicyError> {
        decode::namespaces(o, "namespaces")?;
        o.get("excludeOwnerKinds").strings()?;
        Ok(())
    }

    fn from_v1alpha1(p: &Object, out: &mut Mapping) -> Result<(), PolicyError> {
        decode::v1alpha1_scope(p, out, false);
        let r = p.get("removeDuplicates").object(&["excludeOwnerKinds"])?;
        copy(out, &r, "excludeOwnerKinds", "excludeOwnerKinds");
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
