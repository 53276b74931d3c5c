//! `ferroscale simulate`: what would the autoscaler do, and why? The loop on a cluster snapshot with a
//! virtual clock; one JSON line per loop on stdout, a summary per loop on stderr.

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::config::relative_to_config;
use super::deschedule_flags::DescheduleFlags;
use super::flags::{ExpanderFlags, LoopFlags, UPSTREAM};
use super::values::GoDuration;
use crate::cloud::memory::MemoryConfig;
use crate::engine::Settings;
use crate::error::{Error, Result};
use crate::model::consolidation::ConsolidationPolicy;
use crate::report::{self, ChainRun, Extras};
use crate::simulate::{load_events, summary, Pacing, Simulation};

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
    /// Loops to run [default: 1; with --trace, as many as the timeline lasts].
    #[arg(long)]
    pub loops: Option<u32>,
    /// Replay a timeline `ferroscale record` wrote (instead of --cluster): its first moment is the
    /// start, then pods come and go at their recorded times; the last line is the summary, beside what
    /// really happened (see docs/replay.md).
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub trace: Option<PathBuf>,
    /// Virtual time between loops (also what upstream's unneeded-nodes limit divides the unneeded time
    /// by).
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.scan_interval))]
    pub scan_interval: GoDuration,
    /// Virtual time from a scale-up to the new node joining (0: the next loop), for every group
    /// [default: 0s; with --trace, each group's median from the timeline's new nodes, the whole
    /// cluster's for a group that launched none].
    #[arg(long, value_name = "DURATION")]
    pub provision_delay: Option<GoDuration>,
    /// Virtual time from a new node joining (NotReady, with the `node.kubernetes.io/not-ready` taint and
    /// its group's start-up taints) to its being Ready (0: at once), for every group [default: 30s; with
    /// --trace, each group's median from the timeline's new nodes, the whole cluster's for a group
    /// that launched none].
    #[arg(long, value_name = "DURATION")]
    pub node_ready_delay: Option<GoDuration>,
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
    /// Consolidation policies to compare, `;`-separated, each `off` or `<Policy>[:<min-savings>]`
    /// ("off;WhenEmptyOrUnderutilized:10%"): the same loops run once per policy, applied to every group
    /// (their own policies too; their `after` kept); stdout has one JSON line per policy (cost per hour
    /// at the end, total cost, consolidations, pods evicted and pending, and the difference from the
    /// first), stderr a line of text each.
    #[arg(long, value_name = "POLICIES")]
    pub compare_consolidation: Option<String>,
    /// With --trace: descheduler policy files to compare, `;`-separated, `off` for none
    /// ("off;policy.yaml"): the timeline is replayed once per policy (instead of --deschedule-policy),
    /// one line of answers each.
    #[arg(long, value_name = "FILES")]
    pub compare_deschedule_policy: Option<String>,
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

/// `--provision-delay` when not given.
pub(super) const PROVISION_DELAY: std::time::Duration = std::time::Duration::ZERO;
/// `--node-ready-delay` when not given.
pub(super) const NODE_READY_DELAY: std::time::Duration = std::time::Duration::from_secs(30);

/// What `simulate` compares: `--compare-expanders`' chains and `--compare-consolidation`'s policies.
pub(super) type Compared = (Option<Vec<String>>, Option<Vec<report::PolicySpec>>);

/// `--compare-expanders`' chains and `--compare-consolidation`'s policies, each read if given.
pub(super) fn compared(flags: &SimulateFlags) -> Result<Compared> {
    let chains = flags
        .compare_expanders
        .as_deref()
        .map(report::parse_chains)
        .transpose()?;
    let policies = flags
        .compare_consolidation
        .as_deref()
        .map(report::parse_policies)
        .transpose()?;
    Ok((chains, policies))
}

/// A required file flag.
pub(super) fn required<'a>(path: &'a Option<PathBuf>, flag: &str) -> Result<&'a PathBuf> {
    path.as_ref()
        .ok_or_else(|| Error::config(format!("{flag} FILE is required")))
}

