//! One cycle's evictions, planned together. The descheduler evicts what each strategy names, checking at
//! most that the pod alone fits some other node; here every proposal is placed by the scheduling
//! simulation (`engine::predicates`: resources, taints, affinity, anti-affinity, spread, volumes) on the
//! cluster as it will be after the evictions planned before it, and is declined, with why, when it has
//! no better place that exists now (not its own node, not a node being removed, not the node an earlier
//! cycle moved it from), when a disruption budget or the policy's limits are spent, or when its workload
//! was moved within the cooldown.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::args::Strategy;
use super::policy::Policy;
use super::strategies;
use super::view::{Cluster, Proposal, Verdict, View};
use super::Evictor;
use crate::clock::Clock;
use crate::model::workload::{LabelSelector, Node, Pod};

mod follow;
mod history;
mod sim;
mod skipped;
mod why;

use sim::Sim;

pub use history::{owner_key, History, Move};
pub use skipped::{reads_metrics, Skipped, Unavailable};
pub use why::{Blocked, Limit, Why};

/// Settings of the planner beyond the policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// A workload (by owner) evicted is not evicted again for this long (`--deschedule-cooldown`).
    pub cooldown_secs: i64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            cooldown_secs: 30 * 60,
        }
    }
}

/// An eviction the plan makes.
#[derive(Debug, Clone)]
pub struct Eviction {
    pub pod: Arc<Pod>,
    pub node: String,
    pub strategy: Strategy,
    /// The policy's profile whose strategy proposed it.
    pub profile: String,
    /// Where the simulation places it (its replacement, for a controller's pod); empty for a finished
    /// (failed or succeeded) pod, which needs no place.
    pub to: String,
}

/// A proposal the plan declines.
#[derive(Debug, Clone)]
pub struct Declined {
    pub pod: Arc<Pod>,
    pub node: String,
    pub strategy: Strategy,
    /// The policy's profile whose strategy proposed it.
    pub profile: String,
    pub why: Why,
}

/// One cycle's plan.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub evictions: Vec<Eviction>,
    pub declined: Vec<Declined>,
    /// Nodes `HighNodeUtilization` empties (every pod but DaemonSet and static ones planned away): `run`
    /// and `simulate` remove them through scale-down's path (taint, drain, delete) rather than evicting
    /// pod by pod ([`Plan::hand_over_emptied`]), so nothing lands on them meanwhile.
    pub emptied: Vec<String>,
    /// How long each profile's strategy took to propose and its proposals to be checked, in the order
    /// they ran (the descheduler's `strategy_duration_seconds`).
    pub durations: Vec<StrategyRun>,
    /// Strategies that did not run this cycle, with why (`metricsUtilization` without the metrics).
    pub skipped: Vec<Skipped>,
}

impl Plan {
    /// Takes the evictions from the emptied nodes out of the plan and returns them: `run` and
    /// `simulate` hand those nodes to scale-down (`Memory::emptying`), whose drain evicts their pods
    /// once the node carries the deletion taint, so none comes back meanwhile.
    pub fn hand_over_emptied(&mut self) -> Vec<Eviction> {
        let (handed, kept) = std::mem::take(&mut self.evictions)
            .into_iter()
            .partition(|e| self.emptied.contains(&e.node));
        self.evictions = kept;
        handed
    }
}

/// One strategy's run in a cycle.
#[derive(Debug, Clone, PartialEq)]
pub struct StrategyRun {
    pub profile: String,
    pub strategy: Strategy,
    pub proposals: usize,
    pub seconds: f64,
}

