//! Where the evictor reads a pod as the descheduler does, beyond its own test cases: a generic
//! ephemeral volume's claim is no `persistentVolumeClaim` (`IsPodWithPVC`), a bound claim's storage
//! class is the claim's (`podStorageClasses`), a pod with no priority passes the threshold
//! (`IsPodEvictableBasedOnPriority`), and the eviction order tells the QoS classes apart
//! (`SortPodsBasedOnPriorityLowToHigh`).

use std::sync::Arc;

use super::*;
use crate::deschedule::evictor::config::{ProtectionsConfig, PvcProtection, StorageClassName};
use crate::deschedule::strategies::usage::sort_for_eviction;
use crate::model::workload::Qos;

/// A claim bound to a volume, of `class`.
fn bound(key: &str, class: &str) -> Claim {
    Claim {
        class: Some(class.into()),
        ..claim(
            key,
            ClaimState::Bound {
                volume: format!("pv-{key}"),
                node_affinity: vec![],
                zones: vec![],
                driver: None,
            },
        )
    }
}

fn pvc_protection(classes: &'static [&'static str]) -> impl FnOnce(&mut EvictorArgs) {
    move |a: &mut EvictorArgs| {
        a.pod_protections.extra_enabled = vec![Protection::PodsWithPVC];
        if !classes.is_empty() {
            a.pod_protections.config = Some(ProtectionsConfig {
                pods_with_pvc: Some(PvcProtection {
                    protected_storage_classes: classes
                        .iter()
                        .map(|c| StorageClassName {
                            name: c.to_string(),
                        })
                        .collect(),
                }),
            });
        }
    }
}

#[test]
fn a_generic_ephemeral_volume_is_not_a_pvc_to_the_evictor() {
    let ephemeral = Claim {
        ephemeral: true,
        ..bound("default/p-scratch", "gp3")
    };
    let cases = vec![
        Case::new(
            "only a generic ephemeral volume: evicted under PodsWithPVC",
            vec![owned("p").claims(vec![ephemeral.clone()])],
            Ok(()),
        )
        .args(pvc_protection(&[])),
        Case::new(
            "a persistentVolumeClaim beside it: kept",
            vec![owned("p").claims(vec![ephemeral, bound("default/data", "gp3")])],
            Err(Kept::Pvc),
        )
        .args(pvc_protection(&[])),
    ];
    run(cases, |e, p| e.filter(p));
}

#[test]
fn protected_storage_classes_read_a_bound_claims_class() {
    let cases = vec![
        Case::new(
            "bound claim of a protected class: kept",
            vec![owned("p").claims(vec![bound("default/data", "gp3")])],
            Err(Kept::ProtectedStorageClass("gp3".into())),
        )
        .args(pvc_protection(&["gp3"])),
        Case::new(
            "bound claim of another class: evicted",
            vec![owned("p").claims(vec![bound("default/data", "gp3")])],
            Ok(()),
        )
        .args(pvc_protection(&["io2"])),
        Case::new(
            "a claim whose class is not known: kept",
            vec![owned("p").claims(vec![Claim {
                class: None,
                ..bound("default/data", "gp3")
            }])],
            Err(Kept::UnknownStorageClass("default/data".into())),
        )
        .args(pvc_protection(&["io2"])),
    ];
    run(cases, |e, p| e.filter(p));
}

#[test]
fn a_pod_with_no_priority_passes_the_priority_threshold() {
    let threshold = |a: &mut EvictorArgs| {
        a.priority_threshold = Some(PriorityThreshold {
            value: Some(0),
            name: String::new(),
        })
    };
    let cases = vec![
        Case::new(
            "priority 0 against a threshold of 0: kept",
            vec![owned("p").priority(0)],
            Err(Kept::Priority {
                priority: 0,
                threshold: 0,
            }),
        )
        .args(threshold),
        Case::new(
            "no priority: evicted",
            vec![owned("p").with(|p| p.meta.no_priority = true)],
            Ok(()),
        )
        .args(threshold),
    ];
    run(cases, |e, p| e.filter(p));
}

#[test]
fn the_eviction_order_puts_no_priority_first_then_best_effort_burstable_guaranteed() {
    let build = |name: &str, priority: Option<i32>, qos: Qos| {
        Arc::new(
            owned(name)
                .priority(priority.unwrap_or(0))
                .with(|p| {
                    p.meta.no_priority = priority.is_none();
                    p.meta.qos = Some(qos);
                })
                .build(),
        )
    };
    let mut pods = vec![
        build("guaranteed", Some(0), Qos::Guaranteed),
        build("burstable", Some(0), Qos::Burstable),
        build("low", Some(-5), Qos::Guaranteed),
        build("best-effort", Some(0), Qos::BestEffort),
        build("none", None, Qos::Guaranteed),
    ];
    sort_for_eviction(&mut pods);
    let names: Vec<&str> = pods.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["none", "low", "best-effort", "burstable", "guaranteed"]
    );
}
