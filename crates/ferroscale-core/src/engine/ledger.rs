//! The loop's ledger (issue #37): one account, built once per loop from the snapshot and the memory,
//! of what every disruption method may still take. Each method proposes and the ledger admits
//! ([`Ledger::take_removal`], [`Ledger::take_surge`]) or declines with a typed reason, so that scale-down,
//! the notices, drift and expiry replacement, consolidation and (through `Decisions::pdbs_left`) the
//! descheduler all draw on the same numbers:
//!
//! - per group, the nodes out of service (one definition, [`Ledger::out_of_service`]) against its
//!   disruption budget, its window and its min size;
//! - per PodDisruptionBudget, the disruptions still allowed, counted down by every eviction any method
//!   plans (and by those of the removals in flight); pods a PDB does not protect from the eviction API
//!   (not running, or terminating) do not count;
//! - the cluster-wide caps: `--max-scale-down-parallelism`, `--max-drain-parallelism` (removals in flight
//!   from earlier loops included) and `--max-evictions-per-loop`;
//! - for every node asked for (scale-up and surges): group health, backoff, out-of-capacity marks, max
//!   size and the cluster's `--max-nodes-total`, `--cores-total`, `--memory-total` and `--gpu-total`.
//!
//! An involuntary notice is recorded but never declined: the cloud takes its instance whatever the
//! ledger says, and what it takes is no longer there for the others.

mod declined;
mod surge;

pub use declined::Declined;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::context::Ctx;
use super::limits::Amount;
use super::memory::Memory;
use super::reasons::Blocker;
use crate::model::workload::{Node, Pdb, Pod, PodPhase};
use crate::model::NodeGroup;

/// How a method's removal is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// An involuntary notice: recorded, never declined.
    Involuntary,
    /// Upstream's scale-down: its caps, the group's own disruption budget when it sets one.
    ScaleDown,
    /// ferroscale's voluntary methods (drift and expiry, consolidation, a node the descheduler
    /// emptied): the group's budget (or `--max-disruption`) as well.
    Voluntary,
    /// A voluntary notice: as [`Kind::Voluntary`] but for the group's min size, as the instance goes
    /// whatever happens and its pods' new node is asked for in the same loop.
    Notice,
}

/// A group's account.
#[derive(Debug, Clone, Copy, Default)]
struct Books {
    /// Registered nodes.
    size: usize,
    /// Nodes out of service.
    out: usize,
    /// Nodes going away (removals in flight and admitted): what its min size counts.
    going: i32,
    /// New nodes asked for this loop (scale-ups and surges).
    asked: i32,
}

/// Whether the eviction API checks `p` against its PodDisruptionBudgets: not for a pod that is not
/// running (Pending, Succeeded, Failed) or already terminating (upstream's `canIgnorePDB`).
pub fn pdb_counts(p: &Pod) -> bool {
    matches!(p.meta.phase, PodPhase::Running | PodPhase::Unknown) && p.meta.deleted.is_none()
}

/// Takes the evictions of `pods` from `pdbs`: one disruption of every budget covering each pod the
/// eviction API checks against them ([`pdb_counts`]).
pub(super) fn count_down<'p>(pdbs: &mut [Pdb], pods: impl IntoIterator<Item = &'p Arc<Pod>>) {
    for p in pods.into_iter().filter(|p| pdb_counts(p)) {
        for b in pdbs.iter_mut().filter(|b| b.covers(p)) {
            b.disruptions_allowed -= 1;
        }
    }
}

/// The loop's ledger (cloned when scale-down plans again: `scale_down::atomic`).
#[derive(Clone)]
pub(super) struct Ledger {
    books: HashMap<String, Books>,
    out: HashSet<String>,
    /// Nodes being removed (in flight or admitted this loop): what the min sizes and caps count.
    going: HashSet<String>,
    /// Nodes that receive pods of an admitted removal: no later method takes them this loop.
    receiving: HashSet<String>,
    pdbs: Vec<Pdb>,
    removals_in_flight: usize,
    drains_in_flight: usize,
    removals: usize,
    drains: usize,
    evictions: usize,
    /// The cluster with what is on its way and asked for: what the cluster maxima count.
    nodes: usize,
    amount: Amount,
    /// Each unhealthy group's unready nodes, read on the first surge (most loops ask for none).
    unhealthy: std::cell::OnceCell<HashMap<String, usize>>,
    /// The one atomic group whose removals may exceed the parallelism caps this loop (upstream's
    /// `CropNodes`: one slice may overflow, so that a group larger than the caps can go at all).
    overflow: Option<String>,
}

