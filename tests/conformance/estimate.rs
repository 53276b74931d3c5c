//! `kind: estimate` — cluster-autoscaler's binpacking estimator tests: how many new nodes of a template
//! the pods need, and how many of them are placed, with at most `max_nodes` new nodes (0: no limit).
//! `pods` lists pods with a `count` of identical copies each.

use ferroscale::engine::estimator::estimate;
use serde::Deserialize;

use super::support;

#[derive(Deserialize)]
struct Case {
    template: serde_norway::Value,
    pods: Vec<Copies>,
    #[serde(default)]
    max_nodes: usize,
    expect: Expect,
}

#[derive(Deserialize)]
struct Copies {
    count: usize,
    pod: serde_norway::Value,
}

#[derive(Deserialize, Debug, PartialEq)]
struct Expect {
    nodes: usize,
    scheduled: usize,
}

pub fn check(case: &serde_norway::Value) -> Result<(), String> {
    let case: Case = serde_norway::from_value(case.clone()).map_err(|e| e.to_string())?;
    let mut list = vec![case.template.clone()];
    list.extend(case.pods.iter().map(|c| c.pod.clone()));
    let inputs = support::inputs(&support::objects(&serde_norway::Value::Sequence(list))?)?;
    let template = inputs.nodes.first().ok_or("the template is no Node")?;
    let mut pods = Vec::new();
    for (copies, pod) in case.pods.iter().zip(&inputs.pods) {
        pods.extend(std::iter::repeat_n(pod, copies.count));
    }
    let limit = if case.max_nodes == 0 {
        usize::MAX
    } else {
        case.max_nodes
    };
    let e = estimate(&pods, template, limit);
    let got = Expect {
        nodes: e.nodes,
        scheduled: e.scheduled.len(),
    };
    if got == case.expect {
        Ok(())
    } else {
        Err(format!("got {got:?}, upstream: {:?}", case.expect))
    }
}
