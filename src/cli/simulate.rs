//! `ferroscale simulate`: what would the autoscaler do, and why? The loop on a cluster snapshot with a
//! virtual clock; one JSON line per loop on stdout, a summary per loop on stderr.

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::config::relative_to_config;
use super::flags::{read, ExpanderFlags, LoopFlags};
use super::values::GoDuration;
use crate::error::{Error, Result};
use crate::simulate::{summary, Pacing, Simulation};

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
    #[command(flatten)]
    #[serde(flatten)]
    pub expander: ExpanderFlags,
    #[command(flatten)]
    #[serde(flatten)]
    pub rules: LoopFlags,
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

/// Runs the simulation, printing each loop's report.
pub fn main(flags: SimulateFlags) -> Result<()> {
    let cluster = required(&flags.cluster, "--cluster")?;
    let node_groups = required(&flags.node_groups, "--node-groups")?;
    let objects =
        crate::k8s::documents::parse(&read(cluster, "--cluster")?, &cluster.display().to_string())?;
    let groups = crate::cloud::memory::MemoryConfig::load(node_groups)?;
    let settings = flags.rules.engine(&flags.expander)?;
    let mut sim = Simulation::new(&objects, &groups, &flags.expander.price_overrides()?)?;
    // The simulation holds the model of every object: the Kubernetes objects are not needed again.
    drop(objects);
    let pacing = Pacing {
        loops: flags.loops,
        scan_interval: flags.scan_interval.0,
        provision_delay: flags.provision_delay.0,
    };
    for _ in 0..pacing.loops {
        let report = sim.step(&settings, &pacing);
        let line = serde_json::to_string(&report).map_err(|e| Error::Io {
            context: "writing the report".into(),
            source: std::io::Error::other(e),
        })?;
        println!("{line}");
        eprintln!("{}", summary(&report));
    }
    Ok(())
}
