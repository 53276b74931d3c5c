//! The simulated eviction API, answering as the real one does, so a preview never shows an eviction
//! `run` would be refused: the pod's UID (here its incarnation: every eviction makes a new one) is the
//! precondition, and each PodDisruptionBudget covering a pod is counted down per eviction, a 429-like
//! refusal past its allowance. As the API does, a pod that is not running (pending, unbound, Failed or
//! Succeeded) or already terminating is evicted whatever the budgets say, and spends nothing.
//!
//! The allowance recovers as the PDB controller would recompute it, at each loop's start
//! ([`State::recount_budgets`]): `disruptionsAllowed` is the dump's, less the covered pods that were
//! running then and are not now (evicted and not yet back on a node), never below 0 nor above the dump's
//! (the dump does not say whether a budget is `minAvailable` or `maxUnavailable`, so pods beyond those it
//! had add nothing). A pod bound to a node counts as running: the simulation has no kubelet phases.

use std::sync::Arc;

use super::cluster::{Baseline, Refusal, SimCluster, State};
use crate::actuator::{Attempt, Evictee};
use crate::model::workload::{Pdb, Pod, PodPhase};

/// Whether the eviction API checks budgets for this pod: it runs (is bound) and is not terminating.
fn running(p: &Pod) -> bool {
    p.node_name.is_some()
        && p.meta.deleted.is_none()
        && !matches!(p.meta.phase, PodPhase::Failed | PodPhase::Succeeded)
}

/// Each budget's baseline: what it allowed in the dump, and the running pods it covered then.
pub fn baselines(pdbs: &[Pdb], pods: &[Arc<Pod>]) -> Vec<Baseline> {
    pdbs.iter()
        .map(|b| Baseline {
            running: pods.iter().filter(|p| running(p) && b.covers(p)).count() as i32,
            allowed: b.disruptions_allowed,
        })
        .collect()
}

impl State {
    /// The PDB controller at a loop's start: each budget's allowance recomputed from the covered
    /// pods running now (see the module's comment).
    pub fn recount_budgets(&mut self) {
        for (b, base) in self.pdbs.iter_mut().zip(&self.baselines) {
            let now = self
                .pods
                .iter()
                .filter(|p| running(p) && b.covers(p))
                .count() as i32;
            b.disruptions_allowed = (base.allowed - (base.running - now).max(0)).max(0);
        }
    }

    /// The pod as the actuator and the descheduler name it, its UID its incarnation.
    pub fn evictee(&self, p: &Pod) -> Evictee {
        let key = p.key();
        let n = self.incarnations.get(&key).copied().unwrap_or(0);
        Evictee {
            uid: Some(format!("{key}#{n}")),
            namespace: p.namespace.to_string(),
            name: p.name.clone(),
            grace_period: p.meta.grace_period,
            node: p.node_name.clone(),
        }
    }

