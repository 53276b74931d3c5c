//! Expanders: given scale-up options (a node group, how many nodes, which pods they would host), keep the
//! best. Upstream cluster-autoscaler's semantics: each strategy of a chain keeps its best ties and the next
//! one breaks them; `random` picks one. Every decision carries the scores that made it.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};

use regex::Regex;
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::model::{Resources, TemplateNode};

/// One way to scale up.
#[derive(Debug, Clone)]
pub struct ExpansionOption {
    pub group: String,
    pub node_count: i32,
    /// Requests of the pods the new nodes would host.
    pub pods: Vec<Resources>,
    /// What one new node looks like.
    pub template: TemplateNode,
    /// Hourly price of one node, when known.
    pub price_per_hour: Option<f64>,
}

/// A strategy of `--expander`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Random,
    MostPods,
    LeastWaste,
    LeastNodes,
    Price,
    Priority,
}

impl Strategy {
    /// Every strategy, in upstream's order.
    pub const ALL: [Strategy; 6] = [
        Strategy::Random,
        Strategy::MostPods,
        Strategy::LeastWaste,
        Strategy::LeastNodes,
        Strategy::Price,
        Strategy::Priority,
    ];

    /// Parses a comma-separated chain, as upstream's `--expander` flag.
    pub fn parse_chain(text: &str) -> Result<Vec<Strategy>> {
        text.split(',')
            .map(|s| {
                let s = s.trim();
                Strategy::ALL
                    .into_iter()
                    .find(|x| x.name() == s)
                    .ok_or_else(|| {
                        Error::Config(format!(
                            "--expander: unknown strategy {s:?} (random, most-pods, least-waste, least-nodes, price, priority)"
                        ))
                    })
            })
            .collect()
    }

    /// A chain as `--expander` spells it (`least-waste,price`): what [`Strategy::parse_chain`] reads.
    pub fn chain_text(chain: &[Strategy]) -> String {
        chain.iter().map(|s| s.name()).collect::<Vec<_>>().join(",")
    }

    /// The strategy's name in `--expander`.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Random => "random",
            Strategy::MostPods => "most-pods",
            Strategy::LeastWaste => "least-waste",
            Strategy::LeastNodes => "least-nodes",
            Strategy::Price => "price",
            Strategy::Priority => "priority",
        }
    }
}

/// The most regexes the priorities may hold, counted before any is compiled.
pub const MAX_PRIORITY_PATTERNS: usize = 1_000;

/// Upstream's `priorities` ConfigMap key: priority → regexes over group ids; higher wins.
#[derive(Debug, Clone, Default)]
pub struct Priorities(Vec<(i64, Vec<Regex>)>);

impl Priorities {
    /// Parses the YAML (`10: [".*spot.*"]`); a bad regex names its priority. Text over
    /// [`crate::bounds::PRIORITIES`] is refused before it is parsed.
    pub fn parse(yaml: &str) -> Result<Self> {
        crate::bounds::PRIORITIES.check_yaml(yaml)?;
        #[derive(Deserialize)]
        struct Raw(BTreeMap<i64, Vec<String>>);
        let raw: Raw =
            serde_norway::from_str(yaml).map_err(|e| Error::Config(format!("priorities: {e}")))?;
        let patterns: usize = raw.0.values().map(Vec::len).sum();
        if patterns > MAX_PRIORITY_PATTERNS {
            return Err(Error::Config(format!(
                "priorities: {patterns} regexes is over the limit of {MAX_PRIORITY_PATTERNS}"
            )));
        }
        let mut tiers = Vec::new();
        for (p, patterns) in raw.0.into_iter().rev() {
            let compiled = patterns
                .iter()
                .map(|r| {
                    Regex::new(r).map_err(|e| Error::Config(format!("priorities[{p}]: {r:?}: {e}")))
                })
                .collect::<Result<Vec<_>>>()?;
            tiers.push((p, compiled));
        }
        Ok(Priorities(tiers))
    }

    /// The highest priority whose regexes match `group`.
    pub fn of(&self, group: &str) -> Option<i64> {
        self.0
            .iter()
            .find(|(_, rs)| rs.iter().any(|r| r.is_match(group)))
            .map(|(p, _)| *p)
    }
}

/// What the strategies need besides the options.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// Nodes in the cluster now (the price strategy prefers bigger nodes in bigger clusters).
    pub cluster_nodes: usize,
    pub priorities: Priorities,
    /// Where the `random` strategy draws from: `None` for a fresh random number each time (the gRPC
    /// expander, as upstream), `Some` for a draw fixed by the seed (the loop's own expander: see [`seed`]).
    pub seed: Option<u64>,
}

