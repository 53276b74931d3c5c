//! What the descheduler's rules read of a pod beyond scheduling: phase, container states, owners,
//! images and the annotations that keep or free it (`model::workload::PodMeta`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;

use crate::labels;
use crate::model::workload::{ContainerState, Owner, PodPhase};

/// The pod's phase, status reason and container states (init containers first, ephemeral ones
/// last), from its status.
pub(super) fn states(p: &core::Pod) -> (PodPhase, Option<String>, Vec<ContainerState>) {
    let Some(s) = p.status.as_ref() else {
        return (PodPhase::Pending, None, Vec::new());
    };
    let phase = s
        .phase
        .as_deref()
        .map(PodPhase::parse)
        .unwrap_or(PodPhase::Pending);
    let state = |c: &core::ContainerStatus, init: bool, ephemeral: bool| ContainerState {
        init,
        ephemeral,
        restarts: c.restart_count,
        waiting: c
            .state
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.clone()),
        terminated: c
            .state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .and_then(|t| t.reason.clone()),
        exit_code: c
            .state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .map(|t| t.exit_code),
    };
    let containers = s
        .init_container_statuses
        .iter()
        .flatten()
        .map(|c| state(c, true, false))
        .chain(
            s.container_statuses
                .iter()
                .flatten()
                .map(|c| state(c, false, false)),
        )
        .chain(
            s.ephemeral_container_statuses
                .iter()
                .flatten()
                .map(|c| state(c, false, true)),
        )
        .collect();
    (phase, s.reason.clone(), containers)
}

/// Every owner reference.
pub(super) fn owners(p: &core::Pod) -> Vec<Owner> {
    p.metadata
        .owner_references
        .iter()
        .flatten()
        .map(|o| Owner {
            kind: o.kind.clone(),
            name: o.name.clone(),
            controller: o.controller == Some(true),
        })
        .collect()
}

/// Its containers' images, in order.
pub(super) fn images(spec: &core::PodSpec) -> Vec<String> {
    spec.containers
        .iter()
        .map(|c| c.image.clone().unwrap_or_default())
        .collect()
}

/// `karpenter.sh/do-not-disrupt` or `ferroscale.io/do-not-disrupt` is `"true"`.
pub(super) fn do_not_disrupt(annotations: &BTreeMap<String, String>) -> bool {
    [labels::KARPENTER_DO_NOT_DISRUPT, labels::DO_NOT_DISRUPT]
        .iter()
        .any(|k| annotations.get(*k).is_some_and(|v| v == "true"))
}

/// `controller.kubernetes.io/pod-deletion-cost`; a value that does not parse counts as unset, as the
/// ReplicaSet controller takes it.
pub(super) fn deletion_cost(annotations: &BTreeMap<String, String>) -> i32 {
    annotations
        .get(labels::POD_DELETION_COST)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// The descheduler's `evict` annotation is present.
pub(super) fn evict_annotation(annotations: &BTreeMap<String, String>) -> bool {
    annotations.contains_key(labels::DESCHEDULER_EVICT)
}

/// Whether a pod is finished (phase `Failed` or `Succeeded`) and still bound to its node: the
/// descheduler's `RemoveFailedPods` (failed ones) and `PodLifeTime` (`states: [Succeeded]`, say) read
/// it; the autoscaling engine never does.
pub fn pod_finished_bound(p: &core::Pod) -> bool {
    pod_terminal(p)
        && p.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty())
}

/// Whether a pod is done (it needs no node).
pub fn pod_terminal(p: &core::Pod) -> bool {
    matches!(
        p.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded") | Some("Failed")
    )
}