/// Plans one cycle of `policy` on `cluster`: every profile's `deschedule` strategies, then every
/// profile's `balance` strategies, as the descheduler runs them, each proposal checked in turn.
/// Strategies' durations are measured on `clock`.
pub fn plan(
    policy: &Policy,
    cluster: &Cluster,
    history: &History,
    settings: &Settings,
    clock: &dyn Clock,
) -> Plan {
    // The strategies look at the ready nodes the policy's `nodeSelector` selects, as the descheduler
    // lists them; pods may move to any node.
    let selector = match policy.node_selector.as_deref().map(LabelSelector::parse) {
        Some(Ok(sel)) => Some(sel),
        // The policy is checked when read; a selector that does not parse selects no node.
        Some(Err(_)) => return Plan::default(),
        None => None,
    };
    let selected: Vec<Node> = cluster
        .nodes
        .iter()
        .filter(|n| n.ready && selector.as_ref().is_none_or(|s| s.matches(&n.labels)))
        .cloned()
        .collect();
    // As the descheduler: a cycle needs two ready nodes (one alone: evictions only disrupt).
    if selected.len() <= 1 {
        return Plan::default();
    }
    let cluster_for_strategies = Cluster {
        nodes: &selected,
        ..*cluster
    };
    let view = View::new(&cluster_for_strategies);
    let mut planner = Planner::new(policy, cluster, history, settings);
    for balance in [false, true] {
        for profile in &policy.profiles {
            let evictor = Evictor::new(&profile.evictor, &view);
            for args in profile
                .strategies
                .iter()
                .filter(|a| strategies::balances(a.strategy()) == balance)
            {
                if let Err(why) = skipped::check(args, &view) {
                    planner.out.skipped.push(Skipped {
                        profile: profile.name.clone(),
                        strategy: args.strategy(),
                        why,
                    });
                    continue;
                }
                let start = clock.elapsed();
                let mut n = 0;
                strategies::propose_into(args, &view, &evictor, &mut |p| {
                    n += 1;
                    planner.consider(p, &profile.name)
                });
                // The pods it considered and the evictor kept, each with why.
                for (pod, kept) in evictor.take_kept() {
                    planner.out.declined.push(Declined {
                        node: pod.node_name.clone().unwrap_or_default(),
                        pod,
                        strategy: args.strategy(),
                        profile: profile.name.clone(),
                        why: Why::Kept(kept),
                    });
                }
                planner.out.durations.push(StrategyRun {
                    profile: profile.name.clone(),
                    strategy: args.strategy(),
                    proposals: n,
                    seconds: clock.elapsed().saturating_sub(start).as_secs_f64(),
                });
            }
        }
    }
    let mut out = planner.out;
    out.emptied = emptied(&out, &view);
    out
}

/// The nodes `HighNodeUtilization` moves every pod off (DaemonSet and static pods stay with the node).
fn emptied(plan: &Plan, view: &View) -> Vec<String> {
    let leaving: HashSet<(&str, &str)> = plan
        .evictions
        .iter()
        .map(|e| (e.pod.namespace.as_str(), e.pod.name.as_str()))
        .collect();
    let mut nodes: Vec<&str> = plan
        .evictions
        .iter()
        .filter(|e| e.strategy == Strategy::HighNodeUtilization)
        .map(|e| e.node.as_str())
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    nodes
        .into_iter()
        .filter(|n| {
            view.pods_on(n).iter().all(|p| {
                p.is_daemon_set()
                    || p.meta.mirror
                    || leaving.contains(&(p.namespace.as_str(), p.name.as_str()))
            })
        })
        .map(str::to_string)
        .collect()
}

/// The state of one cycle's planning.
struct Planner<'a> {
    policy: &'a Policy,
    cluster: &'a Cluster<'a>,
    history: &'a History,
    settings: &'a Settings,
    /// The rules of the policy's strategies that placements keep.
    rules: follow::Rules<'a>,
    sim: Sim,
    /// Pods planned already, by key.
    planned: HashSet<(String, String)>,
    /// Owner key → the strategy moving it this cycle.
    owners: HashMap<String, Strategy>,
    per_node: HashMap<String, u32>,
    per_namespace: HashMap<String, u32>,
    /// Disruptions left per PDB (index in `cluster.pdbs`).
    budgets: Vec<i32>,
    /// The candidate nodes of the last `onto` seen (proposals of one strategy run share it).
    #[allow(clippy::type_complexity)]
    onto_cache: Option<(Option<Arc<[String]>>, Vec<usize>)>,
    out: Plan,
}

