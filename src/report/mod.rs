//! `ferroscale simulate --report FILE.html` and `--compare-expanders`: the loops' reports of one run per
//! expander chain, summed up ([`Outcome`]: nodes added, pods left pending, cost per hour at the end) and
//! drawn into one self-contained HTML page (inline SVG charts, no scripts, no network).

mod charts;
mod consolidation;
mod html;
mod replay;
mod text;

use serde::Serialize;

use crate::engine::expander::Strategy;
use crate::error::{Error, Result};
use crate::simulate::LoopReport;

pub use consolidation::{
    parse_policies, policy_outcomes, PolicyDifference, PolicyOutcome, PolicySpec,
};
pub use html::{page, page_with};
pub use replay::{ReplayExtras, REALLY};

/// The label of the nodes of no group in [`LoopReport::nodes`].
const NO_GROUP: &str = "-";

/// One simulation run: its expander chain, each loop's report and the groups' prices.
#[derive(Debug, Clone)]
pub struct ChainRun {
    /// The chain as given (`price,least-waste`).
    pub chain: String,
    pub loops: Vec<LoopReport>,
    /// Each group's price of one node per hour, in the node-groups file's order.
    pub prices: Vec<(String, Option<f64>)>,
}

/// What the page shows beyond the runs themselves.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// Per run (in the same order), its cost per hour per loop in a second run with consolidation off,
    /// when some group had it on: drawn against the run's own.
    pub without_consolidation: Vec<Option<Vec<f64>>>,
    /// Set by `--compare-consolidation` (the runs are policies, not expander chains): hours of virtual
    /// time per loop, for each run's total cost.
    pub policies: Option<f64>,
    /// Set by `simulate --trace`: the recorded figures and each run's answers.
    pub replay: Option<replay::ReplayExtras>,
}

/// What a run came to after its last loop, and how it differs from the first chain compared.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub expander: String,
    pub loops: usize,
    /// Nodes asked for by scale-ups, less those the cloud could not launch.
    pub nodes_added: i64,
    /// Nodes removed by scale-downs.
    pub nodes_removed: usize,
    /// Pods still pending after the last loop.
    pub pods_pending: usize,
    /// Nodes after the last loop (of every group and of none).
    pub nodes: usize,
    /// Nodes after the last loop times their group's price per hour (USD; nodes of no group or of a group
    /// without a price count 0).
    pub cost_per_hour: f64,
    /// This outcome less the first chain's (absent for the first chain).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_first: Option<Difference>,
}

/// One outcome less another.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    pub expander: String,
    pub nodes_added: i64,
    pub pods_pending: i64,
    pub nodes: i64,
    pub cost_per_hour: f64,
}

/// USD rounded to a millionth, so sums print as people expect (0.91, not 0.9100000000000001).
fn usd(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

impl ChainRun {
    /// The groups' ids in file order, then `-` when nodes of no group show in any loop.
    pub fn groups(&self) -> Vec<String> {
        let mut groups: Vec<String> = self.prices.iter().map(|(g, _)| g.clone()).collect();
        if self.loops.iter().any(|l| l.nodes.contains_key(NO_GROUP)) {
            groups.push(NO_GROUP.into());
        }
        groups
    }

    /// Nodes of `group` after each loop.
    pub fn nodes_of(&self, group: &str) -> Vec<f64> {
        self.loops
            .iter()
            .map(|l| l.nodes.get(group).copied().unwrap_or(0) as f64)
            .collect()
    }

    /// The cost per hour of the nodes after one loop: each node at its own price when the loop priced
    /// them, else each group's nodes at its price.
    pub fn cost_per_hour(&self, report: &LoopReport) -> f64 {
        if let Some(c) = report.cost_per_hour {
            return usd(c);
        }
        usd(self
            .prices
            .iter()
            .map(|(g, p)| report.nodes.get(g).copied().unwrap_or(0) as f64 * p.unwrap_or(0.0))
            .sum())
    }

    /// The run after its last loop.
    pub fn outcome(&self) -> Outcome {
        let last = self.loops.last();
        Outcome {
            expander: self.chain.clone(),
            loops: self.loops.len(),
            nodes_added: self
                .loops
                .iter()
                .flat_map(|l| &l.scale_up)
                .map(|u| i64::from(u.delta - u.failed))
                .sum(),
            nodes_removed: self.loops.iter().map(|l| l.scale_down.len()).sum(),
            pods_pending: last.map_or(0, |l| l.pending.len()),
            nodes: last.map_or(0, |l| l.nodes.values().sum()),
            cost_per_hour: last.map_or(0.0, |l| self.cost_per_hour(l)),
            vs_first: None,
        }
    }
}

/// The outcomes of `runs`, each after the first with its difference from the first.
pub fn outcomes(runs: &[ChainRun]) -> Vec<Outcome> {
    let mut all: Vec<Outcome> = runs.iter().map(ChainRun::outcome).collect();
    if let Some(first) = all.first().cloned() {
        for o in all.iter_mut().skip(1) {
            o.vs_first = Some(Difference {
                expander: first.expander.clone(),
                nodes_added: o.nodes_added - first.nodes_added,
                pods_pending: o.pods_pending as i64 - first.pods_pending as i64,
                nodes: o.nodes as i64 - first.nodes as i64,
                cost_per_hour: usd(o.cost_per_hour - first.cost_per_hour),
            });
        }
    }
    all
}

/// The chains of `--compare-expanders` (`price,least-waste;least-waste`), each checked as `--expander`
/// checks its chain; errors name the flag and the chain at fault.
pub fn parse_chains(text: &str) -> Result<Vec<String>> {
    let chains: Vec<String> = text
        .split(';')
        .map(|c| c.split(',').map(str::trim).collect::<Vec<_>>().join(","))
        .collect();
    for (i, chain) in chains.iter().enumerate() {
        if chain.split(',').any(str::is_empty) {
            return Err(Error::config(format!(
                "--compare-expanders: chain {} of {text:?} is empty or has an empty strategy",
                i + 1
            )));
        }
        Strategy::parse_chain(chain).map_err(|e| {
            Error::config(format!(
                "--compare-expanders: chain {} ({chain:?}): {}",
                i + 1,
                e.to_string().trim_start_matches("--expander: ")
            ))
        })?;
    }
    Ok(chains)
}

/// Opens (creates or truncates) the `--report` file now, so an unwritable path fails before any loop, as
/// bad configuration (exit code 2).
pub fn create(path: &std::path::Path) -> Result<std::fs::File> {
    std::fs::File::create(path)
        .map_err(|e| Error::config(format!("--report {}: cannot write: {e}", path.display())))
}

/// Writes the page of `runs` to `file` (opened by [`create`]).
pub fn write(
    file: std::fs::File,
    path: &std::path::Path,
    title: &str,
    runs: &[ChainRun],
    extras: &Extras,
) -> Result<()> {
    use std::io::Write;
    let text = page_with(title, runs, extras)?;
    let mut w = std::io::BufWriter::new(file);
    w.write_all(text.as_bytes())
        .and_then(|()| w.flush())
        .map_err(|e| Error::io(format!("--report {}: cannot write", path.display()), e))
}
