//! A timeline replayed loop by loop ([`Replay`]) and what it comes to ([`Answers`]): dollars, node
//! hours, pods waiting, evictions and nodes launched and removed, for the simulation and for what the
//! recording says really happened, with the simulation's error against it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use super::timeline::Timeline;
use super::{LoopReport, Pacing, Simulation};
use crate::cloud::memory::MemoryConfig;
use crate::engine::Settings;
use crate::error::Result;
use crate::model::workload::Pod;
use crate::pricing::PriceOverrides;

/// One loop's figures, simulated and real.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    sim_nodes: usize,
    sim_cost: f64,
    sim_pending: usize,
    real_nodes: usize,
    real_cost: f64,
    real_pending: usize,
}

/// A simulation driven by a timeline.
pub struct Replay {
    pub sim: Simulation,
    timeline: Timeline,
    /// Pods the timeline created, not bound yet in the simulation, with their creation time: by
    /// namespace, then name (looked up for every bound pod each loop, without making a key).
    waiting: HashMap<String, HashMap<String, i64>>,
    waits: Vec<i64>,
    samples: Vec<Sample>,
    prices: BTreeMap<String, f64>,
    /// The simulation's nodes after the last loop, to count those launched and removed.
    names: HashSet<String>,
    launched: u64,
    removed: u64,
}

impl Replay {
    /// The simulation at the timeline's start, on `config`'s groups.
    pub fn open(path: &Path, config: &MemoryConfig, prices: &PriceOverrides) -> Result<Replay> {
        let (start, mut timeline) = Timeline::open(path)?;
        let mut sim = Simulation::from_inputs(start.inputs()?, config, prices)?;
        timeline.real.set_groups(config);
        if timeline.start > sim.now() {
            sim.set_now(timeline.start);
        }
        let prices = sim
            .prices()
            .into_iter()
            .map(|(g, p)| (g, p.unwrap_or(0.0)))
            .collect();
        let names = sim
            .cluster()
            .state()
            .nodes
            .iter()
            .map(|n| n.name.clone())
            .collect();
        Ok(Replay {
            sim,
            timeline,
            waiting: HashMap::new(),
            waits: Vec::new(),
            samples: Vec::new(),
            prices,
            names,
            launched: 0,
            removed: 0,
        })
    }

    /// Whether every entry of the timeline has been replayed.
    pub fn done(&self) -> bool {
        self.timeline.next_time().is_none()
    }

    /// Replays what the timeline says happened up to the next loop, then runs the loop.
    pub fn step(&mut self, settings: &Settings, pacing: &Pacing) -> Result<LoopReport> {
        let now = self.sim.now();
        let due = self.timeline.due(now)?;
        {
            let mut state = self.sim.cluster().state();
            if !due.removed.is_empty() {
                let mut gone: HashMap<&str, HashSet<&str>> = HashMap::new();
                for (ns, name) in &due.removed {
                    gone.entry(ns).or_default().insert(name);
                    if let Some(names) = self.waiting.get_mut(ns) {
                        names.remove(name);
                    }
                }
                state.pods.retain(|p| {
                    !gone
                        .get(p.namespace.as_str())
                        .is_some_and(|names| names.contains(p.name.as_str()))
                });
            }
            for p in due.added {
                self.waiting
                    .entry(p.namespace.to_string())
                    .or_default()
                    .insert(p.name.clone(), p.meta.created.min(now));
                state.pods.push(Arc::new(p));
            }
            if due.budgets_changed {
                let pdbs = self.timeline.objects.pdbs.iter();
                state.pdbs = pdbs
                    .filter_map(|b| crate::k8s::objects::pdb(b).ok())
                    .collect();
                state.baselines = super::evictions::baselines(&state.pdbs, &state.pods);
            }
        }
        for (node, spot) in &due.lost {
            self.sim.lose(node, *spot);
        }
        let report = self.sim.step(settings, pacing);
        self.sample(now, &report);
        Ok(report)
    }

    /// Takes the loop's figures.
    fn sample(&mut self, now: i64, report: &LoopReport) {
        let mut guard = self.sim.cluster().state();
        let state = &mut *guard;
        // The pods without a node, from the placement the next loop starts from: a pod waiting since
        // its creation that is not among them was bound.
        state.placement.refresh(&state.pods);
        let pending: Vec<&Pod> = state.placement.pending().map(|k| &*state.pods[k]).collect();
        self.waiting.retain(|_, names| !names.is_empty());
        if !self.waiting.is_empty() {
            let still: HashSet<(&str, &str)> = pending
                .iter()
                .map(|p| (p.namespace.as_str(), p.name.as_str()))
                .collect();
            for (ns, names) in &mut self.waiting {
                names.retain(|name, since| {
                    let bound = !still.contains(&(ns.as_str(), name.as_str()));
                    if bound {
                        self.waits.push((now - *since).max(0));
                    }
                    !bound
                });
            }
        }
        let names: HashSet<&str> = state.nodes.iter().map(|n| n.name.as_str()).collect();
        let launched = names.iter().filter(|n| !self.names.contains(**n)).count();
        let removed = self.names.len() - (names.len() - launched);
        if launched + removed > 0 {
            self.launched += launched as u64;
            self.removed += removed as u64;
            self.names = names.iter().map(|n| n.to_string()).collect();
        }
        let cost = |by_group: &BTreeMap<String, usize>| {
            by_group
                .iter()
                .map(|(g, n)| *n as f64 * self.prices.get(g).copied().unwrap_or(0.0))
                .sum()
        };
        let real = self.timeline.real.by_group();
        self.samples.push(Sample {
            sim_nodes: state.nodes.len(),
            sim_cost: cost(&report.nodes),
            sim_pending: pending.len(),
            real_nodes: real.values().sum(),
            real_cost: cost(&real),
            real_pending: self.timeline.real.pending(),
        });
    }

