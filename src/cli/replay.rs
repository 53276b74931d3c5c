//! `simulate --trace`: a recorded timeline replayed under the flags' policy, or once per expander chain
//! or consolidation policy compared (side by side on the machine's cores). Each loop's report as
//! `simulate` writes it (one policy) and, last, the answers: `{"summary": …, "real": …, "error": …}`.

use std::path::Path;
use std::time::Duration;

use super::deschedule_flags::Descheduling;
use super::simulate::{
    compared, json, required, variants, SimulateFlags, Variant, NODE_READY_DELAY, PROVISION_DELAY,
};
use crate::cloud::memory::MemoryConfig;
use crate::error::{Error, Result};
use crate::report::{self, ChainRun, Extras, ReplayExtras};
use crate::simulate::{
    calibrate, load_events, summary, Answers, Calibration, LoopReport, Pacing, Replay, StartUp,
};

/// One replay's outcome.
struct Ran {
    label: String,
    without: bool,
    run: ChainRun,
    answers: Answers,
    /// What really happened per loop: cost per hour, nodes, pods waiting.
    recorded: (Vec<f64>, Vec<f64>, Vec<f64>),
}

/// Replays `trace` under each variant of `flags`.
pub(super) fn main(flags: &SimulateFlags, trace: &Path) -> Result<()> {
    let node_groups = required(&flags.node_groups, "--node-groups")?;
    let (chains, policies) = compared(flags)?;
    let deschedule_choices = match &flags.compare_deschedule_policy {
        Some(text) => Some(deschedule_choices(flags, text)?),
        None => None,
    };
    let comparisons = [
        chains.is_some(),
        policies.is_some(),
        deschedule_choices.is_some(),
    ];
    if comparisons.iter().filter(|c| **c).count() > 1 {
        return Err(Error::config(
            "--compare-consolidation, --compare-expanders and --compare-deschedule-policy: compare one at a time",
        ));
    }
    let groups = MemoryConfig::load(node_groups)?;
    let prices = flags.expander.price_overrides()?;
    let file = flags.report.as_deref().map(report::create).transpose()?;
    let variants = variants(flags, &chains, &policies, &groups, &prices)?;
    let compare = comparisons.contains(&true);
    // Each variant with its descheduler: the one compared, else --deschedule-policy's.
    let variants: Vec<(Variant, Option<Descheduling>)> = match deschedule_choices {
        Some(choices) => {
            let base = variants.into_iter().find(|v| !v.without);
            choices
                .into_iter()
                .filter_map(|(label, d)| {
                    let v = base.as_ref()?;
                    Some((
                        Variant {
                            label,
                            settings: v.settings.clone(),
                            groups: v.groups.clone(),
                            without: false,
                        },
                        d,
                    ))
                })
                .collect()
        }
        None => {
            let d = flags.deschedule.descheduling()?;
            variants.into_iter().map(|v| (v, d.clone())).collect()
        }
    };
    // Start-up times not given are the timeline's own, group by group.
    let calibrated = if flags.provision_delay.is_none() || flags.node_ready_delay.is_none() {
        Some(calibrate(trace, &groups)?)
    } else {
        None
    };
    let pacing = paced(flags, calibrated.as_ref());
    if let Some(c) = &calibrated {
        let given = (
            flags.provision_delay.is_some(),
            flags.node_ready_delay.is_some(),
        );
        eprintln!("{}", calibration_text(c, &pacing, given));
    }
    // Each variant replays on its own thread; one alone prints its loops as they run.
    let ran: Vec<Result<Ran>> = std::thread::scope(|scope| {
        let runs: Vec<_> = variants
            .into_iter()
            .map(|(v, d)| {
                let pacing = &pacing;
                let prices = &prices;
                scope.spawn(move || replay(flags, trace, v, d, pacing, prices, !compare))
            })
            .collect();
        runs.into_iter()
            .map(|r| {
                r.join()
                    .unwrap_or_else(|_| Err(Error::config("a replay panicked")))
            })
            .collect()
    });
    let ran = ran.into_iter().collect::<Result<Vec<Ran>>>()?;
    let mut extras = Extras::default();
    let mut shown = Vec::new();
    let mut replayed = ReplayExtras::default();
    for mut r in ran {
        r.answers.calibrated = calibrated.clone();
        if r.without {
            extras.without_consolidation.pop();
            let costs = r.run.loops.iter().map(|l| r.run.cost_per_hour(l)).collect();
            extras.without_consolidation.push(Some(costs));
            continue;
        }
        if compare {
            let mut line = serde_json::to_value(&r.answers).unwrap_or_default();
            line["label"] = serde_json::Value::from(r.label.clone());
            println!("{}", json(&line)?);
            eprintln!("{}: {}", r.label, answers_text(&r.answers));
        } else {
            println!("{}", json(&r.answers)?);
            eprintln!("{}", answers_text(&r.answers));
        }
        if replayed.answers.is_empty() {
            (replayed.cost, replayed.nodes, replayed.pending) = r.recorded;
        }
        replayed.answers.push((r.run.chain.clone(), r.answers));
        shown.push(r.run);
        extras.without_consolidation.push(None);
    }
    extras.replay = Some(replayed);
    if let (Some(file), Some(path)) = (file, &flags.report) {
        let title = format!(
            "{} on {}, {} loops of {}",
            trace.display(),
            node_groups.display(),
            shown.first().map_or(0, |r| r.loops.len()),
            flags.scan_interval
        );
        report::write(file, path, &title, &shown, &extras)?;
    }
    Ok(())
}