impl<'a> Planner<'a> {
    fn new(
        policy: &'a Policy,
        cluster: &'a Cluster<'a>,
        history: &'a History,
        settings: &'a Settings,
    ) -> Self {
        Planner {
            policy,
            cluster,
            history,
            settings,
            rules: follow::Rules::new(policy),
            sim: Sim::new(cluster.nodes, cluster.pods),
            planned: HashSet::new(),
            owners: HashMap::new(),
            per_node: HashMap::new(),
            per_namespace: HashMap::new(),
            budgets: cluster.pdbs.iter().map(|p| p.disruptions_allowed).collect(),
            onto_cache: None,
            out: Plan::default(),
        }
    }

    /// Plans the proposal or declines it, saying which to the strategy.
    fn consider(&mut self, p: Proposal, profile: &str) -> Verdict {
        let key = (p.pod.namespace.to_string(), p.pod.name.clone());
        if self.planned.contains(&key) {
            return Verdict::Declined;
        }
        match self.check(&p) {
            Ok((to, pdbs)) => {
                self.commit(&p, to.as_ref(), &pdbs);
                self.planned.insert(key);
                self.out.evictions.push(Eviction {
                    to: to.map(|(name, _)| name).unwrap_or_default(),
                    pod: p.pod,
                    node: p.node,
                    strategy: p.strategy,
                    profile: profile.to_string(),
                });
                Verdict::Evicted
            }
            Err(why) => {
                let verdict = match why {
                    Why::Limit(Limit::PerNode(_) | Limit::Total(_)) => Verdict::NodeDone,
                    _ => Verdict::Declined,
                };
                self.out.declined.push(Declined {
                    pod: p.pod,
                    node: p.node,
                    strategy: p.strategy,
                    profile: profile.to_string(),
                    why,
                });
                verdict
            }
        }
    }

    /// Where the pod goes (None: a finished pod, which needs no place) and the budgets it spends, or
    /// why not.
    #[allow(clippy::type_complexity)]
    fn check(&mut self, p: &Proposal) -> Result<(Option<(String, usize)>, Vec<usize>), Why> {
        let owner = owner_key(&p.pod);
        if let Some(&by) = self.owners.get(&owner) {
            if by != p.strategy {
                return Err(Why::Contested { by });
            }
        }
        let history = self.history;
        let last = history.last(&owner);
        if let Some(m) = last {
            let until = m.at + self.settings.cooldown_secs;
            if self.cluster.now < until {
                return Err(Why::Cooldown { until });
            }
        }
        self.limits(p)?;
        // A finished pod needs no place, and its eviction spends no disruption budget: the API
        // evicts a pod that is not running without checking them.
        if p.pod.meta.phase.finished() {
            return Ok((None, Vec::new()));
        }
        let pdbs: Vec<usize> = self
            .cluster
            .pdbs
            .iter()
            .enumerate()
            .filter(|(_, b)| b.covers(&p.pod))
            .map(|(i, _)| i)
            .collect();
        if let Some(&i) = pdbs.iter().find(|&&i| self.budgets[i] <= 0) {
            let b = &self.cluster.pdbs[i];
            return Err(Why::Budget {
                pdb: format!("{}/{}", b.namespace, b.name),
            });
        }
        let to = self.destination(p, last.map(|m| m.from.as_str()))?;
        Ok((Some(to), pdbs))
    }

    fn limits(&self, p: &Proposal) -> Result<(), Why> {
        let policy = self.policy;
        if let Some(n) = policy.max_total {
            if self.out.evictions.len() as u32 >= n {
                return Err(Why::Limit(Limit::Total(n)));
            }
        }
        if let Some(n) = policy.max_per_node {
            if self.per_node.get(&p.node).copied().unwrap_or(0) >= n {
                return Err(Why::Limit(Limit::PerNode(n)));
            }
        }
        if let Some(n) = policy.max_per_namespace {
            if self
                .per_namespace
                .get(p.pod.namespace.as_str())
                .copied()
                .unwrap_or(0)
                >= n
            {
                return Err(Why::Limit(Limit::PerNamespace(n)));
            }
        }
        Ok(())
    }

