//! Which pods are bound to which node, kept between loops ([`Placement`]): each loop's NodeInfos are
//! built at the cost of what changed since the last one, not of every pod. A loop over a 50,000-pod
//! cluster used to read every pod's node name and hash it; a replay of a day runs 8,640 loops, and
//! that walk was most of its time.
//!
//! What changed is found by comparing the world's pods with the ones seen last, pointer by pointer.
//! A pod is never changed in place while another holder shares it (`Arc::make_mut` copies it), and
//! the placement holds every pod it saw: an unchanged pointer is an unchanged pod, and a freed pod's
//! address is never mistaken for it. The world's order is followed, so the NodeInfos list each node's
//! pods in the order a fresh build would, whatever changed.

use std::sync::Arc;

use super::predicates::NodeInfo;
use crate::model::workload::{Node, Pod};

/// A pod without a node.
const UNBOUND: u32 = u32::MAX;
/// Set on the slot of a bound pod below the expendable cutoff: left out of its node's NodeInfo.
const EXPENDABLE: u32 = 1 << 31;

/// The pods bound to each node, as of the last [`Placement::update`].
#[derive(Debug, Default)]
pub struct Placement {
    /// The priority below which a bound pod is expendable (`None` before the first update).
    cutoff: Option<i32>,
    /// The world's pods at the last update, in its order (held, so that no address is reused).
    held: Vec<Arc<Pod>>,
    /// Each held pod's node id, with [`EXPENDABLE`] set, or [`UNBOUND`].
    slots: Vec<u32>,
    /// Node name → id; a name stays once seen (a day's replay sees a few thousand).
    ids: foldhash::HashMap<String, u32>,
    /// Each id's bound pods that are not expendable, summed (their `node` field unused).
    nodes: Vec<NodeInfo>,
}

/// One loop's view of the placement: the world's nodes with their pods.
pub struct Placed<'a> {
    /// `nodes`' NodeInfos, in their order, with the pods bound to each (not the expendable ones).
    pub infos: Vec<NodeInfo>,
    /// Node name → position in `infos` (the last of two nodes of one name).
    pub index: foldhash::HashMap<&'a str, usize>,
    /// The bound pods below the cutoff, each with its node's position, in the world's order.
    pub expendable: Vec<(usize, &'a Arc<Pod>)>,
    /// Positions in the world's pods of the pods without a node, in order.
    pub pending: Vec<usize>,
}

/// Node name → position in `nodes` (the last of two nodes of one name).
fn index_of(nodes: &[Node]) -> foldhash::HashMap<&str, usize> {
    nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect()
}

impl<'a> Placed<'a> {
    /// The view of a loop that keeps nothing for the next: every pod read once, straight into its
    /// node (what [`Placement::placed`] gives after a first update, without what it holds).
    pub fn fresh(nodes: &'a [Node], pods: &'a [Arc<Pod>], cutoff: i32) -> Placed<'a> {
        let mut infos: Vec<NodeInfo> = nodes.iter().cloned().map(NodeInfo::new).collect();
        let index = index_of(nodes);
        let (mut expendable, mut pending) = (Vec::new(), Vec::new());
        for (k, p) in pods.iter().enumerate() {
            let Some(n) = p.node_name.as_deref() else {
                pending.push(k);
                continue;
            };
            if let Some(&i) = index.get(n) {
                if p.meta.priority < cutoff {
                    expendable.push((i, p));
                } else {
                    infos[i].add(Arc::clone(p));
                }
            }
        }
        Placed {
            infos,
            index,
            expendable,
            pending,
        }
    }
}