/// The options kept, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Indices into the options given.
    pub kept: Vec<usize>,
    /// One line per strategy applied, with each candidate's score.
    pub explanation: Vec<String>,
    /// The best option the deciding strategy dropped: the closest contender, for the decision log.
    pub runner_up: Option<usize>,
}

const GIB: f64 = (1u64 << 30) as f64;
/// Relative tolerance under which two scores tie.
const TIE: f64 = 1e-9;

fn pod_sum(o: &ExpansionOption) -> (f64, f64, i64) {
    o.pods.iter().fold((0.0, 0.0, 0), |(c, m, g), p| {
        (
            c + p.cpu_milli as f64 / 1000.0,
            m + p.memory as f64,
            g + p.gpus(),
        )
    })
}

/// upstream least-waste: unused share of cpu plus of memory over node_count × capacity (lower is better).
fn waste(o: &ExpansionOption) -> f64 {
    let (cpu, mem, _) = pod_sum(o);
    let n = f64::from(o.node_count.max(1));
    let avail_cpu = n * o.template.capacity.cpu_milli as f64 / 1000.0;
    let avail_mem = n * o.template.capacity.memory as f64;
    let part = |avail: f64, used: f64| {
        if avail > 0.0 {
            (avail - used) / avail
        } else {
            0.0
        }
    };
    part(avail_cpu, cpu) + part(avail_mem, mem)
}

/// Upstream's preferred node size for a cluster of `nodes` nodes, in CPUs.
fn preferred_cpus(nodes: usize) -> f64 {
    match nodes {
        0..=2 => 1.0,
        3..=6 => 2.0,
        7..=20 => 4.0,
        21..=60 => 8.0,
        61..=200 => 16.0,
        _ => 32.0,
    }
}

/// Score of the price strategy (lower is better): unfitness × (node cost + X) / (pod cost + X), where X is
/// the cost of a 0.5 CPU / 500 MiB pod, unfitness compares the node with the preferred size (damped by the
/// node count) and a GPU node for pods that need no GPU is heavily penalised. Costs are hourly. When the
/// cheapest option is free (a group priced 0, say reserved capacity), every rate and so the pod cost and
/// X are 0: the node cost alone then ranks the options, and the free one wins.
fn price_score(o: &ExpansionOption, ctx: &Context, rates: (f64, f64)) -> Option<f64> {
    let node_price = o.price_per_hour?;
    let (cpu, mem, gpus) = pod_sum(o);
    let (cpu_rate, mem_rate) = rates;
    let pod_cost = cpu * cpu_rate + mem / GIB * mem_rate;
    let stabilizer = 0.5 * cpu_rate + (500.0 * 1024.0 * 1024.0) / GIB * mem_rate;
    let node_cost = node_price * f64::from(o.node_count.max(1));
    let node_cpus = o.template.capacity.cpu_milli as f64 / 1000.0;
    let pref = preferred_cpus(ctx.cluster_nodes);
    let unfitness = if (o.template.capacity.gpus() > 0 && gpus == 0) || node_cpus <= 0.0 {
        1000.0
    } else {
        let u = (pref / node_cpus).max(node_cpus / pref);
        let n = f64::from(o.node_count.max(1));
        (u - 1.0) * (1.0 - ((n - 1.0) / 15.0).tanh()) + 1.0
    };
    let value = pod_cost + stabilizer;
    Some(if value > 0.0 {
        unfitness * (node_cost + stabilizer) / value
    } else {
        unfitness * node_cost
    })
}

/// Cheapest per-vCPU-hour and per-GiB-hour rates among the options (half the node price to each).
fn rates(options: &[&ExpansionOption]) -> (f64, f64) {
    let priced = options
        .iter()
        .filter_map(|o| Some((o.price_per_hour?, &o.template.capacity)));
    let (cpu, mem, _) = crate::pricing::cheapest_rates(priced);
    (cpu.unwrap_or(0.0), mem.unwrap_or(0.0))
}

/// Keeps the lowest (or highest) scores; options without a score drop out unless none has one.
fn keep_best(scores: &[(usize, Option<f64>)], lower_is_better: bool) -> Vec<usize> {
    let scored: Vec<(usize, f64)> = scores
        .iter()
        .filter_map(|(i, s)| s.map(|s| (*i, s)))
        .collect();
    if scored.is_empty() {
        return scores.iter().map(|(i, _)| *i).collect();
    }
    let best = scored.iter().map(|(_, s)| *s).fold(
        if lower_is_better {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        },
        |a, b| {
            if lower_is_better {
                a.min(b)
            } else {
                a.max(b)
            }
        },
    );
    scored
        .iter()
        .filter(|(_, s)| (s - best).abs() <= TIE * best.abs().max(1.0))
        .map(|(i, _)| *i)
        .collect()
}

