//! Each strategy's arguments decoded on the policy's own values (known fields, types, the values an
//! enum can hold, each refusal naming its field), with the descheduler's defaults (`defaults.go`):
//! the result is what the strategy's typed arguments are read from. The plugins' `validation.go`
//! rules are the typed args' `validate` (one place per rule).

use serde_norway::Value;

use super::field::{cleaned, default, Field, Object};
use super::PolicyError;
use crate::deschedule::args::Strategy;

/// The fields each plugin's arguments have in the descheduler (`types.go`), besides the
/// `apiVersion`/`kind` every args object may carry.
pub(super) fn known_fields(s: Strategy) -> &'static [&'static str] {
    match s {
        Strategy::RemoveDuplicates => &["namespaces", "excludeOwnerKinds"],
        Strategy::LowNodeUtilization => &[
            "useDeviationThresholds",
            "thresholds",
            "targetThresholds",
            "numberOfNodes",
            "metricsUtilization",
            "evictableNamespaces",
            "evictionLimits",
        ],
        Strategy::HighNodeUtilization => &[
            "thresholds",
            "numberOfNodes",
            "evictionModes",
            "evictableNamespaces",
        ],
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
        Strategy::RemovePodsViolatingTopologySpreadConstraint => &[
            "namespaces",
            "labelSelector",
            "constraints",
            "topologyBalanceNodeFit",
        ],
        Strategy::RemovePodsHavingTooManyRestarts => &[
            "namespaces",
            "labelSelector",
            "podRestartThreshold",
            "includingInitContainers",
            "states",
        ],
        Strategy::PodLifeTime => &[
            "namespaces",
            "labelSelector",
            "ownerKinds",
            "maxPodLifeTimeSeconds",
            "states",
            "conditions",
            "exitCodes",
            "includingInitContainers",
            "includingEphemeralContainers",
        ],
        Strategy::RemoveFailedPods => &[
            "namespaces",
            "labelSelector",
            "excludeOwnerKinds",
            "minPodLifetimeSeconds",
            "reasons",
            "exitCodes",
            "includingInitContainers",
        ],
    }
}

/// A strategy's `pluginConfig` args (null: none given), decoded (known fields, types, the values
/// an enum can hold), with the descheduler's defaults. The plugin's `validation.go` rules are the
/// typed args' `validate`, which every policy then goes through.
pub(super) fn strategy_args(s: Strategy, args: &Field) -> Result<Value, PolicyError> {
    let mut known = known_fields(s).to_vec();
    known.extend(["apiVersion", "kind"]);
    let o = args.object(&known)?;
    type_meta(&o, &format!("{s}Args"))?;
    match s {
        Strategy::RemoveDuplicates => {
            namespaces(&o, "namespaces")?;
            o.get("excludeOwnerKinds").strings()?;
        }
        Strategy::LowNodeUtilization => {
            namespaces(&o, "evictableNamespaces")?;
            flag(&o, "useDeviationThresholds")?;
            thresholds(&o.get("thresholds"))?;
            thresholds(&o.get("targetThresholds"))?;
            number_of_nodes(&o)?;
            if let Some(m) = o.opt("metricsUtilization") {
                let m = m.object(&["metricsServer", "source", "prometheus"])?;
                flag(&m, "metricsServer")?;
                if let Some(s) = m.opt("source") {
                    s.string()?;
                }
                if let Some(p) = m.opt("prometheus") {
                    let p = p.object(&["query"])?;
                    if let Some(q) = p.opt("query") {
                        q.string()?;
                    }
                }
            }
            if let Some(l) = o.opt("evictionLimits") {
                let l = l.object(&["node"])?;
                if let Some(n) = l.opt("node") {
                    n.int(0, u32::MAX.into())?;
                }
            }
        }
        Strategy::HighNodeUtilization => {
            namespaces(&o, "evictableNamespaces")?;
            thresholds(&o.get("thresholds"))?;
            number_of_nodes(&o)?;
            for m in o.get("evictionModes").items()? {
                if m.string()? != "OnlyThresholdingResources" {
                    return Err(m.err("invalid eviction mode (known: OnlyThresholdingResources)"));
                }
            }
        }
        Strategy::RemovePodsViolatingInterPodAntiAffinity => scope(&o)?,
        Strategy::RemovePodsViolatingNodeAffinity => {
            scope(&o)?;
            o.get("nodeAffinityType").strings()?;
        }
        Strategy::RemovePodsViolatingNodeTaints => {
            scope(&o)?;
            flag(&o, "includePreferNoSchedule")?;
            o.get("excludedTaints").strings()?;
            o.get("includedTaints").strings()?;
        }
        Strategy::RemovePodsViolatingTopologySpreadConstraint => {
            scope(&o)?;
            flag(&o, "topologyBalanceNodeFit")?;
            for c in o.get("constraints").items()? {
                let v = c.string()?;
                if v != "DoNotSchedule" && v != "ScheduleAnyway" {
                    return Err(c.err(format!(
                        "constraint {v:?} is not one of DoNotSchedule, ScheduleAnyway"
                    )));
                }
            }
        }
        Strategy::RemovePodsHavingTooManyRestarts => {
            scope(&o)?;
            flag(&o, "includingInitContainers")?;
            if let Some(t) = o.opt("podRestartThreshold") {
                t.int(i32::MIN.into(), i32::MAX.into())?;
            }
            o.get("states").strings()?;
        }
        Strategy::PodLifeTime => lifetime(&o)?,
        Strategy::RemoveFailedPods => {
            scope(&o)?;
            flag(&o, "includingInitContainers")?;
            o.get("excludeOwnerKinds").strings()?;
            o.get("reasons").strings()?;
            exit_codes(&o.get("exitCodes"))?;
            if let Some(m) = o.opt("minPodLifetimeSeconds") {
                m.int(0, u32::MAX.into())?;
            }
        }
    }
    let mut out = cleaned(args.value);
    match s {
        Strategy::RemoveFailedPods => default(&mut out, "minPodLifetimeSeconds", Value::from(3600)),
        Strategy::RemovePodsViolatingTopologySpreadConstraint => {
            default(&mut out, "topologyBalanceNodeFit", Value::Bool(true));
            let empty = out
                .get("constraints")
                .and_then(Value::as_sequence)
                .is_none_or(|c| c.is_empty());
            if empty {
                out.insert(
                    "constraints".into(),
                    Value::Sequence(vec!["DoNotSchedule".into()]),
                );
            }
        }
        _ => {}
    }
    Ok(Value::Mapping(out))
}