    /// What really happened, per loop: (cost per hour, nodes, pods waiting).
    pub fn recorded(&self) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let s = &self.samples;
        (
            s.iter().map(|x| x.real_cost).collect(),
            s.iter().map(|x| x.real_nodes as f64).collect(),
            s.iter().map(|x| x.real_pending as f64).collect(),
        )
    }

    /// What the replay comes to, with `loop_secs` between loops.
    pub fn answers(&self, loop_secs: u64) -> Answers {
        let hours = loop_secs as f64 / 3600.0;
        let secs = loop_secs as f64;
        let s = &self.samples;
        let sum = |f: fn(&Sample) -> f64| s.iter().map(f).sum::<f64>();
        let mean_abs = |f: fn(&Sample) -> f64| {
            if s.is_empty() {
                0.0
            } else {
                sum(f) / s.len() as f64
            }
        };
        let evictions = self.sim.cluster().state().evicted;
        Answers {
            summary: Figures {
                cost_dollars: round(sum(|x| x.sim_cost) * hours, 2),
                node_hours: round(sum(|x| x.sim_nodes as f64) * hours, 2),
                pending_pod_seconds: round(sum(|x| x.sim_pending as f64) * secs, 0),
                p50_time_to_schedule_seconds: percentile(&self.waits, 50),
                p99_time_to_schedule_seconds: percentile(&self.waits, 99),
                evictions: Some(evictions),
                nodes_launched: self.launched,
                nodes_removed: self.removed,
            },
            real: Figures {
                cost_dollars: round(sum(|x| x.real_cost) * hours, 2),
                node_hours: round(sum(|x| x.real_nodes as f64) * hours, 2),
                pending_pod_seconds: round(sum(|x| x.real_pending as f64) * secs, 0),
                p50_time_to_schedule_seconds: percentile(&self.timeline.real.waits, 50),
                p99_time_to_schedule_seconds: percentile(&self.timeline.real.waits, 99),
                // Evictions are no objects: a timeline does not show them.
                evictions: None,
                nodes_launched: self.timeline.real.launched,
                nodes_removed: self.timeline.real.removed,
            },
            error: Error {
                node_count_mae: round(
                    mean_abs(|x| (x.sim_nodes as f64 - x.real_nodes as f64).abs()),
                    3,
                ),
                cost_per_hour_mae: round(mean_abs(|x| (x.sim_cost - x.real_cost).abs()), 4),
            },
            loops: s.len(),
            calibrated: None,
            skipped_pods: self.timeline.skipped,
        }
    }
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// The `p`th percentile (nearest rank) of `values`; `None` when there are none.
fn percentile(values: &[i64], p: usize) -> Option<i64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

/// The figures of one side (simulated or real).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    pub cost_dollars: f64,
    pub node_hours: f64,
    pub pending_pod_seconds: f64,
    pub p50_time_to_schedule_seconds: Option<i64>,
    pub p99_time_to_schedule_seconds: Option<i64>,
    /// `None` for the real side: a timeline holds no evictions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evictions: Option<u64>,
    pub nodes_launched: u64,
    pub nodes_removed: u64,
}

/// How far the simulation was from what happened, loop by loop.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Error {
    /// Mean absolute difference of the node count.
    pub node_count_mae: f64,
    /// Mean absolute difference of the cost per hour, in dollars.
    pub cost_per_hour_mae: f64,
}

/// The last line of a replay.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Answers {
    pub summary: Figures,
    pub real: Figures,
    pub error: Error,
    pub loops: usize,
    /// The start-up times the replay took from the timeline (those not given as flags).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibrated: Option<super::Calibration>,
    /// Pods the timeline created that the simulated kubelet makes itself (DaemonSet, mirror pods).
    pub skipped_pods: u64,
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50), Some(50));
        assert_eq!(percentile(&v, 99), Some(99));
        assert_eq!(percentile(&[7], 99), Some(7));
        assert_eq!(percentile(&[], 50), None);
    }
}