/// The replay's pacing: each start-up time a flag gives for every group, else the timeline's (each
/// group's own, the cluster's for the others), else the default.
fn paced(flags: &SimulateFlags, calibrated: Option<&Calibration>) -> Pacing {
    let secs = |s: Option<i64>| s.map(|s| Duration::from_secs(s.max(0) as u64));
    let provision = flags.provision_delay.map(|d| d.0);
    let ready = flags.node_ready_delay.map(|d| d.0);
    let by_group = calibrated
        .into_iter()
        .flat_map(|c| &c.groups)
        .map(|(group, g)| {
            let start_up = StartUp {
                provision_delay: provision
                    .or_else(|| secs(g.provision_delay_seconds))
                    .unwrap_or(PROVISION_DELAY),
                node_ready_delay: ready
                    .or_else(|| secs(g.node_ready_delay_seconds))
                    .unwrap_or(NODE_READY_DELAY),
            };
            (group.clone(), start_up)
        })
        .collect();
    Pacing {
        loops: flags.loops.unwrap_or(u32::MAX),
        scan_interval: flags.scan_interval.0,
        provision_delay: provision
            .or_else(|| secs(calibrated.and_then(|c| c.provision_delay_seconds)))
            .unwrap_or(PROVISION_DELAY),
        node_ready_delay: ready
            .or_else(|| secs(calibrated.and_then(|c| c.node_ready_delay_seconds)))
            .unwrap_or(NODE_READY_DELAY),
        by_group,
    }
}

/// What stderr says of the start-up times taken: the cluster's, then each group's.
/// `given`: whether `--provision-delay` and `--node-ready-delay` were given (one of them at most: with
/// both, nothing is calibrated); a flag given stands for every group, whatever the timeline measured.
fn calibration_text(c: &Calibration, pacing: &Pacing, given: (bool, bool)) -> String {
    let mut text = format!(
        "start-up times from {} nodes launched in the timeline: --provision-delay {}s --node-ready-delay {}s",
        c.nodes,
        pacing.provision_delay.as_secs(),
        pacing.node_ready_delay.as_secs()
    );
    for (group, g) in &c.groups {
        let s = pacing.start_up(group);
        let from = match g.nodes {
            0 => "none launched: the cluster's".to_string(),
            1 => "from 1 node".to_string(),
            n => format!("from {n} nodes"),
        };
        let from = match given {
            (true, false) => format!("{from}; provision given"),
            (false, true) => format!("{from}; ready given"),
            _ => from,
        };
        text += &format!(
            "\n  {group}: provision {}s, ready {}s ({from})",
            s.provision_delay.as_secs(),
            s.node_ready_delay.as_secs()
        );
    }
    text
}

