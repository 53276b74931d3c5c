//! `DefaultEvictor`'s arguments checked as its `validation.go` does, with the defaults the
//! descheduler's policy loader gives them (`setDefaultEvictor`: the priority threshold is
//! `system-cluster-critical`'s value unless set).

use serde_norway::Value;

use super::check::{flag, label_selector, type_meta};
use super::field::{cleaned, Field};
use super::{PolicyError, Warning};
use crate::model::parse_go_duration;

/// The plugin's name in policies.
pub(super) const DEFAULT_EVICTOR: &str = "DefaultEvictor";

/// `system-cluster-critical`'s priority: the highest threshold, and the default one.
pub const SYSTEM_CRITICAL_PRIORITY: i64 = 2_000_000_000;

const KNOWN: [&str; 17] = [
    "apiVersion",
    "kind",
    "nodeSelector",
    "labelSelector",
    "namespaceLabelSelector",
    "priorityThreshold",
    "nodeFit",
    "minReplicas",
    "minPodAge",
    "noEvictionPolicy",
    "podProtections",
    "evictLocalStoragePods",
    "evictDaemonSetPods",
    "evictSystemCriticalPods",
    "ignorePvcPods",
    "ignorePodsWithoutPDB",
    "evictFailedBarePods",
];

/// The protections on by default, which `podProtections.defaultDisabled` may turn off.
const DEFAULT_PROTECTIONS: [&str; 4] = [
    "PodsWithLocalStorage",
    "SystemCriticalPods",
    "FailedBarePods",
    "DaemonSetPods",
];

/// The protections off by default, which `podProtections.extraEnabled` may turn on.
const EXTRA_PROTECTIONS: [&str; 3] = ["PodsWithPVC", "PodsWithoutPDB", "PodsWithResourceClaims"];

/// The deprecated booleans `podProtections` replaces.
const DEPRECATED: [&str; 6] = [
    "evictLocalStoragePods",
    "evictDaemonSetPods",
    "evictSystemCriticalPods",
    "ignorePvcPods",
    "evictFailedBarePods",
    "ignorePodsWithoutPDB",
];

/// `DefaultEvictor`'s args (null: none given), checked, with the descheduler's defaults.
pub(super) fn evictor_args(
    args: &Field,
    warnings: &mut Vec<Warning>,
) -> Result<Value, PolicyError> {
    let o = args.object(&KNOWN)?;
    type_meta(&o, "DefaultEvictorArgs")?;
    if let Some(s) = o.opt("nodeSelector") {
        super::selector::checked_selector(s.string()?).map_err(|why| s.err(why))?;
    }
    for key in ["labelSelector", "namespaceLabelSelector"] {
        if let Some(s) = o.opt(key) {
            label_selector(&s)?;
        }
    }
    let mut deprecated = false;
    for key in ["nodeFit"].into_iter().chain(DEPRECATED) {
        let set = flag(&o, key)?;
        deprecated |= set && key != "nodeFit";
    }
    if let Some(p) = o.opt("priorityThreshold") {
        let p = p.object(&["value", "name"])?;
        let name = p.opt("name").map(|n| n.string()).transpose()?.unwrap_or("");
        if let Some(v) = p.opt("value") {
            if !name.is_empty() {
                return Err(p
                    .get("name")
                    .err("only one of priorityThreshold's value and name can be set"));
            }
            v.int(i32::MIN.into(), SYSTEM_CRITICAL_PRIORITY)
                .map_err(|_| v.err(format!("priority threshold can't be greater than {SYSTEM_CRITICAL_PRIORITY}, nor below {}", i32::MIN)))?;
        }
    }
    if let Some(m) = o.opt("minReplicas") {
        if m.int(0, u32::MAX.into())? == 1 {
            warnings.push(Warning::new(
                &m.path,
                "1 has no effect: minReplicas must be greater than 1 to check the owner's replicas",
            ));
        }
    }
    if let Some(a) = o.opt("minPodAge") {
        parse_go_duration(a.string()?).map_err(|why| a.err(why))?;
    }
    if let Some(n) = o.opt("noEvictionPolicy") {
        let v = n.string()?;
        if !matches!(v, "" | "Preferred" | "Mandatory") {
            return Err(n.err(format!(
                "{v:?}: noEvictionPolicy accepts only Preferred, Mandatory"
            )));
        }
    }
    if let Some(p) = o.opt("podProtections") {
        protections(&p, deprecated)?;
    }
    let mut out = cleaned(args.value);
    if !out.contains_key("priorityThreshold") {
        let mut p = serde_norway::Mapping::new();
        p.insert("value".into(), Value::from(SYSTEM_CRITICAL_PRIORITY));
        out.insert("priorityThreshold".into(), Value::Mapping(p));
    }
    Ok(Value::Mapping(out))
}

/// `podProtections`: known names, no duplicates, not with the deprecated booleans.
fn protections(f: &Field, deprecated: bool) -> Result<(), PolicyError> {
    let p = f.object(&["extraEnabled", "defaultDisabled", "config"])?;
    let extra = p.get("extraEnabled").strings()?;
    let disabled = p.get("defaultDisabled").strings()?;
    if extra.is_empty() && disabled.is_empty() {
        if let Some(c) = p.opt("config") {
            config(&c)?;
        }
        return Ok(());
    }
    if deprecated {
        return Err(f.err(
            "cannot use the deprecated fields (evictLocalStoragePods, ...) alongside podProtections.extraEnabled or podProtections.defaultDisabled",
        ));
    }
    for (key, list, valid) in [
        ("extraEnabled", &extra, &EXTRA_PROTECTIONS[..]),
        ("defaultDisabled", &disabled, &DEFAULT_PROTECTIONS[..]),
    ] {
        for (i, name) in list.iter().enumerate() {
            let at = format!("{}.{key}[{i}]", f.path);
            if !valid.contains(name) {
                return Err(PolicyError::field(
                    at,
                    format!(
                        "invalid pod protection {name:?} (valid: {})",
                        valid.join(", ")
                    ),
                ));
            }
            if list[..i].contains(name) {
                return Err(PolicyError::field(at, format!("{name:?} listed twice")));
            }
        }
    }
    if let Some(c) = p.opt("config") {
        config(&c)?;
    }
    Ok(())
}

/// `podProtections.config`: `PodsWithPVC.protectedStorageClasses[].name`, none empty.
fn config(f: &Field) -> Result<(), PolicyError> {
    let c = f.object(&["PodsWithPVC"])?;
    if let Some(pvc) = c.opt("PodsWithPVC") {
        let pvc = pvc.object(&["protectedStorageClasses"])?;
        for sc in pvc.get("protectedStorageClasses").items()? {
            let sc = sc.object(&["name"])?;
            if sc.get("name").string()?.is_empty() {
                return Err(sc.get("name").err("name cannot be empty"));
            }
        }
    }
    Ok(())
}
