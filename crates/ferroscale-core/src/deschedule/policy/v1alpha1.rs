//! `descheduler/v1alpha1` (`strategies: {Name: {enabled, params}}` and top-level evictor booleans),
//! converted as the descheduler's v1alpha1 conversion did (`pkg/api/v1alpha1/conversion.go` and
//! `strategymigration.go`, removed in 1e0b1a984): one profile `strategy-<Name>-profile` per enabled
//! strategy, its DefaultEvictor from the top-level booleans and the strategy's `nodeFit` and
//! priority threshold. Two fields that conversion dropped are kept: `includedTaints` and
//! `maxNoOfPodsToEvictTotal`.

use serde_norway::{Mapping, Value};

use super::check::{flag, strategy_args};
use super::evictor_args::evictor_args;
use super::field::{Field, Object};
use super::{limits, Configured, Draft, DraftProfile, PolicyError, Warning};
use crate::deschedule::args::Strategy;

const TOP: [&str; 12] = [
    "apiVersion",
    "kind",
    "strategies",
    "nodeSelector",
    "evictFailedBarePods",
    "evictLocalStoragePods",
    "evictSystemCriticalPods",
    "evictDaemonSetPods",
    "ignorePvcPods",
    "maxNoOfPodsToEvictPerNode",
    "maxNoOfPodsToEvictPerNamespace",
    "maxNoOfPodsToEvictTotal",
];

const PARAMS: [&str; 15] = [
    "nodeResourceUtilizationThresholds",
    "nodeAffinityType",
    "podsHavingTooManyRestarts",
    "podLifeTime",
    "removeDuplicates",
    "failedPods",
    "includeSoftConstraints",
    "namespaces",
    "thresholdPriority",
    "thresholdPriorityClassName",
    "labelSelector",
    "nodeFit",
    "includePreferNoSchedule",
    "excludedTaints",
    "includedTaints",
];

/// The params each strategy reads (besides the evictor's `thresholdPriority*` and `nodeFit`).
fn reads(s: Strategy) -> &'static [&'static str] {
    match s {
        Strategy::RemoveDuplicates => &["namespaces", "removeDuplicates"],
        Strategy::LowNodeUtilization | Strategy::HighNodeUtilization => {
            &["namespaces", "nodeResourceUtilizationThresholds"]
        }
        Strategy::RemovePodsViolatingInterPodAntiAffinity => &["namespaces", "labelSelector"],
        Strategy::RemovePodsViolatingNodeAffinity => {
            &["namespaces", "labelSelector", "nodeAffinityType"]
        }
        Strategy::RemovePodsViolatingNodeTaints => &[
            "namespaces",
            "labelSelector",
            "includePreferNoSchedule",
            "excludedTaints",
            "includedTaints",
        ],
        Strategy::RemovePodsViolatingTopologySpreadConstraint => {
            &["namespaces", "labelSelector", "includeSoftConstraints"]
        }
        Strategy::RemovePodsHavingTooManyRestarts => {
            &["namespaces", "labelSelector", "podsHavingTooManyRestarts"]
        }
        Strategy::PodLifeTime => &["namespaces", "labelSelector", "podLifeTime"],
        Strategy::RemoveFailedPods => &["namespaces", "labelSelector", "failedPods"],
    }
}

pub(super) fn read(root: &Field) -> Result<(Draft, Vec<Warning>), PolicyError> {
    let o = root.object(&TOP)?;
    let mut draft = Draft::default();
    let mut warnings = Vec::new();
    limits(&o, &mut draft.limits)?;
    let mut evictor = Mapping::new();
    for key in [
        "evictLocalStoragePods",
        "evictDaemonSetPods",
        "evictSystemCriticalPods",
        "ignorePvcPods",
        "evictFailedBarePods",
    ] {
        if flag(&o, key)? {
            evictor.insert(key.into(), Value::Bool(true));
        }
    }
    for (name, f) in o.get("strategies").entries()? {
        let Some(s) = Strategy::parse(name) else {
            return Err(f.err(format!("unknown strategy name {name:?}")));
        };
        let so = f.object(&["enabled", "weight", "params"])?;
        if let Some(w) = so.opt("weight") {
            w.int(i64::MIN, i64::MAX)?;
            warnings.push(Warning::new(
                &w.path,
                "no effect: the descheduler ignores weights",
            ));
        }
        if !flag(&so, "enabled")? {
            continue;
        }
        let params = so.get("params");
        let p = params.object(&PARAMS)?;
        for key in PARAMS {
            let evictor_param = key.starts_with("thresholdPriority")
                || (key == "nodeFit" && s != Strategy::PodLifeTime);
            if p.opt(key).is_some() && !evictor_param && !reads(s).contains(&key) {
                warnings.push(Warning::new(p.get(key).path, format!("ignored by {s}")));
            }
        }
        let mut ev = evictor.clone();
        if s != Strategy::PodLifeTime && flag(&p, "nodeFit")? {
            ev.insert("nodeFit".into(), Value::Bool(true));
        }
        let value = p.opt("thresholdPriority");
        let class = p.opt("thresholdPriorityClassName");
        if let (Some(_), Some(c)) = (&value, &class) {
            return Err(c.err(format!(
                "priority threshold misconfigured for plugin {s}: only one of thresholdPriority and thresholdPriorityClassName can be set"
            )));
        }
        if let Some(v) = value {
            ev.insert(
                "priorityThreshold".into(),
                map([("value", v.value.clone())]),
            );
        } else if let Some(c) = class {
            ev.insert("priorityThreshold".into(), map([("name", c.value.clone())]));
        }
        let args = Value::Mapping(convert(s, &p)?);
        let ev = Value::Mapping(ev);
        let at = format!("{} (as {s}'s v1alpha2 args)", params.path);
        let profile = DraftProfile {
            name: format!("strategy-{s}-profile"),
            evictor: Configured {
                args: evictor_args(&Field::new(&ev, at.clone()), &mut warnings)?,
                at: at.clone(),
                defaults_only: false,
            },
            strategies: vec![(
                s,
                Configured {
                    args: strategy_args(s, &Field::new(&args, at.clone()))?,
                    at,
                    defaults_only: false,
                },
            )],
        };
        draft.profiles.push(profile);
    }
    if draft.profiles.is_empty() {
        warnings.push(Warning::new(
            "strategies",
            "none enabled: nothing is descheduled",
        ));
    }
    Ok((draft, warnings))
}

