//! Kubernetes objects from a cluster dump: what `kubectl get nodes,pods,pdb,ds,pvc,pv,storageclass,csinode
//! -A -o yaml|json` writes (with `rs,rc` for `--min-replica-count`, `ns` for pod affinity's `namespaceSelector`), as one `List` or several documents.
//! JSON (a file starting with `{` or `[`) is read straight into the typed objects, a `List`'s items one at
//! a time (`json`); YAML goes through `serde_norway` (`yaml`). Unknown kinds and broken objects are errors
//! naming the document, the item, the object and the field. Each object read goes to a [`Sink`]: kept
//! ([`parse`]: [`Objects`]) or converted to the model at once and dropped ([`inputs`]).

mod chunks;
mod convert;
mod json;
mod lean;
mod stream;
#[cfg(test)]
mod tests;
pub mod watched;
mod yaml;

use k8s_openapi::api::apps::v1::{DaemonSet, ReplicaSet};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use serde::{Deserialize, Deserializer};
use serde_path_to_error::Track;

use crate::error::{Error, Result};
use crate::k8s::metrics_server::{NodeMetrics, PodMetrics};
use crate::k8s::objects::Inputs;

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
    /// What the descheduler's `priorityThreshold.name` names.
    pub priority_classes: Vec<PriorityClass>,
    /// metrics-server's usage, for `metricsUtilization`.
    pub node_metrics: Vec<NodeMetrics>,
    pub pod_metrics: Vec<PodMetrics>,
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

    /// The model of these objects, as `simulate` runs on them: every object converted (the first that
    /// cannot be is the error), claims and attach limits resolved, owners' replicas and namespaces'
    /// labels set. Terminal pods are left out.
    pub fn inputs(&self) -> Result<Inputs> {
        let mut inputs = Inputs::convert(
            &self.nodes,
            &self.pods,
            &self.pdbs,
            &self.daemonsets,
            &self.storage(),
            Err,
        )?;
        self.set_pods_context(&mut inputs.pods);
        inputs.priority_classes = self.priority_values();
        inputs.usage = self.usage()?;
        Ok(inputs)
    }

    /// Each PriorityClass's value (none written: 0, as the API defaults it).
    fn priority_values(&self) -> std::collections::BTreeMap<String, i32> {
        self.priority_classes
            .iter()
            .filter_map(|c| Some((c.metadata.name.clone()?, c.value.unwrap_or(0))))
            .collect()
    }

    /// The usage the metrics objects say (None: the dump has none).
    fn usage(&self) -> Result<Option<crate::deschedule::actual::Usage>> {
        crate::k8s::metrics_server::dump_usage(&self.node_metrics, &self.pod_metrics)
    }

    /// Sets what pods take from the other objects: their owners' replicas, their namespaces' labels.
    fn set_pods_context(&self, pods: &mut [crate::model::workload::Pod]) {
        crate::k8s::owners::set_owner_replicas(
            pods,
            self.replicasets.iter(),
            self.replication_controllers.iter(),
        );
        crate::k8s::namespaces::set_namespace_labels(pods, &self.namespaces);
    }
}

/// One object of a dump, in its Kubernetes type (boxed: the types are kilobytes, and an object is moved
/// from its read to its sink several times).
enum Object {
    Node(Box<core::Node>),
    Pod(Box<core::Pod>),
    Pdb(Box<PodDisruptionBudget>),
    DaemonSet(Box<DaemonSet>),
    Claim(Box<core::PersistentVolumeClaim>),
    Volume(Box<core::PersistentVolume>),
    Class(Box<StorageClass>),
    CsiNode(Box<CSINode>),
    ReplicaSet(Box<ReplicaSet>),
    ReplicationController(Box<core::ReplicationController>),
    Namespace(Box<core::Namespace>),
    PriorityClass(Box<PriorityClass>),
    NodeMetrics(Box<NodeMetrics>),
    PodMetrics(Box<PodMetrics>),
}

impl Object {
    /// Reads one object of `kind` from `de`.
    fn read<'de, D: Deserializer<'de>>(kind: Kind, de: D) -> Result<Object, D::Error> {
        Ok(match kind {
            Kind::List => return Err(serde::de::Error::custom("a List is no object")),
            Kind::Node => Object::Node(Deserialize::deserialize(de)?),
            Kind::Pod => Object::Pod(Deserialize::deserialize(de)?),
            Kind::PodDisruptionBudget => Object::Pdb(Deserialize::deserialize(de)?),
            Kind::DaemonSet => Object::DaemonSet(Deserialize::deserialize(de)?),
            Kind::PersistentVolumeClaim => Object::Claim(Deserialize::deserialize(de)?),
            Kind::PersistentVolume => Object::Volume(Deserialize::deserialize(de)?),
            Kind::StorageClass => Object::Class(Deserialize::deserialize(de)?),
            Kind::CSINode => Object::CsiNode(Deserialize::deserialize(de)?),
            Kind::ReplicaSet => Object::ReplicaSet(Deserialize::deserialize(de)?),
            Kind::ReplicationController => {
                Object::ReplicationController(Deserialize::deserialize(de)?)
            }
            Kind::Namespace => Object::Namespace(Deserialize::deserialize(de)?),
            Kind::PriorityClass => Object::PriorityClass(Deserialize::deserialize(de)?),
            Kind::NodeMetrics => Object::NodeMetrics(Deserialize::deserialize(de)?),
            Kind::PodMetrics => Object::PodMetrics(Deserialize::deserialize(de)?),
        })
    }
}

