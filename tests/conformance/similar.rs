//! `kind: similar` — cluster-autoscaler's node-group comparator tests (`processors/nodegroupset`): are
//! two nodes, each with the pods on it (`spec.nodeName`), alike enough for their groups to be balanced?
//! `objects` holds exactly two nodes (the first is compared with the second) and their pods; `flags`
//! are upstream's balancing flags (`--balancing-ignore-label`, `--balancing-label`, the ratios);
//! `similar` is upstream's answer.

use ferroscale::engine::predicates::NodeInfo;
use ferroscale::engine::similar::similar;
use serde::Deserialize;

use super::support;

#[derive(Deserialize)]
struct Case {
    objects: serde_norway::Value,
    #[serde(default)]
    flags: Vec<String>,
    similar: bool,
}

pub fn check(case: &serde_norway::Value) -> Result<(), String> {
    let case: Case = serde_norway::from_value(case.clone()).map_err(|e| e.to_string())?;
    let inputs = support::inputs(&support::objects(&case.objects)?)?;
    let settings = support::settings(&case.flags)?;
    let [a, b] = inputs.nodes.as_slice() else {
        return Err(format!("{} nodes, two wanted", inputs.nodes.len()));
    };
    let info = |n: &ferroscale::model::workload::Node| {
        let mut i = NodeInfo::new(n.clone());
        for p in inputs
            .pods
            .iter()
            .filter(|p| p.node_name.as_ref() == Some(&n.name))
        {
            i.add(p.clone());
        }
        i
    };
    let got = similar(&info(a), &info(b), &settings.balancing);
    if got == case.similar {
        Ok(())
    } else {
        Err(format!("similar: {got}, upstream: {}", case.similar))
    }
}
