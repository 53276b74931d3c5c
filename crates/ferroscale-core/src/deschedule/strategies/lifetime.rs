//! `PodLifeTime`, as the descheduler's plugin of that name proposes evictions: pods older than
//! `maxPodLifeTimeSeconds` and/or in one of `states`, of the `ownerKinds` asked, with a container that
//! exited with one of `exitCodes`, with a condition matching one of `conditions`; oldest first over
//! all nodes. `includingEphemeralContainers` reads ephemeral containers for `states`.

use serde::Deserialize;

use super::scope::Scope;
use super::Plugin;
use crate::deschedule::args::{ArgsError, Problems};
use crate::deschedule::policy::decode::{self, copy};
use crate::deschedule::policy::field::Object;
use crate::deschedule::policy::PolicyError;
use crate::deschedule::validate;
use crate::deschedule::{Evictor, Namespaces, Proposal, Selector, Strategy, View};
use crate::model::workload::{ContainerState, Pod};
use serde_norway::{Mapping, Value};

/// `PodLifeTime`'s arguments, as the policy's `pluginConfig` writes them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PodLifeTimeArgs {
    pub namespaces: Option<Namespaces>,
    pub label_selector: Option<Selector>,
    pub owner_kinds: Option<OwnerKinds>,
    pub max_pod_life_time_seconds: Option<u64>,
    /// Pod phases, pod status reasons, container waiting or terminated reasons.
    pub states: Vec<String>,
    /// A pod matches when one of its conditions matches one of these.
    pub conditions: Vec<PodConditionFilter>,
    pub exit_codes: Vec<i32>,
    pub including_init_containers: bool,
    /// `states` reads ephemeral containers' statuses too.
    pub including_ephemeral_containers: bool,
}

/// `ownerKinds`: at most one of `include` and `exclude`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OwnerKinds {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
}

/// One `conditions` entry: the fields set must all match one condition (podlifetime's
/// `matchesConditionFields`), and its last transition be at least that old.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PodConditionFilter {
    #[serde(rename = "type")]
    pub kind: String,
    pub status: String,
    pub reason: String,
    pub min_time_since_last_transition_seconds: Option<u64>,
}

/// The `states` the descheduler allows here: pod phases, pod status reasons, container waiting and
/// terminated reasons (podlifetime/validation.go).
pub(crate) const STATES: [&str; 24] = [
    "Running",
    "Pending",
    "Succeeded",
    "Failed",
    "Unknown",
    "NodeAffinity",
    "NodeLost",
    "Shutdown",
    "UnexpectedAdmissionError",
    "PodInitializing",
    "ContainerCreating",
    "ImagePullBackOff",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "ErrImagePull",
    "CreateContainerError",
    "InvalidImageName",
    "OOMKilled",
    "Error",
    "Completed",
    "DeadlineExceeded",
    "Evicted",
    "ContainerCannotRun",
    "StartError",
];

impl PodLifeTimeArgs {
    /// The descheduler's checks (`ValidatePodLifeTimeArgs`).
    pub fn validate(&self) -> Result<(), ArgsError> {
        let mut out = Problems::default();
        validate::scope(&self.namespaces, &self.label_selector, &mut out);
        if self
            .owner_kinds
            .as_ref()
            .is_some_and(|k| !k.include.is_empty() && !k.exclude.is_empty())
        {
            out.add(
                "ownerKinds.exclude",
                "only one of include/exclude ownerKinds can be set",
            );
        }
        validate::states(&self.states, &STATES, &mut out);
        for (i, c) in self.conditions.iter().enumerate() {
            let empty = c.kind.is_empty()
                && c.status.is_empty()
                && c.reason.is_empty()
                && c.min_time_since_last_transition_seconds.is_none();
            if empty {
                out.add(
                    format!("conditions[{i}]"),
                    "at least one of type, status, reason or minTimeSinceLastTransitionSeconds must be set",
                );
            }
        }
        if self.max_pod_life_time_seconds.is_none()
            && self.states.is_empty()
            && self.conditions.is_empty()
            && self.exit_codes.is_empty()
        {
            out.add(
                "maxPodLifeTimeSeconds",
                "at least one filter must be set (maxPodLifeTimeSeconds, states, conditions or exitCodes)",
            );
        }
        out.done()
    }