impl Ledger {
    /// The ledger at the start of a loop: removals in flight and replacements under way are out of
    /// service, the evictions still ahead of the drains in flight are taken from their PDBs.
    pub fn new(ctx: &Ctx, memory: &Memory) -> Self {
        let world = ctx.world;
        let mut books: HashMap<String, Books> = HashMap::new();
        let mut out = HashSet::new();
        for (node, g) in world.node_groups.iter() {
            // One key per group, not one per node.
            if !books.contains_key(g.as_str()) {
                books.insert(g.clone(), Books::default());
            }
            let Some(b) = books.get_mut(g.as_str()) else {
                continue;
            };
            b.size += 1;
            let removing = world.removing.contains_key(node);
            if removing {
                b.going += 1;
            }
            if removing || memory.disrupting(node) {
                b.out += 1;
                out.insert(node.clone());
            }
        }
        for n in world.removing.keys() {
            out.insert(n.clone());
        }
        let mut pdbs = world.pdbs.to_vec();
        let draining: HashSet<&str> = world
            .removing
            .iter()
            .filter(|(_, drained)| **drained)
            .map(|(n, _)| n.as_str())
            .collect();
        if !draining.is_empty() && !pdbs.is_empty() {
            count_down(
                &mut pdbs,
                world.pods.iter().filter(|p| {
                    p.node_name.as_deref().is_some_and(|n| draining.contains(n)) && !p.node_bound()
                }),
            );
        }
        let mut amount = Amount::default();
        for n in world.nodes {
            amount.add(&Amount::of_node(n), 1);
        }
        Ledger {
            books,
            going: world.removing.keys().cloned().collect(),
            out,
            receiving: HashSet::new(),
            pdbs,
            removals_in_flight: world.removing.len(),
            drains_in_flight: draining.len(),
            removals: 0,
            drains: 0,
            evictions: 0,
            nodes: world.nodes.len(),
            amount,
            unhealthy: std::cell::OnceCell::new(),
            overflow: None,
        }
    }

    /// Whether `node` is out of service: being removed, interrupted and taken out, being replaced or
    /// consolidated, or removed by an action admitted this loop. The one definition every method reads.
    pub fn out_of_service(&self, node: &str) -> bool {
        self.out.contains(node)
    }

    /// Whether a later method may take `node` this loop: not out of service, and receiving no pod of an
    /// action admitted this loop.
    pub fn available(&self, node: &str) -> bool {
        !self.out.contains(node) && !self.receiving.contains(node)
    }

    /// Whether `node` is held out of service for a later removal (a replacement's or a consolidation's
    /// old node waiting for its new nodes): its pods still need the room they will move to.
    pub fn held(&self, node: &str) -> bool {
        self.out.contains(node) && !self.going.contains(node)
    }

    /// Whether a node held for a later removal (a replacement's old node) may be retired now: it is
    /// not being removed already, and receives no pod of an action admitted this loop.
    pub fn may_retire(&self, node: &str) -> bool {
        !self.going.contains(node) && !self.receiving.contains(node)
    }

    /// The PDBs with what they still allow.
    pub fn pdbs(&self) -> &[Pdb] {
        &self.pdbs
    }

    /// How many nodes `g` has registered.
    pub fn size_of(&self, g: &str) -> usize {
        self.books.get(g).map_or(0, |b| b.size)
    }

    /// How many new nodes of `g` this loop asked for so far.
    pub fn asked(&self, g: &str) -> i32 {
        self.books.get(g).map_or(0, |b| b.asked)
    }

