//! `ferroscale simulate`: what would the autoscaler do, and why? The loop on a cluster snapshot with a
//! virtual clock; one JSON line per loop on stdout, a summary per loop on stderr.

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::config::relative_to_config;
use super::deschedule_flags::DescheduleFlags;
use super::flags::{read, ExpanderFlags, LoopFlags};
use super::values::GoDuration;
use crate::error::{Error, Result};
use crate::report::{self, ChainRun};
use crate::simulate::{load_events, summary, Pacing, SimDescheduler, Simulation};

/// Flags of `ferroscale simulate`; every one may also come from `--config FILE` (camelCase keys).
#[derive(Debug, Clone, Args, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SimulateFlags {
    /// YAML file with any of these settings (camelCase keys); flags win, relative paths are relative to
    /// the file.
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// The cluster (required): what `kubectl get nodes,pods,pdb,ds -A -o yaml` writes, or multi-document
    /// YAML.
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub cluster: Option<PathBuf>,
    /// The node groups (required), in the memory cloud's format (see examples/groups.yaml).
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub node_groups: Option<PathBuf>,
    /// Loops to run.
    #[arg(long, default_value_t = 1)]
    pub loops: u32,
    /// Virtual time between loops.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub scan_interval: GoDuration,
    /// Virtual time from a scale-up to the new node joining (0: the next loop).
    #[arg(long, value_name = "DURATION", default_value = "0s")]
    pub provision_delay: GoDuration,
    /// Virtual time from a new node joining (NotReady, with the `node.kubernetes.io/not-ready` taint and
    /// its group's start-up taints) to its being Ready (0: at once).
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub node_ready_delay: GoDuration,
    /// Also write an HTML page of the run: charts of nodes per group, pending pods and cost per hour per
    /// loop, and the decisions with their reasons (one file: inline SVG, no script, nothing fetched).
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub report: Option<PathBuf>,
    /// Expander chains to compare, `;`-separated, each as --expander takes it
    /// ("price,least-waste;least-waste"): the same loops run once per chain (instead of --expander);
    /// stdout has one JSON line per chain (its outcome and its difference from the first chain).
    #[arg(long, value_name = "CHAINS")]
    pub compare_expanders: Option<String>,
    /// YAML list of `{at: DURATION, event: <an EventBridge event>}` replayed against the simulation: spot
    /// interruption warnings, rebalance recommendations, Health scheduled changes, instance state changes.
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub events: Option<PathBuf>,
    /// Act on rebalance recommendations in `--events`, as `run --handle-rebalance-recommendations` does.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub handle_rebalance_recommendations: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub expander: ExpanderFlags,
    #[command(flatten)]
    #[serde(flatten)]
    pub rules: LoopFlags,
    #[command(flatten)]
    #[serde(flatten)]
    pub deschedule: DescheduleFlags,
}

impl Default for SimulateFlags {
    /// What an empty command line gives.
    fn default() -> Self {
        super::defaults()
    }
}

/// A required file flag.
fn required<'a>(path: &'a Option<PathBuf>, flag: &str) -> Result<&'a PathBuf> {
    path.as_ref()
        .ok_or_else(|| Error::config(format!("{flag} FILE is required")))
}

/// Runs the simulation, printing each loop's report; with `--compare-expanders` runs it once per chain
/// and prints each chain's outcome instead; with `--report` also writes the page.
pub fn main(flags: SimulateFlags) -> Result<()> {
    let cluster = required(&flags.cluster, "--cluster")?;
    let node_groups = required(&flags.node_groups, "--node-groups")?;
    let chains = match &flags.compare_expanders {
        Some(text) => Some(report::parse_chains(text)?),
        None => None,
    };
    let descheduling = flags.deschedule.descheduling()?;
    if let (Some(d), Some(path)) = (&descheduling, &flags.deschedule.deschedule_policy) {
        for w in &d.warnings {
            eprintln!("--deschedule-policy {}: {w}", path.display());
        }
    }
    let file = flags.report.as_deref().map(report::create).transpose()?;
    let inputs =
        crate::k8s::documents::inputs_of_file(cluster, &cluster.display().to_string(), || {
            read(cluster, "--cluster")
        })?;
    let groups = crate::cloud::memory::MemoryConfig::load(node_groups)?;
    let prices = flags.expander.price_overrides()?;
    let pacing = Pacing {
        loops: flags.loops,
        scan_interval: flags.scan_interval.0,
        provision_delay: flags.provision_delay.0,
        node_ready_delay: flags.node_ready_delay.0,
    };
    let events = match &flags.events {
        Some(path) => load_events(path)?,
        None => Vec::new(),
    };
    let compare = chains.is_some();
    let chains = chains.unwrap_or_else(|| vec![flags.expander.expander.clone()]);
    // Every run starts from the same snapshot: each simulation but the last takes a copy of the model.
    let mut inputs = inputs;
    let count = chains.len();
    let mut runs = Vec::with_capacity(count);
    for (i, chain) in chains.into_iter().enumerate() {
        let expander = ExpanderFlags {
            expander: chain.clone(),
            ..flags.expander.clone()
        };
        let settings = flags.rules.engine(&expander)?;
        let this = if i + 1 == count {
            std::mem::take(&mut inputs)
        } else {
            inputs.clone()
        };
        let mut sim = Simulation::from_inputs(this, &groups, &prices)?;
        sim.set_events(events.clone(), flags.handle_rebalance_recommendations);
        if let Some(d) = &descheduling {
            sim.set_descheduler(SimDescheduler::new(
                d.policy.clone(),
                d.interval,
                d.settings.clone(),
            ));
        }
        let run = ChainRun {
            prices: sim.prices(),
            chain,
            loops: Vec::new(),
        };
        runs.push((settings, sim, run));
    }
    for (settings, sim, run) in &mut runs {
        for _ in 0..pacing.loops {
            let report = sim.step(settings, &pacing);
            if compare {
                eprintln!("{}: {}", run.chain, summary(&report));
            } else {
                println!("{}", json(&report)?);
                eprintln!("{}", summary(&report));
            }
            run.loops.push(report);
        }
    }
    let runs: Vec<ChainRun> = runs.into_iter().map(|(_, _, run)| run).collect();
    if compare {
        for outcome in report::outcomes(&runs) {
            println!("{}", json(&outcome)?);
        }
    }
    if let (Some(file), Some(path)) = (file, &flags.report) {
        let title = format!(
            "{} on {}, {} loops of {}",
            cluster.display(),
            node_groups.display(),
            pacing.loops,
            flags.scan_interval
        );
        report::write(file, path, &title, &runs)?;
    }
    Ok(())
}

/// One line of JSON for stdout.
fn json(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| Error::io("writing the report", std::io::Error::other(e)))
}
