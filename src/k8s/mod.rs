//! The Kubernetes side: turning Kubernetes objects into the model (`objects`), reading them from YAML
//! as `kubectl get -o yaml` writes them (`documents`), pods' owners (`owners`), namespaces' labels
//! (`namespaces`), claims and volumes (`volumes`), and what `ferroscale run` does live: the watches (`watch`), taints and evictions
//! (`drain`), the status ConfigMap (`status`), the Lease (`lease`) and the priority expander's
//! ConfigMap (`priorities`), and `--scheduler-config-file` (`scheduler_config`).

pub mod cluster;
pub mod converted;
pub mod documents;
pub mod drain;
pub mod events;
pub mod index;
pub mod lease;
pub mod metrics_server;
pub mod namespaces;
pub mod objects;
pub mod owners;
pub mod pod_facts;
pub mod pod_status;
pub mod priorities;
pub mod record;
mod requests;
pub mod scheduler_config;
mod selectors;
pub mod shared;
pub mod status;
pub mod volumes;
pub mod watch;

/// An object's namespace: `default` when its metadata leaves it out, as the API server and kubectl read
/// it.
pub(crate) fn namespace_of(m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> &str {
    m.namespace.as_deref().unwrap_or("default")
}

/// The HTTP status the API server answered with, when the error is its answer (409 Conflict, 404...).
pub(crate) fn status_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// Every Kubernetes API call `ferroscale run` makes, as (API group, resource, verb). The chart's RBAC
/// grants exactly these (checked by the chart tests), and the run tests check every request they see
/// against it.
pub const PERMISSIONS: &[(&str, &str, &str)] = &[
    ("", "pods", "get"),
    ("", "pods", "list"),
    ("", "pods", "watch"),
    ("", "pods/eviction", "create"),
    ("", "nodes", "get"),
    ("", "nodes", "list"),
    ("", "nodes", "watch"),
    ("", "nodes", "patch"),
    ("policy", "poddisruptionbudgets", "list"),
    ("policy", "poddisruptionbudgets", "watch"),
    ("apps", "daemonsets", "list"),
    ("apps", "daemonsets", "watch"),
    ("", "persistentvolumeclaims", "list"),
    ("", "persistentvolumeclaims", "watch"),
    ("", "persistentvolumes", "list"),
    ("", "persistentvolumes", "watch"),
    ("storage.k8s.io", "storageclasses", "list"),
    ("storage.k8s.io", "storageclasses", "watch"),
    ("storage.k8s.io", "csinodes", "list"),
    ("storage.k8s.io", "csinodes", "watch"),
    ("apps", "replicasets", "list"),
    ("apps", "replicasets", "watch"),
    ("", "replicationcontrollers", "list"),
    ("", "replicationcontrollers", "watch"),
    // The descheduler's `priorityThreshold.name`, read once per class.
    ("scheduling.k8s.io", "priorityclasses", "get"),
    // The descheduler's `namespaceLabelSelector`, listed once per cycle.
    ("", "namespaces", "list"),
    // Only read when a LowNodeUtilization's `metricsUtilization` asks (metrics-server).
    ("metrics.k8s.io", "nodes", "get"),
    ("metrics.k8s.io", "nodes", "list"),
    ("metrics.k8s.io", "pods", "get"),
    ("metrics.k8s.io", "pods", "list"),
    ("events.k8s.io", "events", "create"),
    ("events.k8s.io", "events", "patch"),
    ("", "configmaps", "create"),
    ("", "configmaps", "patch"),
    // The priority expander's ConfigMap, by name (a field selector) in run's namespace.
    ("", "configmaps", "list"),
    ("", "configmaps", "watch"),
    ("coordination.k8s.io", "leases", "create"),
    ("coordination.k8s.io", "leases", "get"),
    ("coordination.k8s.io", "leases", "update"),
];

/// Every Kubernetes API call `ferroscale deschedule` makes (a part of [`PERMISSIONS`]): run's watches
/// the scheduling simulation reads, PriorityClasses, evictions, events and its Lease. The chart's RBAC
/// for its Deployment grants exactly these (checked by the chart tests), and its process test checks
/// every request it sees against it.
pub const DESCHEDULE_PERMISSIONS: &[(&str, &str, &str)] = &[
    ("", "pods", "get"),
    ("", "pods", "list"),
    ("", "pods", "watch"),
    ("", "pods/eviction", "create"),
    ("", "nodes", "list"),
    ("", "nodes", "watch"),
    ("policy", "poddisruptionbudgets", "list"),
    ("policy", "poddisruptionbudgets", "watch"),
    ("apps", "daemonsets", "list"),
    ("apps", "daemonsets", "watch"),
    ("", "persistentvolumeclaims", "list"),
    ("", "persistentvolumeclaims", "watch"),
    ("", "persistentvolumes", "list"),
    ("", "persistentvolumes", "watch"),
    ("storage.k8s.io", "storageclasses", "list"),
    ("storage.k8s.io", "storageclasses", "watch"),
    ("storage.k8s.io", "csinodes", "list"),
    ("storage.k8s.io", "csinodes", "watch"),
    // Only read when a profile's `minReplicas` is over 1.
    ("apps", "replicasets", "list"),
    ("apps", "replicasets", "watch"),
    ("", "replicationcontrollers", "list"),
    ("", "replicationcontrollers", "watch"),
    ("scheduling.k8s.io", "priorityclasses", "get"),
    // Only read when a profile's `namespaceLabelSelector` is set.
    ("", "namespaces", "list"),
    // Only read when a LowNodeUtilization's `metricsUtilization` asks (metrics-server).
    ("metrics.k8s.io", "nodes", "get"),
    ("metrics.k8s.io", "nodes", "list"),
    ("metrics.k8s.io", "pods", "get"),
    ("metrics.k8s.io", "pods", "list"),
    ("events.k8s.io", "events", "create"),
    ("events.k8s.io", "events", "patch"),
    ("coordination.k8s.io", "leases", "create"),
    ("coordination.k8s.io", "leases", "get"),
    ("coordination.k8s.io", "leases", "update"),
];