    fn selects(&self, pod: &Pod, now: i64) -> bool {
        if let Some(max) = self.max_pod_life_time_seconds {
            // An unknown creation time (0) makes no pod old.
            let age = u64::try_from(now.saturating_sub(pod.meta.created));
            if pod.meta.created <= 0 || !age.is_ok_and(|age| age > max) {
                return false;
            }
        }
        if !self.states.is_empty() && !self.in_states(pod) {
            return false;
        }
        if let Some(kinds) = &self.owner_kinds {
            let has = |k: &Vec<String>| owner_kinds(pod).any(|o| k.iter().any(|x| x == o));
            if !kinds.include.is_empty() && !has(&kinds.include) {
                return false;
            }
            if kinds.include.is_empty() && has(&kinds.exclude) {
                return false;
            }
        }
        if !self.conditions.is_empty() && !self.conditions.iter().any(|f| f.matches(pod, now)) {
            return false;
        }
        let codes = &self.exit_codes;
        codes.is_empty()
            || exited_with(pod, false, codes)
            || (self.including_init_containers && exited_with(pod, true, codes))
    }

    fn in_states(&self, pod: &Pod) -> bool {
        let states = &self.states;
        let has = |s: &str| states.iter().any(|x| x == s);
        has(pod.meta.phase.as_str())
            || pod
                .meta
                .status_reason
                .as_deref()
                .map(String::as_str)
                .is_some_and(has)
            || waiting_in(pod, false, states)
            || terminated_in(pod, false, states)
            || (self.including_init_containers
                && (waiting_in(pod, true, states) || terminated_in(pod, true, states)))
            || (self.including_ephemeral_containers
                && ephemeral(pod).any(|c| {
                    c.waiting.as_ref().is_some_and(|w| states.contains(w))
                        || c.terminated.as_ref().is_some_and(|t| states.contains(t))
                }))
    }
}

impl PodConditionFilter {
    /// Whether one of the pod's conditions matches (podlifetime's `matchesAnyPodConditionFilter`, for
    /// one filter): a condition without a transition time, or one transitioned in the future, never
    /// meets `minTimeSinceLastTransitionSeconds`.
    fn matches(&self, pod: &Pod, now: i64) -> bool {
        let set = |f: &str, v: &str| f.is_empty() || f == v;
        pod.meta.conditions.iter().any(|c| {
            set(&self.kind, &c.kind)
                && set(&self.status, &c.status)
                && set(&self.reason, &c.reason)
                && self
                    .min_time_since_last_transition_seconds
                    .is_none_or(|min| {
                        c.last_transition.filter(|t| *t > 0).is_some_and(|t| {
                            u64::try_from(now.saturating_sub(t)).is_ok_and(|age| age >= min)
                        })
                    })
        })
    }
}

/// A pod's container statuses: its init containers' or its containers' (never its ephemeral
/// containers': only `includingEphemeralContainers` reads those, through [`ephemeral`]).
pub(super) fn statuses(pod: &Pod, init: bool) -> impl Iterator<Item = &ContainerState> {
    pod.meta
        .containers
        .iter()
        .filter(move |c| c.init == init && !c.ephemeral)
}

/// A pod's ephemeral containers' statuses.
fn ephemeral(pod: &Pod) -> impl Iterator<Item = &ContainerState> {
    pod.meta.containers.iter().filter(|c| c.ephemeral)
}

/// Whether one of those containers waits for one of `reasons`.
pub(super) fn waiting_in(pod: &Pod, init: bool, reasons: &[String]) -> bool {
    statuses(pod, init).any(|c| c.waiting.as_ref().is_some_and(|w| reasons.contains(w)))
}

/// Whether one of those containers terminated for one of `reasons`.
pub(super) fn terminated_in(pod: &Pod, init: bool, reasons: &[String]) -> bool {
    statuses(pod, init).any(|c| c.terminated.as_ref().is_some_and(|t| reasons.contains(t)))
}