/// One variant's replay, to the timeline's end (or `--loops`).
fn replay(
    flags: &SimulateFlags,
    trace: &Path,
    v: Variant,
    descheduling: Option<Descheduling>,
    pacing: &Pacing,
    prices: &crate::pricing::PriceOverrides,
    print: bool,
) -> Result<Ran> {
    let mut replay = Replay::open(trace, &v.groups, prices)?;
    if let Some(path) = &flags.events {
        replay
            .sim
            .set_events(load_events(path)?, flags.handle_rebalance_recommendations);
    }
    if let Some(d) = descheduling {
        replay.sim.set_descheduler(d.policy, d.interval, d.settings);
    }
    let mut run = ChainRun {
        prices: replay.sim.prices(),
        chain: v.label.clone(),
        loops: Vec::new(),
    };
    // Every loop's report is kept only for the page that draws them (a day of a large cluster's
    // reports, each naming every node kept, is gigabytes); the answers come from the replay's figures.
    let keep = flags.report.is_some() || v.without;
    let mut last = None;
    let mut loops = 0;
    while loops < pacing.loops {
        let report: LoopReport = replay.step(&v.settings, pacing)?;
        loops += 1;
        if print && !v.without {
            println!("{}", json(&report)?);
        }
        if keep {
            run.loops.push(report);
        } else {
            last = Some(report);
        }
        if replay.done() {
            break;
        }
    }
    if print && !v.without {
        if let Some(last) = run.loops.last().or(last.as_ref()) {
            eprintln!("{}", summary(last));
        }
    }
    let answers = replay.answers(pacing.scan_interval.as_secs().max(1));
    let recorded = replay.recorded();
    Ok(Ran {
        recorded,
        label: v.label,
        without: v.without,
        run,
        answers,
    })
}

/// `--compare-deschedule-policy`'s choices: (label, descheduling), `off` for none.
fn deschedule_choices(
    flags: &SimulateFlags,
    text: &str,
) -> Result<Vec<(String, Option<Descheduling>)>> {
    let mut out = Vec::new();
    for (i, part) in text.split(';').map(str::trim).enumerate() {
        if part.is_empty() {
            return Err(Error::config(format!(
                "--compare-deschedule-policy: choice {} is empty",
                i + 1
            )));
        }
        if part == "off" {
            out.push(("off".to_string(), None));
            continue;
        }
        let d = flags
            .deschedule
            .descheduling_with(Path::new(part), "--compare-deschedule-policy")?;
        for w in &d.warnings {
            eprintln!("--compare-deschedule-policy {part}: {w}");
        }
        out.push((part.to_string(), Some(d)));
    }
    Ok(out)
}

/// The answers in a line of text.
fn answers_text(a: &Answers) -> String {
    let s = &a.summary;
    let r = &a.real;
    format!(
        "{} loops: ${:.2} ({:.1} node-hours), {:.0} pod-seconds pending, {} evictions, {} nodes launched, {} removed; really ${:.2} ({:.1} node-hours), {:.0} pod-seconds pending; error: {:.2} nodes, ${:.3}/h",
        a.loops,
        s.cost_dollars,
        s.node_hours,
        s.pending_pod_seconds,
        s.evictions.unwrap_or(0),
        s.nodes_launched,
        s.nodes_removed,
        r.cost_dollars,
        r.node_hours,
        r.pending_pod_seconds,
        a.error.node_count_mae,
        a.error.cost_per_hour_mae,
    )
}
