//! The cluster as a plan will leave it, for placing each proposed pod.
//!
//! A cycle asks where thousands of pods would go, most of them of a few shapes (the replicas of a
//! workload), and many have no place at all: each such ask would run the scheduler's filters on every
//! node. For a pod whose fit on a node reads that node alone (no pod affinity, no topology spread,
//! anti-affinity per hostname only, no `ReadWriteOncePod` claim, and no placed pod's anti-affinity
//! reaching past its node), the answer of each node is kept per shape (`Pod::same_shape`) with the
//! node's version, and asked again only of the nodes the plan has changed since: the placement is the
//! same, node for node and reason for reason, as asking every node again.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use super::why::Blocked;
use crate::engine::equivalence::shape_hash;
use crate::engine::predicates::{
    fits_among, repelling, Cluster as Nodes, NodeInfo, Repel, SpreadMemo, Unfit,
};
use crate::labels;
use crate::model::workload::{Node, Pod};

/// At most this many node answers are kept (8 bytes each), over all shapes: a cycle of more shapes
/// than that on a big cluster places the rest without the memo.
const MAX_ANSWERS: usize = 4 << 20;

/// The cluster as it will be: every node with its pods, changed as evictions are planned.
pub(super) struct Sim {
    infos: Vec<NodeInfo>,
    pub index: HashMap<String, usize>,
    repel: Repel,
    /// Each node's version: changed with its pods (0 is never a node's).
    versions: Vec<u32>,
    next: u32,
    memo: Memo,
    /// Topology spread counts over the nodes, kept as pods move for the whole cycle.
    spread: SpreadMemo,
    /// Whether answers and counts are kept (tests compare with a simulation that keeps none).
    keep: bool,
}

/// A node as it was before a pod was lifted off it, to put back after a placement.
pub(super) struct Lifted {
    node: usize,
    info: NodeInfo,
    version: u32,
    pods: Vec<Arc<Pod>>,
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
            versions: vec![1; infos.len()],
            next: 2,
            infos,
            index,
            repel,
            memo: Memo::default(),
            spread: SpreadMemo::over_base(),
            keep: true,
        }
    }

    /// A simulation that keeps no answer nor count between placements, every node asked each time:
    /// what the kept ones must agree with.
    #[cfg(test)]
    pub fn forgetful(nodes: &[Node], pods: &[Arc<Pod>]) -> Self {
        Sim {
            keep: false,
            ..Sim::new(nodes, pods)
        }
    }

    /// Node `j` as the plan leaves it so far.
    pub fn node(&self, j: usize) -> &Node {
        &self.infos[j].node
    }

    /// The pods on node `j` as the plan leaves them so far.
    pub fn pods(&self, j: usize) -> &[Arc<Pod>] {
        &self.infos[j].pods
    }

    /// How many nodes there are (indices `0..len`).
    pub fn len(&self) -> usize {
        self.infos.len()
    }

    fn changed(&mut self, j: usize) {
        self.versions[j] = self.next;
        self.next += 1;
    }

    /// Takes the pod off its node; what was taken.
    pub fn remove(&mut self, pod: &Pod, node: usize) -> Vec<Arc<Pod>> {
        let info = &self.infos[node];
        let mut out = NodeInfo::new(info.node.clone());
        let mut gone = Vec::new();
        for p in &info.pods {
            if p.namespace == pod.namespace && p.name == pod.name {
                gone.push(Arc::clone(p));
            } else {
                out.add(Arc::clone(p));
            }
        }
        for p in &gone {
            self.spread.pod_removed(&out, p);
        }
        self.infos[node] = out;
        self.changed(node);
        gone
    }

    /// Puts the pod on a node.
    pub fn add(&mut self, pod: Pod, node: usize) {
        self.repel = self.repel.max(Repel::of(&pod));
        self.spread.pod_placed(&self.infos[node], &pod);
        self.infos[node].add(pod);
        self.changed(node);
    }

    /// Takes the pod off its node until [`Sim::put_back`].
    pub fn lift(&mut self, pod: &Pod, node: usize) -> Lifted {
        let info = self.infos[node].clone();
        let version = self.versions[node];
        let pods = self.remove(pod, node);
        Lifted {
            node,
            info,
            version,
            pods,
        }
    }

    /// Puts a lifted node back as it was.
    pub fn put_back(&mut self, lifted: Lifted) {
        let j = lifted.node;
        for p in &lifted.pods {
            self.spread.pod_placed(&lifted.info, p);
        }
        self.infos[j] = lifted.info;
        self.versions[j] = lifted.version;
    }

    /// Whether `pod`'s fit on a node reads that node alone: then nothing but its own node matters
    /// to where it goes, and its answers are kept.
    pub fn local(&self, pod: &Pod) -> bool {
        self.keep
            && self.repel <= Repel::OnNode
            && pod.affinity.is_empty()
            && pod.spread.is_empty()
            && pod
                .anti_affinity
                .iter()
                .all(|t| t.topology_key == labels::HOSTNAME)
            && !pod.claims.iter().any(|c| c.exclusive)
    }

    /// The node the scheduler would pick for `pod` (unbound) among `candidates` (in the cluster's
    /// order): its resources fit, every filter passes; scored as its default `LeastAllocated` (or
    /// `MostAllocated` when packing), ties to the earlier node. Else every candidate's refusal,
    /// grouped.
    pub fn place(&mut self, pod: &Pod, candidates: &[usize], pack: bool) -> Result<usize, Blocked> {
        let shape = if self.local(pod) {
            self.memo.shape(pod, self.infos.len())
        } else {
            None
        };
        let score = |info: &NodeInfo| {
            let s = free_share(info, pod);
            Score(if pack { s } else { -s })
        };
        // The nodes whose answer is known to be a refusal need no check: their refusals are only
        // counted, for why when no node takes the pod.
        let mut refused: Vec<u32> = Vec::new();
        let mut open: Vec<Reverse<(Score, usize)>> = Vec::with_capacity(candidates.len());
        for &j in candidates {
            match shape.and_then(|k| self.memo.known(k, j, self.versions[j])) {
                Some(r) if r != FITS => refused.push(r),
                _ => open.push(Reverse((score(&self.infos[j]), j))),
            }
        }
        // Best score first; the first node every filter passes is the scheduler's pick, so most
        // placements check one node.
        let mut open = BinaryHeap::from(open);
        let mut refusals: Vec<Unfit> = Vec::new();
        // Spread counts made once for the cycle (or, forgetful, for this placement), not per node.
        let fresh = SpreadMemo::over_base();
        let memo = if self.keep { &self.spread } else { &fresh };
        let nodes = Nodes {
            memo: (!pod.spread.is_empty()).then_some(memo),
            ..Nodes::of(&self.infos)
        };
        while let Some(Reverse((_, j))) = open.pop() {
            let known = shape.and_then(|k| self.memo.known(k, j, self.versions[j]));
            let answer = match known {
                Some(FITS) => Ok(()),
                _ => fits_among(pod, nodes, &self.infos[j], self.repel),
            };
            if let Some(k) = shape {
                self.memo
                    .keep(k, j, self.versions[j], answer.as_ref().err());
            }
            match answer {
                Ok(()) => return Ok(j),
                Err(u) => refusals.push(u),
            }
        }
        let known = refused
            .into_iter()
            .map(|r| self.memo.reasons[r as usize].clone());
        Err(Blocked::of(known.chain(refusals)))
    }
}