    /// Whether the drains of `nodes` (each its pods to evict, in order) stay within every
    /// PodDisruptionBudget, each node counted down before the next, as [`Ledger::take_removal`]
    /// would admit them one after another.
    pub fn pdb_check_all(&self, nodes: &[&[Arc<Pod>]]) -> Result<(), Blocker> {
        let mut left = self.pdbs.clone();
        for pods in nodes {
            for p in pods.iter().filter(|p| pdb_counts(p)) {
                if let Some(b) = left
                    .iter()
                    .find(|b| b.disruptions_allowed < 1 && b.covers(p))
                {
                    return Err(Blocker::Budget {
                        pod: p.key(),
                        namespace: b.namespace.clone(),
                        name: b.name.clone(),
                    });
                }
            }
            count_down(&mut left, pods.iter());
        }
        Ok(())
    }

    /// Whether `n` more evictions stay within `--max-evictions-per-loop`.
    pub fn evictions_allowed(&self, ctx: &Ctx, n: usize) -> bool {
        let max = ctx.settings.max_evictions_per_loop;
        max == 0 || n == 0 || self.evictions + n <= max
    }

    /// How many more drains (removals with pods to evict) the caps let this loop start.
    pub fn drains_left(&self, ctx: &Ctx) -> usize {
        let s = ctx.settings;
        let removals = s
            .max_scale_down_parallelism
            .saturating_sub(self.removals_in_flight + self.removals);
        let drains = s
            .max_drain_parallelism
            .saturating_sub(self.drains_in_flight + self.drains);
        removals.min(drains)
    }

    /// How many nodes of `g` are out of service.
    pub fn out_of(&self, g: &str) -> usize {
        self.books.get(g).map_or(0, |b| b.out)
    }

    /// How many nodes of `g` its min size still lets go.
    pub fn above_min(&self, g: &NodeGroup) -> usize {
        let going = self.books.get(g.id.as_str()).map_or(0, |b| b.going);
        (g.target_size - going - g.min_size).max(0) as usize
    }

    /// How many more nodes of `g` `kind`'s budget lets out (`usize::MAX` without one).
    pub fn budget_left(&self, ctx: &Ctx, g: &NodeGroup, kind: Kind) -> usize {
        let Some((allowed, _)) = self.allowed(ctx, g, kind) else {
            return usize::MAX;
        };
        allowed.saturating_sub(self.out_of(&g.id))
    }

    fn allowed(&self, ctx: &Ctx, g: &NodeGroup, kind: Kind) -> Option<(usize, usize)> {
        let budget = match kind {
            Kind::Involuntary => None,
            Kind::ScaleDown => g.lifecycle.disruption_budget,
            Kind::Voluntary | Kind::Notice => Some(ctx.settings.budget_of(g)),
        }?;
        let size = self.books.get(g.id.as_str()).map_or(0, |b| b.size);
        Some((budget.allowed(size), size))
    }

    /// Whether evicting `pods` stays within every PodDisruptionBudget: each budget covering one of them
    /// still allows a disruption (within one node the drain retries, as upstream's, while the first
    /// pods' replacements start elsewhere).
    fn pdb_check(&self, pods: &[Arc<Pod>]) -> Result<(), Blocker> {
        self.pdb_check_all(&[pods])
    }

    /// Everything but the PDBs a removal of `node` (of `group`) evicting `evict` must pass for `kind`.
    /// A node already out of service (a replacement's old node, held since its surge was asked for)
    /// has its place under its group's budget and window: only its min size, the caps and the PDBs
    /// are checked.
    fn check_removal(
        &self,
        ctx: &Ctx,
        node: &str,
        group: Option<&NodeGroup>,
        evict: usize,
        kind: Kind,
    ) -> Result<(), Declined> {
        if kind == Kind::Involuntary {
            return Ok(());
        }
        let s = ctx.settings;
        let held = self.out.contains(node);
        if let Some(g) = group.filter(|_| !held) {
            if !s.disruption_allowed(g, ctx.now) {
                return Err(Declined::Window {
                    group: g.id.clone(),
                });
            }
            if let Some((allowed, _)) = self.allowed(ctx, g, kind) {
                if self.out_of(&g.id) >= allowed {
                    return Err(Declined::Budget {
                        group: g.id.clone(),
                        allowed,
                    });
                }
            }
        }
        if let Some(g) = group.filter(|_| kind != Kind::Notice) {
            if self.above_min(g) == 0 {
                return Err(Declined::MinSize {
                    group: g.id.clone(),
                });
            }
        }
        let removals = self.removals_in_flight + self.removals;
        let drains = self.drains_in_flight + self.drains;
        let overflows = group.is_some_and(|g| self.overflow.as_deref() == Some(g.id.as_str()));
        if !overflows
            && (removals >= s.max_scale_down_parallelism
                || (evict > 0 && drains >= s.max_drain_parallelism))
        {
            let earlier = self.removals_in_flight >= s.max_scale_down_parallelism
                || (evict > 0 && self.drains_in_flight >= s.max_drain_parallelism);
            return Err(Declined::Parallelism { earlier });
        }
        if !self.evictions_allowed(ctx, evict) {
            return Err(Declined::EvictionLimit {
                max: s.max_evictions_per_loop,
            });
        }
        Ok(())
    }

