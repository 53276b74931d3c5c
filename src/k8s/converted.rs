//! What the watches keep of each object they convert (`k8s::watch::feed`) for the loop's index
//! (`k8s::index`): the model, with the few fields of the Kubernetes object the adapter still needs.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use super::objects::{daemonset_pod, node, pdb, pod, pod_finished_bound, pod_terminal};
use super::volumes::claim_names;
use crate::model::workload::{Node, Pdb, Pod};

/// An object converted, or why it could not be (the message names the object and the field).
pub type Converted<T> = std::result::Result<T, String>;

/// What the adapter keeps of a pod beside its model: what eviction and events need, and the claims
/// to resolve.
#[derive(Debug, Clone, Default)]
pub struct PodExtra {
    pub uid: Option<String>,
    /// Names of the PersistentVolumeClaims it mounts (in its namespace).
    pub claims: Vec<String>,
    /// It finished (failed or succeeded) and is still bound to its node: the index keeps it apart,
    /// for the descheduler's `RemoveFailedPods` and `PodLifeTime`, never for the autoscaling engine.
    pub failed: bool,
}

/// What the adapter keeps of a node beside its model.
#[derive(Debug, Clone, Default)]
pub struct NodeExtra {
    pub uid: Option<String>,
    /// Its `ferroscale.io/intent` annotation (`engine::intents`), as written.
    pub intent: Option<String>,
}

/// A pod as its watch delivers it to the index (None: finished and unbound, not indexed). A pod
/// finished and still bound is delivered marked [`PodExtra::failed`].
pub fn convert_pod(p: &core::Pod) -> Option<Converted<(Arc<Pod>, PodExtra)>> {
    let failed = pod_finished_bound(p);
    if pod_terminal(p) && !failed {
        return None;
    }
    let extra = PodExtra {
        uid: p.metadata.uid.clone(),
        claims: if failed { Vec::new() } else { claim_names(p) },
        failed,
    };
    Some(
        pod(p)
            .map(|m| (Arc::new(m), extra))
            .map_err(|e| e.to_string()),
    )
}

/// A node as its watch delivers it to the index.
pub fn convert_node(n: &core::Node) -> Option<Converted<(Node, NodeExtra)>> {
    let extra = NodeExtra {
        uid: n.metadata.uid.clone(),
        intent: n
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(crate::labels::INTENT))
            .cloned(),
    };
    Some(node(n).map(|m| (m, extra)).map_err(|e| e.to_string()))
}

/// A PodDisruptionBudget as its watch delivers it to the index.
pub fn convert_pdb(p: &PodDisruptionBudget) -> Option<Converted<(Pdb, ())>> {
    Some(pdb(p).map(|m| (m, ())).map_err(|e| e.to_string()))
}

/// The pod a DaemonSet would start on a new node, as its watch delivers it to the index.
pub fn convert_daemonset(d: &DaemonSet) -> Option<Converted<(Pod, ())>> {
    Some(daemonset_pod(d).map(|m| (m, ())).map_err(|e| e.to_string()))
}
