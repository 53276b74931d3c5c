//! `RemovePodsHavingTooManyRestarts`, as the descheduler's plugin of that name proposes evictions: on
//! each node, the pods whose containers restarted at least `podRestartThreshold` times (init
//! containers too with `includingInitContainers`), optionally only those in one of `states`, most
//! restarted first.

use serde::Deserialize;

use super::lifetime::{statuses, waiting_in};
use super::scope::Scope;
use super::Plugin;
use crate::deschedule::args::{ArgsError, Problems};
use crate::deschedule::policy::decode::{self, copy};
use crate::deschedule::policy::field::Object;
use crate::deschedule::policy::PolicyError;
use crate::deschedule::validate;
use crate::deschedule::{Evictor, Namespaces, Proposal, Selector, Strategy, View};
use crate::model::workload::Pod;
use serde_norway::Mapping;

/// `RemovePodsHavingTooManyRestarts`'s arguments, as the policy's `pluginConfig` writes them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct RemovePodsHavingTooManyRestartsArgs {
    pub namespaces: Option<Namespaces>,
    pub label_selector: Option<Selector>,
    pub pod_restart_threshold: i32,
    pub including_init_containers: bool,
    /// Pod phases (`Running`) or container waiting reasons (`CrashLoopBackOff`).
    pub states: Vec<String>,
}

/// The `states` the descheduler allows here.
const STATES: [&str; 2] = ["Running", "CrashLoopBackOff"];

impl RemovePodsHavingTooManyRestartsArgs {
    /// The descheduler's checks; each message names its field.
    pub fn validate(&self) -> Result<(), ArgsError> {
        let mut out = Problems::default();
        validate::scope(&self.namespaces, &self.label_selector, &mut out);
        if self.pod_restart_threshold < 1 {
            out.add(
                "podRestartThreshold",
                format!(
                    "must be set, at least 1 (got {})",
                    self.pod_restart_threshold
                ),
            );
        }
        validate::states(&self.states, &STATES, &mut out);
        out.done()
    }

    /// Its containers' restarts, with its init containers' when asked.
    fn restarts(&self, pod: &Pod) -> i32 {
        let count = |init| statuses(pod, init).map(|c| c.restarts).sum::<i32>();
        count(false)
            + if self.including_init_containers {
                count(true)
            } else {
                0
            }
    }

    fn in_states(&self, pod: &Pod) -> bool {
        self.states.is_empty()
            || self.states.iter().any(|s| s == pod.meta.phase.as_str())
            || waiting_in(pod, false, &self.states)
            || (self.including_init_containers && waiting_in(pod, true, &self.states))
    }
}

/// The pods `RemovePodsHavingTooManyRestarts` would evict, in the order it would evict them: node by
/// node, each node's most restarted first.
pub fn propose(
    args: &RemovePodsHavingTooManyRestartsArgs,
    view: &View,
    evictor: &Evictor,
) -> Vec<Proposal> {
    let scope = Scope::new(&args.namespaces, &args.label_selector);
    let mut out = Vec::new();
    for node in view.nodes() {
        let mut pods: Vec<_> = view
            .pods_on(&node.name)
            .iter()
            .chain(view.failed_on(&node.name))
            .filter(|p| scope.admits(p))
            .map(|p| (args.restarts(p), p))
            .filter(|(n, p)| {
                *n >= args.pod_restart_threshold && args.in_states(p) && evictor.admits_noting(p)
            })
            .collect();
        pods.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
        out.extend(
            pods.into_iter()
                .map(|(_, p)| Proposal::anywhere(p, Strategy::RemovePodsHavingTooManyRestarts)),
        );
    }
    out
}

impl Plugin for RemovePodsHavingTooManyRestartsArgs {
    const STRATEGY: Strategy = Strategy::RemovePodsHavingTooManyRestarts;
    const BALANCES: bool = false;
    const FIELDS: &'static [&'static str] = &[
        "namespaces",
        "labelSelector",
        "podRestartThreshold",
        "includingInitContainers",
        "states",
    ];
    const V1ALPHA1_PARAMS: &'static [&'static str] =
        &["namespaces", "labelSelector", "podsHavingTooManyRestarts"];

    fn decode(o: &Object) -> Result<(), PolicyError> {
        decode::scope(o)?;
        decode::flag(o, "includingInitContainers")?;
        if let Some(t) = o.opt("podRestartThreshold") {
            t.int(i32::MIN.into(), i32::MAX.into())?;
        }
        o.get("states").strings()?;
        Ok(())
    }

    fn from_v1alpha1(p: &Object, out: &mut Mapping) -> Result<(), PolicyError> {
        decode::v1alpha1_scope(p, out, true);
        let r = p
            .get("podsHavingTooManyRestarts")
            .object(&["podRestartThreshold", "includingInitContainers"])?;
        copy(out, &r, "podRestartThreshold", "podRestartThreshold");
        copy(
            out,
            &r,
            "includingInitContainers",
            "includingInitContainers",
        );
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