/// `PodLifeTime`'s fields decoded.
fn lifetime(o: &Object) -> Result<(), PolicyError> {
    scope(o)?;
    flag(o, "includingInitContainers")?;
    flag(o, "includingEphemeralContainers")?;
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
    exit_codes(&o.get("exitCodes"))?;
    Ok(())
}

/// `namespaces` and `labelSelector`, which most strategies take.
fn scope(o: &Object) -> Result<(), PolicyError> {
    namespaces(o, "namespaces")?;
    if let Some(s) = o.opt("labelSelector") {
        label_selector(&s)?;
    }
    Ok(())
}

/// `{include, exclude}`: lists of names.
fn namespaces(o: &Object, key: &str) -> Result<(), PolicyError> {
    let Some(f) = o.opt(key) else { return Ok(()) };
    let n = f.object(&["include", "exclude"])?;
    n.get("include").strings()?;
    n.get("exclude").strings()?;
    Ok(())
}

/// A `metav1.LabelSelector`'s shape (its keys and values are checked by the typed args).
pub(super) fn label_selector(f: &Field) -> Result<(), PolicyError> {
    let s = f.object(&["matchLabels", "matchExpressions"])?;
    for (_, v) in s.get("matchLabels").entries()? {
        v.string()?;
    }
    for e in s.get("matchExpressions").items()? {
        let x = e.object(&["key", "operator", "values"])?;
        for k in ["key", "operator"] {
            if let Some(v) = x.opt(k) {
                v.string()?;
            }
        }
        x.get("values").strings()?;
    }
    Ok(())
}

/// Resource → number (the typed args check the range).
fn thresholds(f: &Field) -> Result<(), PolicyError> {
    for (_, v) in f.entries()? {
        v.number()?;
    }
    Ok(())
}

/// `numberOfNodes`: a count.
fn number_of_nodes(o: &Object) -> Result<(), PolicyError> {
    if let Some(n) = o.opt("numberOfNodes") {
        n.int(0, i32::MAX.into())?;
    }
    Ok(())
}

/// Container exit codes (int32).
fn exit_codes(f: &Field) -> Result<(), PolicyError> {
    for i in f.items()? {
        i.int(i32::MIN.into(), i32::MAX.into())?;
    }
    Ok(())
}

/// A boolean field (absent: false).
pub(super) fn flag(o: &Object, key: &str) -> Result<bool, PolicyError> {
    o.opt(key).map_or(Ok(false), |f| f.boolean())
}

/// The `apiVersion`/`kind` an args object may carry: when given, the descheduler's.
pub(super) fn type_meta(o: &Object, kind: &str) -> Result<(), PolicyError> {
    if let Some(v) = o.opt("apiVersion") {
        if v.string()? != "descheduler/v1alpha2" {
            return Err(v.err("want descheduler/v1alpha2"));
        }
    }
    if let Some(k) = o.opt("kind") {
        if k.string()? != kind {
            return Err(k.err(format!("want {kind}")));
        }
    }
    Ok(())
}