/// A node's score for a pod, lower first (`f64::total_cmp`).
#[derive(Debug, Clone, Copy)]
struct Score(f64);

impl PartialEq for Score {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The answer "every filter passes".
const FITS: u32 = u32::MAX;

/// One node's answer for a shape: the node's version it was given at (0: none), and [`FITS`] or the
/// index of the refusal in [`Memo::reasons`].
#[derive(Debug, Clone, Copy, Default)]
struct Answer {
    version: u32,
    reason: u32,
}

/// Each node's answer per shape of pod whose fit reads its node alone.
#[derive(Debug, Default)]
struct Memo {
    /// Shape hash → the shapes of that hash (a pod of each) and their index in `answers`.
    shapes: HashMap<u64, Vec<(Pod, usize)>>,
    answers: Vec<Vec<Answer>>,
    /// The refusals given, each once.
    reasons: Vec<Unfit>,
    reason_index: HashMap<Unfit, u32>,
}

impl Memo {
    /// The index of `pod`'s shape, new if none is like it; None when the memo is full.
    fn shape(&mut self, pod: &Pod, nodes: usize) -> Option<usize> {
        let same = self.shapes.entry(shape_hash(pod)).or_default();
        if let Some((_, k)) = same.iter().find(|(p, _)| p.same_shape(pod)) {
            return Some(*k);
        }
        if (self.answers.len() + 1) * nodes > MAX_ANSWERS {
            return None;
        }
        let k = self.answers.len();
        self.answers.push(vec![Answer::default(); nodes]);
        same.push((pod.clone(), k));
        Some(k)
    }

    /// Shape `k`'s answer on node `j` at `version`, if known.
    fn known(&self, k: usize, j: usize, version: u32) -> Option<u32> {
        let a = self.answers[k][j];
        (a.version == version).then_some(a.reason)
    }

    fn keep(&mut self, k: usize, j: usize, version: u32, refusal: Option<&Unfit>) {
        let reason = match refusal {
            None => FITS,
            Some(u) => match self.reason_index.get(u) {
                Some(&r) => r,
                None => {
                    let r = self.reasons.len() as u32;
                    self.reasons.push(u.clone());
                    self.reason_index.insert(u.clone(), r);
                    r
                }
            },
        };
        self.answers[k][j] = Answer { version, reason };
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
