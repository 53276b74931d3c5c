//! The kube-scheduler's filters, as far as autoscaling decisions need them (pure): does a pod fit a node
//! given what is already placed there and on its topology neighbours? Checked in the scheduler's order,
//! cheapest first; the first failure is the reason a person reads.

use crate::labels;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use crate::model::shared::Shared;
use crate::model::volumes::Wait;
use crate::model::workload::{HostPort, Node, Pod};
use crate::model::{Resources, Taint, TaintEffect};

mod interpod;
mod pod_list;
mod spread;
mod volumes;

pub use interpod::{fits_neighbours, repelling, Repel};
pub use pod_list::{Fact, PodList};
pub use spread::{counts_node as spread_counts_node, SpreadMemo};

/// The one empty pod list every new NodeInfo starts from: simulations make thousands of NodeInfos
/// (new nodes, templates), most of which never take a pod, and a list of its own is an allocation.
fn empty_pods() -> Shared<PodList> {
    static EMPTY: std::sync::LazyLock<Shared<PodList>> = std::sync::LazyLock::new(Shared::default);
    EMPTY.clone()
}

/// A node with the pods placed on it: the scheduler's NodeInfo.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub node: Node,
    /// Sum of the placed pods' requests (`pods` counts them).
    pub requested: Resources,
    pub ports: Vec<HostPort>,
    /// Shared with the world and other simulations: placing a pod never copies it, and copying a
    /// NodeInfo (each simulation starts from the loop's) copies no pod list until it changes.
    pub pods: Shared<PodList>,
    /// Volumes attached by the placed pods: CSI driver → volume ids (a shared volume counts once).
    pub attached: BTreeMap<String, BTreeSet<String>>,
}

impl NodeInfo {
    pub fn new(node: Node) -> Self {
        NodeInfo {
            node,
            requested: Resources::default(),
            ports: Vec::new(),
            pods: empty_pods(),
            attached: BTreeMap::new(),
        }
    }

    /// The pods bound to this node now: the ones a removal of it evicts. The loop's simulations also
    /// place pods here (pending pods that will fit, pods an admitted removal moves), unbound.
    pub fn bound(&self) -> Vec<Arc<Pod>> {
        self.bound_pods().cloned().collect()
    }

    /// [`Self::bound`] without collecting them: for readers that walk every node's pods each loop.
    pub fn bound_pods(&self) -> impl Iterator<Item = &Arc<Pod>> {
        let name = self.node.name.as_str();
        self.pods
            .iter()
            .filter(move |p| p.node_name.as_deref() == Some(name))
    }

    /// Whether the pod's requests fit what the node has left (the other predicates unchecked).
    #[inline]
    pub fn has_room_for(&self, pod: &Pod) -> bool {
        has_room(&pod.requests, &self.requested, &self.node.allocatable)
    }

    pub fn add(&mut self, pod: impl Into<Arc<Pod>>) {
        let pod = pod.into();
        self.add_counted(&pod);
        self.pods.push(pod);
    }

    /// Counts a pod's requests and ports without keeping the pod: for simulations where no check reads
    /// the pods on a node (no inter-pod constraint anywhere).
    pub fn add_counted(&mut self, pod: &Pod) {
        self.requested.add(&pod.requests);
        self.ports.extend(pod.host_ports.iter().cloned());
        for (driver, id) in pod.attachments() {
            self.attached
                .entry(driver.to_string())
                .or_default()
                .insert(id.to_string());
        }
    }

    /// Share of allocatable cpu and memory requested, the larger of the two (upstream's utilization).
    pub fn utilization(&self) -> f64 {
        let share = |used: i64, total: i64| {
            if total > 0 {
                used as f64 / total as f64
            } else {
                0.0
            }
        };
        share(self.requested.cpu_milli, self.node.allocatable.cpu_milli)
            .max(share(self.requested.memory, self.node.allocatable.memory))
    }
}

/// The nodes inter-pod filters look at: the cluster as it is (`base`) and the nodes a simulation adds
/// to it (`added`), kept apart so that adding nodes never copies the cluster.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cluster<'a> {
    pub base: &'a [NodeInfo],
    pub added: &'a [NodeInfo],
    /// Topology spread counts over `base`, kept across checks; only for callers whose candidate nodes
    /// are never among `base` (the estimator).
    pub memo: Option<&'a SpreadMemo>,
    /// Changes a simulation made to `base` without copying it (scale-down's removals).
    pub overlay: Option<&'a Overlay>,
}

