//! Each strategy's arguments checked as the descheduler's plugin validates them (its
//! `validation.go`), with its defaults (`defaults.go`), on the policy's own values: the result is
//! what the strategy's typed arguments are read from.

use serde_norway::Value;

use super::field::{cleaned, default, Field, Object};
use super::selector::{label_key, value as label_value};
use super::{PolicyError, Warning};
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

/// A strategy's `pluginConfig` args (null: none given), checked, with the descheduler's defaults.
pub(super) fn strategy_args(
    s: Strategy,
    args: &Field,
    warnings: &mut Vec<Warning>,
) -> Result<Value, PolicyError> {
    let mut known = known_fields(s).to_vec();
    known.extend(["apiVersion", "kind"]);
    let o = args.object(&known)?;
    type_meta(&o, &format!("{s}Args"))?;
    match s {
        Strategy::RemoveDuplicates => {
            namespaces(&o, "namespaces", true)?;
            o.get("excludeOwnerKinds").strings()?;
        }
        Strategy::LowNodeUtilization => {
            namespaces(&o, "evictableNamespaces", false)?;
            let deviation = flag(&o, "useDeviationThresholds")?;
            let low = thresholds(&o.get("thresholds"))?;
            let high = thresholds(&o.get("targetThresholds"))?;
            let same = low.len() == high.len()
                && low.iter().all(|(r, _)| high.iter().any(|(h, _)| h == r));
            if !same {
                return Err(o
                    .get("targetThresholds")
                    .err("thresholds and targetThresholds configure different resources"));
            }
            for (r, v) in &low {
                let target = high.iter().find(|(h, _)| h == r).map_or(*v, |(_, t)| *t);
                if *v > target && !deviation {
                    return Err(PolicyError::field(
                        format!("{}.{r}", o.get("thresholds").path),
                        format!("{v} is greater than targetThresholds' {target}"),
                    ));
                }
            }
            if let Some(n) = o.opt("numberOfNodes") {
                n.int(0, i32::MAX.into())?;
            }
            if let Some(m) = o.opt("metricsUtilization") {
                metrics_utilization(&m)?;
                warnings.push(Warning::new(
                    &m.path,
                    "ignored: ferroscale measures utilization by requests, as the descheduler does without metrics",
                ));
            }
            if let Some(l) = o.opt("evictionLimits") {
                let l = l.object(&["node"])?;
                if let Some(n) = l.opt("node") {
                    n.int(0, u32::MAX.into())?;
                }
            }
        }
        Strategy::HighNodeUtilization => {
            namespaces(&o, "evictableNamespaces", false)?;
            thresholds(&o.get("thresholds"))?;
            if let Some(n) = o.opt("numberOfNodes") {
                n.int(0, i32::MAX.into())?;
            }
            for m in o.get("evictionModes").items()? {
                if m.string()? != "OnlyThresholdingResources" {
                    return Err(m.err("invalid eviction mode (known: OnlyThresholdingResources)"));
                }
            }
        }
        Strategy::RemovePodsViolatingInterPodAntiAffinity => scope(&o)?,
        Strategy::RemovePodsViolatingNodeAffinity => {
            scope(&o)?;
            let kinds = o.get("nodeAffinityType");
            let list = kinds.items()?;
            if list.is_empty() {
                return Err(kinds.err("nodeAffinityType needs to be set"));
            }
            for k in list {
                let v = k.string()?;
                if !matches!(
                    v,
                    "requiredDuringSchedulingIgnoredDuringExecution"
                        | "preferredDuringSchedulingIgnoredDuringExecution"
                ) {
                    return Err(k.err(format!(
                        "unknown node affinity type {v:?} (known: requiredDuringSchedulingIgnoredDuringExecution, preferredDuringSchedulingIgnoredDuringExecution)"
                    )));
                }
            }
        }
        Strategy::RemovePodsViolatingNodeTaints => {
            scope(&o)?;
            flag(&o, "includePreferNoSchedule")?;
            let excluded = o.get("excludedTaints").strings()?;
            let included = o.get("includedTaints").strings()?;
            if !excluded.is_empty() && !included.is_empty() {
                return Err(o
                    .get("includedTaints")
                    .err("either includedTaints or excludedTaints can be set, not both"));
            }
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
            let t = o.get("podRestartThreshold");
            if t.is_null() {
                return Err(t.err("podRestartThreshold must be set, at least 1"));
            }
            t.int(1, i32::MAX.into())?;
            one_of(&o.get("states"), &["Running", "CrashLoopBackOff"])?;
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

/// `PodLifeTime`'s checks: at least one filter, known states, conditions that say something.
fn lifetime(o: &Object) -> Result<(), PolicyError> {
    scope(o)?;
    flag(o, "includingInitContainers")?;
    flag(o, "includingEphemeralContainers")?;
    if let Some(k) = o.opt("ownerKinds") {
        let k = k.object(&["include", "exclude"])?;
        let (inc, exc) = (k.get("include").strings()?, k.get("exclude").strings()?);
        if !inc.is_empty() && !exc.is_empty() {
            return Err(k
                .get("exclude")
                .err("only one of include/exclude ownerKinds can be set"));
        }
    }
    let max = o.opt("maxPodLifeTimeSeconds");
    if let Some(m) = &max {
        m.int(0, u32::MAX.into())?;
    }
    let states = one_of(
        &o.get("states"),
        &crate::deschedule::strategies::lifetime::STATES,
    )?;
    let conditions = o.get("conditions").items()?;
    for item in &conditions {
        let c = item.object(&[
            "type",
            "status",
            "reason",
            "minTimeSinceLastTransitionSeconds",
        ])?;
        let mut set = false;
        for k in ["type", "status", "reason"] {
            set |= !c.get(k).is_null() && !c.get(k).string()?.is_empty();
        }
        if let Some(t) = c.opt("minTimeSinceLastTransitionSeconds") {
            t.int(0, u32::MAX.into())?;
            set = true;
        }
        if !set {
            return Err(item.err(
                "at least one of type, status, reason or minTimeSinceLastTransitionSeconds must be set",
            ));
        }
    }
    let codes = exit_codes(&o.get("exitCodes"))?;
    if max.is_none() && states == 0 && conditions.is_empty() && codes == 0 {
        return Err(o.get("maxPodLifeTimeSeconds").err(
            "at least one filter must be set (maxPodLifeTimeSeconds, states, conditions or exitCodes)",
        ));
    }
    Ok(())
}

/// `namespaces` and `labelSelector`, which most strategies take.
fn scope(o: &Object) -> Result<(), PolicyError> {
    namespaces(o, "namespaces", true)?;
    if let Some(s) = o.opt("labelSelector") {
        label_selector(&s)?;
    }
    Ok(())
}

/// `{include, exclude}`: not both; `include` only where the strategy has it.
pub(super) fn namespaces(o: &Object, key: &str, include: bool) -> Result<(), PolicyError> {
    let Some(f) = o.opt(key) else { return Ok(()) };
    let n = f.object(&["include", "exclude"])?;
    let (inc, exc) = (n.get("include").strings()?, n.get("exclude").strings()?);
    if !include && !inc.is_empty() {
        return Err(n
            .get("include")
            .err("only exclude can be set, inclusion is not supported"));
    }
    if !inc.is_empty() && !exc.is_empty() {
        return Err(n
            .get("exclude")
            .err("only one of include/exclude namespaces can be set"));
    }
    Ok(())
}

/// A `metav1.LabelSelector`, as `LabelSelectorAsSelector` accepts it.
pub(super) fn label_selector(f: &Field) -> Result<(), PolicyError> {
    let s = f.object(&["matchLabels", "matchExpressions"])?;
    for (k, v) in s.get("matchLabels").entries()? {
        label_key(k).map_err(|why| v.err(why))?;
        label_value(v.string()?).map_err(|why| v.err(why))?;
    }
    for e in s.get("matchExpressions").items()? {
        let x = e.object(&["key", "operator", "values"])?;
        let key = x.opt("key").map(|k| k.string()).transpose()?.unwrap_or("");
        label_key(key).map_err(|why| x.get("key").err(why))?;
        let values = x.get("values").strings()?;
        for (i, v) in values.iter().enumerate() {
            label_value(v)
                .map_err(|why| PolicyError::field(format!("{}[{i}]", x.get("values").path), why))?;
        }
        let op = x.get("operator");
        match op.string()? {
            "In" | "NotIn" if values.is_empty() => {
                return Err(x.get("values").err("must be set for In and NotIn"))
            }
            "Exists" | "DoesNotExist" if !values.is_empty() => {
                return Err(x
                    .get("values")
                    .err("must be empty for Exists and DoesNotExist"))
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => {
                return Err(op.err(format!(
                    "unknown operator {other:?} (known: In, NotIn, Exists, DoesNotExist)"
                )))
            }
        }
    }
    Ok(())
}

/// Resource → percent, each in [0, 100], at least one.
fn thresholds(f: &Field) -> Result<Vec<(String, f64)>, PolicyError> {
    let entries = f.entries()?;
    if entries.is_empty() {
        return Err(f.err("no resource threshold is configured"));
    }
    entries
        .into_iter()
        .map(|(r, v)| {
            let p = v.number()?;
            if !(0.0..=100.0).contains(&p) {
                return Err(v.err(format!("{p} not in [0, 100]")));
            }
            Ok((r.to_string(), p))
        })
        .collect()
}

/// `metricsUtilization`, as LowNodeUtilization's validation reads it.
fn metrics_utilization(f: &Field) -> Result<(), PolicyError> {
    let m = f.object(&["metricsServer", "source", "prometheus"])?;
    let server = flag(&m, "metricsServer")?;
    let source = match m.opt("source") {
        Some(s) => s.string()?,
        None => "",
    };
    let prometheus = match m.opt("prometheus") {
        Some(p) => {
            let p = p.object(&["query"])?;
            Some(
                p.opt("query")
                    .map(|q| q.string())
                    .transpose()?
                    .unwrap_or(""),
            )
        }
        None => None,
    };
    match source {
        "KubernetesMetrics" if server => Err(m
            .get("metricsServer")
            .err("not allowed with source KubernetesMetrics")),
        "KubernetesMetrics" if prometheus.is_some() => Err(m
            .get("prometheus")
            .err("not allowed with source KubernetesMetrics")),
        "Prometheus" if prometheus.is_none_or(str::is_empty) => Err(m
            .get("prometheus")
            .err("prometheus query is required when source is Prometheus")),
        "" | "KubernetesMetrics" | "Prometheus" => Ok(()),
        other => Err(m.get("source").err(format!(
            "unknown source {other:?} (known: KubernetesMetrics, Prometheus)"
        ))),
    }
}

/// A list of strings each among `allowed`; its length.
fn one_of(f: &Field, allowed: &[&str]) -> Result<usize, PolicyError> {
    let items = f.items()?;
    for i in &items {
        let v = i.string()?;
        if !allowed.contains(&v) {
            return Err(i.err(format!(
                "{v:?}: states must be one of {}",
                allowed.join(", ")
            )));
        }
    }
    Ok(items.len())
}

/// Container exit codes (int32); how many.
fn exit_codes(f: &Field) -> Result<usize, PolicyError> {
    let items = f.items()?;
    for i in &items {
        i.int(i32::MIN.into(), i32::MAX.into())?;
    }
    Ok(items.len())
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