    /// Admits the removal of `node` (of `group`), evicting `evict`, for `kind`, or declines it. Once
    /// admitted the node is out of service, its group's min size and budget count it, the caps count
    /// it, and every PDB covering an evicted pod is counted down.
    pub fn take_removal(
        &mut self,
        ctx: &Ctx,
        node: &Node,
        group: Option<&NodeGroup>,
        evict: &[Arc<Pod>],
        kind: Kind,
    ) -> Result<(), Declined> {
        self.check_removal(ctx, &node.name, group, evict.len(), kind)?;
        if kind != Kind::Involuntary {
            self.pdb_check(evict).map_err(Declined::Pdb)?;
        }
        self.record(&node.name, group.map(|g| g.id.as_str()), evict);
        Ok(())
    }

    fn record(&mut self, node: &str, group: Option<&str>, evict: &[Arc<Pod>]) {
        let fresh = self.out.insert(node.to_string());
        let going = self.going.insert(node.to_string());
        if let Some(b) = group.and_then(|g| self.books.get_mut(g)) {
            b.out += usize::from(fresh);
            b.going += i32::from(going);
        }
        if !going {
            // A removal in flight already: counted when it started.
            return;
        }
        self.removals += 1;
        if !evict.is_empty() {
            self.drains += 1;
        }
        self.evictions += evict.len();
        count_down(&mut self.pdbs, evict);
    }

    /// Lets the removals of atomic group `g` exceed the parallelism caps this loop, if no other group
    /// does yet and the caps leave room for at least one removal (and one drain, when `drain`): as
    /// upstream's budgets, one whole slice may overflow, the first one to come.
    pub fn overflow_for(&mut self, ctx: &Ctx, g: &str, drain: bool) {
        let s = ctx.settings;
        let room = self.removals_in_flight + self.removals < s.max_scale_down_parallelism
            && (!drain || self.drains_in_flight + self.drains < s.max_drain_parallelism);
        if self.overflow.is_none() && room {
            self.overflow = Some(g.to_string());
        }
    }

    /// Marks `node` out of service for an action that removes it later (a replacement's old node, once
    /// its surge is asked for): it counts against its group's budget from now on.
    pub fn hold(&mut self, node: &str, group: &str) {
        if self.out.insert(node.to_string()) {
            if let Some(b) = self.books.get_mut(group) {
                b.out += 1;
            }
        }
    }

    /// Notes that `node` receives pods of an action admitted this loop.
    pub fn receive(&mut self, node: &str) {
        self.receiving.insert(node.to_string());
    }

    /// The nodes no pod is to be moved onto after this loop: every node out of service, and those
    /// scale-down holds unneeded or the descheduler empties. Sorted.
    pub fn not_destinations(&self, memory: &Memory) -> Vec<String> {
        let mut v: Vec<String> = self
            .out
            .iter()
            .chain(memory.unneeded_since.keys())
            .chain(memory.emptying.keys())
            .cloned()
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// The PDBs with what they still allow, for the methods after the loop (the descheduler).
    pub fn into_pdbs(self) -> Vec<Pdb> {
        self.pdbs
    }
}

#[cfg(test)]
mod tests;
