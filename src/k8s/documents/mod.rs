//! Kubernetes objects from a cluster dump: what `kubectl get nodes,pods,pdb,ds,pvc,pv,storageclass,csinode
//! -A -o yaml|json` writes (with `rs,rc` for `--min-replica-count`, `ns` for pod affinity's `namespaceSelector`), as one `List` or several documents.
//! JSON (a file starting with `{` or `[`) is read straight into the typed objects, a `List`'s items one at
//! a time (`json`); YAML goes through `serde_norway` (`yaml`). Unknown kinds and broken objects are errors
//! naming the document, the item, the object and the field.

mod json;
mod yaml;

use k8s_openapi::api::apps::v1::{DaemonSet, ReplicaSet};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use serde::{Deserialize, Deserializer};
use serde_path_to_error::Track;

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
    /// Their labels are what pod affinity's `namespaceSelector` matches.
    pub namespaces: Vec<core::Namespace>,
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

    /// Reads one object of `kind` from `de` into its list.
    fn push<'de, D: Deserializer<'de>>(&mut self, kind: Kind, de: D) -> Result<(), D::Error> {
        match kind {
            Kind::List => return Err(serde::de::Error::custom("a List is no object")),
            Kind::Node => self.nodes.push(Deserialize::deserialize(de)?),
            Kind::Pod => self.pods.push(Deserialize::deserialize(de)?),
            Kind::PodDisruptionBudget => self.pdbs.push(Deserialize::deserialize(de)?),
            Kind::DaemonSet => self.daemonsets.push(Deserialize::deserialize(de)?),
            Kind::PersistentVolumeClaim => self.claims.push(Deserialize::deserialize(de)?),
            Kind::PersistentVolume => self.volumes.push(Deserialize::deserialize(de)?),
            Kind::StorageClass => self.classes.push(Deserialize::deserialize(de)?),
            Kind::CSINode => self.csinodes.push(Deserialize::deserialize(de)?),
            Kind::ReplicaSet => self.replicasets.push(Deserialize::deserialize(de)?),
            Kind::ReplicationController => self
                .replication_controllers
                .push(Deserialize::deserialize(de)?),
            Kind::Namespace => self.namespaces.push(Deserialize::deserialize(de)?),
        }
        Ok(())
    }
}

/// The kinds a dump may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    List,
    Node,
    Pod,
    PodDisruptionBudget,
    DaemonSet,
    PersistentVolumeClaim,
    PersistentVolume,
    StorageClass,
    CSINode,
    ReplicaSet,
    ReplicationController,
    Namespace,
}

impl Kind {
    /// The kind named `kind`; `at` and `kind` name it in the error for any other.
    fn of(kind: &str, at: &str) -> Result<Kind> {
        Ok(match kind {
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
            | "ReplicationControllerList"
            | "NamespaceList" => Kind::List,
            "Node" => Kind::Node,
            "Pod" => Kind::Pod,
            "PodDisruptionBudget" => Kind::PodDisruptionBudget,
            "DaemonSet" => Kind::DaemonSet,
            "PersistentVolumeClaim" => Kind::PersistentVolumeClaim,
            "PersistentVolume" => Kind::PersistentVolume,
            "StorageClass" => Kind::StorageClass,
            "CSINode" => Kind::CSINode,
            "ReplicaSet" => Kind::ReplicaSet,
            "ReplicationController" => Kind::ReplicationController,
            "Namespace" => Kind::Namespace,
            other => {
                return Err(Error::config(format!(
                    "{at}: unsupported kind {other:?} (expected Node, Pod, PodDisruptionBudget, DaemonSet, ReplicaSet, ReplicationController, Namespace, PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode or a List)"
                )))
            }
        })
    }
}

/// The result of reading one object (`first`); on failure the object is read again through `again`
/// with a [`Track`] to name the field at fault (`spec.containers[0].resources: …`), so a dump that
/// reads cleanly pays nothing for the path.
fn typed<E, F: std::fmt::Display>(
    first: Result<(), E>,
    again: impl FnOnce(&mut Track) -> Result<(), F>,
    at: &str,
) -> Result<()> {
    if first.is_ok() {
        return Ok(());
    }
    let mut track = Track::new();
    let e = again(&mut track)
        .err()
        .map_or_else(|| "unreadable".to_string(), |e| e.to_string());
    let path = track.path().to_string();
    Err(Error::config(if path == "." {
        format!("{at}: {e}")
    } else {
        format!("{at}: {path}: {e}")
    }))
}

/// Parses every document of `text`; `source` names the file in errors. Text whose first non-blank
/// character is `{` or `[` is read as JSON (concatenated values are documents), unless it is no JSON
/// but YAML in flow style, which is read as YAML.
pub fn parse(text: &str, source: &str) -> Result<Objects> {
    let first = text.bytes().find(|b| !b.is_ascii_whitespace());
    if matches!(first, Some(b'{' | b'[')) {
        match json::parse(text, source) {
            Ok(objects) => return Ok(objects),
            Err(json::Failed::Syntax(e)) => return yaml::parse(text, source).map_err(|_| e),
            Err(json::Failed::Object(e)) => return Err(e),
        }
    }
    yaml::parse(text, source)
}
