//! `kind: expander` — cluster-autoscaler's expander strategy tests (`expander/<name>`): which of the
//! scale-up options a strategy (or a chain, `--expander=a,b`) keeps, before the random tie-break.
//! Each option is a `group` adding `nodes` nodes shaped like its `template` (a Node, optional: a test
//! whose strategy reads none gives none) for its `pods` (Pod objects, or a `count` of pods without
//! requests); `priorities` is the priority expander's ConfigMap text. `expect` is the groups kept, in
//! order.

use ferroscale::engine::expander::{choose, Context, ExpansionOption, Priorities};
use ferroscale::model::{Resources, TemplateNode};
use serde::Deserialize;

use super::support;

#[derive(Deserialize)]
struct Case {
    expander: String,
    #[serde(default)]
    priorities: Option<String>,
    options: Vec<Option_>,
    expect: Vec<String>,
}

#[derive(Deserialize)]
struct Option_ {
    group: String,
    #[serde(default)]
    nodes: i32,
    #[serde(default)]
    template: Option<serde_norway::Value>,
    #[serde(default)]
    pods: Vec<serde_norway::Value>,
    /// Pods without requests (upstream's tests count `nil` pods).
    #[serde(default)]
    count: usize,
}

pub fn check(case: &serde_norway::Value) -> Result<(), String> {
    let case: Case = serde_norway::from_value(case.clone()).map_err(|e| e.to_string())?;
    let settings = support::settings(&[format!("--expander={}", case.expander)])?;
    let mut options = Vec::new();
    for o in &case.options {
        let mut list = o.template.iter().cloned().collect::<Vec<_>>();
        list.extend(o.pods.iter().cloned());
        let inputs = support::inputs(&support::objects(&serde_norway::Value::Sequence(list))?)?;
        let template = match inputs.nodes.first() {
            Some(n) => TemplateNode {
                name: n.name.clone(),
                labels: (*n.labels).clone(),
                taints: n.taints.clone(),
                capacity: if n.capacity == Resources::default() {
                    n.allocatable.clone()
                } else {
                    n.capacity.clone()
                },
                allocatable: n.allocatable.clone(),
                volume_limits: Default::default(),
            },
            None => TemplateNode::default(),
        };
        let mut pods: Vec<Resources> = inputs.pods.iter().map(|p| p.requests.clone()).collect();
        pods.extend(std::iter::repeat_n(Resources::default(), o.count));
        options.push(ExpansionOption {
            group: o.group.clone(),
            node_count: o.nodes,
            pods,
            template,
            price_per_hour: None,
        });
    }
    let priorities = match &case.priorities {
        Some(text) => Priorities::parse(text).map_err(|e| e.to_string())?,
        None => settings.priorities.clone(),
    };
    let ctx = Context {
        cluster_nodes: 0,
        priorities,
        seed: Some(0),
    };
    let got: Vec<String> = choose(&settings.expander, &options, &ctx)
        .kept
        .iter()
        .map(|&i| options[i].group.clone())
        .collect();
    if got == case.expect {
        Ok(())
    } else {
        Err(format!("kept {got:?}, upstream {:?}", case.expect))
    }
}