/// A simulation's changes to a cluster's nodes, by index, without copying the others: scale-down's
/// removal simulation takes a node's pods off it, then places them one by one, each seeing those placed
/// before.
#[derive(Debug, Default)]
pub struct Overlay {
    pub changed: foldhash::HashMap<usize, NodeInfo>,
}

impl Overlay {
    /// Node `j` as the simulation sees it.
    pub fn view<'a>(&'a self, j: usize, base: &'a NodeInfo) -> &'a NodeInfo {
        self.changed.get(&j).unwrap_or(base)
    }
}

impl<'a> Cluster<'a> {
    /// Just these nodes.
    pub fn of(nodes: &'a [NodeInfo]) -> Self {
        Cluster {
            base: nodes,
            added: &[],
            memo: None,
            overlay: None,
        }
    }

    /// Every node, the cluster's first.
    pub fn iter(&self) -> impl Iterator<Item = &'a NodeInfo> + Clone {
        let overlay = self.overlay;
        self.base
            .iter()
            .enumerate()
            .map(move |(j, n)| match overlay {
                None => n,
                Some(o) => o.view(j, n),
            })
            .chain(self.added)
    }
}

/// Why a pod does not fit a node, worded as the reasons users read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Unfit {
    NodeName,
    Unschedulable,
    NodeSelector,
    NodeAffinity,
    Taint {
        key: String,
        value: String,
        effect: TaintEffect,
    },
    Insufficient(String),
    HostPort(u16),
    PodAffinity,
    PodAntiAffinity,
    /// A pod already on the node (or in its domain) repels this one.
    ExistingAntiAffinity,
    TopologySpread(String),
    /// A claim keeps the pod off every node until it is bound (or exists).
    ClaimWaiting {
        claim: String,
        wait: Wait,
    },
    /// A bound volume's node affinity excludes the node.
    VolumeNodeAffinity(String),
    /// A bound volume's zone or region label excludes the node.
    VolumeZone(String),
    /// A claim to be provisioned on first use cannot be in the node's topology (its class's
    /// `allowedTopologies`).
    VolumeTopology {
        claim: String,
        class: String,
    },
    /// A pod on the node already mounts this inline EBS volume (VolumeRestrictions' disk conflict).
    DiskConflict(String),
    /// A claim whose class cannot provision has no available volume the node can use.
    NoVolume(String),
    /// Another pod uses this `ReadWriteOncePod` claim.
    ClaimInUse(String),
    /// The node can attach no more volumes of this CSI driver.
    VolumeLimit {
        driver: String,
        limit: i64,
    },
}

impl fmt::Display for Unfit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unfit::NodeName => write!(f, "pinned to another node"),
            Unfit::Unschedulable => write!(f, "node unschedulable"),
            Unfit::NodeSelector => write!(f, "node selector not matched"),
            Unfit::NodeAffinity => write!(f, "node affinity not matched"),
            Unfit::Taint { key, value, effect } if value.is_empty() => {
                write!(f, "taint {key}:{} not tolerated", effect.as_str())
            }
            Unfit::Taint { key, value, effect } => {
                write!(f, "taint {key}={value}:{} not tolerated", effect.as_str())
            }
            Unfit::Insufficient(r) => write!(f, "insufficient {r}"),
            Unfit::HostPort(p) => write!(f, "host port {p} in use"),
            Unfit::PodAffinity => write!(f, "pod affinity not satisfied"),
            Unfit::PodAntiAffinity => write!(f, "pod anti-affinity not satisfied"),
            Unfit::ExistingAntiAffinity => write!(f, "anti-affinity of a pod already there"),
            Unfit::TopologySpread(k) => write!(f, "topology spread over {k} would be exceeded"),
            Unfit::ClaimWaiting { claim, wait } => write!(f, "pvc {claim} {}", wait.as_str()),
            Unfit::VolumeNodeAffinity(c) => write!(f, "volume node affinity conflict: pvc {c}"),
            Unfit::VolumeZone(c) => write!(f, "volume zone conflict: pvc {c}"),
            Unfit::VolumeTopology { claim, class } => write!(
                f,
                "storage class {class} cannot provision in the node's topology: pvc {claim}"
            ),
            Unfit::DiskConflict(v) => write!(f, "volume {v} already mounted on the node"),
            Unfit::NoVolume(c) => {
                write!(f, "no available persistent volume for pvc {c} on the node")
            }
            Unfit::ClaimInUse(c) => {
                write!(f, "pvc {c} is ReadWriteOncePod and used by another pod")
            }
            Unfit::VolumeLimit { driver, limit } => {
                write!(f, "volume limit of {driver} reached ({limit})")
            }
        }
    }
}

