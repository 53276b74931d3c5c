//! `kind: estimate` — cluster-autoscaler's binpacking estimator tests: how many new nodes of a template
//! the pods need, and how many of them are placed, with at most `max_nodes` new nodes (0: no limit).
//! `pods` lists pods with a `count` of identical copies each. `existing` holds the cluster's nodes (and
//! pods bound to them by `spec.nodeName`), which inter-pod constraints count; only new nodes receive
//! pods. `expect.per_entry`, when given, is how many pods of each `pods` entry are placed (upstream's
//! `expectProcessedPods`); `expect.order`, when given, the `pods` entries in the order their first pod
//! is placed (upstream's pod orderer: the groups are binpacked largest first). `budget_spent: true`
//! starts the estimate with its time budget spent.

use std::time::Duration;

use ferroscale::clock::{Deadline, FixedClock};
use ferroscale::engine::estimator::estimate_within;
use ferroscale::engine::predicates::NodeInfo;
use serde::Deserialize;

use super::support;

#[derive(Deserialize)]
struct Case {
    template: serde_norway::Value,
    pods: Vec<Copies>,
    #[serde(default)]
    existing: Vec<serde_norway::Value>,
    #[serde(default)]
    max_nodes: usize,
    /// The time budget (`--max-nodegroup-binpacking-duration`) already spent when the estimate starts.
    #[serde(default)]
    budget_spent: bool,
    expect: Expect,
}

#[derive(Deserialize)]
struct Copies {
    count: usize,
    pod: serde_norway::Value,
}

#[derive(Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct Expect {
    nodes: usize,
    scheduled: usize,
    #[serde(default)]
    per_entry: Option<Vec<usize>>,
    #[serde(default)]
    order: Option<Vec<usize>>,
}

pub fn check(case: &serde_norway::Value) -> Result<(), String> {
    let case: Case = serde_norway::from_value(case.clone()).map_err(|e| e.to_string())?;
    let mut list = vec![case.template.clone()];
    list.extend(case.pods.iter().map(|c| c.pod.clone()));
    let inputs = support::inputs(&support::objects(&serde_norway::Value::Sequence(list))?)?;
    let template = inputs.nodes.first().ok_or("the template is no Node")?;
    let existing = support::inputs(&support::objects(&serde_norway::Value::Sequence(
        case.existing.clone(),
    ))?)?;
    let mut base: Vec<NodeInfo> = existing.nodes.iter().cloned().map(NodeInfo::new).collect();
    for p in &existing.pods {
        if let Some(n) = base
            .iter_mut()
            .find(|n| Some(&n.node.name) == p.node_name.as_ref())
        {
            n.add(p.clone());
        }
    }
    let mut pods = Vec::new();
    let mut entry_of = Vec::new();
    for (i, (copies, pod)) in case.pods.iter().zip(&inputs.pods).enumerate() {
        pods.extend(std::iter::repeat_n(pod, copies.count));
        entry_of.extend(std::iter::repeat_n(i, copies.count));
    }
    let limit = if case.max_nodes == 0 {
        usize::MAX
    } else {
        case.max_nodes
    };
    let clock = FixedClock::default();
    let spent = case
        .budget_spent
        .then(|| Deadline::after(&clock, Duration::ZERO));
    let e = estimate_within(&pods, template, limit, &base, spent);
    let mut per_entry = vec![0; case.pods.len()];
    for &i in &e.scheduled {
        per_entry[entry_of[i]] += 1;
    }
    let mut order = Vec::new();
    for &i in &e.scheduled {
        if !order.contains(&entry_of[i]) {
            order.push(entry_of[i]);
        }
    }
    let got = Expect {
        nodes: e.nodes,
        scheduled: e.scheduled.len(),
        per_entry: case.expect.per_entry.as_ref().map(|_| per_entry),
        order: case.expect.order.as_ref().map(|_| order),
    };
    if got == case.expect {
        Ok(())
    } else {
        Err(format!("got {got:?}, upstream: {:?}", case.expect))
    }
}
