//! The facts the descheduler's evictor and `PodLifeTime` read of a pod beyond `pod_status`: its
//! `prefer-no-eviction` annotation, whether it has resource claims, its conditions, whether it has a
//! priority and its QoS class; and its
//! topology spread constraints (the scheduler's `DoNotSchedule` ones and the `ScheduleAnyway` ones
//! the descheduler balances too) and preferred node affinity. One place, so that every reader of pods
//! (the API's objects, the dump's lean types) gets them the same way.

use std::collections::BTreeMap;

use crate::model::ThinVec;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::api::resource as core_quantity;

use super::selectors::{label_selector, merge_label_keys, node_selector_terms};
use super::shared::Tables;
use crate::error::Result;
use crate::labels;
use crate::model::workload::{
    LabelSelector, PodCondition, PodMeta, Qos, Requirement, SelectorOp, SpreadConstraint,
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
        no_priority: p.spec.as_ref().is_some_and(|s| s.priority.is_none()),
        qos: Some(qos(p)),
        ..PodMeta::default()
    }
}

/// The positive cpu and memory quantities of a container's requests or limits, in milli-units.
/// A resource list's cpu and memory, where positive (in milli-units): what the QoS class is made of.
/// Two slots, no allocation: the class is computed for every pod at conversion.
fn cpu_and_memory(m: Option<&BTreeMap<String, core_quantity::Quantity>>) -> [Option<i128>; 2] {
    let mut out = [None, None];
    for (k, q) in m.into_iter().flatten() {
        let slot = match k.as_str() {
            "cpu" => 0,
            "memory" => 1,
            _ => continue,
        };
        out[slot] = crate::model::quantity::parse_milli(&q.0)
            .ok()
            .filter(|v| *v > 0);
    }
    out
}

/// The pod's QoS class as the descheduler reads it (`GetPodQOS`): `status.qosClass` when set, else
/// from its containers' and init containers' cpu and memory: none requested nor limited is
/// BestEffort; every container limiting both, and the sums of limits equal to the sums of
/// requests, Guaranteed; anything else Burstable.
pub fn qos(p: &core::Pod) -> Qos {
    let status = p.status.as_ref().and_then(|s| s.qos_class.as_deref());
    if let Some(q) = status.and_then(Qos::parse) {
        return q;
    }
    let Some(spec) = p.spec.as_ref() else {
        return Qos::BestEffort;
    };
    let containers = || {
        spec.containers
            .iter()
            .chain(spec.init_containers.iter().flatten())
    };
    // Most pods limit neither cpu nor memory: Burstable at the first positive request, without
    // parsing the rest.
    let limits_any = containers().any(|c| {
        let limits = c.resources.as_ref().and_then(|r| r.limits.as_ref());
        limits.is_some_and(|l| l.contains_key("cpu") || l.contains_key("memory"))
    });
    if !limits_any {
        let requests = containers().filter_map(|c| c.resources.as_ref()?.requests.as_ref());
        let mut each = requests.map(|r| cpu_and_memory(Some(r)));
        return if each.any(|r| r.iter().any(Option::is_some)) {
            Qos::Burstable
        } else {
            Qos::BestEffort
        };
    }
    // Per resource (cpu, memory): the sum, or None when no container names it.
    let mut requests: [Option<i128>; 2] = [None, None];
    let mut limits: [Option<i128>; 2] = [None, None];
    let add = |sum: &mut [Option<i128>; 2], more: [Option<i128>; 2]| {
        for (s, m) in sum.iter_mut().zip(more) {
            if let Some(m) = m {
                *s = Some(s.unwrap_or(0) + m);
            }
        }
    };
    let mut guaranteed = true;
    for c in containers() {
        let r = c.resources.as_ref();
        add(
            &mut requests,
            cpu_and_memory(r.and_then(|r| r.requests.as_ref())),
        );
        let limited = cpu_and_memory(r.and_then(|r| r.limits.as_ref()));
        if limited.iter().any(Option::is_none) {
            guaranteed = false;
        }
        add(&mut limits, limited);
    }
    if requests == [None, None] && limits == [None, None] {
        return Qos::BestEffort;
    }
    // Every resource requested is limited to the same sum, and none is limited alone.
    let equal = requests
        .iter()
        .zip(&limits)
        .all(|(r, l)| r.is_none() || r == l);
    let same_names = requests
        .iter()
        .zip(&limits)
        .all(|(r, l)| r.is_some() == l.is_some());
    if guaranteed && equal && same_names {
        Qos::Guaranteed
    } else {
        Qos::Burstable
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(json: serde_json::Value) -> core::Pod {
        serde_json::from_value(json).unwrap()
    }

    fn container(requests: serde_json::Value, limits: serde_json::Value) -> serde_json::Value {
        json!({"name": "c", "resources": {"requests": requests, "limits": limits}})
    }

    #[test]
    fn the_qos_class_is_read_as_the_descheduler_reads_it() {
        let of = |containers: Vec<serde_json::Value>| {
            qos(&pod(json!({"spec": {"containers": containers}})))
        };
        assert_eq!(of(vec![container(json!({}), json!({}))]), Qos::BestEffort);
        // A request of 0 is none; an init container's request counts.
        assert_eq!(
            of(vec![container(
                json!({"cpu": "0", "memory": "0"}),
                json!({})
            )]),
            Qos::BestEffort
        );
        let init = json!({"spec": {"containers": [{"name": "c"}],
            "initContainers": [container(json!({"memory": "1Mi"}), json!({}))]}});
        assert_eq!(qos(&pod(init)), Qos::Burstable);
        assert_eq!(
            of(vec![container(json!({"cpu": "100m"}), json!({}))]),
            Qos::Burstable
        );
        let both = json!({"cpu": "1", "memory": "1Gi"});
        assert_eq!(
            of(vec![container(both.clone(), both.clone())]),
            Qos::Guaranteed
        );
        // One container limiting only cpu: not every container limits both.
        assert_eq!(
            of(vec![
                container(both.clone(), both.clone()),
                container(json!({"cpu": "1"}), json!({"cpu": "1"}))
            ]),
            Qos::Burstable
        );
        // Requests below the limits.
        assert_eq!(
            of(vec![container(
                json!({"cpu": "500m", "memory": "1Gi"}),
                both
            )]),
            Qos::Burstable
        );
        // status.qosClass, when set, wins.
        let set = pod(
            json!({"spec": {"containers": [{"name": "c"}]}, "status": {"qosClass": "Guaranteed"}}),
        );
        assert_eq!(qos(&set), Qos::Guaranteed);
    }
}
