//! A case's Kubernetes objects as the engine sees them, converted by the same code `simulate` and `run`
//! use; its flags read by the same parser as the command line's.

use clap::Parser;
use ferroscale::cli::flags::{ExpanderFlags, LoopFlags};
use ferroscale::engine::Settings;
use ferroscale::k8s::documents::{self, Objects};
use ferroscale::k8s::objects::Inputs;
use serde_json::{json, Value};

/// A case's `objects` (a YAML list of Kubernetes objects, each with its `kind`) read as a dump. Pods
/// without containers get one with no requests, so fixtures write only what a case is about. An object
/// with `copies: N` beside its `kind` stands for N copies named `<name>-1` … `<name>-N` (upstream's
/// tests build pods and nodes in loops).
pub fn objects(list: &serde_norway::Value) -> Result<Objects, String> {
    let listed: Vec<Value> = serde_json::to_value(list)
        .map_err(|e| format!("objects: {e}"))?
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut items = Vec::new();
    for mut item in listed {
        let Some(copies) = item.as_object_mut().and_then(|o| o.remove("copies")) else {
            items.push(item);
            continue;
        };
        let n = copies.as_u64().ok_or("copies: a count")?;
        let name = item["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        for k in 1..=n {
            let mut copy = item.clone();
            copy["metadata"]["name"] = json!(format!("{name}-{k}"));
            items.push(copy);
        }
    }
    for item in &mut items {
        if item["kind"] == "Pod" && item["spec"].get("containers").is_none() {
            item["spec"]["containers"] = json!([{ "name": "c" }]);
        }
    }
    let text = json!({ "kind": "List", "items": items }).to_string();
    documents::parse(&text, "case").map_err(|e| e.to_string())
}

/// The engine's inputs from a case's objects; a conversion error is the case's error.
pub fn inputs(objects: &Objects) -> Result<Inputs, String> {
    let mut inputs = Inputs::convert(
        &objects.nodes,
        &objects.pods,
        &objects.pdbs,
        &objects.daemonsets,
        &objects.storage(),
        Err,
    )
    .map_err(|e| e.to_string())?;
    ferroscale::k8s::owners::set_owner_replicas(
        &mut inputs.pods,
        objects.replicasets.iter(),
        objects.replication_controllers.iter(),
    );
    ferroscale::k8s::namespaces::set_namespace_labels(&mut inputs.pods, &objects.namespaces);
    Ok(inputs)
}

#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    run: LoopFlags,
    #[command(flatten)]
    expander: ExpanderFlags,
}

/// The engine's settings from upstream flags as a case writes them (`--flag=value`), else the defaults.
/// `--scan-interval` (a flag of the process, not of the loop) sets the interval the engine counts loops
/// by.
pub fn settings(flags: &[String]) -> Result<Settings, String> {
    let mut scan = None;
    let mut rest = Vec::new();
    for f in flags {
        match f.strip_prefix("--scan-interval=") {
            Some(d) => scan = Some(ferroscale::model::parse_go_duration(d)?),
            None => rest.push(f.clone()),
        }
    }
    let f = Flags::try_parse_from(std::iter::once("conformance".to_string()).chain(rest))
        .map_err(|e| e.to_string())?;
    let mut settings = f.run.engine(&f.expander).map_err(|e| e.to_string())?;
    if let Some(scan) = scan {
        settings.scan_interval = scan;
    }
    Ok(settings)
}

/// `RFC 3339` time as seconds since the epoch.
pub fn time(text: &str) -> Result<i64, String> {
    text.parse::<k8s_openapi::jiff::Timestamp>()
        .map(|t| t.as_second())
        .map_err(|e| format!("{text:?}: {e}"))
}
