//! The facts the descheduler's evictor and `PodLifeTime` read of a pod beyond `pod_status`: its
//! `prefer-no-eviction` annotation, whether it has resource claims, and its conditions; and its
//! topology spread constraints (the scheduler's `DoNotSchedule` ones and the `ScheduleAnyway` ones
//! the descheduler balances too) and preferred node affinity. One place, so that every reader of pods
//! (the API's objects, the dump's lean types) gets them the same way.

use std::collections::BTreeMap;

use crate::model::ThinVec;
use k8s_openapi::api::core::v1 as core;

use super::selectors::{label_selector, merge_label_keys, node_selector_terms};
use super::shared::Tables;
use crate::error::Result;
use crate::labels;
use crate::model::workload::{
    LabelSelector, PodCondition, PodMeta, Requirement, SelectorOp, SpreadConstraint,
};

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

/// The pod's topology spread constraints whose `whenUnsatisfiable` is `when` (`DoNotSchedule`: the
/// scheduler's filter; `ScheduleAnyway`: only scored), `matchLabelKeys` merged into the selector;
/// `at` names a field of the pod in errors.
pub fn spread(
    spec: &core::PodSpec,
    labels: &BTreeMap<String, String>,
    at: &dyn Fn(&str) -> String,
    when: &str,
) -> Result<ThinVec<SpreadConstraint>> {
    spec.topology_spread_constraints
        .iter()
        .flatten()
        .enumerate()
        .filter(|(_, c)| c.when_unsatisfiable == when)
        .map(|(i, c)| {
            let mut selector = match &c.label_selector {
                Some(s) => label_selector(
                    s,
                    &at(&format!(
                        "spec.topologySpreadConstraints[{i}].labelSelector"
                    )),
                )?,
                // No selector selects no pod: every domain counts 0.
                None => LabelSelector::nothing(),
            };
            merge_label_keys(&mut selector, &c.match_label_keys, SelectorOp::In, labels);
            Ok(SpreadConstraint {
                max_skew: c.max_skew,
                topology_key: c.topology_key.clone(),
                selector,
                min_domains: c.min_domains,
                ignore_node_affinity: c.node_affinity_policy.as_deref() == Some("Ignore"),
                honor_taints: c.node_taints_policy.as_deref() == Some("Honor"),
            })
        })
        .collect()
}

/// `spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution`: each term's weight
/// and requirements (a term without any matches no node, as upstream's).
pub fn preferred_node_affinity(
    spec: &core::PodSpec,
    at: &dyn Fn(&str) -> String,
) -> Result<ThinVec<(i32, Vec<Requirement>)>> {
    let Some(terms) = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        })
    else {
        return Ok(ThinVec::new());
    };
    terms
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let one = core::NodeSelector {
                node_selector_terms: vec![t.preference.clone()],
            };
            let field = at(&format!(
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference"
            ));
            let mut reqs = node_selector_terms(&one, &field)?;
            Ok((t.weight, reqs.pop().unwrap_or_default()))
        })
        .collect()
}
