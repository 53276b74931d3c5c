//! `kind: readiness` — cluster-autoscaler's cluster-state tests (`clusterstate`): how the registered
//! nodes sort by readiness at `now` (ready, unready, not started), whether the cluster is healthy, and
//! whether each group is, through `ferroscale::engine::health`. `objects` holds the nodes (each joins
//! its group by the label `ferroscale.io/node-group`); `groups` maps each group to its target size;
//! `max_node_startup_time` (Go syntax) is the groups' `maxNodeStartupTime`, upstream's default (15m)
//! when left out; `flags` are upstream's (`--ok-total-unready-count`, `--max-total-unready-percentage`).
//! Every field of `expect` given must match.

use std::collections::BTreeMap;
use std::time::Duration;

use ferroscale::engine::health::{cluster_healthy, group_health, Readiness};
use ferroscale::labels;
use ferroscale::model::parse_go_duration;
use serde::Deserialize;

use super::support;

#[derive(Deserialize)]
struct Case {
    objects: serde_norway::Value,
    #[serde(default)]
    groups: BTreeMap<String, i32>,
    now: String,
    #[serde(default)]
    max_node_startup_time: Option<String>,
    #[serde(default)]
    flags: Vec<String>,
    expect: Expect,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    #[serde(default)]
    ready: Option<usize>,
    #[serde(default)]
    unready: Option<usize>,
    #[serde(default)]
    not_started: Option<usize>,
    #[serde(default)]
    cluster_healthy: Option<bool>,
    /// Group → whether it is healthy.
    #[serde(default)]
    healthy: BTreeMap<String, bool>,
}

pub fn check(case: &serde_norway::Value) -> Result<(), String> {
    let case: Case = serde_norway::from_value(case.clone()).map_err(|e| e.to_string())?;
    let inputs = support::inputs(&support::objects(&case.objects)?)?;
    let settings = support::settings(&case.flags)?;
    let now = support::time(&case.now)?;
    let startup = match &case.max_node_startup_time {
        Some(d) => parse_go_duration(d)?,
        None => Duration::from_secs(15 * 60),
    };
    let nodes = &inputs.nodes;
    let all = Readiness::of(nodes, startup, now, &settings.taints);
    let mut wrong = Vec::new();
    for (what, want, got) in [
        ("ready", case.expect.ready, all.ready),
        ("unready", case.expect.unready, all.unready),
        ("not started", case.expect.not_started, all.not_started),
    ] {
        if want.is_some_and(|w| w != got) {
            wrong.push(format!("{got} {what}, upstream {}", want.unwrap_or(0)));
        }
    }
    if let Some(want) = case.expect.cluster_healthy {
        let got = cluster_healthy(nodes, startup, now, &settings);
        if got != want {
            wrong.push(format!("cluster healthy: {got}, upstream {want}"));
        }
    }
    for (group, want) in &case.expect.healthy {
        let target = *case
            .groups
            .get(group)
            .ok_or_else(|| format!("no target size for {group}"))?;
        let members = nodes
            .iter()
            .filter(|n| n.labels.get(labels::NODE_GROUP) == Some(group));
        let (_, got) = group_health(members, target, startup, now, &settings);
        if got != *want {
            wrong.push(format!("{group} healthy: {got}, upstream {want}"));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("; "))
    }
}
