//! `RemovePodsViolatingNodeTaints`, as the descheduler's plugin of that name proposes evictions: pods
//! on a node with a `NoSchedule` taint (and `PreferNoSchedule` with `includePreferNoSchedule`) they do
//! not tolerate, the taints narrowed by `excludedTaints` / `includedTaints` (`key` or `key=value`).
//! `NoExecute` taints are the kubelet's to enforce, not this strategy's.

use serde::Deserialize;

use super::scope::Scope;
use super::Plugin;
use crate::deschedule::args::{ArgsError, Namespaces, Problems, Selector, Strategy};
use crate::deschedule::policy::decode::{self, copy};
use crate::deschedule::policy::field::Object;
use crate::deschedule::policy::PolicyError;
use crate::deschedule::validate;
use crate::deschedule::{Evictor, Proposal, View};
use crate::model::{Taint, TaintEffect};
use serde_norway::Mapping;

/// `RemovePodsViolatingNodeTaints`'s arguments, as the policy's `pluginConfig` writes them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct RemovePodsViolatingNodeTaintsArgs {
    pub namespaces: Option<Namespaces>,
    pub label_selector: Option<Selector>,
    /// Also count `PreferNoSchedule` taints.
    pub include_prefer_no_schedule: bool,
    /// Taints (`key` or `key=value`) never counted.
    #[serde(deserialize_with = "crate::deschedule::validate::null_as_default")]
    pub excluded_taints: Vec<String>,
    /// When set, only these taints (`key` or `key=value`) count; set but empty, none does (as the
    /// descheduler, which tests the list for nil).
    pub included_taints: Option<Vec<String>>,
}

impl RemovePodsViolatingNodeTaintsArgs {
    /// The descheduler's validation, naming the field at fault.
    pub fn validate(&self) -> Result<(), ArgsError> {
        let mut out = Problems::default();
        validate::scope(&self.namespaces, &self.label_selector, &mut out);
        let included = self.included_taints.as_ref().is_some_and(|i| !i.is_empty());
        if !self.excluded_taints.is_empty() && included {
            out.add(
                "includedTaints",
                "either includedTaints or excludedTaints can be set, not both",
            );
        }
        out.done()
    }

    /// Whether a taint of the node counts (the descheduler's taint filter).
    fn counts(&self, t: &Taint) -> bool {
        let effect = t.effect == TaintEffect::NoSchedule
            || (self.include_prefer_no_schedule && t.effect == TaintEffect::PreferNoSchedule);
        let named = |list: &[String]| {
            list.iter().any(|s| {
                *s == t.key
                    || (!t.value.is_empty()
                        && s.split_once('=') == Some((t.key.as_str(), t.value.as_str())))
            })
        };
        effect && !named(&self.excluded_taints) && self.included_taints.as_deref().is_none_or(named)
    }
}

/// The pods `RemovePodsViolatingNodeTaints` would evict, in the order it would evict them: node by
/// node, each node's pods that do not tolerate one of its counted taints.
pub fn propose(
    args: &RemovePodsViolatingNodeTaintsArgs,
    view: &View,
    evictor: &Evictor,
) -> Vec<Proposal> {
    let scope = Scope::new(&args.namespaces, &args.label_selector);
    let mut out = Vec::new();
    for node in view.nodes() {
        let taints: Vec<&Taint> = node.taints.iter().filter(|t| args.counts(t)).collect();
        if taints.is_empty() {
            continue;
        }
        for pod in view.pods_on(&node.name) {
            if !scope.admits(pod) || !evictor.allows(pod) {
                continue;
            }
            let tolerated = |t: &&Taint| pod.tolerations.iter().any(|tol| tol.tolerates(t));
            if !taints.iter().all(tolerated) {
                out.push(Proposal::anywhere(
                    pod,
                    Strategy::RemovePodsViolatingNodeTaints,
                ));
            }
        }
    }
    out
}

impl Plugin for RemovePodsViolatingNodeTaintsArgs {
    const STRATEGY: Strategy = Strategy::RemovePodsViolatingNodeTaints;
    const BALANCES: bool = false;
    const FIELDS: &'static [&'static str] = &[
        "namespaces",
        "labelSelector",
        "includePreferNoSchedule",
        "excludedTaints",
        "includedTaints",
    ];
    const V1ALPHA1_PARAMS: &'static [&'static str] = &[
        "namespaces",
        "labelSelector",
        "includePreferNoSchedule",
        "excludedTaints",
        "includedTaints",
    ];

    fn decode(o: &Object) -> Result<(), PolicyError> {
        decode::scope(o)?;
        decode::flag(o, "includePreferNoSchedule")?;
        o.get("excludedTaints").strings()?;
        o.get("includedTaints").strings()?;
        Ok(())
    }

    fn from_v1alpha1(p: &Object, out: &mut Mapping) -> Result<(), PolicyError> {
        decode::v1alpha1_scope(p, out, true);
        for key in [
            "includePreferNoSchedule",
            "excludedTaints",
            "includedTaints",
        ] {
            copy(out, p, key, key);
        }
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