/// An index below `len`: from `seed` when given, else fresh randomness.
fn random_index(len: usize, seed: Option<u64>) -> usize {
    let draw = match seed {
        Some(s) => mix(s ^ len as u64),
        None => {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(len);
            h.finish()
        }
    };
    (draw % len.max(1) as u64) as usize
}

/// splitmix64's finaliser: spreads a seed's bits so near seeds draw far apart.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The seed of a loop's random choices among `options`: the loop's time and the options (group, node
/// count). Upstream draws at random among the options a chain leaves tied; the engine must decide the
/// same from the same snapshot and time (so `simulate` replays exactly and tests can hold it), so it
/// draws from this seed: which tied group wins varies from loop to loop and cluster to cluster, as
/// upstream's, and never favours the first group listed, yet one snapshot at one time always decides
/// alike. Hashed by hand (FNV-1a, then mixed) so the draw does not change between builds.
pub fn seed(now: i64, options: &[ExpansionOption]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    eat(&now.to_le_bytes());
    for o in options {
        eat(o.group.as_bytes());
        eat(&[0]);
        eat(&o.node_count.to_le_bytes());
    }
    mix(h)
}

/// Upstream's last step: one option among those the chain left tied, at random (from `seed`).
pub fn tie_break(kept: &[usize], seed: Option<u64>) -> Option<usize> {
    match kept {
        [] => None,
        [one] => Some(*one),
        _ => Some(kept[random_index(kept.len(), seed)]),
    }
}

/// Applies a chain of strategies to the options.
pub fn choose(chain: &[Strategy], options: &[ExpansionOption], ctx: &Context) -> Decision {
    let mut kept: Vec<usize> = (0..options.len()).collect();
    let mut explanation = Vec::new();
    let mut runner_up = None;
    for &strategy in chain {
        // As upstream's chain: every strategy filters until one option is left (the first filters
        // a lone option too: least-nodes drops one of no nodes).
        if kept.is_empty() || (kept.len() == 1 && !explanation.is_empty()) {
            break;
        }
        let candidates: Vec<&ExpansionOption> = kept.iter().map(|&i| &options[i]).collect();
        let scores: Vec<(usize, Option<f64>)> = match strategy {
            Strategy::Random => {
                let pick = kept[random_index(kept.len(), ctx.seed)];
                explanation.push(format!("random: picked {}", options[pick].group));
                kept = vec![pick];
                continue;
            }
            Strategy::MostPods => kept
                .iter()
                .map(|&i| (i, Some(options[i].pods.len() as f64)))
                .collect(),
            // An option of no nodes is no option (upstream drops it).
            Strategy::LeastNodes => kept
                .iter()
                .filter(|&&i| options[i].node_count > 0)
                .map(|&i| (i, Some(f64::from(options[i].node_count))))
                .collect(),
            Strategy::LeastWaste => kept
                .iter()
                .map(|&i| (i, Some(waste(&options[i]))))
                .collect(),
            Strategy::Price => {
                let r = rates(&candidates);
                kept.iter()
                    .map(|&i| (i, price_score(&options[i], ctx, r)))
                    .collect()
            }
            Strategy::Priority => {
                let any = kept
                    .iter()
                    .any(|&i| ctx.priorities.of(&options[i].group).is_some());
                kept.iter()
                    .map(|&i| (i, ctx.priorities.of(&options[i].group).map(|p| p as f64)))
                    .filter(|(_, p)| p.is_some() || !any)
                    .collect()
            }
        };
        // A score that is not a finite number (a bad price or template) ranks nothing: it drops out.
        let scores: Vec<(usize, Option<f64>)> = scores
            .into_iter()
            .map(|(i, s)| (i, s.filter(|x| x.is_finite())))
            .collect();
        let lower = matches!(
            strategy,
            Strategy::LeastNodes | Strategy::LeastWaste | Strategy::Price
        );
        let line = scores
            .iter()
            .map(|(i, s)| match s {
                Some(s) => format!("{}={s:.4}", options[*i].group),
                None => format!("{}=n/a", options[*i].group),
            })
            .collect::<Vec<_>>()
            .join(" ");
        explanation.push(format!("{}: {line}", strategy.name()));
        let next = keep_best(&scores, lower);
        let dropped = scores
            .iter()
            .filter(|(i, _)| !next.contains(i))
            .filter_map(|&(i, s)| Some((i, s?)));
        let best_dropped = if lower {
            dropped.min_by(|a, b| a.1.total_cmp(&b.1))
        } else {
            dropped.max_by(|a, b| a.1.total_cmp(&b.1))
        };
        if let Some((i, _)) = best_dropped {
            runner_up = Some(i);
        }
        kept = next;
    }
    Decision {
        kept,
        explanation,
        runner_up,
    }
}

#[cfg(test)]
mod tests;
