//! `TestDefaultEvictorFilter`'s cases, and ferroscale's own protections.

use super::*;

fn no_owner(name: &str) -> PodBuilder {
    tp(name, 400, 0, "node1")
}

#[test]
fn default_evictor_filter() {
    // TestDefaultEvictorFilter
    let critical = |b: PodBuilder| b.priority(SYSTEM_CRITICAL_PRIORITY);
    let threshold = |a: &mut EvictorArgs| {
        a.priority_threshold = Some(PriorityThreshold {
            value: Some(800),
            name: String::new(),
        })
    };
    let pvc = |b: PodBuilder| b.claims(vec![of_class("default/foo", "standard")]);
    let protect = |a: &mut EvictorArgs, extra: Vec<Protection>, classes: &[&str]| {
        a.pod_protections.extra_enabled = extra;
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
    };
    let rs_owned = |name: &str, uid: &str| tp(name, 1, 1, "node1").owner("Pod", uid);
    let cases = vec![
        Case::new("Failed pod eviction with no ownerRefs", vec![no_owner("bare_pod_failed").phase(PodPhase::Failed)], Err(Kept::BarePod)),
        Case::new("Normal pod eviction with no ownerRefs and evictFailedBarePods enabled", vec![no_owner("bare_pod")], Err(Kept::BarePodNotFailed))
            .args(|a| a.evict_failed_bare_pods = true),
        Case::new("Failed pod eviction with no ownerRefs (evictFailedBarePods)", vec![no_owner("bare_pod_failed_but_can_be_evicted").phase(PodPhase::Failed)], Ok(()))
            .args(|a| a.evict_failed_bare_pods = true),
        Case::new("Normal pod eviction with normal ownerRefs", vec![owned("p1")], Ok(())),
        Case::new("Normal pod eviction with normal ownerRefs and descheduler.alpha.kubernetes.io/evict annotation", vec![evict_annotation(owned("p2"))], Ok(())),
        Case::new("Normal pod eviction with normal ownerRefs and descheduler.alpha.kubernetes.io/prefer-no-eviction annotation (preference)", vec![owned("p2").with(|p| p.meta.prefer_no_eviction = true)], Ok(())),
        Case::new("Normal pod eviction with normal ownerRefs and descheduler.alpha.kubernetes.io/prefer-no-eviction annotation (mandatory)", vec![owned("p2").with(|p| p.meta.prefer_no_eviction = true)], Err(Kept::PreferNoEviction))
            .args(|a| a.no_eviction_policy = Some(NoEvictionPolicy::Mandatory)),
        Case::new("Pod with ResourceClaims is not evicted because 'PodsWithResourceClaims' is in ExtraEnabled", vec![owned("p21").with(|p| p.meta.has_resource_claims = true)], Err(Kept::ResourceClaims))
            .args(|a| a.pod_protections.extra_enabled = vec![Protection::PodsWithResourceClaims]),
        Case::new("Pod with ResourceClaims is evicted without the protection (ferroscale)", vec![owned("p22").with(|p| p.meta.has_resource_claims = true)], Ok(())),
        Case::new("Normal pod eviction with replicaSet ownerRefs", vec![owned("p3")], Ok(())),
        Case::new("Normal pod eviction with replicaSet ownerRefs and evict annotation", vec![evict_annotation(tp("p4", 400, 0, "node1").owner("ReplicaSet", "replicaset-1"))], Ok(())),
        Case::new("Normal pod eviction with statefulSet ownerRefs", vec![owned("p18")], Ok(())),
        Case::new("Normal pod eviction with statefulSet ownerRefs and evict annotation", vec![evict_annotation(tp("p19", 400, 0, "node1").owner("StatefulSet", "statefulset-1"))], Ok(())),
        Case::new("Pod not evicted because it is bound to a PV and evictLocalStoragePods = false", vec![local_storage(owned("p5"))], Err(Kept::LocalStorage)),
        Case::new("Pod is evicted because it is bound to a PV and evictLocalStoragePods = true", vec![local_storage(owned("p6"))], Ok(()))
            .args(|a| a.evict_local_storage_pods = true),
        Case::new("Pod is evicted because it is bound to a PV and evictLocalStoragePods = false, but it has the evict annotation", vec![evict_annotation(local_storage(owned("p7")))], Ok(())),
        Case::new("Pod not evicted because it is part of a daemonSet", vec![tp("p8", 400, 0, "node1").owner("DaemonSet", "")], Err(Kept::DaemonSet)),
        Case::new("Pod is evicted because it is part of a daemonSet, but it has the evict annotation", vec![evict_annotation(tp("p9", 400, 0, "node1").owner("DaemonSet", ""))], Ok(())),
        Case::new("Pod not evicted because it is a mirror poddsa", vec![owned("p10").mirror()], Err(Kept::Mirror)),
        Case::new("Pod is evicted because it is a mirror pod, but it has the evict annotation", vec![evict_annotation(owned("p11").mirror())], Ok(())),
        Case::new("Pod not evicted because it has system critical priority", vec![critical(owned("p12"))], Err(Kept::SystemCritical { priority: SYSTEM_CRITICAL_PRIORITY })),
        Case::new("Pod is evicted because it has system critical priority, but it has the evict annotation", vec![evict_annotation(critical(owned("p13")))], Ok(())),
        Case::new("Pod not evicted because it has a priority higher than the configured priority threshold", vec![owned("p14").priority(900)], Err(Kept::Priority { priority: 900, threshold: 800 }))
            .args(threshold),
        Case::new("Pod is evicted because it has a priority higher than the configured priority threshold, but it has the evict annotation", vec![evict_annotation(owned("p15").priority(900))], Ok(()))
            .args(threshold),
        Case::new("Pod is evicted because it has system critical priority, but evictSystemCriticalPods = true", vec![critical(owned("p16"))], Ok(()))
            .args(|a| a.evict_system_critical_pods = true),
        Case::new("Pod is evicted because it has system critical priority, but evictSystemCriticalPods = true and it has the evict annotation", vec![evict_annotation(critical(owned("p16")))], Ok(()))
            .args(|a| a.evict_system_critical_pods = true),
        Case::new("Pod is evicted because it has a priority higher than the configured priority threshold, but evictSystemCriticalPods = true", vec![owned("p17").priority(900)], Ok(()))
            .args(|a| {
                a.evict_system_critical_pods = true;
                threshold(a);
            }),
        Case::new("Pod is evicted because it has a priority higher than the configured priority threshold, but evictSystemCriticalPods = true and it has the evict annotation", vec![evict_annotation(owned("p17").priority(900))], Ok(()))
            .args(|a| {
                a.evict_system_critical_pods = true;
                threshold(a);
            }),
        Case::new("Pod with no tolerations running on normal node, all other nodes tainted, no PreEvictionFilter, should ignore nodeFit", vec![owned("p1")], Ok(()))
            .args(|a| a.node_fit = true)
            .nodes(vec![gpu_taint(tn("node2", 1000, 2000, 13)), gpu_taint(tn("node3", 1000, 2000, 13))]),
        Case::new("minReplicas of 2, owner with 2 replicas, evicts", vec![rs_owned("p1", "uid"), rs_owned("p2", "uid")], Ok(()))
            .args(|a| a.min_replicas = 2),
        Case::new("minReplicas of 3, owner with 2 replicas, no eviction", vec![rs_owned("p1", "uid"), rs_owned("p2", "uid")], Err(Kept::MinReplicas { have: 2, want: 3 }))
            .args(|a| a.min_replicas = 3),
        Case::new("minReplicas of 2, multiple owners, no eviction (the check is skipped: evictable)", vec![
            tp("p1", 1, 1, "node1").owner("Pod", "uid").owner("Pod", ""),
            tp("p2", 1, 1, "node1").owner("Pod", ""),
        ], Ok(()))
            .args(|a| a.min_replicas = 2),
        Case::new("minPodAge of 50, pod created 10 minutes ago, no eviction", vec![owned("p1").created(NOW - 10 * MIN)], Err(Kept::MinPodAge { age: Some(10 * MIN), min: 50 * MIN }))
            .args(|a| a.min_pod_age = Some("50m".into())),
        Case::new("minPodAge of 50, pod created 60 minutes ago, evicts", vec![owned("p1").created(NOW - 60 * MIN)], Ok(()))
            .args(|a| a.min_pod_age = Some("50m".into())),
        Case::new("nil minPodAge, pod created 60 minutes ago, evicts", vec![owned("p1").created(NOW - 60 * MIN)], Ok(())),
        Case::new("ignorePodsWithoutPDB, pod with no PDBs, no eviction", vec![tp("p1", 1, 1, "node1").owner("Pod", "").label("app", "foo")], Err(Kept::WithoutPdb))
            .args(|a| a.ignore_pods_without_pdb = true),
        Case::new("ignorePodsWithoutPDB, pod with PDBs, evicts", vec![tp("p1", 1, 1, "node1").owner("Pod", "").label("app", "foo")], Ok(()))
            .args(|a| a.ignore_pods_without_pdb = true)
            .fixture(|f| f.pdbs.push(pdb("default", "pdb1", "foo", 1))),
        Case::new("ignorePvcPods is set, pod with PVC, not evicts", vec![pvc(owned("p15"))], Err(Kept::Pvc))
            .args(|a| a.ignore_pvc_pods = true),
        Case::new("ignorePvcPods is not set, pod with PVC, evicts", vec![pvc(owned("p15"))], Ok(())),
        Case::new("Pod with local storage is evicted because 'PodsWithLocalStorage' is in DefaultDisabled", vec![local_storage(owned("p18"))], Ok(()))
            .args(|a| a.pod_protections.default_disabled = vec![Protection::PodsWithLocalStorage]),
        Case::new("DaemonSet pod is evicted because 'DaemonSetPods' is in DefaultDisabled", vec![tp("p19", 400, 0, "node1").owner("DaemonSet", "daemonset-test")], Ok(()))
            .args(|a| a.pod_protections.default_disabled = vec![Protection::DaemonSetPods]),
        Case::new("Pod with PVC is not evicted because 'PodsWithPVC' is in ExtraEnabled", vec![pvc(owned("p20"))], Err(Kept::Pvc))
            .args(|a| protect(a, vec![Protection::PodsWithPVC], &[])),
        Case::new("Pod without PDB is not evicted because 'PodsWithoutPDB' is in ExtraEnabled", vec![owned("p21")], Err(Kept::WithoutPdb))
            .args(|a| protect(a, vec![Protection::PodsWithoutPDB], &[])),
        Case::new("Pod using StorageClass is not evicted because 'PodsWithPVC' is in ExtraEnabled", vec![pvc(owned("p23"))], Err(Kept::ProtectedStorageClass("standard".into())))
            .args(|a| protect(a, vec![Protection::PodsWithPVC], &["standard"])),
        Case::new("Pod using unprotected StorageClass is evicted even though 'PodsWithPVC' is in ExtraEnabled", vec![owned("p24").claims(vec![of_class("default/foo", "unprotected")])], Ok(()))
            .args(|a| protect(a, vec![Protection::PodsWithPVC], &["protected"])),
        Case::new("Pod using unexisting PVC is not evicted because we cannot determine if storage class is protected or not", vec![owned("p25").claims(vec![claim("default/foo", ClaimState::Waiting(Wait::Missing))])], Err(Kept::UnknownStorageClass("default/foo".into())))
            .args(|a| protect(a, vec![Protection::PodsWithPVC], &["protected"])),
        Case::new("Pod using protected and unprotected StorageClasses is not evicted", vec![owned("p26").claims(vec![of_class("default/protected", "protected"), of_class("default/unprotected", "unprotected")])], Err(Kept::ProtectedStorageClass("protected".into())))
            .args(|a| protect(a, vec![Protection::PodsWithPVC], &["protected"])),
    ];
    run(cases, |e, p| e.filter(p));
}