/// One simulation to run: its label (the expander chain, or the consolidation policy compared), its
/// settings and groups, and whether it is a run without consolidation drawn against the one before.
pub(super) struct Variant {
    pub(super) label: String,
    pub(super) settings: Settings,
    pub(super) groups: MemoryConfig,
    pub(super) without: bool,
}

/// `groups` and `settings` with consolidation `policy` for every group (a group's own policy replaced,
/// its `after` kept), and `min_savings` if given.
/// The engine's settings from the loop's flags and `expander`, loops `--scan-interval` apart.
pub(super) fn rules(
    flags: &SimulateFlags,
    expander: &ExpanderFlags,
) -> Result<crate::engine::Settings> {
    Ok(crate::engine::Settings {
        scan_interval: flags.scan_interval.0,
        ..flags.rules.engine(expander)?
    })
}

fn with_policy(
    groups: &MemoryConfig,
    settings: &Settings,
    policy: ConsolidationPolicy,
    min_savings: Option<f64>,
) -> (MemoryConfig, Settings) {
    let mut groups = groups.clone();
    for c in groups
        .node_groups
        .iter_mut()
        .flat_map(|g| &mut g.consolidation)
    {
        c.policy = policy.as_str().to_string();
    }
    let mut settings = settings.clone();
    settings.consolidation.policy = policy;
    if let Some(m) = min_savings {
        settings.consolidation_min_savings = m;
    }
    (groups, settings)
}

/// Runs the simulation, printing each loop's report; with `--compare-expanders` (or
/// `--compare-consolidation`) runs it once per chain (or policy) and prints each one's outcome instead;
/// with `--report` also writes the page, and when some group consolidates runs it once more without to
/// draw the cost with and without.
pub fn main(flags: SimulateFlags) -> Result<()> {
    if flags.compare_deschedule_policy.is_some() {
        return Err(Error::config(
            "--compare-deschedule-policy: only with --trace (a snapshot's few loops show one policy at a time: --deschedule-policy)",
        ));
    }
    let cluster = required(&flags.cluster, "--cluster")?;
    let node_groups = required(&flags.node_groups, "--node-groups")?;
    let (chains, policies) = compared(&flags)?;
    if chains.is_some() && policies.is_some() {
        return Err(Error::config(
            "--compare-consolidation and --compare-expanders: compare one at a time",
        ));
    }
    let descheduling = flags.deschedule.descheduling()?;
    if let (Some(d), Some(path)) = (&descheduling, &flags.deschedule.deschedule_policy) {
        for w in &d.warnings {
            eprintln!("--deschedule-policy {}: {w}", path.display());
        }
    }
    let file = flags.report.as_deref().map(report::create).transpose()?;
    let inputs =
        crate::k8s::documents::inputs_of_file(cluster, &cluster.display().to_string(), || {
            crate::input::read_file(cluster, &crate::input::DUMP, "--cluster")
        })?;
    let groups = MemoryConfig::load(node_groups)?;
    let prices = flags.expander.price_overrides()?;
    let pacing = Pacing {
        loops: flags.loops.unwrap_or(1),
        scan_interval: flags.scan_interval.0,
        provision_delay: flags.provision_delay.map_or(PROVISION_DELAY, |d| d.0),
        node_ready_delay: flags.node_ready_delay.map_or(NODE_READY_DELAY, |d| d.0),
        by_group: Default::default(),
    };
    let events = match &flags.events {
        Some(path) => load_events(path)?,
        None => Vec::new(),
    };
    let compare = chains.is_some() || policies.is_some();
    let variants = variants(&flags, &chains, &policies, &groups, &prices)?;
    // Every run starts from the same snapshot: each simulation but the last takes a copy of the model.
    let mut inputs = inputs;
    let count = variants.len();
    let mut runs = Vec::with_capacity(count);
    for (i, v) in variants.into_iter().enumerate() {
        let this = if i + 1 == count {
            std::mem::take(&mut inputs)
        } else {
            inputs.clone()
        };
        let mut sim = Simulation::from_inputs(this, &v.groups, &prices)?;
        sim.set_events(events.clone(), flags.handle_rebalance_recommendations);
        if let Some(d) = &descheduling {
            sim.set_descheduler(d.policy.clone(), d.interval, d.settings.clone());
        }
        let run = ChainRun {
            prices: sim.prices(),
            chain: v.label,
            loops: Vec::new(),
        };
        runs.push((v.settings, sim, run, v.without));
    }
    for (settings, sim, run, without) in &mut runs {
        for _ in 0..pacing.loops {
            let report = sim.step(settings, &pacing);
            if *without {
                // Only its cost is drawn.
            } else if compare {
                eprintln!("{}: {}", run.chain, summary(&report));
            } else {
                println!("{}", json(&report)?);
                eprintln!("{}", summary(&report));
            }
            run.loops.push(report);
        }
    }
    let mut extras = Extras::default();
    let mut shown: Vec<ChainRun> = Vec::new();
    for (_, sim, run, without) in runs {
        // The model is left to the process's exit: freeing a big dump's pods one by one was about a
        // twentieth of `simulate`'s time on 100,000 pods, and nothing reads them after this.
        std::mem::forget(sim);
        if without {
            extras.without_consolidation.pop();
            let costs = run.loops.iter().map(|l| run.cost_per_hour(l)).collect();
            extras.without_consolidation.push(Some(costs));
        } else {
            shown.push(run);
            extras.without_consolidation.push(None);
        }
    }
    let runs = shown;
    let hours_per_loop = std::time::Duration::from_secs(flags.scan_interval.0.as_secs().max(1))
        .as_secs_f64()
        / 3600.0;
    if policies.is_some() {
        extras.policies = Some(hours_per_loop);
        for outcome in report::policy_outcomes(&runs, hours_per_loop) {
            println!("{}", json(&outcome)?);
            eprintln!("{outcome}");
        }
    } else if compare {
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
        report::write(file, path, &title, &runs, &extras)?;
    }
    Ok(())
}

