//! `RemovePodsViolatingNodeAffinity`, as the descheduler's plugin of that name proposes evictions:
//! pods with required node affinity whose node no longer matches their node selector and required
//! affinity, when they fit some node (the scheduler's filters but topology spread, which the planner
//! checks).
//!
//! `preferredDuringSchedulingIgnoredDuringExecution` is read but proposes nothing: the pod model keeps
//! only required node affinity (see [`RemovePodsViolatingNodeAffinityArgs::warnings`]).

use std::collections::HashSet;

use serde::Deserialize;

use super::fit::Fit;
use super::scope::Scope;
use crate::deschedule::args::{ArgsError, Namespaces, Problems, Selector, Strategy};
use crate::deschedule::validate;
use crate::deschedule::{Evictor, Proposal, View};
use crate::engine::predicates::placement;

/// `nodeAffinityType` values the descheduler knows.
pub const REQUIRED: &str = "requiredDuringSchedulingIgnoredDuringExecution";
pub const PREFERRED: &str = "preferredDuringSchedulingIgnoredDuringExecution";

/// `RemovePodsViolatingNodeAffinity`'s arguments, as the policy's `pluginConfig` writes them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct RemovePodsViolatingNodeAffinityArgs {
    pub namespaces: Option<Namespaces>,
    pub label_selector: Option<Selector>,
    /// Which affinity to enforce, in order ([`REQUIRED`], [`PREFERRED`]); the descheduler requires one.
    #[serde(deserialize_with = "crate::deschedule::validate::null_as_default")]
    pub node_affinity_type: Vec<String>,
}

impl RemovePodsViolatingNodeAffinityArgs {
    /// The descheduler's validation, naming the field at fault.
    pub fn validate(&self) -> Result<(), ArgsError> {
        let mut out = Problems::default();
        if self.node_affinity_type.is_empty() {
            out.add("nodeAffinityType", "nodeAffinityType needs to be set");
        }
        for (i, t) in self.node_affinity_type.iter().enumerate() {
            if t != REQUIRED && t != PREFERRED {
                out.add(
                    format!("nodeAffinityType[{i}]"),
                    format!("unknown node affinity type {t:?} (known: {REQUIRED}, {PREFERRED})"),
                );
            }
        }
        validate::scope(&self.namespaces, &self.label_selector, &mut out);
        out.done()
    }

    /// What a run will not do as the descheduler would: a type it does not know (it logs and skips
    /// it too) and the preferred type, which ferroscale does not evaluate.
    pub fn warnings(&self) -> Vec<String> {
        self.node_affinity_type
            .iter()
            .filter_map(|t| match t.as_str() {
                REQUIRED => None,
                PREFERRED => Some(format!(
                    "nodeAffinityType {PREFERRED}: not evaluated (only required node affinity is \
                     modelled); no pod is evicted for it"
                )),
                other => Some(format!("nodeAffinityType {other:?}: unknown, ignored")),
            })
            .collect()
    }
}

/// The pods `RemovePodsViolatingNodeAffinity` would evict, in the order it would evict them: for each
/// type in order, node by node, each node's pods violating it.
pub fn propose(
    args: &RemovePodsViolatingNodeAffinityArgs,
    view: &View,
    evictor: &Evictor,
) -> Vec<Proposal> {
    let scope = Scope::new(&args.namespaces, &args.label_selector);
    let fit = Fit::new(view);
    let mut out = Vec::new();
    let mut proposed = HashSet::new();
    for kind in &args.node_affinity_type {
        if kind != REQUIRED {
            continue;
        }
        for node in view.nodes() {
            for pod in view.pods_on(&node.name) {
                let violates = !pod.node_affinity.is_empty()
                    && scope.admits(pod)
                    && evictor.filter(pod).is_ok()
                    && placement(pod, node).is_err()
                    && fit.fits_any_other_unspread(pod);
                if violates && proposed.insert(pod.key()) {
                    out.push(Proposal::anywhere(
                        pod,
                        Strategy::RemovePodsViolatingNodeAffinity,
                    ));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
