//! `kind: equivalence` — cluster-autoscaler's pod equivalence groups (`core/scaleup/equivalence`): which
//! pending pods (`objects`, Pod objects with their owners) are binpacked as one group. `groups` is
//! upstream's grouping by pod name, compared as sets (the order of groups and of pods in them aside).

use std::collections::BTreeSet;

use ferroscale::engine::equivalence::equivalence_groups;
use serde::Deserialize;

use super::support;

#[derive(Deserialize)]
struct Case {
    objects: serde_norway::Value,
    groups: Vec<Vec<String>>,
}

pub fn check(case: &serde_norway::Value) -> Result<(), String> {
    let case: Case = serde_norway::from_value(case.clone()).map_err(|e| e.to_string())?;
    let inputs = support::inputs(&support::objects(&case.objects)?)?;
    let pods: Vec<_> = inputs.pods.iter().collect();
    let got: BTreeSet<BTreeSet<String>> = equivalence_groups(&pods)
        .into_iter()
        .map(|g| g.into_iter().map(|i| pods[i].name.clone()).collect())
        .collect();
    let want: BTreeSet<BTreeSet<String>> = case
        .groups
        .into_iter()
        .map(|g| g.into_iter().collect())
        .collect();
    if got == want {
        Ok(())
    } else {
        Err(format!("groups {got:?}, upstream {want:?}"))
    }
}
