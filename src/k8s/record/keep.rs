//! What a timeline keeps of an object: the fields the engine reads. Pods and nodes go through the dump
//! reader's lean types (what the model is made of, nothing else: no environment, command line, probe or
//! mount); the pod templates of DaemonSets, ReplicaSets and ReplicationControllers are cut the same
//! way; every object loses its managed fields and the annotations no autoscaler reads (kubectl's
//! last-applied configuration holds a whole manifest, environment included).

use serde_json::{Map, Value};

use crate::k8s::documents::watched::{LeanNode, LeanPod};
use crate::labels;
use crate::trace::Kind;

/// `object` (of `kind`) cut to what the engine reads, `kind` and `apiVersion` set; an object that is
/// not of its kind's shape is the error.
pub fn keep(kind: Kind, object: Value) -> Result<Value, serde_json::Error> {
    let mut kept = match kind {
        Kind::Pod => lean_pod(object)?,
        Kind::Node => {
            let node: LeanNode = serde_json::from_value(object)?;
            serde_json::to_value(node.into_core())?
        }
        Kind::DaemonSet | Kind::ReplicaSet | Kind::ReplicationController => {
            let mut object = object;
            cut_template(&mut object)?;
            object
        }
        _ => object,
    };
    if let Some(o) = kept.as_object_mut() {
        o.insert("kind".into(), Value::from(kind.name()));
        o.insert("apiVersion".into(), Value::from(kind.api_version()));
        o.remove("status")
            .filter(|_| keeps_status(kind))
            .map(|s| o.insert("status".into(), s));
        if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            cut_meta(meta);
        }
    }
    Ok(kept)
}

/// Whether the engine reads the status of `kind` (a PVC's phase, a PDB's allowance, a workload's
/// replicas); a node's and pod's are cut by the lean types.
fn keeps_status(kind: Kind) -> bool {
    !matches!(
        kind,
        Kind::Namespace | Kind::PriorityClass | Kind::StorageClass
    )
}

/// A pod (or a template dressed as one) through the lean reader.
fn lean_pod(object: Value) -> Result<Value, serde_json::Error> {
    let pod: LeanPod = serde_json::from_value(object)?;
    serde_json::to_value(pod.into_core())
}

/// Cuts `spec.template` of a workload to what a pod of it keeps.
fn cut_template(object: &mut Value) -> Result<(), serde_json::Error> {
    let Some(template) = object
        .get_mut("spec")
        .and_then(|s| s.get_mut("template"))
        .filter(|t| t.is_object())
    else {
        return Ok(());
    };
    let mut cut = lean_pod(template.take())?;
    if let Some(o) = cut.as_object_mut() {
        // A template has no status, and no kind of its own.
        o.remove("status");
        if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            cut_meta(meta);
        }
    }
    *template = cut;
    Ok(())
}

/// Drops managed fields and every annotation no autoscaler reads.
fn cut_meta(meta: &mut Map<String, Value>) {
    meta.remove("managedFields");
    if let Some(Value::Object(annotations)) = meta.get_mut("annotations") {
        annotations.retain(|key, _| read_annotation(key));
    }
}

/// Whether an annotation is one the engine may read: a Kubernetes, autoscaler or AWS key (the keys of
/// cluster-autoscaler, Karpenter, the descheduler, ferroscale, the API server and its controllers), never
/// kubectl's last-applied configuration nor an application's own key.
fn read_annotation(key: &str) -> bool {
    if key == labels::LAST_APPLIED {
        return false;
    }
    let Some((domain, _)) = key.split_once('/') else {
        return false;
    };
    domain.ends_with("kubernetes.io")
        || domain.ends_with("k8s.io")
        || domain.ends_with(".amazonaws.com")
        || domain == "karpenter.sh"
        || domain == "ferroscale.io"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secret_bearing_pod() -> Value {
        json!({
            "kind": "Pod", "apiVersion": "v1",
            "metadata": {
                "name": "web-1", "namespace": "shop", "labels": {"app": "web"},
                "managedFields": [{"manager": "kubectl"}],
                "annotations": {
                    "kubectl.kubernetes.io/last-applied-configuration": "{\"env\":\"PASSWORD=hunter2\"}",
                    "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
                    "karpenter.sh/do-not-disrupt": "true",
                    "shop.example/config": "token=hunter2"
                }
            },
            "spec": {
                "nodeName": "n1",
                "containers": [{
                    "name": "app", "image": "shop:1",
                    "command": ["/bin/shop", "--password=hunter2"],
                    "args": ["--token=hunter2"],
                    "env": [{"name": "PASSWORD", "value": "hunter2"}],
                    "envFrom": [{"secretRef": {"name": "shop"}}],
                    "livenessProbe": {"exec": {"command": ["cat", "/secret"]}},
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}
                }]
            },
            "status": {"phase": "Running"}
        })
    }

    #[test]
    fn a_pod_keeps_what_the_engine_reads_and_nothing_secret() {
        let kept = keep(Kind::Pod, secret_bearing_pod()).unwrap();
        let text = kept.to_string();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!text.contains("managedFields"), "{text}");
        assert!(!text.contains("livenessProbe"), "{text}");
        let annotations = &kept["metadata"]["annotations"];
        assert_eq!(
            annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"],
            "false"
        );
        assert_eq!(annotations["karpenter.sh/do-not-disrupt"], "true");
        assert_eq!(
            kept["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            "500m"
        );
        assert_eq!(kept["spec"]["nodeName"], "n1");
        assert_eq!(kept["status"]["phase"], "Running");
        assert_eq!(kept["kind"], "Pod");
    }

    #[test]
    fn a_workloads_template_is_cut_as_a_pod() {
        let pod = secret_bearing_pod();
        let rs = json!({
            "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"replicas": 3, "template": {"metadata": pod["metadata"], "spec": pod["spec"]}},
            "status": {"replicas": 3}
        });
        let kept = keep(Kind::ReplicaSet, rs).unwrap();
        let text = kept.to_string();
        assert!(!text.contains("hunter2"), "{text}");
        assert_eq!(kept["spec"]["replicas"], 3);
        assert_eq!(kept["status"]["replicas"], 3);
        assert_eq!(kept["apiVersion"], "apps/v1");
        assert_eq!(
            kept["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"],
            "1Gi"
        );
    }

    #[test]
    fn an_object_not_of_its_kinds_shape_is_refused() {
        assert!(keep(Kind::Pod, json!({"spec": {"containers": "many"}})).is_err());
    }
}
