//! The owners of pods, read for upstream's replica count rule (`--min-replica-count`): a pod's
//! `owner_replicas` is the `spec.replicas` of its controlling ReplicaSet or ReplicationController.
//! `ferroscale simulate` reads them from the dump; `ferroscale run` watches them when the rule is on.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

use super::namespace_of;
use crate::model::workload::Pod;

/// (namespace, kind, name) of a controller → its `spec.replicas`.
pub type Replicas = BTreeMap<(String, String, String), i32>;

/// The replicas of these ReplicaSets and ReplicationControllers, by namespace, kind and name.
pub fn replicas<'a>(
    replicasets: impl IntoIterator<Item = &'a ReplicaSet>,
    controllers: impl IntoIterator<Item = &'a core::ReplicationController>,
) -> Replicas {
    let key = |kind: &str, m: &meta::ObjectMeta| {
        (
            namespace_of(m).to_string(),
            kind.to_string(),
            m.name.clone().unwrap_or_default(),
        )
    };
    replicasets
        .into_iter()
        .filter_map(|r| Some((key("ReplicaSet", &r.metadata), r.spec.replicas?)))
        .chain(controllers.into_iter().filter_map(|r| {
            Some((
                key("ReplicationController", &r.metadata),
                r.spec.as_ref()?.replicas?,
            ))
        }))
        .collect()
}

/// Sets a pod's `owner_replicas` from `replicas` (None when its controller is not among them).
pub fn set_replicas(p: &mut Pod, replicas: &Replicas) {
    if let (Some(kind), Some(name)) = (&p.meta.controller, &p.meta.controller_name) {
        let k = (p.namespace.to_string(), kind.to_string(), name.to_string());
        p.meta.owner_replicas = replicas.get(&k).copied();
    }
}

/// Sets the `owner_replicas` of each pod owned by one of these ReplicaSets or ReplicationControllers (by
/// namespace, kind and name) to its `spec.replicas`, for `--min-replica-count`.
pub fn set_owner_replicas<'a>(
    pods: &mut [Pod],
    replicasets: impl IntoIterator<Item = &'a ReplicaSet>,
    controllers: impl IntoIterator<Item = &'a core::ReplicationController>,
) {
    let replicas = replicas(replicasets, controllers);
    if replicas.is_empty() {
        return;
    }
    for p in pods {
        set_replicas(p, &replicas);
    }
}
