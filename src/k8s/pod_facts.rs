//! The facts the descheduler's evictor and `PodLifeTime` read of a pod beyond `pod_status`: its
//! `prefer-no-eviction` annotation, whether it has resource claims, and its conditions. One function,
//! so that every reader of pods (the API's objects, the dump's lean types) gets them the same way.

use k8s_openapi::api::core::v1 as core;

use super::shared::Tables;
use crate::labels;
use crate::model::workload::{PodCondition, PodMeta};

/// A `PodMeta` holding only these facts (every other field default), for the converter to complete.
pub fn meta(p: &core::Pod, shared: &mut Tables) -> PodMeta {
    let annotations = p.metadata.annotations.as_ref();
    let conditions = p
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(|cs| cs.iter().map(|c| condition(c, shared)).collect())
        .unwrap_or_default();
    PodMeta {
        prefer_no_eviction: annotations
            .is_some_and(|a| a.contains_key(labels::DESCHEDULER_PREFER_NO_EVICTION)),
        has_resource_claims: p
            .spec
            .as_ref()
            .and_then(|s| s.resource_claims.as_ref())
            .is_some_and(|c| !c.is_empty()),
        conditions,
        nominated_node: p
            .status
            .as_ref()
            .and_then(|s| s.nominated_node_name.as_deref())
            .filter(|n| !n.is_empty())
            .map(Box::from),
        ..PodMeta::default()
    }
}

fn condition(c: &core::PodCondition, shared: &mut Tables) -> PodCondition {
    PodCondition {
        kind: shared.name(&c.type_),
        status: shared.name(&c.status),
        reason: shared.name(c.reason.as_deref().unwrap_or("")),
        last_transition: c.last_transition_time.as_ref().map(|t| t.0.as_second()),
    }
}
