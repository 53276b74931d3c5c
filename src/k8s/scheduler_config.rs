//! `--scheduler-config-file`: kube-scheduler's `KubeSchedulerConfiguration` (v1) as upstream
//! cluster-autoscaler reads it, to the engine's [`SchedulerProfile`]. As upstream, the first profile is
//! the one simulated. What it honours: NodeAffinity's `addedAffinity` and NodeResourcesFit's
//! `ignoredResources` and `ignoredResourceGroups`; what only scores nodes (cluster-autoscaler runs the
//! filters alone) is accepted and has no effect, as upstream. Anything else that could change where a
//! pod fits (enabled or disabled plugins, another plugin's arguments) is refused by its field name, so a
//! setting never passes silently unsimulated.

use std::collections::BTreeSet;
use std::path::Path;

use k8s_openapi::api::core::v1::NodeSelector;
use serde_json::{Map, Value};

use super::selectors::node_selector_terms;
use crate::engine::profile::SchedulerProfile;
use crate::error::{Error, Result};

/// The only version read (kube-scheduler's current one).
const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";

/// Top-level fields that cannot change where a pod fits: accepted, not read.
const NO_EFFECT: &[&str] = &[
    "apiVersion",
    "kind",
    "parallelism",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "leaderElection",
    "clientConnection",
    "enableProfiling",
    "enableContentionProfiling",
    "delayCacheUntilActive",
];

/// The file at `path`, read within [`crate::input::SCHEDULER_CONFIG`]; errors name the flag.
pub fn read(path: &Path) -> Result<SchedulerProfile> {
    let text = crate::input::read_file(
        path,
        &crate::input::SCHEDULER_CONFIG,
        "--scheduler-config-file",
    )?;
    parse(&text)
        .map_err(|e| Error::config(format!("--scheduler-config-file {}: {e}", path.display())))
}

fn refuse(field: &str, why: &str) -> Error {
    Error::config(format!("{field}: {why}"))
}

fn object<'a>(v: &'a Value, field: &str) -> Result<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| refuse(field, "a mapping is expected"))
}

fn names(v: Option<&Value>, field: &str) -> Result<BTreeSet<String>> {
    let Some(v) = v else {
        return Ok(BTreeSet::new());
    };
    v.as_array()
        .ok_or_else(|| refuse(field, "a list of names is expected"))?
        .iter()
        .map(|n| {
            n.as_str()
                .map(str::to_string)
                .ok_or_else(|| refuse(field, "a list of names is expected"))
        })
        .collect()
}

/// The YAML text of a `KubeSchedulerConfiguration`, checked within its bounds before it is parsed.
pub fn parse(text: &str) -> Result<SchedulerProfile> {
    crate::input::SCHEDULER_CONFIG
        .check_yaml(text)
        .map_err(|e| Error::config(e.to_string()))?;
    let doc: Value = serde_norway::from_str(text).map_err(|e| Error::config(e.to_string()))?;
    let top = object(&doc, "the configuration")?;
    match top.get("apiVersion").and_then(Value::as_str) {
        Some(API_VERSION) => {}
        other => {
            return Err(refuse(
                "apiVersion",
                &format!("{other:?}: only {API_VERSION} is read"),
            ))
        }
    }
    if top.get("kind").and_then(Value::as_str) != Some("KubeSchedulerConfiguration") {
        return Err(refuse("kind", "KubeSchedulerConfiguration is expected"));
    }
    for key in top.keys() {
        if key != "profiles" && !NO_EFFECT.contains(&key.as_str()) {
            return Err(refuse(key, "not simulated"));
        }
    }
    let Some(first) = top
        .get("profiles")
        .and_then(Value::as_array)
        .and_then(|p| p.first())
    else {
        return Ok(SchedulerProfile::default());
    };
    profile(object(first, "profiles[0]")?)
}

fn profile(p: &Map<String, Value>) -> Result<SchedulerProfile> {
    let mut out = SchedulerProfile::default();
    for (key, v) in p {
        match key.as_str() {
            "schedulerName" => {}
            "plugins" if v.is_null() || v.as_object().is_some_and(Map::is_empty) => {}
            "pluginConfig" => {
                let list = v
                    .as_array()
                    .ok_or_else(|| refuse("profiles[0].pluginConfig", "a list is expected"))?;
                for (i, entry) in list.iter().enumerate() {
                    plugin(entry, &format!("profiles[0].pluginConfig[{i}]"), &mut out)?;
                }
            }
            _ => {
                return Err(refuse(
                    &format!("profiles[0].{key}"),
                    "not simulated (the default plugins run)",
                ))
            }
        }
    }
    Ok(out)
}

fn plugin(entry: &Value, at: &str, out: &mut SchedulerProfile) -> Result<()> {
    let entry = object(entry, at)?;
    let name = entry
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let empty = Value::Object(Map::new());
    let args = object(entry.get("args").unwrap_or(&empty), &format!("{at}.args"))?;
    let honoured: &[&str] = match name {
        "NodeAffinity" => &["addedAffinity"],
        "NodeResourcesFit" => &[
            "ignoredResources",
            "ignoredResourceGroups",
            "scoringStrategy",
        ],
        other => {
            return Err(refuse(
                &format!("{at}.name"),
                &format!("arguments of {other:?} are not simulated"),
            ))
        }
    };
    for key in args.keys() {
        if key != "apiVersion" && key != "kind" && !honoured.contains(&key.as_str()) {
            return Err(refuse(&format!("{at}.args.{key}"), "not simulated"));
        }
    }
    if let Some(added) = args.get("addedAffinity") {
        let added = object(added, &format!("{at}.args.addedAffinity"))?;
        for key in added.keys() {
            // Preferred terms only score nodes: cluster-autoscaler runs the filters alone.
            if key != "requiredDuringSchedulingIgnoredDuringExecution"
                && key != "preferredDuringSchedulingIgnoredDuringExecution"
            {
                return Err(refuse(
                    &format!("{at}.args.addedAffinity.{key}"),
                    "not simulated",
                ));
            }
        }
        if let Some(required) = added.get("requiredDuringSchedulingIgnoredDuringExecution") {
            let field =
                format!("{at}.args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution");
            let sel: NodeSelector = serde_json::from_value(required.clone())
                .map_err(|e| refuse(&field, &e.to_string()))?;
            out.added_affinity = node_selector_terms(&sel, &field)?;
        }
    }
    out.ignored_resources.extend(names(
        args.get("ignoredResources"),
        &format!("{at}.args.ignoredResources"),
    )?);
    out.ignored_resource_groups.extend(names(
        args.get("ignoredResourceGroups"),
        &format!("{at}.args.ignoredResourceGroups"),
    )?);
    Ok(())
}

#[cfg(test)]
mod tests;
