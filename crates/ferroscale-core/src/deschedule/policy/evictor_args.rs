//! `DefaultEvictor`'s arguments decoded, with the defaults the descheduler's policy loader gives
//! them (`setDefaultEvictor`: the priority threshold is `system-cluster-critical`'s value unless
//! set); its `validation.go` rules are `EvictorArgs::validate`.

use serde_norway::Value;

use super::decode::{flag, label_selector, type_meta};
use super::field::{cleaned, Field};
use super::{PolicyError, Warning};
use crate::deschedule::evictor::Protection;

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

/// The deprecated booleans `podProtections` replaces.
const DEPRECATED: [&str; 6] = [
    "evictLocalStoragePods",
    "evictDaemonSetPods",
    "evictSystemCriticalPods",
    "ignorePvcPods",
    "evictFailedBarePods",
    "ignorePodsWithoutPDB",
];

/// `DefaultEvictor`'s args (null: none given), decoded (known fields, types, the values an enum
/// can hold), with the descheduler's defaults. Its `validation.go` rules are
/// `EvictorArgs::validate`, which every policy then goes through.
pub(super) fn evictor_args(
    args: &Field,
    warnings: &mut Vec<Warning>,
) -> Result<Value, PolicyError> {
    let o = args.object(&KNOWN)?;
    type_meta(&o, "DefaultEvictorArgs")?;
    if let Some(s) = o.opt("nodeSelector") {
        s.string()?;
    }
    for key in ["labelSelector", "namespaceLabelSelector"] {
        if let Some(s) = o.opt(key) {
            label_selector(&s)?;
        }
    }
    for key in ["nodeFit"].into_iter().chain(DEPRECATED) {
        flag(&o, key)?;
    }
    if let Some(p) = o.opt("priorityThreshold") {
        let p = p.object(&["value", "name"])?;
        if let Some(n) = p.opt("name") {
            n.string()?;
        }
        if let Some(v) = p.opt("value") {
            v.int(i32::MIN.into(), i32::MAX.into())?;
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
        a.string()?;
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
        protections(&p)?;
    }
    let mut out = cleaned(args.value);
    if !out.contains_key("priorityThreshold") {
        let mut p = serde_norway::Mapping::new();
        p.insert("value".into(), Value::from(SYSTEM_CRITICAL_PRIORITY));
        out.insert("priorityThreshold".into(), Value::Mapping(p));
    }
    Ok(Value::Mapping(out))
}

/// `podProtections`: lists of protection names (each a name the descheduler has; which list may
/// hold it is the typed args' check), and `config`.
fn protections(f: &Field) -> Result<(), PolicyError> {
    let p = f.object(&["extraEnabled", "defaultDisabled", "config"])?;
    let names = |list: &[Protection]| list.iter().map(|p| format!("{p:?}")).collect::<Vec<_>>();
    let all = names(&[&Protection::DEFAULT[..], &Protection::EXTRA[..]].concat());
    for (key, valid) in [
        ("extraEnabled", names(&Protection::EXTRA)),
        ("defaultDisabled", names(&Protection::DEFAULT)),
    ] {
        for item in p.get(key).items()? {
            let name = item.string()?;
            if !all.iter().any(|n| n == name) {
                return Err(item.err(format!(
                    "invalid pod protection {name:?} (valid: {})",
                    valid.join(", ")
                )));
            }
        }
    }
    if let Some(c) = p.opt("config") {
        let c = c.object(&["PodsWithPVC"])?;
        if let Some(pvc) = c.opt("PodsWithPVC") {
            let pvc = pvc.object(&["protectedStorageClasses"])?;
            for sc in pvc.get("protectedStorageClasses").items()? {
                let sc = sc.object(&["name"])?;
                if let Some(n) = sc.opt("name") {
                    n.string()?;
                }
            }
        }
    }
    Ok(())
}