#[test]
fn ferroscale_protections_and_priority_class_names() {
    let cases = vec![
        Case::new(
            "do-not-disrupt wins over the evict annotation",
            vec![evict_annotation(owned("p").do_not_disrupt())],
            Err(Kept::DoNotDisrupt),
        ),
        Case::new(
            "safe-to-evict false",
            vec![owned("p").with(|p| p.meta.safe_to_evict = Some(SafeToEvict::No))],
            Err(Kept::NotSafeToEvict),
        ),
        Case::new(
            "safe-to-evict true is no protection",
            vec![owned("p").with(|p| p.meta.safe_to_evict = Some(SafeToEvict::Yes))],
            Ok(()),
        ),
        Case::new(
            "terminating",
            vec![owned("p").with(|p| p.meta.deleted = Some(NOW))],
            Err(Kept::Terminating),
        ),
        Case::new(
            "priorityThreshold by PriorityClass name",
            vec![owned("p").priority(1000)],
            Err(Kept::Priority {
                priority: 1000,
                threshold: 1000,
            }),
        )
        .args(|a| {
            a.priority_threshold = Some(PriorityThreshold {
                value: None,
                name: "high".into(),
            })
        })
        .fixture(|f| {
            f.priority_classes.insert("high".into(), 1000);
        }),
        Case::new(
            "priorityThreshold by PriorityClass name, below it",
            vec![owned("p").priority(999)],
            Ok(()),
        )
        .args(|a| {
            a.priority_threshold = Some(PriorityThreshold {
                value: None,
                name: "high".into(),
            })
        })
        .fixture(|f| {
            f.priority_classes.insert("high".into(), 1000);
        }),
        Case::new(
            "priorityThreshold naming no PriorityClass keeps every pod",
            vec![owned("p")],
            Err(Kept::UnknownPriorityClass("nope".into())),
        )
        .args(|a| {
            a.priority_threshold = Some(PriorityThreshold {
                value: None,
                name: "nope".into(),
            })
        }),
        Case::new(
            "labelSelector not matching",
            vec![owned("p").label("app", "web")],
            Err(Kept::LabelSelector),
        )
        .args(|a| {
            a.label_selector = Some(Selector {
                match_labels: labels(&[("app", "db")]),
                ..Default::default()
            })
        }),
        Case::new(
            "labelSelector matching",
            vec![owned("p").label("app", "db")],
            Ok(()),
        )
        .args(|a| {
            a.label_selector = Some(Selector {
                match_labels: labels(&[("app", "db")]),
                ..Default::default()
            })
        }),
        Case::new(
            "minPodAge with no creation time",
            vec![owned("p")],
            Err(Kept::MinPodAge {
                age: None,
                min: 300,
            }),
        )
        .args(|a| a.min_pod_age = Some("5m".into())),
    ];
    run(cases, |e, p| e.filter(p));
}

/// `noEvictionPolicy: Preferred` (pods.go `SortPodsBasedOnPriorityLowToHigh`): among pods of one
/// priority and class, those annotated prefer-no-eviction go last; priority still comes first.
#[test]
fn prefer_no_eviction_pods_go_last_in_their_class() {
    use crate::deschedule::strategies::usage::sort_for_eviction;
    use std::sync::Arc;
    let build = |name: &str, priority: i32, prefer: bool| {
        Arc::new(
            owned(name)
                .priority(priority)
                .with(|p| p.meta.prefer_no_eviction = prefer)
                .build(),
        )
    };
    let mut pods = vec![
        build("kept-low", 0, true),
        build("plain-low", 0, false),
        build("plain-high", 10, false),
    ];
    sort_for_eviction(&mut pods);
    let names: Vec<&str> = pods.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["plain-low", "kept-low", "plain-high"]);
}
