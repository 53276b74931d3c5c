//! Kubernetes objects from YAML: multi-document files and `List`s (what `kubectl get
//! nodes,pods,pdb,ds,pvc,pv,storageclass,csinode -A -o yaml` writes, with `rs,rc` for
//! `--min-replica-count`). Unknown kinds and broken objects are errors naming the document and field.

use k8s_openapi::api::apps::v1::{DaemonSet, ReplicaSet};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use serde::Deserialize;

use crate::error::{Error, Result};

/// The objects of a cluster dump.
#[derive(Debug, Default, Clone)]
pub struct Objects {
    pub nodes: Vec<core::Node>,
    pub pods: Vec<core::Pod>,
    pub pdbs: Vec<PodDisruptionBudget>,
    pub daemonsets: Vec<DaemonSet>,
    pub claims: Vec<core::PersistentVolumeClaim>,
    pub volumes: Vec<core::PersistentVolume>,
    pub classes: Vec<StorageClass>,
    pub csinodes: Vec<CSINode>,
    pub replicasets: Vec<ReplicaSet>,
    pub replication_controllers: Vec<core::ReplicationController>,
}

impl Objects {
    /// The storage objects, indexed for resolving pods' claims.
    pub fn storage(&self) -> crate::k8s::volumes::Storage<'_> {
        crate::k8s::volumes::Storage::new(
            &self.claims,
            &self.volumes,
            &self.classes,
            &self.csinodes,
        )
    }
}

fn add(objects: &mut Objects, value: serde_yaml::Value, at: &str) -> Result<()> {
    let kind = value
        .get("kind")
        .and_then(|k| k.as_str())
        .ok_or_else(|| Error::config(format!("{at}: no kind")))?
        .to_string();
    let name = value
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(|n| n.as_str())
        .unwrap_or("")
        .to_string();
    let at = format!("{at} ({kind} {name})");
    let bad = |e: serde_yaml::Error| Error::config(format!("{at}: {e}"));
    match kind.as_str() {
        "List"
        | "NodeList"
        | "PodList"
        | "PodDisruptionBudgetList"
        | "DaemonSetList"
        | "PersistentVolumeClaimList"
        | "PersistentVolumeList"
        | "StorageClassList"
        | "CSINodeList"
        | "ReplicaSetList"
        | "ReplicationControllerList" => {
            let items = match value.get("items") {
                Some(serde_yaml::Value::Sequence(items)) => items.clone(),
                None | Some(serde_yaml::Value::Null) => vec![],
                Some(_) => return Err(Error::config(format!("{at}: items is not a list"))),
            };
            for (i, item) in items.into_iter().enumerate() {
                add(objects, item, &format!("{at} items[{i}]"))?;
            }
        }
        "Node" => objects
            .nodes
            .push(serde_yaml::from_value(value).map_err(bad)?),
        "Pod" => objects.pods.push(serde_yaml::from_value(value).map_err(bad)?),
        "PodDisruptionBudget" => objects
            .pdbs
            .push(serde_yaml::from_value(value).map_err(bad)?),
        "DaemonSet" => objects
            .daemonsets
            .push(serde_yaml::from_value(value).map_err(bad)?),
        "PersistentVolumeClaim" => objects
            .claims
            .push(serde_yaml::from_value(value).map_err(bad)?),
        "PersistentVolume" => objects
            .volumes
            .push(serde_yaml::from_value(value).map_err(bad)?),
        "StorageClass" => objects
            .classes
            .push(serde_yaml::from_value(value).map_err(bad)?),
        "CSINode" => objects
            .csinodes
            .push(serde_yaml::from_value(value).map_err(bad)?),
        "ReplicaSet" => objects
            .replicasets
            .push(serde_yaml::from_value(value).map_err(bad)?),
        "ReplicationController" => objects
            .replication_controllers
            .push(serde_yaml::from_value(value).map_err(bad)?),
        other => {
            return Err(Error::config(format!(
                "{at}: unsupported kind {other:?} (expected Node, Pod, PodDisruptionBudget, DaemonSet, ReplicaSet, ReplicationController, PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode or a List)"
            )))
        }
    }
    Ok(())
}

/// Parses every document of `text`; `source` names the file in errors.
pub fn parse(text: &str, source: &str) -> Result<Objects> {
    let mut objects = Objects::default();
    for (i, doc) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let value = serde_yaml::Value::deserialize(doc)
            .map_err(|e| Error::config(format!("{source}: document {}: {e}", i + 1)))?;
        if value.is_null() {
            continue;
        }
        add(
            &mut objects,
            value,
            &format!("{source}: document {}", i + 1),
        )?;
    }
    Ok(objects)
}