impl Placement {
    /// Brings the placement up to `pods` (the world's, in its order), with `cutoff` as the
    /// expendable pods' priority cutoff; a new cutoff starts over.
    pub fn update(&mut self, pods: &[Arc<Pod>], cutoff: i32) {
        if self.cutoff != Some(cutoff) {
            *self = Placement {
                cutoff: Some(cutoff),
                ..Placement::default()
            };
        }
        let mut dirty = vec![false; self.nodes.len()];
        let mut any_dirty = false;
        let mut mark = |dirty: &mut Vec<bool>, slot: u32| {
            if slot & EXPENDABLE == 0 {
                let id = slot as usize;
                if id >= dirty.len() {
                    dirty.resize(id + 1, false);
                }
                dirty[id] = true;
                any_dirty = true;
            }
        };
        // The pods the same as last time from the start stay where they are (what a loop changes
        // is mostly its newest pods, at the end); the rest is compared below.
        let same = self
            .held
            .iter()
            .zip(pods)
            .take_while(|(o, p)| Arc::ptr_eq(o, p))
            .count();
        if same == pods.len() && same == self.held.len() {
            return;
        }
        let old_held = self.held.split_off(same);
        let old_slots = self.slots.split_off(same);
        let mut old = old_held.into_iter().zip(old_slots).peekable();
        let mut held = std::mem::take(&mut self.held);
        let mut slots = std::mem::take(&mut self.slots);
        held.reserve(pods.len() - same);
        slots.reserve(pods.len() - same);
        'pods: for p in &pods[same..] {
            // The pods of the last update before this one are gone unless this one replaces one of
            // them (the same pod, bound or changed: a new copy in its place).
            while let Some((o, s)) = old.peek() {
                if Arc::ptr_eq(o, p) {
                    let (o, s) = old.next().expect("peeked");
                    held.push(o);
                    slots.push(s);
                    continue 'pods;
                }
                let replaced = o.name == p.name && o.namespace == p.namespace;
                mark(&mut dirty, *s);
                old.next();
                if replaced {
                    break;
                }
            }
            let slot = self.slot_of(p);
            mark(&mut dirty, slot);
            held.push(Arc::clone(p));
            slots.push(slot);
        }
        for (_, s) in old {
            mark(&mut dirty, s);
        }
        self.held = held;
        self.slots = slots;
        if any_dirty {
            self.rebuild(&dirty);
        }
    }

    /// [`Self::update`] with the cutoff of the last one: for readers of the pods' placement that
    /// are not the engine (the simulated scheduler, the replay's figures, the actuator's view).
    pub fn refresh(&mut self, pods: &[Arc<Pod>]) {
        self.update(pods, self.cutoff());
    }

    /// The slot of a pod not seen before.
    fn slot_of(&mut self, p: &Pod) -> u32 {
        let Some(name) = p.node_name.as_deref() else {
            return UNBOUND;
        };
        let id = match self.ids.get(name) {
            Some(&id) => id,
            None => {
                let id = self.nodes.len() as u32;
                self.ids.insert(name.to_string(), id);
                self.nodes.push(NodeInfo::new(Node::default()));
                id
            }
        };
        if p.meta.priority < self.cutoff.unwrap_or(i32::MIN) {
            id | EXPENDABLE
        } else {
            id
        }
    }

    /// Sums again the pods of the nodes marked, in the world's order.
    fn rebuild(&mut self, dirty: &[bool]) {
        for (id, _) in dirty.iter().enumerate().filter(|(_, d)| **d) {
            self.nodes[id] = NodeInfo::new(Node::default());
        }
        for (p, &s) in self.held.iter().zip(&self.slots) {
            if s & EXPENDABLE == 0 && dirty.get(s as usize).copied().unwrap_or(false) {
                self.nodes[s as usize].add(Arc::clone(p));
            }
        }
    }

    /// The loop's NodeInfos for `nodes`, from the pods of the last update. A node's pods are shared
    /// with the placement until a simulation changes them.
    pub fn placed<'a>(&'a self, nodes: &'a [Node]) -> Placed<'a> {
        let index = index_of(nodes);
        let mut position = vec![usize::MAX; self.nodes.len()];
        let infos = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let id = self.ids.get(&n.name).copied();
                match id.filter(|_| index.get(n.name.as_str()) == Some(&i)) {
                    Some(id) => {
                        position[id as usize] = i;
                        let kept = &self.nodes[id as usize];
                        NodeInfo {
                            node: n.clone(),
                            requested: kept.requested.clone(),
                            ports: kept.ports.clone(),
                            pods: kept.pods.clone(),
                            attached: kept.attached.clone(),
                        }
                    }
                    None => NodeInfo::new(n.clone()),
                }
            })
            .collect();
        let mut expendable = Vec::new();
        let mut pending = Vec::new();
        for (k, &s) in self.slots.iter().enumerate() {
            if s == UNBOUND {
                pending.push(k);
            } else if s & EXPENDABLE != 0 {
                let at = position[(s & !EXPENDABLE) as usize];
                if at != usize::MAX {
                    expendable.push((at, &self.held[k]));
                }
            }
        }
        Placed {
            infos,
            index,
            expendable,
            pending,
        }
    }

    /// Positions in the pods of the last update of those without a node, in order.
    pub fn pending(&self) -> impl Iterator<Item = usize> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| **s == UNBOUND)
            .map(|(k, _)| k)
    }

    /// How many pods the last update saw.
    pub fn pods(&self) -> usize {
        self.held.len()
    }

    /// Positions, in the pods of the last update, of the pods bound to any of `nodes`, in order:
    /// where to look for the pods of a few nodes without reading every pod (a caller that changed
    /// the pods since checks what it finds there).
    pub fn positions_on<'n>(&self, nodes: impl IntoIterator<Item = &'n str>) -> Vec<usize> {
        let mut wanted = vec![false; self.nodes.len()];
        let mut any = false;
        for n in nodes {
            if let Some(&id) = self.ids.get(n) {
                wanted[id as usize] = true;
                any = true;
            }
        }
        if !any {
            return Vec::new();
        }
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| **s != UNBOUND && wanted[(**s & !EXPENDABLE) as usize])
            .map(|(k, _)| k)
            .collect()
    }

    /// The cutoff of the last update (the lowest priority when none was made).
    pub fn cutoff(&self) -> i32 {
        self.cutoff.unwrap_or(i32::MIN)
    }
}

#[cfg(test)]
mod tests;
