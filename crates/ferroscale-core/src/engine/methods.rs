//! The disruption methods behind one trait (issue #37), in the fixed order a loop runs them. Each
//! proposes on the loop's view, the [`Ledger`] admits or declines each action, and what it admits goes
//! into the loop's decisions, which the one `Actuator` carries out. A method never changes the view
//! with what it only considered: scale-down's what-if placements of the nodes it keeps stay inside it,
//! and only the pods an admitted removal really moves reach the view ([`Turn::infos`]) for the methods
//! after it.
//!
//! The order, and why:
//! 1. [`Notices`], involuntary first: the cloud takes those instances whatever happens; then voluntary
//!    ones, which need their pods' new nodes asked for by this loop's scale-up (so they run before it).
//! 2. [`ScaleDownMethod`]: upstream's scale-down (empty nodes in bulk, then drained ones, a node the
//!    descheduler emptied first). In a loop that scales up it still finds the unneeded nodes (their
//!    timers and soft taints), as upstream's RunOnce; its removals wait `--scale-down-delay-after-add`.
//! 3. [`Replacement`]: drift and expiry, surge first.
//! 4. [`Consolidation`]: deletions, and replacements surge first.
//! 5. The descheduler, outside the core loop (`run` and `simulate` run it after acting): it plans on the
//!    PDBs the ledger left (`Decisions::pdbs_left`) and never onto `Decisions::not_destinations`.

use std::sync::Arc;

use super::consolidate::consolidate;
use super::context::Ctx;
use super::decisions::{Decisions, Disruption};
use super::disruption::displace;
use super::ledger::Ledger;
use super::memory::Memory;
use super::predicates::NodeInfo;
use super::reasons::Unremovable;
use super::replace::replace;
use super::scale_down::scale_down;
use super::soft_taints::{load_deletion_candidates, soft_taints};
use crate::model::workload::Pod;

/// What a method works on in its turn.
pub(super) struct Turn<'t, 'a> {
    pub ctx: &'t Ctx<'a>,
    pub memory: &'t mut Memory,
    pub ledger: &'t mut Ledger,
    /// The loop's nodes (the first `existing` are real, the rest upcoming), with the moves of the
    /// actions admitted so far; the pods bound to a node now are [`NodeInfo::bound`].
    pub infos: &'t mut Vec<NodeInfo>,
    pub existing: usize,
    pub d: &'t mut Decisions,
}

/// One way of taking pods off a node.
pub(super) trait Method {
    /// Proposes this loop's actions, each admitted by the ledger, into the decisions.
    fn run(&mut self, turn: &mut Turn);
}

/// Interruption notices (spot warnings, rebalance recommendations, scheduled changes, state changes).
#[derive(Default)]
pub(super) struct Notices {
    /// The pods of the nodes taken out, unbound, with their node: placed again this loop.
    pub displaced: Vec<(Arc<Pod>, String)>,
    pub disruptions: Vec<Disruption>,
    pub kept: Vec<(String, Unremovable)>,
}

impl Method for Notices {
    fn run(&mut self, t: &mut Turn) {
        self.displaced = displace(
            t.ctx,
            &t.infos[..t.existing],
            t.memory,
            t.ledger,
            &mut self.disruptions,
            &mut self.kept,
        );
    }
}

/// Upstream's scale-down, with its soft taints.
pub(super) struct ScaleDownMethod;

impl Method for ScaleDownMethod {
    fn run(&mut self, t: &mut Turn) {
        if !t.ctx.settings.scale_down_enabled {
            return;
        }
        load_deletion_candidates(t.ctx, t.memory);
        let moves = scale_down(
            t.ctx,
            t.memory,
            t.ledger,
            t.infos.as_slice(),
            t.existing,
            t.d,
        );
        for (j, p) in moves {
            t.infos[j].add(p);
        }
        soft_taints(t.ctx, t.memory, t.d);
    }
}

/// Drift and expiry replacement.
pub(super) struct Replacement;

impl Method for Replacement {
    fn run(&mut self, t: &mut Turn) {
        replace(t.ctx, t.memory, t.ledger, &t.infos[..t.existing], t.d);
    }
}

/// Consolidation.
pub(super) struct Consolidation;

impl Method for Consolidation {
    fn run(&mut self, t: &mut Turn) {
        consolidate(t.ctx, t.memory, t.ledger, &t.infos[..t.existing], t.d);
    }
}

/// The methods after scale-up, in their order.
pub(super) fn after_scale_up() -> [Box<dyn Method>; 3] {
    [
        Box::new(ScaleDownMethod),
        Box::new(Replacement),
        Box::new(Consolidation),
    ]
}
