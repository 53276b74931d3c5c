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

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ferroscale::cloud::memory::MemoryConfig;
use ferroscale::engine::expander::Priorities;
use ferroscale::pricing::PriceOverrides;
use ferroscale::simulate::{Pacing, Simulation};
use serde::Deserialize;

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
    expect: Expect,
}

fn one() -> u32 {
    1
}

fn yes() -> bool {
    true
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Expect {
    /// Group → nodes added by the last loop (all of them: a group not named grows by none).
    #[serde(default)]
    scale_up: Option<BTreeMap<String, i32>>,
    /// The last loop's scale-ups are one of these (upstream leaves the choice among them to chance).
    #[serde(default)]
    scale_up_one_of: Option<Vec<BTreeMap<String, i32>>>,
    /// Nodes the last loop removes (all of them).
    #[serde(default)]
    scale_down: Option<BTreeSet<String>>,
    /// Pod → a word of why it stays pending.
    #[serde(default)]
    pending: Option<BTreeMap<String, String>>,
    /// Node → a word of why it is kept.
    #[serde(default)]
    unremovable: Option<BTreeMap<String, String>>,
    /// Whether the loop found the cluster unhealthy and decided nothing.
    #[serde(default)]
    unhealthy: Option<bool>,
    /// Nodes that pass upstream's eligibility checks (`eligibility.FilterOutUnremovable`'s unneeded
    /// candidates): kept, if at all, only for a later reason (a pod's drain, the unneeded time, …).
    #[serde(default)]
    eligible: Option<BTreeSet<String>>,
    /// The nodes the last loop finds unneeded (all of them): those it removes and those it keeps for a
    /// reason that starts with "unneeded" (not for long enough yet, a budget spent, …).
    #[serde(default)]
    unneeded: Option<BTreeSet<String>>,
    /// Nodes the last loop finds unneeded, among others maybe (upstream's tests of one node's removal).
    #[serde(default)]
    removable: Option<BTreeSet<String>>,
}

/// Words of the reasons that keep a node at upstream's eligibility step: being deleted, the
/// scale-down-disabled annotation, utilization above the threshold or not known, unready with
/// `--scale-down-unready-enabled=false`.
const INELIGIBLE: [&str; 5] = [
    "being deleted",
    "disabled by annotation",
    "above threshold",
    "utilization unknown",
    "--scale-down-unready-enabled",
];

pub fn check(case: &serde_norway::Value) -> Result<(), String> {
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
        scan_interval: Duration::from_secs(10),
        provision_delay: Duration::ZERO,
        node_ready_delay: Duration::ZERO,
    };
    let mut report = None;
    for _ in 0..case.loops {
        // `step` moves the clock on by the scan interval itself.
        report = Some(sim.step(&settings, &pacing));
    }
    let r = report.ok_or("loops: 0")?;
    let mut wrong = Vec::new();
    let scaled: BTreeMap<String, i32> = r
        .scale_up
        .iter()
        .map(|u| (u.group.clone(), u.delta))
        .collect();
    if let Some(want) = &case.expect.scale_up {
        if &scaled != want {
            wrong.push(format!("scale-up {scaled:?}, upstream {want:?}"));
        }
    }
    if let Some(any) = &case.expect.scale_up_one_of {
        if !any.contains(&scaled) {
            wrong.push(format!("scale-up {scaled:?}, upstream one of {any:?}"));
        }
    }
    if let Some(want) = &case.expect.scale_down {
        let got: BTreeSet<String> = r.scale_down.iter().map(|d| d.node.clone()).collect();
        if &got != want {
            wrong.push(format!("scale-down {got:?}, upstream {want:?}"));
        }
    }
    for (pod, why) in case.expect.pending.iter().flatten() {
        match r.pending.iter().find(|p| p.pod.as_deref() == Some(pod)) {
            Some(p) if p.reason.contains(why.as_str()) => {}
            Some(p) => wrong.push(format!(
                "{pod} pending because {:?}, upstream: {why}",
                p.reason
            )),
            None => wrong.push(format!("{pod} not pending, upstream: {why}")),
        }
    }
    for (node, why) in case.expect.unremovable.iter().flatten() {
        match r
            .unremovable
            .iter()
            .find(|n| n.node.as_deref() == Some(node))
        {
            Some(n) if n.reason.contains(why.as_str()) => {}
            Some(n) => wrong.push(format!(
                "{node} kept because {:?}, upstream: {why}",
                n.reason
            )),
            None => wrong.push(format!("{node} not kept, upstream: {why}")),
        }
    }
    let unneeded: BTreeSet<String> = r
        .scale_down
        .iter()
        .map(|d| d.node.clone())
        .chain(
            r.unremovable
                .iter()
                .filter(|n| n.reason.starts_with("unneeded"))
                .filter_map(|n| n.node.clone()),
        )
        .collect();
    for node in case.expect.removable.iter().flatten() {
        if !unneeded.contains(node) {
            let why = r
                .unremovable
                .iter()
                .find(|n| n.node.as_deref() == Some(node));
            wrong.push(format!(
                "{node} not unneeded ({:?}), upstream: removable",
                why.map(|n| &n.reason)
            ));
        }
    }
    if let Some(want) = &case.expect.unneeded {
        if &unneeded != want {
            wrong.push(format!("unneeded {unneeded:?}, upstream {want:?}"));
        }
    }
    for node in case.expect.eligible.iter().flatten() {
        let kept = r
            .unremovable
            .iter()
            .find(|n| n.node.as_deref() == Some(node));
        if let Some(n) = kept.filter(|n| INELIGIBLE.iter().any(|w| n.reason.contains(w))) {
            wrong.push(format!(
                "{node} kept because {:?}, upstream: eligible",
                n.reason
            ));
        }
    }
    if let Some(want) = case.expect.unhealthy {
        if r.unhealthy.is_some() != want {
            wrong.push(format!("unhealthy: {:?}, upstream: {want}", r.unhealthy));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("; "))
    }
}
