//! `kind: filter` — kube-scheduler's Filter tests: does a pod pass the filters on each node, given the
//! pods already on the nodes? `objects` holds the nodes, the pods on them (`spec.nodeName`), the pod
//! under test (`pod`, by default the one pod without a node) and any storage objects; `fits` maps each
//! node named to whether the pod passes there. Every filter runs, as in the scheduler, so a node with
//! no `status.allocatable` (upstream's cases about other plugins leave it empty) gets room for anything.
//! `args` holds the arguments a case gives its `plugin` upstream (a scheduler profile): they are read as
//! a `KubeSchedulerConfiguration` holding them (`--scheduler-config-file`) and applied to the pods as
//! the engine's loop applies them.

use std::collections::BTreeMap;

use ferroscale::engine::predicates::{fits, NodeInfo};
use serde::Deserialize;
use serde_json::json;

use super::support;

#[derive(Deserialize)]
struct Case {
    objects: serde_norway::Value,
    #[serde(default)]
    pod: Option<String>,
    fits: BTreeMap<String, bool>,
    #[serde(default)]
    plugin: Option<String>,
    #[serde(default)]
    args: Option<serde_norway::Value>,
}

pub fn check(case: &serde_norway::Value) -> Result<(), String> {
    let case: Case = serde_norway::from_value(case.clone()).map_err(|e| e.to_string())?;
    let profile = match (&case.plugin, &case.args) {
        (Some(plugin), Some(args)) => {
            let config = json!({
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [ { "schedulerName": "default-scheduler",
                    "pluginConfig": [ { "name": plugin, "args": args } ] } ],
            });
            ferroscale::k8s::scheduler_config::parse(&config.to_string())
                .map_err(|e| e.to_string())?
        }
        (None, None) => Default::default(),
        _ => return Err("`args` and `plugin` go together".into()),
    };
    let mut objects = support::objects(&case.objects)?;
    for n in &mut objects.nodes {
        let status = n.status.get_or_insert_with(Default::default);
        if status.allocatable.is_none() && status.capacity.is_none() {
            status.allocatable = serde_json::from_value(
                json!({ "cpu": "1000", "memory": "1000Ti", "pods": "1000", "ephemeral-storage": "1000Ti" }),
            )
            .ok();
        }
    }
    let mut inputs = support::inputs(&objects)?;
    for p in &mut inputs.pods {
        *p = profile.apply(p);
    }
    let under_test = match &case.pod {
        Some(name) => inputs.pods.iter().find(|p| &p.name == name),
        None => {
            let mut unplaced = inputs.pods.iter().filter(|p| p.node_name.is_none());
            match (unplaced.next(), unplaced.next()) {
                (Some(p), None) => Some(p),
                _ => return Err("name the pod under test (`pod`)".into()),
            }
        }
    }
    .ok_or("the pod under test is not among the objects")?;
    let mut infos: Vec<NodeInfo> = inputs.nodes.iter().cloned().map(NodeInfo::new).collect();
    for p in &inputs.pods {
        if std::ptr::eq(p, under_test) {
            continue;
        }
        if let Some(i) = infos
            .iter()
            .position(|n| Some(&n.node.name) == p.node_name.as_ref())
        {
            infos[i].add(p.clone());
        }
    }
    let mut wrong = Vec::new();
    for (node, want) in &case.fits {
        let info = infos
            .iter()
            .find(|n| &n.node.name == node)
            .ok_or_else(|| format!("no node {node:?} among the objects"))?;
        let got = fits(under_test, &infos, info);
        if got.is_ok() != *want {
            wrong.push(match got {
                Ok(()) => format!("fits {node}, upstream: does not"),
                Err(why) => format!("does not fit {node} ({why}), upstream: fits"),
            });
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("; "))
    }
}