/// Whether one of those containers terminated with one of `codes`.
pub(super) fn exited_with(pod: &Pod, init: bool, codes: &[i32]) -> bool {
    statuses(pod, init).any(|c| c.exit_code.is_some_and(|e| codes.contains(&e)))
}

/// The kinds of a pod's owners (its controller's alone when that is all the model knows).
pub(super) fn owner_kinds(pod: &Pod) -> impl Iterator<Item = &str> {
    let refs = pod.meta.owners.iter().map(|o| o.kind.as_str());
    let controller = pod
        .meta
        .controller
        .as_deref()
        .map(String::as_str)
        .filter(|_| pod.meta.owners.is_empty());
    refs.chain(controller)
}

/// The pods `PodLifeTime` would evict, in the order it would evict them: oldest first over all nodes.
pub fn propose(args: &PodLifeTimeArgs, view: &View, evictor: &Evictor) -> Vec<Proposal> {
    let scope = Scope::new(&args.namespaces, &args.label_selector);
    let mut pods: Vec<_> = view
        .nodes()
        .iter()
        .flat_map(|n| view.pods_on(&n.name).iter().chain(view.failed_on(&n.name)))
        .filter(|p| scope.admits(p) && args.selects(p, view.now()) && evictor.admits_noting(p))
        .collect();
    pods.sort_by_key(|p| p.meta.created);
    pods.into_iter()
        .map(|p| Proposal::anywhere(p, Strategy::PodLifeTime))
        .collect()
}

impl Plugin for PodLifeTimeArgs {
    const STRATEGY: Strategy = Strategy::PodLifeTime;
    const BALANCES: bool = false;
    const FIELDS: &'static [&'static str] = &[
        "namespaces",
        "labelSelector",
        "ownerKinds",
        "maxPodLifeTimeSeconds",
        "states",
        "conditions",
        "exitCodes",
        "includingInitContainers",
        "includingEphemeralContainers",
    ];
    const V1ALPHA1_PARAMS: &'static [&'static str] =
        &["namespaces", "labelSelector", "podLifeTime"];
    const V1ALPHA1_NODE_FIT: bool = false;

    fn decode(o: &Object) -> Result<(), PolicyError> {
        decode::scope(o)?;
        decode::flag(o, "includingInitContainers")?;
        decode::flag(o, "includingEphemeralContainers")?;
        if let Some(k) = o.opt("ownerKinds") {
            let k = k.object(&["include", "exclude"])?;
            k.get("include").strings()?;
            k.get("exclude").strings()?;
        }
        if let Some(m) = o.opt("maxPodLifeTimeSeconds") {
            m.int(0, u32::MAX.into())?;
        }
        o.get("states").strings()?;
        for item in o.get("conditions").items()? {
            let c = item.object(&[
                "type",
                "status",
                "reason",
                "minTimeSinceLastTransitionSeconds",
            ])?;
            for k in ["type", "status", "reason"] {
                if let Some(v) = c.opt(k) {
                    v.string()?;
                }
            }
            if let Some(t) = c.opt("minTimeSinceLastTransitionSeconds") {
                t.int(0, u32::MAX.into())?;
            }
        }
        decode::exit_codes(&o.get("exitCodes"))?;
        Ok(())
    }

    fn from_v1alpha1(p: &Object, out: &mut Mapping) -> Result<(), PolicyError> {
        decode::v1alpha1_scope(p, out, true);
        let l =
            p.get("podLifeTime")
                .object(&["maxPodLifeTimeSeconds", "states", "podStatusPhases"])?;
        copy(out, &l, "maxPodLifeTimeSeconds", "maxPodLifeTimeSeconds");
        let mut states: Vec<Value> = Vec::new();
        for key in ["podStatusPhases", "states"] {
            states.extend(l.get(key).items()?.into_iter().map(|f| f.value.clone()));
        }
        if !states.is_empty() {
            out.insert("states".into(), Value::Sequence(states));
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