impl Unfit {
    /// The scheduler's filter plugin that refuses this way (`TaintToleration`, `VolumeZone`, …):
    /// the names its users read in `FailedScheduling` events and metrics.
    pub fn filter(&self) -> &'static str {
        match self {
            Unfit::NodeName => "NodeName",
            Unfit::Unschedulable => "NodeUnschedulable",
            Unfit::NodeSelector | Unfit::NodeAffinity => "NodeAffinity",
            Unfit::Taint { .. } => "TaintToleration",
            Unfit::Insufficient(_) => "NodeResourcesFit",
            Unfit::HostPort(_) => "NodePorts",
            Unfit::PodAffinity | Unfit::PodAntiAffinity | Unfit::ExistingAntiAffinity => {
                "InterPodAffinity"
            }
            Unfit::TopologySpread(_) => "PodTopologySpread",
            Unfit::ClaimWaiting { .. }
            | Unfit::VolumeNodeAffinity(_)
            | Unfit::VolumeTopology { .. }
            | Unfit::NoVolume(_) => "VolumeBinding",
            Unfit::VolumeZone(_) => "VolumeZone",
            Unfit::DiskConflict(_) | Unfit::ClaimInUse(_) => "VolumeRestrictions",
            Unfit::VolumeLimit { .. } => "NodeVolumeLimits",
        }
    }
}

/// Node-local filters: claims waiting to bind, name, cordon, selector, affinity, taints, resources,
/// ports, volumes (attach limits, then binding and zones).
pub fn fits_node(pod: &Pod, info: &NodeInfo) -> Result<(), Unfit> {
    volumes::waiting(pod)?;
    let node = &info.node;
    if pod.node_name.as_ref().is_some_and(|n| *n != node.name) {
        return Err(Unfit::NodeName);
    }
    if node.unschedulable && !tolerates_cordon(pod) {
        return Err(Unfit::Unschedulable);
    }
    placement(pod, node)?;
    for t in &node.taints {
        if t.effect == TaintEffect::PreferNoSchedule {
            continue;
        }
        if !pod.tolerations.iter().any(|tol| tol.tolerates(t)) {
            return Err(Unfit::Taint {
                key: t.key.clone(),
                value: t.value.clone(),
                effect: t.effect,
            });
        }
    }
    fits_resources(&pod.requests, &info.requested, &node.allocatable)?;
    for p in &pod.host_ports {
        if info.ports.iter().any(|q| q.conflicts(p)) {
            return Err(Unfit::HostPort(p.port));
        }
    }
    volumes::fits(pod, info)
}

/// Whether the pod tolerates the `node.kubernetes.io/unschedulable:NoSchedule` taint, which lets it onto
/// a cordoned node (upstream's NodeUnschedulable filter).
fn tolerates_cordon(pod: &Pod) -> bool {
    let cordon = Taint {
        key: labels::UNSCHEDULABLE_TAINT.to_string(),
        value: String::new(),
        effect: TaintEffect::NoSchedule,
    };
    pod.tolerations.iter().any(|t| t.tolerates(&cordon))
}

/// Whether `want` more fits next to `used` within `alloc`; names the first resource short.
pub fn fits_resources(want: &Resources, used: &Resources, alloc: &Resources) -> Result<(), Unfit> {
    match short_of(want, used, alloc) {
        Some(name) => Err(Unfit::Insufficient(name.to_string())),
        None => Ok(()),
    }
}

/// Whether `want` more fits next to `used` within `alloc`, without naming what is short: the cheap
/// test the placement loops make before the full check, which would build a reason for every full
/// node they pass.
#[inline]
pub fn has_room(want: &Resources, used: &Resources, alloc: &Resources) -> bool {
    short_of(want, used, alloc).is_none()
}

