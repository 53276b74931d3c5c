//! The pods and nodes of `run`'s watches, converted to the model while they are read: kube's watcher
//! decodes each list item and watch event into [`Pod`] or [`Node`], which read the object through the
//! dump reader's lean types (`k8s::documents::watched`: only the fields the model is made of, the rest
//! skipped unparsed) and convert it at once, so no full Kubernetes object is built per event. What the
//! watch itself needs of the object (its resourceVersion, and its name and namespace for the feed's
//! key) is copied as it goes by ([`super::tee`]).

use std::borrow::Cow;
use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::Resource;
use serde::{Deserialize, Deserializer};

use super::tee;
use crate::k8s::converted::{self, Converted, NodeExtra, PodExtra};
use crate::k8s::documents::watched;
use crate::model::workload::{Node as ModelNode, Pod as ModelPod};

/// A pod as its watch reads it: the model (None: finished, not indexed), and the metadata the watch
/// keeps (name, namespace, resourceVersion).
#[derive(Clone, Debug)]
pub struct Pod {
    metadata: ObjectMeta,
    pub converted: Option<Converted<(Arc<ModelPod>, PodExtra)>>,
}

/// A node as its watch reads it: the model, and the metadata the watch keeps.
#[derive(Clone, Debug)]
pub struct Node {
    metadata: ObjectMeta,
    pub converted: Option<Converted<(ModelNode, NodeExtra)>>,
}

impl<'de> Deserialize<'de> for Pod {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (pod, metadata) = tee::read::<watched::LeanPod, _>(d)?;
        Ok(Pod {
            metadata,
            converted: converted::convert_pod(&pod.into_core()),
        })
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (node, metadata) = tee::read::<watched::LeanNode, _>(d)?;
        Ok(Node {
            metadata,
            converted: converted::convert_node(&node.into_core()),
        })
    }
}

/// The API resource `$ty` is read from: `$of`'s.
macro_rules! resource_of {
    ($ty:ty, $of:ty, $scope:ty) => {
        impl Resource for $ty {
            type DynamicType = ();
            type Scope = $scope;

            fn kind(_: &()) -> Cow<'_, str> {
                <$of as k8s_openapi::Resource>::KIND.into()
            }

            fn group(_: &()) -> Cow<'_, str> {
                <$of as k8s_openapi::Resource>::GROUP.into()
            }

            fn version(_: &()) -> Cow<'_, str> {
                <$of as k8s_openapi::Resource>::VERSION.into()
            }

            fn api_version(_: &()) -> Cow<'_, str> {
                <$of as k8s_openapi::Resource>::API_VERSION.into()
            }

            fn plural(_: &()) -> Cow<'_, str> {
                <$of as k8s_openapi::Resource>::URL_PATH_SEGMENT.into()
            }

            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }

            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

resource_of!(Pod, core::Pod, NamespaceResourceScope);
resource_of!(Node, core::Node, ClusterResourceScope);

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::WatchEvent;
    use serde_json::{json, Value};

    /// Pods as an API server sends them, with fields the model never reads.
    fn pods() -> Vec<Value> {
        let meta = |name: &str| {
            json!({"name": name, "namespace": "shop", "uid": format!("uid-{name}"),
                "resourceVersion": "1234", "generateName": "web-",
                "labels": {"app": "web", "name": "label-not-name"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d4",
                    "uid": "rs-uid", "controller": true}],
                "managedFields": [{"manager": "kubelet", "operation": "Update",
                    "fieldsV1": {"f:status": {"f:phase": {}}}}]})
        };
        let spec = json!({"nodeName": "node-1", "priority": 10,
            "containers": [{"name": "app", "image": "registry.example/app:1",
                "env": [{"name": "MODE", "value": "production"}],
                "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}}}],
            "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-web"}}]});
        vec![
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta("running"), "spec": spec,
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}),
            json!({"metadata": meta("failed"), "spec": spec, "status": {"phase": "Failed"}}),
            json!({"metadata": meta("done"), "spec": spec, "status": {"phase": "Succeeded"}}),
            json!({"metadata": meta("pending"),
                "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]}}),
            json!({"metadata": meta("bad"),
                "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "lots"}}}]}}),
        ]
    }

    /// What the index would keep of a conversion, comparable.
    fn kept(c: Option<Converted<(Arc<ModelPod>, PodExtra)>>) -> String {
        format!("{c:?}")
    }

    #[test]
    fn a_watched_pod_converts_as_the_full_object_does_and_keeps_its_bookkeeping() {
        for p in pods() {
            let full: core::Pod = serde_json::from_value(p.clone()).unwrap();
            // Both orders: serde reads the object in place when `type` comes first, buffered otherwise.
            for text in [
                format!(r#"{{"type":"MODIFIED","object":{p}}}"#),
                format!(r#"{{"object":{p},"type":"MODIFIED"}}"#),
            ] {
                let Ok(WatchEvent::Modified(read)) = serde_json::from_str::<WatchEvent<Pod>>(&text)
                else {
                    panic!("not read: {text}");
                };
                assert_eq!(read.meta().name, full.metadata.name);
                assert_eq!(read.meta().namespace.as_deref(), Some("shop"));
                assert_eq!(read.meta().resource_version.as_deref(), Some("1234"));
                assert_eq!(
                    kept(read.converted),
                    kept(converted::convert_pod(&full)),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn a_pod_that_cannot_be_converted_is_read_with_its_error() {
        let bad = pods().pop().unwrap();
        let read: Pod = serde_json::from_value(bad).unwrap();
        let e = read.converted.unwrap().unwrap_err();
        assert!(e.contains("shop/bad") && e.contains("cpu"), "{e}");
    }

    #[test]
    fn a_watched_node_converts_as_the_full_object_does() {
        let n = json!({"metadata": {"name": "node-1", "uid": "n-uid", "resourceVersion": "9",
                "labels": {"topology.kubernetes.io/zone": "a"}},
            "spec": {"providerID": "aws:///a/i-1", "taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                "images": [{"names": ["registry.example/app:1"], "sizeBytes": 1}],
                "conditions": [{"type": "Ready", "status": "True"}]}});
        let full: core::Node = serde_json::from_value(n.clone()).unwrap();
        let read: Node = serde_json::from_value(n).unwrap();
        assert_eq!(read.meta().name.as_deref(), Some("node-1"));
        assert_eq!(read.meta().namespace, None);
        assert_eq!(read.meta().resource_version.as_deref(), Some("9"));
        assert_eq!(
            format!("{:?}", read.converted),
            format!("{:?}", converted::convert_node(&full))
        );
    }

    #[test]
    fn the_watch_asks_for_pods_and_nodes() {
        assert_eq!(Pod::plural(&()), "pods");
        assert_eq!(Pod::api_version(&()), "v1");
        assert_eq!(Node::plural(&()), "nodes");
        assert_eq!(Node::kind(&()), "Node");
    }
}