    /// The node the pod's replacement would land on, on the cluster as it will be, never its own node,
    /// a node being removed, a node where the policy's strategies would evict it again, or (when
    /// another exists) the node an earlier cycle moved it from.
    fn destination(&mut self, p: &Proposal, undo: Option<&str>) -> Result<(String, usize), Why> {
        let all = self.candidates(p);
        let mut pod = (*p.pod).clone();
        pod.node_name = None;
        let pack = p.strategy == Strategy::HighNodeUtilization;
        let (candidates, narrowed) = self.rules.narrow(&pod, &self.sim, all.clone());
        let hard = self.rules.harden(&pod);
        let sim = &mut self.sim;
        let away: Vec<usize> = candidates
            .iter()
            .copied()
            .filter(|&j| Some(sim.node(j).name.as_str()) != undo)
            .collect();
        // Placed as the scheduler would see it once the pod has left its node (its own node restored
        // after: only `commit` changes the simulation). A pod whose fit reads each node alone is
        // never placed on its own node, so it need not leave it.
        let own = sim.index.get(&p.node).copied();
        let lifted = own
            .filter(|_| !sim.local(&pod) || hard.is_some())
            .map(|i| sim.lift(&p.pod, i));
        let strict = hard.as_ref().unwrap_or(&pod);
        let found = match sim.place(strict, &away, pack) {
            Ok(j) => Ok((sim.node(j).name.clone(), j)),
            Err(why) => match undo {
                Some(u)
                    if away.len() < candidates.len()
                        && sim.place(strict, &candidates, pack).is_ok() =>
                {
                    Err(Why::WouldUndo {
                        node: u.to_string(),
                    })
                }
                // Only the strategies' rules stand in the way.
                _ if (narrowed.is_some() || hard.is_some())
                    && sim.place(&pod, &all, pack).is_ok() =>
                {
                    let spread = Strategy::RemovePodsViolatingTopologySpreadConstraint;
                    let strategy = match narrowed {
                        Some(s) if hard.is_none() || sim.place(strict, &all, pack).is_ok() => s,
                        _ => spread,
                    };
                    Err(Why::WouldRecreate { strategy })
                }
                _ => Err(Why::NoPlace(why)),
            },
        };
        if let Some(lifted) = lifted {
            sim.put_back(lifted);
        }
        found
    }

    /// The nodes a proposal's pod may go to: ready, not its own, not being removed, among the strategy's
    /// `onto` when it names some. Kept for the proposals that share one `onto`.
    fn candidates(&mut self, p: &Proposal) -> Vec<usize> {
        let fresh = match (&self.onto_cache, &p.onto) {
            (Some((Some(a), _)), Some(b)) => !Arc::ptr_eq(a, b),
            (Some((None, _)), None) => false,
            _ => true,
        };
        if fresh {
            let onto: Option<HashSet<&str>> = p
                .onto
                .as_ref()
                .map(|o| o.iter().map(String::as_str).collect());
            let sim = &self.sim;
            let all: Vec<usize> = (0..sim.len())
                .filter(|&j| {
                    let n = sim.node(j);
                    n.ready
                        && !self.cluster.removing.contains(&n.name)
                        && onto.as_ref().is_none_or(|o| o.contains(n.name.as_str()))
                })
                .collect();
            self.onto_cache = Some((p.onto.clone(), all));
        }
        let own = self.sim.index.get(&p.node).copied();
        let all = &self.onto_cache.as_ref().expect("filled above").1;
        all.iter().copied().filter(|&j| Some(j) != own).collect()
    }

    /// Records a planned eviction in the simulation, the budgets and the limits.
    fn commit(&mut self, p: &Proposal, to: Option<&(String, usize)>, pdbs: &[usize]) {
        for &i in pdbs {
            self.budgets[i] -= 1;
        }
        *self.per_node.entry(p.node.clone()).or_default() += 1;
        *self
            .per_namespace
            .entry(p.pod.namespace.to_string())
            .or_default() += 1;
        let Some((name, j)) = to else {
            // A finished pod's removal moves nothing: its workload stays free for other strategies.
            return;
        };
        self.owners.insert(owner_key(&p.pod), p.strategy);
        if let Some(&i) = self.sim.index.get(&p.node) {
            self.sim.remove(&p.pod, i);
        }
        let mut moved = (*p.pod).clone();
        moved.node_name = Some(name.clone());
        self.sim.add(moved, *j);
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_converge;
#[cfg(test)]
mod tests_finished;
#[cfg(test)]
mod tests_follow;
#[cfg(test)]
mod tests_kept;
#[cfg(test)]
mod tests_memo;
