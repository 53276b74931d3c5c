//! `descheduler/v1alpha1` (`strategies: {Name: {enabled, params}}` and top-level evictor booleans),
//! converted as the descheduler's v1alpha1 conversion did (`pkg/api/v1alpha1/conversion.go` and
//! `strategymigration.go`, removed in 1e0b1a984): one profile `strategy-<Name>-profile` per enabled
//! strategy, its DefaultEvictor from the top-level booleans and the strategy's `nodeFit` and
//! priority threshold. Two fields that conversion dropped are kept: `includedTaints` and
//! `maxNoOfPodsToEvictTotal`.

use serde_norway::{Mapping, Value};

use super::check::strategy_args;
use super::decode::flag;
use super::evictor_args::evictor_args;
use super::field::{Field, Object};
use super::{limits, Configured, Draft, DraftProfile, PolicyError, Warning};
use crate::deschedule::args::Strategy;
use crate::deschedule::strategies::{with_plugin, Plugin, PluginFn};

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

/// The params the evictor reads from any strategy's v1alpha1 `params`.
const EVICTOR_PARAMS: [&str; 3] = ["thresholdPriority", "thresholdPriorityClassName", "nodeFit"];

/// Every v1alpha1 `params` field: the strategies' (each its `Plugin::V1ALPHA1_PARAMS`), then the
/// evictor's.
fn known_params() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for &s in Strategy::ALL {
        for p in reads(s).0 {
            if !out.contains(p) {
                out.push(p);
            }
        }
    }
    out.extend(EVICTOR_PARAMS);
    out
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
        let known = known_params();
        let p = params.object(&known)?;
        let (read, node_fit) = reads(s);
        for &key in &known {
            let evictor_param =
                key.starts_with("thresholdPriority") || (key == "nodeFit" && node_fit);
            if p.opt(key).is_some() && !evictor_param && !read.contains(&key) {
                warnings.push(Warning::new(p.get(key).path, format!("ignored by {s}")));
            }
        }
        let mut ev = evictor.clone();
        if node_fit && flag(&p, "nodeFit")? {
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
    struct Convert<'o, 'a>(&'o Object<'a>);
    impl PluginFn for Convert<'_, '_> {
        type Out = Result<Mapping, PolicyError>;
        fn call<P: Plugin>(self) -> Self::Out {
            let mut out = Mapping::new();
            P::from_v1alpha1(self.0, &mut out)?;
            Ok(out)
        }
    }
    with_plugin(s, Convert(p))
}

/// The params a strategy reads (besides the evictor's `thresholdPriority*`, and `nodeFit` where
/// its evictor takes it).
fn reads(s: Strategy) -> (&'static [&'static str], bool) {
    struct Reads;
    impl PluginFn for Reads {
        type Out = (&'static [&'static str], bool);
        fn call<P: Plugin>(self) -> Self::Out {
            (P::V1ALPHA1_PARAMS, P::V1ALPHA1_NODE_FIT)
        }
    }
    with_plugin(s, Reads)
}

fn map<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Mapping(entries.into_iter().map(|(k, v)| (k.into(), v)).collect())
}