/// The strategy's v1alpha2 args from its v1alpha1 params (`StrategyParamsToPluginArgs`).
fn convert(s: Strategy, p: &Object) -> Result<Mapping, PolicyError> {
    let mut out = Mapping::new();
    let copy = |out: &mut Mapping, from: &Object, key: &str, to: &str| {
        if let Some(v) = from.opt(key) {
            out.insert(to.into(), v.value.clone());
        }
    };
    let scoped = !matches!(
        s,
        Strategy::LowNodeUtilization | Strategy::HighNodeUtilization
    );
    copy(
        &mut out,
        p,
        "namespaces",
        if scoped {
            "namespaces"
        } else {
            "evictableNamespaces"
        },
    );
    if scoped && s != Strategy::RemoveDuplicates {
        copy(&mut out, p, "labelSelector", "labelSelector");
    }
    match s {
        Strategy::RemoveDuplicates => {
            let r = p.get("removeDuplicates").object(&["excludeOwnerKinds"])?;
            copy(&mut out, &r, "excludeOwnerKinds", "excludeOwnerKinds");
        }
        Strategy::LowNodeUtilization | Strategy::HighNodeUtilization => {
            let t = p.get("nodeResourceUtilizationThresholds").object(&[
                "useDeviationThresholds",
                "thresholds",
                "targetThresholds",
                "numberOfNodes",
            ])?;
            copy(&mut out, &t, "thresholds", "thresholds");
            copy(&mut out, &t, "numberOfNodes", "numberOfNodes");
            if s == Strategy::LowNodeUtilization {
                copy(&mut out, &t, "targetThresholds", "targetThresholds");
                copy(
                    &mut out,
                    &t,
                    "useDeviationThresholds",
                    "useDeviationThresholds",
                );
            }
        }
        Strategy::RemovePodsViolatingInterPodAntiAffinity => {}
        Strategy::RemovePodsViolatingNodeAffinity => {
            copy(&mut out, p, "nodeAffinityType", "nodeAffinityType")
        }
        Strategy::RemovePodsViolatingNodeTaints => {
            for key in [
                "includePreferNoSchedule",
                "excludedTaints",
                "includedTaints",
            ] {
                copy(&mut out, p, key, key);
            }
        }
        Strategy::RemovePodsViolatingTopologySpreadConstraint => {
            let mut constraints = vec![Value::from("DoNotSchedule")];
            if flag(p, "includeSoftConstraints")? {
                constraints.push("ScheduleAnyway".into());
            }
            out.insert("constraints".into(), Value::Sequence(constraints));
            out.insert("topologyBalanceNodeFit".into(), Value::Bool(true));
        }
        Strategy::RemovePodsHavingTooManyRestarts => {
            let r = p
                .get("podsHavingTooManyRestarts")
                .object(&["podRestartThreshold", "includingInitContainers"])?;
            copy(&mut out, &r, "podRestartThreshold", "podRestartThreshold");
            copy(
                &mut out,
                &r,
                "includingInitContainers",
                "includingInitContainers",
            );
        }
        Strategy::PodLifeTime => {
            let l = p.get("podLifeTime").object(&[
                "maxPodLifeTimeSeconds",
                "states",
                "podStatusPhases",
            ])?;
            copy(
                &mut out,
                &l,
                "maxPodLifeTimeSeconds",
                "maxPodLifeTimeSeconds",
            );
            let mut states: Vec<Value> = Vec::new();
            for key in ["podStatusPhases", "states"] {
                states.extend(l.get(key).items()?.into_iter().map(|f| f.value.clone()));
            }
            if !states.is_empty() {
                out.insert("states".into(), Value::Sequence(states));
            }
        }
        Strategy::RemoveFailedPods => {
            let f = p.get("failedPods").object(&[
                "excludeOwnerKinds",
                "minPodLifetimeSeconds",
                "reasons",
                "includingInitContainers",
            ])?;
            for key in [
                "excludeOwnerKinds",
                "minPodLifetimeSeconds",
                "reasons",
                "includingInitContainers",
            ] {
                copy(&mut out, &f, key, key);
            }
        }
    }
    Ok(out)
}

fn map<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Mapping(entries.into_iter().map(|(k, v)| (k.into(), v)).collect())
}