/// Where the objects of a dump go as they are read, one at a time.
trait Sink: Default {
    /// Takes one object; an error (an object the model cannot hold) stops the read.
    fn add(&mut self, object: Object) -> Result<()>;
}

impl Sink for Objects {
    fn add(&mut self, object: Object) -> Result<()> {
        match object {
            Object::Node(o) => self.nodes.push(*o),
            Object::Pod(o) => self.pods.push(*o),
            Object::Pdb(o) => self.pdbs.push(*o),
            Object::DaemonSet(o) => self.daemonsets.push(*o),
            Object::Claim(o) => self.claims.push(*o),
            Object::Volume(o) => self.volumes.push(*o),
            Object::Class(o) => self.classes.push(*o),
            Object::CsiNode(o) => self.csinodes.push(*o),
            Object::ReplicaSet(o) => self.replicasets.push(*o),
            Object::ReplicationController(o) => self.replication_controllers.push(*o),
            Object::Namespace(o) => self.namespaces.push(*o),
            Object::PriorityClass(o) => self.priority_classes.push(*o),
            Object::NodeMetrics(o) => self.node_metrics.push(*o),
            Object::PodMetrics(o) => self.pod_metrics.push(*o),
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
    PriorityClass,
    NodeMetrics,
    PodMetrics,
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
            | "NamespaceList"
            | "PriorityClassList"
            | "NodeMetricsList"
            | "PodMetricsList" => Kind::List,
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
            "PriorityClass" => Kind::PriorityClass,
            "NodeMetrics" => Kind::NodeMetrics,
            "PodMetrics" => Kind::PodMetrics,
            other => {
                return Err(Error::config(format!(
                    "{at}: unsupported kind {other:?} (expected Node, Pod, PodDisruptionBudget, DaemonSet, ReplicaSet, ReplicationController, Namespace, PriorityClass, NodeMetrics, PodMetrics, PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode or a List)"
                )))
            }
        })
    }
}

/// The result of reading one object (`first`); on failure the object is read again through `again`
/// with a [`Track`] to name the field at fault (`spec.containers[0].resources: …`), so a dump that
/// reads cleanly pays nothing for the path.
fn typed<T, E, F: std::fmt::Display>(
    first: Result<T, E>,
    again: impl FnOnce(&mut Track) -> Result<(), F>,
    at: &str,
) -> Result<T> {
    if let Ok(object) = first {
        return Ok(object);
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
    bounded(text, source)?;
    read(text, source)
}

/// The model of every document of `text` (as [`Objects::inputs`] gives), converted as it is read: each
/// node and pod becomes the model's as soon as it is parsed and its Kubernetes object is dropped, so
/// memory holds the model, not the objects. Errors name what [`parse`] and [`Objects::inputs`] name.
pub fn inputs(text: &str, source: &str) -> Result<Inputs> {
    bounded(text, source)?;
    // One pass first (`stream`); a dump it does not take is read again the exact way, which names the
    // error.
    let first = text.bytes().find(|b| !b.is_ascii_whitespace());
    let read_once = (first == Some(b'{')).then(|| stream::read(text)).flatten();
    match read_once {
        Some(converted) => converted,
        None => read::<convert::Converting>(text, source)?,
    }
    .finish()
}

/// The model of the dump in the file `file` (as [`inputs`] gives for its text), read a few megabytes at
/// a time: a `List` (what `kubectl get -o json` writes) is converted item by item as the file is read,
/// so memory holds the model, never the file's text. Anything else, and any dump that is refused (then
/// for its error), is read whole. `read_whole` reads the text (its error names the file).
pub fn inputs_of_file(
    file: &std::path::Path,
    source: &str,
    read_whole: impl FnOnce() -> Result<String>,
) -> Result<Inputs> {
    let converted = std::fs::File::open(file)
        .and_then(chunks::read)
        .ok()
        .flatten();
    match converted {
        Some(converted) => converted.finish(),
        None => inputs(&read_whole()?, source),
    }
}

/// Refuses a dump read whole that is over [`crate::input::DUMP`]'s size or nesting, before any parser
/// sees it (the YAML scan bounds JSON's nesting too: JSON is YAML).
fn bounded(text: &str, source: &str) -> Result<()> {
    crate::input::DUMP
        .check_yaml(text)
        .map_err(|e| Error::config(format!("{source}: {e}")))
}

/// Reads every document of `text` into a new `S`.
fn read<S: Sink>(text: &str, source: &str) -> Result<S> {
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
