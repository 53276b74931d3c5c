//! The API server's wire: paths, statuses, JSON merge patches, selectors.

use axum::body::Body;
use axum::http::Uri;
use axum::response::Response;
use serde_json::{json, Value};
use std::collections::BTreeMap;

use super::{
    CLAIMS, CLASSES, CONFIGMAPS, CSINODES, DAEMONSETS, EVENTS, LEASES, NAMESPACES, NODES,
    NODE_METRICS, PDBS, PODS, POD_METRICS, PRIORITYCLASSES, REPLICASETS, REPLICATION_CONTROLLERS,
    VOLUMES,
};

pub(super) fn kind_of(collection: &str) -> &'static str {
    match collection {
        PODS => "Pod",
        NODES => "Node",
        CONFIGMAPS => "ConfigMap",
        PDBS => "PodDisruptionBudget",
        DAEMONSETS => "DaemonSet",
        LEASES => "Lease",
        EVENTS => "Event",
        CLAIMS => "PersistentVolumeClaim",
        VOLUMES => "PersistentVolume",
        CLASSES => "StorageClass",
        CSINODES => "CSINode",
        REPLICASETS => "ReplicaSet",
        PRIORITYCLASSES => "PriorityClass",
        NAMESPACES => "Namespace",
        NODE_METRICS => "NodeMetrics",
        POD_METRICS => "PodMetrics",
        REPLICATION_CONTROLLERS => "ReplicationController",
        _ => "Unknown",
    }
}

pub(super) fn api_version_of(collection: &str) -> String {
    let rest = collection
        .strip_prefix("/apis/")
        .or_else(|| collection.strip_prefix("/api/"))
        .unwrap_or(collection);
    let mut parts: Vec<&str> = rest.split('/').collect();
    parts.pop();
    parts.join("/")
}

pub(super) fn status(code: u16, reason: &str, message: String) -> Response {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": if code < 300 { "Success" } else { "Failure" },
        "message": message, "reason": reason, "code": code,
    });
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

pub(super) fn json_response(code: u16, v: &Value) -> Response {
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Body::from(v.to_string()))
        .unwrap()
}

/// RFC 7386 JSON merge patch.
pub(super) fn merge(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = json!({});
            }
            let t = target.as_object_mut().unwrap();
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        other => *target = other.clone(),
    }
}

/// The parts of a request path: collection, namespace, name, subresource.
pub(super) struct Target {
    pub(super) collection: String,
    pub(super) namespace: String,
    pub(super) name: Option<String>,
    pub(super) sub: Option<String>,
}

pub(super) fn parse_path(path: &str) -> Option<Target> {
    let (prefix, rest) = if let Some(r) = path.strip_prefix("/api/v1/") {
        ("/api/v1".to_string(), r)
    } else {
        let r = path.strip_prefix("/apis/")?;
        let mut it = r.splitn(3, '/');
        let (g, v, rest) = (it.next()?, it.next()?, it.next()?);
        (format!("/apis/{g}/{v}"), rest)
    };
    let parts: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let (namespace, parts) = match parts.as_slice() {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (ns.to_string(), rest.to_vec()),
        _ => (String::new(), parts),
    };
    Some(Target {
        collection: format!("{prefix}/{}", parts.first()?),
        namespace,
        name: parts.get(1).map(|s| s.to_string()),
        sub: parts.get(2).map(|s| s.to_string()),
    })
}

pub(super) fn query(uri: &Uri) -> BTreeMap<String, String> {
    uri.query()
        .unwrap_or("")
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.replace("%3D", "=").replace("%2C", ",")))
        .collect()
}

/// Whether an object passes a `fieldSelector` of `path=value` terms (the only form ferroscale sends,
/// e.g. `spec.nodeName=node-a`).
pub(super) fn fields_match(obj: &Value, selector: Option<&String>) -> bool {
    selector.is_none_or(|sel| {
        sel.split(',').filter(|t| !t.is_empty()).all(|term| {
            let Some((path, want)) = term.split_once('=') else {
                return false;
            };
            let pointer = format!("/{}", path.replace('.', "/"));
            obj.pointer(&pointer).and_then(Value::as_str).unwrap_or("") == want
        })
    })
}

pub(super) fn selects(pdb: &Value, pod: &Value) -> bool {
    let Some(want) = pdb
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
    else {
        return false;
    };
    let labels = pod.pointer("/metadata/labels").and_then(Value::as_object);
    want.iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}
