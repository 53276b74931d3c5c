//! `TestGetEffectivePodProtections_TableDriven`'s cases, and the arguments as a policy writes them.

use super::*;

#[test]
fn effective_pod_protections() {
    // TestGetEffectivePodProtections_TableDriven
    use Protection::*;
    let with = |extra: Vec<Protection>, disabled: Vec<Protection>| EvictorArgs {
        pod_protections: PodProtections {
            extra_enabled: extra,
            default_disabled: disabled,
            config: None,
        },
        ..Default::default()
    };
    let p = |ls, ds, sc, fb, pvc, pdb| Protections {
        local_storage: ls,
        daemon_set: ds,
        system_critical: sc,
        failed_bare: fb,
        pvc,
        without_pdb: pdb,
    };
    let cases = [
        (
            "NewConfig_EmptyConfig_ReturnsDefault",
            with(vec![], vec![]),
            p(true, true, true, true, false, false),
        ),
        (
            "NewConfig_DisableOneDefault_ReturnsDefaultMinusOne",
            with(vec![], vec![SystemCriticalPods]),
            p(true, true, false, true, false, false),
        ),
        (
            "NewConfig_DisableMultipleDefaults_ReturnsDefaultMinusMultiple",
            with(vec![], vec![DaemonSetPods, PodsWithLocalStorage]),
            p(false, false, true, true, false, false),
        ),
        (
            "NewConfig_EnableOneExtra_ReturnsDefaultPlusOne",
            with(vec![PodsWithPVC], vec![]),
            p(true, true, true, true, true, false),
        ),
        (
            "NewConfig_EnableMultipleExtra_ReturnsDefaultPlusMultiple",
            with(vec![PodsWithPVC, PodsWithoutPDB], vec![]),
            p(true, true, true, true, true, true),
        ),
        (
            "NewConfig_DisableAndEnable_ReturnsModifiedSet",
            with(vec![PodsWithPVC], vec![FailedBarePods, DaemonSetPods]),
            p(true, false, true, false, true, false),
        ),
        (
            "legacy: every deprecated flag flipped",
            EvictorArgs {
                evict_local_storage_pods: true,
                evict_daemon_set_pods: true,
                evict_system_critical_pods: true,
                evict_failed_bare_pods: true,
                ignore_pvc_pods: true,
                ignore_pods_without_pdb: true,
                ..Default::default()
            },
            p(false, false, false, false, true, true),
        ),
    ];
    for (name, args, want) in cases {
        assert_eq!(args.protections(), want, "{name}");
    }
}

#[test]
fn arguments_read_and_checked_as_the_descheduler_does() {
    let args: EvictorArgs = serde_norway::from_str(
        "nodeFit: true\nminPodAge: 10m\nignorePodsWithoutPDB: true\npriorityThreshold: {value: 100}\n\
         podProtections: {}\nnodeSelector: \"pool in (a,b)\"\n",
    )
    .unwrap();
    assert!(args.node_fit && args.ignore_pods_without_pdb);
    assert_eq!(args.min_pod_age_secs(), Ok(Some(600)));
    assert_eq!(args.validate(), Ok(()));

    let err = serde_norway::from_str::<EvictorArgs>("evictPods: true").unwrap_err();
    assert!(err.to_string().contains("evictPods"), "{err}");

    let bad = |yaml: &str, field: &str| {
        let args: EvictorArgs = serde_norway::from_str(yaml).unwrap();
        let err = args.validate().unwrap_err();
        assert!(err.contains(field), "{yaml}: {err}");
    };
    bad(
        "priorityThreshold: {value: 1, name: x}",
        "priorityThreshold",
    );
    bad(
        "priorityThreshold: {value: 2000000001}",
        "priorityThreshold.value",
    );
    bad("minPodAge: soon", "minPodAge");
    bad("nodeSelector: \"a is b\"", "nodeSelector");
    bad("noEvictionPolicy: Mandatory", "noEvictionPolicy");
    bad(
        "labelSelector: {matchExpressions: [{key: a, operator: Like}]}",
        "labelSelector",
    );
    bad(
        "evictLocalStoragePods: true\npodProtections: {defaultDisabled: [DaemonSetPods]}",
        "podProtections",
    );
    bad(
        "podProtections: {defaultDisabled: [PodsWithPVC]}",
        "podProtections.defaultDisabled",
    );
    bad(
        "podProtections: {extraEnabled: [PodsWithPVC, PodsWithPVC]}",
        "twice",
    );
    bad(
        "podProtections: {extraEnabled: [PodsWithResourceClaims]}",
        "PodsWithResourceClaims",
    );
    bad(
        "podProtections: {extraEnabled: [PodsWithPVC], config: {PodsWithPVC: {protectedStorageClasses: [{name: \"\"}]}}}",
        "protectedStorageClasses[0].name",
    );
    assert!(serde_norway::from_str::<EvictorArgs>("noEvictionPolicy: Sometimes").is_err());
}

#[test]
fn every_reason_reads_as_a_sentence() {
    let all = [
        Kept::BarePodNotFailed,
        Kept::Priority {
            priority: 9,
            threshold: 8,
        },
        Kept::MinReplicas { have: 1, want: 3 },
        Kept::MinPodAge {
            age: Some(5),
            min: 60,
        },
        Kept::NoOtherNode,
    ];
    let text: Vec<String> = all.iter().map(|k| k.to_string()).collect();
    assert_eq!(
        text,
        [
            "has no owner to recreate it and has not failed",
            "priority 9 is not below the evictor's threshold 8",
            "its owner has 1 pods, fewer than minReplicas 3",
            "5s old, younger than minPodAge 60s",
            "no other node would take it (nodeFit)",
        ]
    );
}
