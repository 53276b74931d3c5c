//! The ledger's account of new nodes: every node any method asks for (scale-up, drift and expiry
//! surges, consolidation) obeys what scale-up obeys and the cluster's maxima.

use super::Ledger;
use crate::engine::context::Ctx;
use crate::engine::limits::{above_gpu_max, gib, Amount, Resource};
use crate::engine::memory::Memory;
use crate::engine::reasons::Refusal;
use crate::engine::scale_up::{unavailable, unhealthy_groups};
use crate::model::NodeGroup;

impl Ledger {
    /// The cluster's nodes and capacity with what is on its way and asked for: what the maxima
    /// (`--max-nodes-total`, `--cores-total`, `--memory-total`, `--gpu-total`) count.
    pub fn cluster(&self) -> (usize, &Amount) {
        (self.nodes, &self.amount)
    }

    /// Counts nodes on their way (upcoming) against the cluster maxima, less the registered nodes still
    /// starting (`starting`: how many, and their capacity) that upcoming copies stand for: a booting
    /// node is counted once.
    pub fn count_upcoming(&mut self, nodes: usize, amount: &Amount, starting: &(usize, Amount)) {
        self.nodes = (self.nodes + nodes).saturating_sub(starting.0);
        self.amount.add(amount, 1);
        self.amount.add(&starting.1, -1);
    }

    /// Counts a scale-up of `count` nodes of `g` decided outside the ledger (scale-up's own limits).
    pub fn count_scale_up(&mut self, ctx: &Ctx, g: &NodeGroup, count: i32) {
        self.books.entry(g.id.clone()).or_default().asked += count;
        self.nodes += count.max(0) as usize;
        self.amount.add(
            &Amount::of_template(&ctx.template(g).node),
            i64::from(count.max(0)),
        );
    }

    /// Why `count` new nodes of `g` may not be asked for now, if they may not: what scale-up obeys
    /// (group health, backoff, out-of-capacity marks, max size) and the cluster maxima.
    pub fn surge_refusal(
        &self,
        ctx: &Ctx,
        memory: &Memory,
        g: &NodeGroup,
        count: i32,
    ) -> Option<Refusal> {
        let s = ctx.settings;
        let unready = self
            .unhealthy
            .get_or_init(|| {
                unhealthy_groups(ctx)
                    .into_iter()
                    .map(|(g, n)| (g.to_string(), n))
                    .collect()
            })
            .get(g.id.as_str())
            .copied();
        if let Some(why) = unavailable(ctx, g, memory, unready) {
            return Some(why);
        }
        let asked = self.books.get(g.id.as_str()).map_or(0, |b| b.asked);
        if g.target_size + asked + count > g.max_size {
            return Some(Refusal::AtMaxSize {
                group: g.id.clone(),
            });
        }
        let n = count.max(0) as usize;
        if s.max_nodes_total > 0 && self.nodes + n > s.max_nodes_total {
            return Some(Refusal::MaxNodesTotal);
        }
        let mut after = self.amount.clone();
        let per = Amount::of_template(&ctx.template(g).node);
        after.add(&per, n as i64);
        let exceeded: Vec<Resource> = [
            (after.cores > s.cores_total.1, Resource::Cores),
            (after.memory > gib(s.memory_total_gib.1), Resource::Memory),
            (
                n > 0 && above_gpu_max(&s.gpu_total, &after, &per),
                Resource::Gpu,
            ),
        ]
        .into_iter()
        .filter(|(over, _)| *over)
        .map(|(_, r)| r)
        .collect();
        (!exceeded.is_empty()).then_some(Refusal::ResourceLimits { exceeded })
    }

    /// Admits `count` new nodes of `g` for a surge (drift, expiry, consolidation), or says why not.
    pub fn take_surge(
        &mut self,
        ctx: &Ctx,
        memory: &Memory,
        g: &NodeGroup,
        count: i32,
    ) -> Result<(), Refusal> {
        if let Some(why) = self.surge_refusal(ctx, memory, g, count) {
            return Err(why);
        }
        self.count_scale_up(ctx, g, count);
        Ok(())
    }
}
