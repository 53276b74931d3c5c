//! A cluster's timeline: what `ferroscale record` writes and `simulate --trace` replays. One JSON object
//! a line, `{"time": "<RFC 3339>", "type": "ADDED|MODIFIED|DELETED", "object": {…}}`, in time order:
//! first every object as the recording found it (`ADDED`, at the start time), then every change. A file
//! whose name ends in `.gz` is gzip. The objects are the kinds a `simulate` dump holds, cut to the
//! fields the engine reads (`k8s::record`'s `keep`): never environment values, command lines, secrets or config maps.

mod read;
mod write;

pub use read::{read_file, Reader};
pub use write::Writer;

use k8s_openapi::jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// What happened to the object, as a watch says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Change {
    Added,
    Modified,
    Deleted,
}

/// The kinds a timeline holds: those a `simulate` dump holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Node,
    Pod,
    PodDisruptionBudget,
    DaemonSet,
    ReplicaSet,
    ReplicationController,
    PersistentVolumeClaim,
    PersistentVolume,
    StorageClass,
    CSINode,
    Namespace,
    PriorityClass,
}

impl Kind {
    /// Every kind, in the order `record` starts watching them (the objects pods refer to first).
    pub const ALL: [Kind; 12] = [
        Kind::Namespace,
        Kind::PriorityClass,
        Kind::StorageClass,
        Kind::CSINode,
        Kind::PersistentVolume,
        Kind::PersistentVolumeClaim,
        Kind::DaemonSet,
        Kind::ReplicaSet,
        Kind::ReplicationController,
        Kind::PodDisruptionBudget,
        Kind::Node,
        Kind::Pod,
    ];

    /// The kind's name as objects carry it (`kind:`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Node => "Node",
            Kind::Pod => "Pod",
            Kind::PodDisruptionBudget => "PodDisruptionBudget",
            Kind::DaemonSet => "DaemonSet",
            Kind::ReplicaSet => "ReplicaSet",
            Kind::ReplicationController => "ReplicationController",
            Kind::PersistentVolumeClaim => "PersistentVolumeClaim",
            Kind::PersistentVolume => "PersistentVolume",
            Kind::StorageClass => "StorageClass",
            Kind::CSINode => "CSINode",
            Kind::Namespace => "Namespace",
            Kind::PriorityClass => "PriorityClass",
        }
    }

    /// The kind called `name`, if a timeline may hold it.
    pub fn of(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The API group/version objects of this kind are served under.
    pub fn api_version(self) -> &'static str {
        match self {
            Kind::Node
            | Kind::Pod
            | Kind::ReplicationController
            | Kind::PersistentVolumeClaim
            | Kind::PersistentVolume
            | Kind::Namespace => "v1",
            Kind::PodDisruptionBudget => "policy/v1",
            Kind::DaemonSet | Kind::ReplicaSet => "apps/v1",
            Kind::StorageClass | Kind::CSINode => "storage.k8s.io/v1",
            Kind::PriorityClass => "scheduling.k8s.io/v1",
        }
    }
}

/// One line of a timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub time: Timestamp,
    pub change: Change,
    pub kind: Kind,
    /// The object, `kind` and `apiVersion` set, cut to what the engine reads.
    pub object: serde_json::Value,
}

impl Entry {
    /// The object's namespace (empty for cluster-wide kinds) and name.
    pub fn key(&self) -> (&str, &str) {
        let meta = &self.object["metadata"];
        (
            meta["namespace"].as_str().unwrap_or(""),
            meta["name"].as_str().unwrap_or(""),
        )
    }
}
