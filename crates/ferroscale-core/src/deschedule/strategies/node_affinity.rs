//! `RemovePodsViolatingNodeAffinity`, as the descheduler's plugin of that name proposes evictions:
//! for `requiredDuringSchedulingIgnoredDuringExecution`, pods with required node affinity whose node
//! no longer matches their node selector and required affinity; for
//! `preferredDuringSchedulingIgnoredDuringExecution`, pods with preferred node affinity some node
//! matches with more weight than theirs (each proposal's `onto`: those nodes, so the plan never moves
//! a pod to a node it prefers no more). Either only when they fit some other node (the scheduler's
//! filters but topology spread, which the planner checks).

use std::collections::HashSet;

use serde::Deserialize;

use super::fit::Fit;
use super::scope::Scope;
use super::Plugin;
use crate::deschedule::args::{ArgsError, Namespaces, Problems, Selector, Strategy};
use crate::deschedule::policy::decode::{self, copy};
use crate::deschedule::policy::field::Object;
use crate::deschedule::policy::PolicyError;
use crate::deschedule::validate;
use crate::deschedule::{Evictor, Proposal, View};
use crate::engine::predicates::placement;
use crate::model::workload::{Node, Pod};
use serde_norway::Mapping;

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

    /// What a run skips, as the descheduler does (it logs and skips a type it does not know).
    pub fn warnings(&self) -> Vec<String> {
        self.node_affinity_type
            .iter()
            .filter(|t| *t != REQUIRED && *t != PREFERRED)
            .map(|t| format!("nodeAffinityType {t:?}: unknown, ignored"))
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
        if kind == PREFERRED {
            preferred(view, &scope, evictor, &fit, &mut proposed, &mut out);
        }
        if kind != REQUIRED {
            continue;
        }
        for node in view.nodes() {
            for pod in view.pods_on(&node.name) {
                let violates = !pod.node_affinity.is_empty()
                    && scope.admits(pod)
                    && evictor.allows(pod)
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

/// The preferred type's proposals: pods some node matches with more preferred weight than their own
/// node, each onto those nodes.
fn preferred(
    view: &View,
    scope: &Scope,
    evictor: &Evictor,
    fit: &Fit,
    proposed: &mut HashSet<String>,
    out: &mut Vec<Proposal>,
) {
    for node in view.nodes() {
        for pod in view.pods_on(&node.name) {
            if pod.meta.preferred_node_affinity.is_empty()
                || !scope.admits(pod)
                || !evictor.allows(pod)
            {
                continue;
            }
            let here = weight(pod, node);
            let better: Vec<String> = view
                .nodes()
                .iter()
                .filter(|n| weight(pod, n) > here)
                .map(|n| n.name.clone())
                .collect();
            if better.is_empty() || !fit.fits_any_other_unspread(pod) {
                continue;
            }
            if proposed.insert(pod.key()) {
                out.push(Proposal {
                    onto: Some(better.into()),
                    ..Proposal::anywhere(pod, Strategy::RemovePodsViolatingNodeAffinity)
                });
            }
        }
    }
}

/// The sum of the weights of the pod's preferred node affinity terms the node matches (a term
/// without requirements matches none), as the descheduler and the scheduler's scoring add them.
pub fn weight(pod: &Pod, node: &Node) -> i64 {
    pod.meta
        .preferred_node_affinity
        .iter()
        .filter(|(_, term)| {
            !term.is_empty()
                && term
                    .iter()
                    .all(|r| r.admits_node(&node.labels, node.field_name()))
        })
        .map(|(w, _)| i64::from(*w))
        .sum()
}

impl Plugin for RemovePodsViolatingNodeAffinityArgs {
    const STRATEGY: Strategy = Strategy::RemovePodsViolatingNodeAffinity;
    const BALANCES: bool = false;
    const FIELDS: &'static [&'static str] = &["namespaces", "labelSelector", "nodeAffinityType"];
    const V1ALPHA1_PARAMS: &'static [&'static str] =
        &["namespaces", "labelSelector", "nodeAffinityType"];

    fn decode(o: &Object) -> Result<(), PolicyError> {
        decode::scope(o)?;
        o.get("nodeAffinityType").strings()?;
        Ok(())
    }

    fn from_v1alpha1(p: &Object, out: &mut Mapping) -> Result<(), PolicyError> {
        decode::v1alpha1_scope(p, out, true);
        copy(out, p, "nodeAffinityType", "nodeAffinityType");
        Ok(())
    }

    fn check(&self) -> Result<(), ArgsError> {
        self.validate()
    }

    fn proposals(&self, view: &View, evictor: &Evictor) -> Vec<Proposal> {
        propose(self, view, evictor)
    }
}

#[cfg(test)]
mod tests;
