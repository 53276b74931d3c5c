//! Upstream's soft taints (`UpdateSoftDeletionTaints`): in every loop that runs scale-down, removals or
//! not (static_autoscaler.go calls it after `StartDeletion` too), nodes found unneeded get
//! `DeletionCandidateOfClusterAutoscaler:PreferNoSchedule`, so the scheduler prefers other nodes and
//! they empty before their unneeded time is up; nodes needed again lose it. Taints come
//! off first, then go on, together at most `--max-bulk-soft-taint-count` per loop (0: none); nodes being
//! removed are left alone (their deletion taint says more). A node the descheduler emptied and scale-down
//! keeps for now (`Memory::emptying`) counts as unneeded: its pods are not to come back meanwhile.

use super::context::Ctx;
use super::decisions::Decisions;
use super::memory::Memory;
use crate::labels;

/// Upstream's `LoadFromExistingTaints`: once, at the first loop, with `--node-deletion-candidate-ttl`
/// set, a node whose soft taint holds a time (Unix seconds) younger than the TTL is taken as unneeded
/// since then; a value that is no time is ignored.
pub(super) fn load_deletion_candidates(ctx: &Ctx, memory: &mut Memory) {
    if std::mem::replace(&mut memory.candidates_loaded, true) {
        return;
    }
    let ttl = crate::model::duration::secs(ctx.settings.node_deletion_candidate_ttl);
    if ttl == 0 {
        return;
    }
    for n in ctx.world.nodes {
        let since = n
            .taints
            .iter()
            .find(|t| t.key == labels::DELETION_CANDIDATE)
            .and_then(|t| t.value.parse::<i64>().ok());
        if let Some(since) = since.filter(|s| s + ttl >= ctx.now) {
            memory.unneeded_since.entry(n.name.clone()).or_insert(since);
        }
    }
}

