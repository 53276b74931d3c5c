//! `RemoveFailedPods`, as the descheduler's plugin of that name proposes evictions: the failed pods
//! still bound to each node, at least `minPodLifetimeSeconds` old, not owned by an `excludeOwnerKinds`
//! kind, failed for one of `reasons` or with one of `exitCodes` when those are set.

use serde::Deserialize;

use super::lifetime::{owner_kinds, statuses};
use super::scope::Scope;
use super::Plugin;
use crate::deschedule::args::{ArgsError, Problems};
use crate::deschedule::policy::decode::{self, copy};
use crate::deschedule::policy::field::default;
use crate::deschedule::policy::field::Object;
use crate::deschedule::policy::PolicyError;
use crate::deschedule::validate;
use crate::deschedule::{Evictor, Namespaces, Proposal, Selector, Strategy, View};
use crate::model::workload::{Pod, PodPhase};
use serde_norway::{Mapping, Value};

/// `RemoveFailedPods`'s arguments, as the policy's `pluginConfig` writes them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct RemoveFailedPodsArgs {
    pub namespaces: Option<Namespaces>,
    pub label_selector: Option<Selector>,
    pub exclude_owner_kinds: Vec<String>,
    /// 3600 unless set, as the descheduler defaults it.
    pub min_pod_lifetime_seconds: Option<u64>,
    /// Container waiting or terminated reasons, or the pod's status reason.
    pub reasons: Vec<String>,
    pub exit_codes: Vec<i32>,
    pub including_init_containers: bool,
}

impl Default for RemoveFailedPodsArgs {
    fn default() -> Self {
        RemoveFailedPodsArgs {
            namespaces: None,
            label_selector: None,
            exclude_owner_kinds: Vec::new(),
            min_pod_lifetime_seconds: Some(3600),
            reasons: Vec::new(),
            exit_codes: Vec::new(),
            including_init_containers: false,
        }
    }
}

impl RemoveFailedPodsArgs {
    /// The descheduler's checks; each message names its field.
    pub fn validate(&self) -> Result<(), ArgsError> {
        let mut out = Problems::default();
        validate::scope(&self.namespaces, &self.label_selector, &mut out);
        out.done()
    }

    /// The descheduler's `validateCanEvict`: old enough, owner kind not excluded, reason and exit
    /// code among those asked.
    fn selects(&self, pod: &Pod, now: i64) -> bool {
        if let Some(min) = self.min_pod_lifetime_seconds {
            // An unknown creation time (0) is not old enough.
            let min = i64::try_from(min).unwrap_or(i64::MAX);
            if pod.meta.created <= 0 || now.saturating_sub(pod.meta.created) < min {
                return false;
            }
        }
        if owner_kinds(pod).any(|k| self.exclude_owner_kinds.iter().any(|x| x == k)) {
            return false;
        }
        let init =
            |c: &&crate::model::workload::ContainerState| !c.init || self.including_init_containers;
        if !self.reasons.is_empty() {
            let containers = statuses(pod, false).chain(statuses(pod, true)).filter(init);
            let mut reasons = containers
                .flat_map(|c| [c.waiting.as_deref(), c.terminated.as_deref()])
                .flatten()
                .chain(pod.meta.status_reason.as_deref().map(String::as_str));
            if !reasons.any(|r| !r.is_empty() && self.reasons.iter().any(|x| x == r)) {
                return false;
            }
        }
        if !self.exit_codes.is_empty() {
            let containers = statuses(pod, false).chain(statuses(pod, true)).filter(init);
            let mut codes = containers.filter_map(|c| c.exit_code);
            if !codes.any(|e| self.exit_codes.contains(&e)) {
                return false;
            }
        }
        true
    }
}

/// The pods `RemoveFailedPods` would evict, in the order it would evict them: node by node.
pub fn propose(args: &RemoveFailedPodsArgs, view: &View, evictor: &Evictor) -> Vec<Proposal> {
    let scope = Scope::new(&args.namespaces, &args.label_selector);
    let mut out = Vec::new();
    for node in view.nodes() {
        let failed = view
            .failed_on(&node.name)
            .iter()
            .chain(view.pods_on(&node.name))
            .filter(|p| p.meta.phase == PodPhase::Failed);
        out.extend(
            failed
                .filter(|p| {
                    scope.admits(p) && args.selects(p, view.now()) && evictor.admits_noting(p)
                })
                .map(|p| Proposal::anywhere(p, Strategy::RemoveFailedPods)),
        );
    }
    out
}

impl Plugin for RemoveFailedPodsArgs {
    const STRATEGY: Strategy = Strategy::RemoveFailedPods;
    const BALANCES: bool = false;
    const FIELDS: &'static [&'static str] = &[
        "namespaces",
        "labelSelector",
        "excludeOwnerKinds",
        "minPodLifetimeSeconds",
        "reasons",
        "exitCodes",
        "includingInitContainers",
    ];
    const V1ALPHA1_PARAMS: &'static [&'static str] = &["namespaces", "labelSelector", "failedPods"];

    fn defaults(out: &mut Mapping) {
        default(out, "minPodLifetimeSeconds", Value::from(3600));
    }

    fn decode(o: &Object) -> Result<(), PolicyError> {
        decode::scope(o)?;
        decode::flag(o, "includingInitContainers")?;
        o.get("excludeOwnerKinds").strings()?;
        o.get("reasons").strings()?;
        decode::exit_codes(&o.get("exitCodes"))?;
        if let Some(m) = o.opt("minPodLifetimeSeconds") {
            m.int(0, u32::MAX.into())?;
        }
        Ok(())
    }

    fn from_v1alpha1(p: &Object, out: &mut Mapping) -> Result<(), PolicyError> {
        decode::v1alpha1_scope(p, out, true);
        let keys = [
            "excludeOwnerKinds",
            "minPodLifetimeSeconds",
            "reasons",
            "includingInitContainers",
        ];
        let f = p.get("failedPods").object(&keys)?;
        for key in keys {
            copy(out, &f, key, key);
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
