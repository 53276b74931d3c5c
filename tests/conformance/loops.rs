//! `kind: loop` — cases about a whole autoscaling loop (upstream's scale-up orchestrator, scale-down
//! planner, cluster state): the case's `objects` (nodes join a group by the label
//! `ferroscale.io/node-group`), its `groups` in the memory cloud's format, upstream `flags`, run through
//! `simulate`'s own `Simulation` for `loops` loops of 10 s (new nodes join at once, Ready). The last
//! loop is compared with `expect`: every field given must match, fields left out are not compared.
//! `bind_pending: false` keeps the simulated scheduler from binding pending pods first.
//! `priorities` (the priority expander's tiers, as `--priority-config` holds them) stands in for
//! upstream's test expander that is told which option to take: with `--expander=priority` it makes
//! ferroscale's own expander take that option.
//! `unneeded` is the exact set of nodes the loop finds unneeded (removed, or kept for a reason that starts
//! with "unneeded"), `removable` nodes that must be among them.
//! `eligible` names nodes that pass upstream's eligibility step (its unneeded candidates): a loop may
//! still keep them, but for a later reason (a pod's drain, the unneeded time), never for one of
//! eligibility's own (being deleted, the annotation, utilization, unready with unready scale-down off).
//! `scan_interval`, `provision_delay` and `node_ready_delay` (Go durations) pace the loops as
//! `simulate`'s flags do (`--scan-interval`, 0, 0 when left out); `history` gives what upstream's tests register
//! before their loops (a scale-up, a removal, a failed removal some time before the last loop; nodes found unneeded).

use std::time::Duration;

use ferroscale::cloud::memory::MemoryConfig;
use ferroscale::engine::expander::Priorities;
use ferroscale::model::parse_go_duration;
use ferroscale::pricing::PriceOverrides;
use ferroscale::simulate::{Pacing, Simulation};
use serde::Deserialize;

use super::loop_expect::Expect;
use super::support;

#[derive(Deserialize)]
struct Case {
    objects: serde_norway::Value,
    groups: serde_norway::Value,
    #[serde(default)]
    flags: Vec<String>,
    #[serde(default = "one")]
    loops: u32,
    #[serde(default)]
    priorities: Option<serde_norway::Value>,
    /// `false`: pending pods stay pending before the loops (upstream's tests give them as the scheduler
    /// left them: unschedulable, maybe waiting to preempt lower-priority pods).
    #[serde(default = "yes")]
    bind_pending: bool,
    #[serde(default)]
    scan_interval: Option<String>,
    #[serde(default)]
    provision_delay: Option<String>,
    #[serde(default)]
    node_ready_delay: Option<String>,
    #[serde(default)]
    history: History,
    expect: Expect,
}

/// What happened before the first loop, as Go durations before it.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct History {
    #[serde(default)]
    scale_up_ago: Option<String>,
    #[serde(default)]
    scale_down_ago: Option<String>,
    #[serde(default)]
    scale_down_failure_ago: Option<String>,
    /// Nodes found unneeded by a loop just before (upstream's previously unneeded nodes).
    #[serde(default)]
    unneeded: Vec<String>,
}

fn one() -> u32 {
    1
}

fn yes() -> bool {
    true
}

fn duration(text: &Option<String>, default: Duration) -> Result<Duration, String> {
    text.as_deref().map_or(Ok(default), parse_go_duration)
}

pub fn check(case: &serde_norway::Value) -> Result<(), String> {
    // `CONFORMANCE_DEBUG=<words of a case's name>` prints each loop of the cases so named.
    let debug = std::env::var("CONFORMANCE_DEBUG").is_ok_and(|w| {
        case.get("name")
            .and_then(|n| n.as_str())
            .is_some_and(|n| n.contains(&w))
    });
    let case: Case = serde_norway::from_value(case.clone()).map_err(|e| e.to_string())?;
    let objects = support::objects(&case.objects)?;
    let groups = serde_norway::to_string(&case.groups).map_err(|e| e.to_string())?;
    let config = MemoryConfig::parse(&groups).map_err(|e| e.to_string())?;
    let mut sim = Simulation::new(&objects, &config, &PriceOverrides::default())
        .map_err(|e| e.to_string())?;
    sim.set_binding(case.bind_pending);
    let mut settings = support::settings(&case.flags)?;
    if let Some(p) = &case.priorities {
        let text = serde_norway::to_string(p).map_err(|e| e.to_string())?;
        settings.priorities = Priorities::parse(&text).map_err(|e| e.to_string())?;
    }
    let pacing = Pacing {
        loops: case.loops,
        scan_interval: duration(&case.scan_interval, settings.scan_interval)?,
        provision_delay: duration(&case.provision_delay, Duration::ZERO)?,
        node_ready_delay: duration(&case.node_ready_delay, Duration::ZERO)?,
        by_group: Default::default(),
    };
    let start = sim.now();
    // History is told from the last loop's time, as upstream registers it relative to the wall clock
    // of the loop that decides.
    let last =
        start + i64::from(case.loops.saturating_sub(1)) * pacing.scan_interval.as_secs() as i64;
    let ago = |d: &Option<String>| -> Result<Option<i64>, String> {
        d.as_ref()
            .map(|t| Ok(last - parse_go_duration(t)?.as_secs() as i64))
            .transpose()
    };
    let h = &case.history;
    let memory = sim.memory_mut();
    memory.last_scale_up = ago(&h.scale_up_ago)?.or(memory.last_scale_up);
    memory.last_scale_down_delete = ago(&h.scale_down_ago)?.or(memory.last_scale_down_delete);
    memory.last_scale_down_failure =
        ago(&h.scale_down_failure_ago)?.or(memory.last_scale_down_failure);
    for node in &h.unneeded {
        memory.unneeded_since.insert(node.clone(), start);
    }
    let mut report = None;
    let mut at = start;
    for _ in 0..case.loops {
        at = sim.now();
        // `step` moves the clock on by the scan interval itself.
        report = Some(sim.step(&settings, &pacing));
        if debug {
            eprintln!("{}", serde_json::to_string(&report).unwrap_or_default());
            eprintln!(
                "{:?}",
                sim.cluster()
                    .state()
                    .nodes
                    .iter()
                    .map(|n| (&n.name, &n.taints))
                    .collect::<Vec<_>>()
            );
        }
    }
    let r = report.ok_or("loops: 0")?;
    let wrong = case.expect.compare(&r, &sim, at);
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("; "))
    }
}