/// The runs `flags` ask for: one per expander chain or consolidation policy compared, else one (and,
/// with `--report` when some group consolidates, one more without consolidation).
pub(super) fn variants(
    flags: &SimulateFlags,
    chains: &Option<Vec<String>>,
    policies: &Option<Vec<report::PolicySpec>>,
    groups: &MemoryConfig,
    prices: &crate::pricing::PriceOverrides,
) -> Result<Vec<Variant>> {
    let mut variants = Vec::new();
    match (chains, policies) {
        (_, Some(policies)) => {
            let settings = rules(flags, &flags.expander)?;
            for p in policies {
                let (groups, settings) = with_policy(groups, &settings, p.policy, p.min_savings);
                variants.push(Variant {
                    label: p.label.clone(),
                    settings,
                    groups,
                    without: false,
                });
            }
        }
        _ => {
            let chains = chains
                .clone()
                .unwrap_or_else(|| vec![flags.expander.expander.clone()]);
            for chain in chains {
                let expander = ExpanderFlags {
                    expander: chain.clone(),
                    ..flags.expander.clone()
                };
                let settings = rules(flags, &expander)?;
                let off = (flags.report.is_some()
                    && crate::simulate::consolidates(groups, prices, &settings)?)
                .then(|| with_policy(groups, &settings, ConsolidationPolicy::Never, None));
                variants.push(Variant {
                    label: chain,
                    settings,
                    groups: groups.clone(),
                    without: false,
                });
                if let Some((groups, settings)) = off {
                    variants.push(Variant {
                        label: String::new(),
                        settings,
                        groups,
                        without: true,
                    });
                }
            }
        }
    }
    Ok(variants)
}

/// One line of JSON for stdout.
pub(super) fn json(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| Error::io("writing the report", std::io::Error::other(e)))
}