/// Fills `d.soft_untaint` and `d.soft_taint` from the unneeded nodes `memory` holds after scale-down.
pub(super) fn soft_taints(ctx: &Ctx, memory: &Memory, d: &mut Decisions) {
    let mut budget = ctx.settings.max_bulk_soft_taint_count;
    if budget == 0 {
        return;
    }
    // Nodes this loop removes, and those already going (`ToBeDeletedByClusterAutoscaler`), are left
    // alone: their deletion taint says more (upstream skips them in every loop, removals or not).
    let going = |n: &crate::model::workload::Node| {
        d.scale_down.iter().any(|r| r.node == n.name)
            || n.taints.iter().any(|t| t.key == labels::TO_BE_DELETED)
    };
    let candidate = |n: &crate::model::workload::Node| {
        n.taints.iter().any(|t| t.key == labels::DELETION_CANDIDATE)
    };
    // Only nodes of node groups (upstream's filterNodesFromSelectedGroups): a node no group holds keeps
    // whatever taints it has.
    let settled = ctx.world.nodes.iter().filter(|n| {
        ctx.world.node_groups.contains_key(&n.name)
            && !ctx.world.removing.contains_key(&n.name)
            && !going(n)
    });
    let (unneeded, needed): (Vec<_>, Vec<_>) = settled.partition(|n| {
        memory.unneeded_since.contains_key(&n.name) || memory.emptying.contains_key(&n.name)
    });
    for n in needed.into_iter().filter(|n| candidate(n)) {
        if budget == 0 {
            return;
        }
        budget -= 1;
        d.soft_untaint.push(n.name.clone());
    }
    for n in unneeded.into_iter().filter(|n| !candidate(n)) {
        if budget == 0 {
            return;
        }
        budget -= 1;
        d.soft_taint.push(n.name.clone());
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::{Memory, Settings};
    use crate::fixtures::pool;
    use crate::labels;
    use crate::model::{Taint, TaintEffect};

    fn candidate() -> Taint {
        Taint {
            key: labels::DELETION_CANDIDATE.into(),
            value: "1".into(),
            effect: TaintEffect::PreferNoSchedule,
        }
    }

    #[test]
    fn unneeded_nodes_are_soft_tainted_and_needed_ones_untainted_within_the_count() {
        // `idle` is unneeded (not yet for its unneeded time); `busy` is needed but still carries the
        // soft taint of an earlier loop.
        let mut world = pool("pool", 0, &[("busy", &[("hog", 3000)]), ("idle", &[])]);
        world.nodes[0].taints.push(candidate());
        let s = Settings::upstream();
        let d = world.run_once(&s, &mut Memory::default(), 10_000);
        assert!(d.scale_down.is_empty(), "{d:?}");
        assert_eq!(d.soft_untaint, ["busy"]);
        assert_eq!(d.soft_taint, ["idle"]);

        // Taints come off first when the count allows one change only; 0 turns soft taints off.
        let one = Settings {
            max_bulk_soft_taint_count: 1,
            ..Settings::upstream()
        };
        let d = world.run_once(&one, &mut Memory::default(), 10_000);
        assert_eq!((d.soft_untaint.len(), d.soft_taint.len()), (1, 0));
        let off = Settings {
            max_bulk_soft_taint_count: 0,
            ..Settings::upstream()
        };
        let d = world.run_once(&off, &mut Memory::default(), 10_000);
        assert!(d.soft_taint.is_empty() && d.soft_untaint.is_empty());

        // An unneeded node that already has it is left alone.
        world.nodes[1].taints.push(candidate());
        let d = world.run_once(&s, &mut Memory::default(), 10_000);
        assert_eq!(d.soft_taint, Vec::<String>::new());
    }

    /// Upstream: unneeded/nodes.go (LoadFromExistingTaints): with `--node-deletion-candidate-ttl`, the
    /// first loop takes a node soft-tainted within the TTL as unneeded since the taint's time; an older
    /// taint, a value that is no time, or a TTL of 0 start the unneeded time at the loop.
    #[test]
    fn the_first_loop_reads_soft_taints_back_within_the_ttl() {
        const T0: i64 = 10_000;
        let tainted = |value: String| Taint {
            value,
            ..candidate()
        };
        let mut world = pool("pool", 0, &[("recent", &[]), ("old", &[]), ("bad", &[])]);
        world.nodes[0].taints.push(tainted((T0 - 120).to_string()));
        world.nodes[1].taints.push(tainted((T0 - 1200).to_string()));
        world.nodes[2].taints.push(tainted("INVALID_VALUE".into()));
        let mut s = Settings {
            node_deletion_candidate_ttl: std::time::Duration::from_secs(300),
            ..Settings::upstream()
        };
        s.defaults.scale_down_unneeded_time = std::time::Duration::from_secs(60);
        let d = world.run_once(&s, &mut Memory::default(), T0);
        let removed: Vec<&str> = d.scale_down.iter().map(|r| r.node.as_str()).collect();
        assert_eq!(removed, ["recent"], "{d:?}");

        // Off by default: every unneeded time starts at the first loop.
        s.node_deletion_candidate_ttl = std::time::Duration::ZERO;
        let d = world.run_once(&s, &mut Memory::default(), T0);
        assert!(d.scale_down.is_empty(), "{d:?}");
    }

    /// Upstream: static_autoscaler.go calls updateSoftDeletionTaints after StartDeletion as well: a loop
    /// that removes a node still soft-taints the other unneeded nodes and untaints needed ones; the node
    /// it removes gets no soft taint.
    #[test]
    fn a_loop_that_removes_a_node_still_refreshes_soft_taints() {
        const T0: i64 = 10_000;
        // One removal per loop; `old` and `young` are empty, `busy` is needed but soft-tainted.
        let mut world = pool(
            "pool",
            0,
            &[("busy", &[("hog", 3000)]), ("old", &[]), ("young", &[])],
        );
        world.nodes[0].taints.push(candidate());
        let s = Settings {
            max_scale_down_parallelism: 1,
            ..Settings::upstream()
        };
        let mut memory = Memory::default();
        memory.unneeded_since.insert("old".into(), T0 - 3600);
        memory.unneeded_since.insert("young".into(), T0 - 3600);
        let d = world.run_once(&s, &mut memory, T0);
        assert_eq!(d.scale_down.len(), 1, "{d:?}");
        let removed = d.scale_down[0].node.clone();
        let other = if removed == "old" { "young" } else { "old" };
        assert_eq!(d.soft_untaint, ["busy"], "{d:?}");
        assert_eq!(d.soft_taint, [other.to_string()], "{d:?}");
    }

    /// Upstream: static_autoscaler.go RunOnce runs scale-down's UpdateClusterState and
    /// updateSoftDeletionTaints in a loop that scaled up too; only the removals wait for
    /// `--scale-down-delay-after-add`.
    #[test]
    fn a_loop_that_scales_up_still_times_unneeded_nodes_and_soft_taints_them() {
        use crate::engine::reasons::{Pause, Unremovable};
        use crate::fixtures::{group, node, resources, web, GIB};
        const T0: i64 = 10_000;
        // `wide` fits only a node of `big`: every loop scales up.
        let mut world = pool("pool", 0, &[("busy", &[("hog", 3000)]), ("idle", &[])])
            .group(
                group("big")
                    .sizes(0, 10, 0)
                    .template(node("big").sized(resources(8000, 32 * GIB, 50)).template())
                    .build(),
            )
            .pod(web("wide", 6000).unschedulable().build());
        world.nodes[0].taints.push(candidate());
        let s = Settings::upstream();
        let mut memory = Memory::default();
        let d = world.run_once(&s, &mut memory, T0);
        assert_eq!(d.scale_up.len(), 1, "{d:?}");
        assert_eq!(memory.unneeded_since.get("idle"), Some(&T0), "{memory:?}");
        assert_eq!(
            (d.soft_taint, d.soft_untaint),
            (vec!["idle".to_string()], vec!["busy".to_string()])
        );

        // The unneeded time is up in another loop that scales up: the timer ran on, the removal waits.
        let d = world.run_once(&s, &mut memory, T0 + 600);
        assert_eq!(d.scale_up.len(), 1, "{d:?}");
        assert!(d.scale_down.is_empty(), "{d:?}");
        assert!(
            d.unremovable
                .contains(&("idle".into(), Unremovable::Paused(Pause::AfterAdd))),
            "{d:?}"
        );
        assert_eq!(memory.unneeded_since.get("idle"), Some(&T0));

        // Without the delay, as upstream, the node goes in the loop that scales up.
        let no_delay = Settings {
            scale_down_delay_after_add: std::time::Duration::ZERO,
            ..Settings::upstream()
        };
        let d = world.run_once(&no_delay, &mut memory, T0 + 601);
        assert_eq!(d.scale_up.len(), 1, "{d:?}");
        let removed: Vec<&str> = d.scale_down.iter().map(|r| r.node.as_str()).collect();
        assert_eq!(removed, ["idle"]);
    }
}