/// The first resource `want` more would exceed. Inlined: first fit asks it of every node for every
/// pod, and as a call it was twice the scan's cost.
#[inline]
fn short_of<'a>(want: &'a Resources, used: &Resources, alloc: &Resources) -> Option<&'a str> {
    if want.cpu_milli > 0 && used.cpu_milli + want.cpu_milli > alloc.cpu_milli {
        return Some("cpu");
    }
    if want.memory > 0 && used.memory + want.memory > alloc.memory {
        return Some("memory");
    }
    if used.pods + want.pods.max(1) > alloc.pods {
        return Some("pods");
    }
    if want.ephemeral_storage > 0
        && used.ephemeral_storage + want.ephemeral_storage > alloc.ephemeral_storage
    {
        return Some("ephemeral-storage");
    }
    want.extended.iter().find_map(|(name, n)| {
        let have = alloc.extended.get(name).copied().unwrap_or(0);
        let taken = used.extended.get(name).copied().unwrap_or(0);
        (*n > 0 && taken + n > have).then_some(name.as_str())
    })
}

/// Whether the pod's node selector and required node affinity admit a node (also which domains
/// topology spread counts).
pub fn placement(pod: &Pod, node: &Node) -> Result<(), Unfit> {
    if !pod
        .node_selector
        .iter()
        .all(|(k, v)| node.labels.get(k) == Some(v))
    {
        return Err(Unfit::NodeSelector);
    }
    if !pod.node_affinity.is_empty()
        && !pod.node_affinity.iter().any(|term| {
            term.iter()
                .all(|r| r.admits_node(&node.labels, node.field_name()))
        })
    {
        return Err(Unfit::NodeAffinity);
    }
    Ok(())
}

/// Every filter, for callers that track [`repelling`] as they place pods instead of rescanning.
pub fn fits_in(pod: &Pod, nodes: &[NodeInfo], node: &NodeInfo, repel: Repel) -> Result<(), Unfit> {
    fits_among(pod, Cluster::of(nodes), node, repel)
}

/// [`fits_in`] among a cluster and the nodes a simulation added to it.
pub fn fits_among(pod: &Pod, nodes: Cluster, node: &NodeInfo, repel: Repel) -> Result<(), Unfit> {
    fits_node(pod, node)?;
    if repel > Repel::None || pod.inter_pod() {
        fits_neighbours(pod, nodes, node, repel)?;
    }
    Ok(())
}

/// Every filter.
pub fn fits(pod: &Pod, nodes: &[NodeInfo], node: &NodeInfo) -> Result<(), Unfit> {
    fits_in(pod, nodes, node, repelling(nodes))
}

/// Places each pod on the first eligible node it fits, in order, updating the nodes; `None` for pods
/// that fit nowhere. Identical pods whose placement only gets harder as nodes fill skip the nodes the
/// previous one did not fit, so a batch of replicas costs O(pods + nodes) checks.
pub fn first_fit(
    pods: &[&Pod],
    nodes: &mut [NodeInfo],
    eligible: impl Fn(usize) -> bool,
) -> Vec<Option<usize>> {
    let mut out = vec![None; pods.len()];
    let mut repels = repelling(nodes);
    let groups = super::equivalence::equivalence_groups(pods);
    let mut group_of = vec![0usize; pods.len()];
    for (g, members) in groups.iter().enumerate() {
        for &i in members {
            group_of[i] = g;
        }
    }
    let mut start = vec![0usize; groups.len()];
    for (i, pod) in pods.iter().enumerate() {
        let g = group_of[i];
        let monotone = pod.affinity.is_empty() && pod.spread.is_empty();
        let from = if monotone { start[g] } else { 0 };
        let found = (from..nodes.len())
            .filter(|&n| eligible(n) && nodes[n].has_room_for(pod))
            .find(|&n| fits_in(pod, nodes, &nodes[n], repels).is_ok());
        match found {
            Some(n) => {
                nodes[n].add((*pod).clone());
                repels = repels.max(Repel::of(pod));
                start[g] = n;
                out[i] = Some(n);
            }
            None => start[g] = nodes.len(),
        }
    }
    out
}

#[cfg(test)]
mod tests;
