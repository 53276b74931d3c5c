//! `--enforce-node-group-min-size`: upstream's ScaleUpToNodeGroupMinSize. After the loop's scale-up,
//! every group whose size (with this loop's scale-ups) is below its min size grows to it, unless it
//! cannot grow now (unhealthy, backed off, out of capacity) or one more node would exceed a cluster-wide
//! maximum; the growth is capped by what `--cores-total`, `--memory-total`, `--gpu-total` and
//! `--max-nodes-total` leave.

use super::context::Ctx;
use super::decisions::{Decisions, ScaleUp};
use super::limits::{gib, gpu_room, Amount};
use super::memory::Memory;
use super::predicates::NodeInfo;
use super::scale_up::{unavailable, unhealthy_groups};

/// Adds a scale-up to `d` for each group below its min size (`infos`: the nodes there and on their
/// way; `starting`: those still starting, counted once, as the scale-up counts them).
pub(super) fn to_min_size(
    ctx: &Ctx,
    memory: &mut Memory,
    infos: &[NodeInfo],
    starting: &(usize, Amount),
    d: &mut Decisions,
) {
    let settings = ctx.settings;
    let mut used = Amount::default();
    for i in infos {
        used.add(&Amount::of_node(&i.node), 1);
    }
    used.add(&starting.1, -1);
    let mut nodes = infos.len().saturating_sub(starting.0);
    for s in &d.scale_up {
        if let Some(g) = ctx.groups.get(s.group.as_str()) {
            used.add(
                &Amount::of_template(&ctx.template(g).node),
                i64::from(s.delta),
            );
            nodes += s.delta.max(0) as usize;
        }
    }
    let unhealthy = unhealthy_groups(ctx);
    for g in ctx.world.groups {
        let asked: i32 = d
            .scale_up
            .iter()
            .filter(|s| s.group == g.id)
            .map(|s| s.delta)
            .sum();
        let target = g.target_size + asked;
        if target >= g.min_size
            || unavailable(ctx, g, memory, unhealthy.get(g.id.as_str()).copied()).is_some()
        {
            continue;
        }
        let per = Amount::of_template(&ctx.template(g).node);
        let room_for =
            |left: i64, per: i64| usize::try_from(left.max(0) / per.max(1)).unwrap_or(usize::MAX);
        let mut cap = room_for(settings.cores_total.1.saturating_sub(used.cores), per.cores)
            .min(room_for(
                gib(settings.memory_total_gib.1).saturating_sub(used.memory),
                per.memory,
            ))
            .min(gpu_room(&settings.gpu_total, &used, &per));
        if settings.max_nodes_total > 0 {
            cap = cap.min(settings.max_nodes_total.saturating_sub(nodes));
        }
        let delta = ((g.min_size - target) as usize).min(cap);
        if delta == 0 {
            continue;
        }
        used.add(&per, delta as i64);
        nodes += delta;
        memory
            .unfulfilled_since
            .entry(g.id.clone())
            .or_insert(ctx.now);
        d.scale_up.push(ScaleUp {
            group: g.id.clone(),
            delta: delta as i32,
            pods: Vec::new(),
        });
    }
}
