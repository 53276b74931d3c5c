//! The scheduler's filters over pods elsewhere (InterPodAffinity, PodTopologySpread, and
//! VolumeRestrictions' ReadWriteOncePod check): whether a pod fits a node given the pods on the node's
//! topology neighbours, and how far placed pods' anti-affinity reaches.

use super::{spread, volumes, Cluster, NodeInfo, Unfit};
use crate::labels;
use crate::model::workload::Pod;

/// Whether a pod `selects` picks runs in `node`'s domain of topology key `key` (None: `node` lacks
/// the key).
fn selected_in(
    key: &str,
    selects: impl Fn(&Pod) -> bool,
    nodes: Cluster,
    node: &NodeInfo,
) -> Option<bool> {
    let value = node.node.labels.get(key)?;
    let matches_on = |n: &NodeInfo| n.pods.iter().any(|o| selects(o));
    if matches_on(node) {
        return Some(true);
    }
    if key == labels::HOSTNAME {
        return Some(false);
    }
    Some(
        nodes
            .iter()
            .filter(|n| n.node.labels.get(key) == Some(value))
            .any(matches_on),
    )
}

/// The pod's required affinity (upstream's satisfyPodAffinity): the node has every term's topology
/// key, and for each term some pod that matches ALL the terms runs in the node's domain of that term.
/// The first pod of a group may land where none does only if no such pod runs anywhere and it matches
/// all its terms itself.
fn affinity_fits(pod: &Pod, nodes: Cluster, node: &NodeInfo) -> Result<(), Unfit> {
    let labels = &node.node.labels;
    if pod
        .affinity
        .iter()
        .any(|t| !labels.contains_key(&t.topology_key))
    {
        return Err(Unfit::PodAffinity);
    }
    let matches_all = |o: &Pod| pod.affinity.iter().all(|t| pod.term_selects(t, o));
    if pod
        .affinity
        .iter()
        .all(|t| selected_in(&t.topology_key, matches_all, nodes, node) == Some(true))
    {
        return Ok(());
    }
    let counted = |n: &NodeInfo| {
        pod.affinity
            .iter()
            .any(|t| n.node.labels.contains_key(&t.topology_key))
            && n.pods.iter().any(|o| matches_all(o))
    };
    let none_anywhere = !counted(node) && !nodes.iter().any(counted);
    if none_anywhere && matches_all(pod) {
        Ok(())
    } else {
        Err(Unfit::PodAffinity)
    }
}

/// How far the anti-affinity of pods already placed reaches: callers track it as they place pods so
/// that a check looks at other nodes only when some term spans more than one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Repel {
    /// No placed pod has required anti-affinity.
    #[default]
    None,
    /// Every such term is per node (`kubernetes.io/hostname`).
    OnNode,
    /// Some term spans a wider topology (zone, ...).
    Anywhere,
}

impl Repel {
    /// The reach of one pod's anti-affinity.
    pub fn of(pod: &Pod) -> Repel {
        pod.anti_affinity
            .iter()
            .map(|t| {
                if t.topology_key == labels::HOSTNAME {
                    Repel::OnNode
                } else {
                    Repel::Anywhere
                }
            })
            .max()
            .unwrap_or(Repel::None)
    }
}

/// Filters over pods elsewhere: pod affinity and anti-affinity (both ways) and topology spread. `nodes`
/// is every node the scheduler may consider, `node` among them or being added; `repel` is how far the
/// placed pods' anti-affinity reaches.
pub fn fits_neighbours(
    pod: &Pod,
    nodes: Cluster,
    node: &NodeInfo,
    repel: Repel,
) -> Result<(), Unfit> {
    if !pod.affinity.is_empty() {
        affinity_fits(pod, nodes, node)?;
    }
    for term in &pod.anti_affinity {
        if selected_in(
            &term.topology_key,
            |o| pod.term_selects(term, o),
            nodes,
            node,
        ) == Some(true)
        {
            return Err(Unfit::PodAntiAffinity);
        }
    }
    // Existing pods' anti-affinity against this pod.
    let repelled = |n: &NodeInfo| {
        n.pods.iter().any(|other| {
            other.anti_affinity.iter().any(|term| {
                other.term_selects(term, pod)
                    && match (
                        n.node.labels.get(&term.topology_key),
                        node.node.labels.get(&term.topology_key),
                    ) {
                        (Some(a), Some(b)) => {
                            a == b
                                && (term.topology_key != labels::HOSTNAME
                                    || n.node.name == node.node.name)
                        }
                        _ => false,
                    }
            })
        })
    };
    if (repel >= Repel::OnNode && repelled(node))
        || (repel == Repel::Anywhere
            && nodes
                .iter()
                .any(|n| n.node.name != node.node.name && repelled(n)))
    {
        return Err(Unfit::ExistingAntiAffinity);
    }
    for c in &pod.spread {
        spread::fits(pod, c, nodes, node)?;
    }
    volumes::exclusive(pod, nodes)
}

/// How far the anti-affinity of the pods placed on `nodes` reaches.
pub fn repelling(nodes: &[NodeInfo]) -> Repel {
    nodes
        .iter()
        .map(|n| n.pods.repel())
        .max()
        .unwrap_or(Repel::None)
}