    /// One request to the eviction API for `pod`: [`Attempt::Gone`] when no such pod is there (or
    /// another incarnation is), [`Attempt::Refused`] when a budget allows no more disruptions, else the
    /// budgets covering it are counted down and the pod is evicted. For the drain (`to` None) it leaves
    /// its node (a terminating one is gone, any other comes back pending); for the descheduler (`to`
    /// the node its plan placed it on) a failed pod is deleted, a pod without a controller is gone, a
    /// controller's pod is replaced by a new pending one.
    pub fn evict(&mut self, pod: &Evictee, to: Option<&str>) -> Attempt {
        let same = |p: &Arc<Pod>| p.namespace == pod.namespace && p.name == pod.name;
        let key = pod.key();
        let uid_matches =
            |state: &State, p: &Pod| pod.uid.is_none() || pod.uid == state.evictee(p).uid;
        if let Some(i) = self.failed.iter().position(same) {
            if !uid_matches(self, &self.failed[i]) {
                return Attempt::Gone;
            }
            self.failed.remove(i);
            return Attempt::Evicted;
        }
        // Where the placement last saw the pods of its node (the drain evicts a node's pods one by
        // one, and evictions before this one may have moved some): checked, else every pod looked at.
        let hinted = pod.node.as_deref().and_then(|n| {
            (self.placement.pods() == self.pods.len())
                .then(|| self.placement.positions_on([n]))?
                .into_iter()
                .find(|&k| same(&self.pods[k]))
        });
        let Some(i) = hinted.or_else(|| self.pods.iter().position(same)) else {
            return Attempt::Gone;
        };
        if !uid_matches(self, &self.pods[i]) {
            return Attempt::Gone;
        }
        if let Err(why) = self.spend_budgets(i) {
            self.refused.push(Refusal {
                pod: key,
                node: self.pods[i].node_name.clone().unwrap_or_default(),
                reason: why.clone(),
            });
            return Attempt::Refused(why);
        }
        *self.incarnations.entry(key).or_default() += 1;
        self.evicted += 1;
        match to {
            None if self.pods[i].meta.deleted.is_some() => {
                self.pods.remove(i);
            }
            None => Arc::make_mut(&mut self.pods[i]).node_name = None,
            Some(_) if self.pods[i].meta.controller.is_none() => {
                self.pods.remove(i);
            }
            Some(to) => {
                self.pods[i] = Arc::new(replacement(&self.pods[i], self.now));
                self.bind_at(i, to);
            }
        }
        Attempt::Evicted
    }

    /// Counts down the budgets covering pod `i`, or says which allows no more disruptions.
    fn spend_budgets(&mut self, i: usize) -> Result<(), String> {
        let p = &self.pods[i];
        if !running(p) {
            return Ok(());
        }
        let covering: Vec<usize> = (0..self.pdbs.len())
            .filter(|&j| self.pdbs[j].covers(p))
            .collect();
        if let Some(&j) = covering
            .iter()
            .find(|&&j| self.pdbs[j].disruptions_allowed < 1)
        {
            let b = &self.pdbs[j];
            return Err(format!(
                "429: Cannot evict pod as it would violate the pod's disruption budget {}/{}",
                b.namespace, b.name
            ));
        }
        for j in covering {
            self.pdbs[j].disruptions_allowed -= 1;
        }
        Ok(())
    }

    /// Binds pod `i` (a replacement, pending) on node `to` when that node is ready and takes it (the
    /// plan's placement scores nodes as the scheduler does; the simulated scheduler, first fit, binds
    /// it next loop otherwise).
    fn bind_at(&mut self, i: usize, to: &str) {
        let (infos, index): (Vec<_>, foldhash::HashMap<&str, usize>) =
            super::cluster::bound(&self.nodes, &self.pods);
        let Some(&j) = index.get(to) else {
            return;
        };
        if !infos[j].node.ready
            || crate::engine::predicates::fits(&self.pods[i], &infos, &infos[j]).is_err()
        {
            return;
        }
        Arc::make_mut(&mut self.pods[i]).node_name = Some(to.to_string());
    }
}

/// A controller's replacement of an evicted pod: the same spec, created at `now`, not yet bound, with
/// fresh containers (no ephemeral ones, no conditions yet).
fn replacement(pod: &Pod, now: i64) -> Pod {
    let mut p = pod.clone();
    p.node_name = None;
    p.meta.created = now;
    p.meta.unschedulable = false;
    p.meta.conditions = Default::default();
    p.meta.containers = pod
        .meta
        .containers
        .iter()
        .filter(|c| !c.ephemeral)
        .map(|c| crate::model::workload::ContainerState {
            init: c.init,
            ..Default::default()
        })
        .collect::<Vec<_>>()
        .into();
    p
}

/// The pod as the descheduler names it to the simulated cluster.
impl crate::descheduler::Identify for SimCluster {
    fn evictee(&self, pod: &Pod) -> Evictee {
        self.state().evictee(pod)
    }
}
