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
        resource_claims: false,
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
        let err = args.validate().unwrap_err().to_string();
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

#[test]
fn validate_default_evictor_args() {
    // TestValidateDefaultEvictorArgs: each case as YAML, Ok or the words its error must hold. Unknown
    // protection names are refused when read, naming the name.
    let cases: [(&str, &str, Option<&str>); 18] = [
        ("Invalid DefaultDisabled duplicate and Invalid ExtraEnabled duplicate and passing invalid no eviction policy", "noEvictionPolicy: invalid-no-eviction-policy\npodProtections: {extraEnabled: [PodsWithPVC, PodsWithPVC], defaultDisabled: [PodsWithLocalStorage, PodsWithLocalStorage, PodsWithoutPDB]}", Some("invalid-no-eviction-policy")),
        ("passing invalid priority", "priorityThreshold: {value: 1, name: priority-name}", Some("priorityThreshold.name: only one of")),
        ("passing invalid no eviction policy", "noEvictionPolicy: invalid-no-eviction-policy", Some("invalid-no-eviction-policy")),
        ("Valid configuration with no deprecated fields", "podProtections: {defaultDisabled: [], extraEnabled: []}", None),
        ("Valid configuration: both Disabled and ExtraEnabled", "podProtections: {defaultDisabled: [PodsWithLocalStorage, DaemonSetPods], extraEnabled: [PodsWithPVC]}", None),
        ("Valid configuration with ExtraEnabled", "podProtections: {extraEnabled: [PodsWithPVC]}", None),
        ("Invalid configuration: Deprecated field used with Disabled", "evictLocalStoragePods: true\npodProtections: {defaultDisabled: [DaemonSetPods]}", Some("podProtections: cannot use the deprecated fields")),
        ("Invalid configuration: Deprecated field used with ExtraPodProtections", "evictDaemonSetPods: true\npodProtections: {extraEnabled: [PodsWithPVC]}", Some("podProtections: cannot use the deprecated fields")),
        ("MinReplicas warning logged but no error", "minReplicas: 1", None),
        ("Invalid ExtraEnabled: Unknown policy", "podProtections: {extraEnabled: [InvalidPolicy]}", Some("InvalidPolicy")),
        ("Invalid ExtraEnabled: Misspelled policy", "podProtections: {extraEnabled: [PodsWithPVCC]}", Some("PodsWithPVCC")),
        ("Invalid ExtraEnabled: Policy from DefaultDisabled list", "podProtections: {extraEnabled: [DaemonSetPods]}", Some("podProtections.extraEnabled[0]: invalid pod protection \"DaemonSetPods\"")),
        ("Invalid DefaultDisabled: Unknown policy", "podProtections: {defaultDisabled: [InvalidPolicy]}", Some("InvalidPolicy")),
        ("Invalid DefaultDisabled: Misspelled policy", "podProtections: {defaultDisabled: [PodsWithLocalStorag]}", Some("PodsWithLocalStorag")),
        ("Invalid DefaultDisabled: Policy from ExtraEnabled list", "podProtections: {defaultDisabled: [PodsWithPVC]}", Some("podProtections.defaultDisabled[0]: invalid pod protection \"PodsWithPVC\"")),
        ("Invalid ExtraEnabled duplicate", "podProtections: {extraEnabled: [PodsWithPVC, PodsWithPVC]}", Some("podProtections.extraEnabled[1]: \"PodsWithPVC\" listed twice")),
        ("Invalid DefaultDisabled duplicate", "podProtections: {defaultDisabled: [PodsWithLocalStorage, PodsWithLocalStorage]}", Some("podProtections.defaultDisabled[1]: \"PodsWithLocalStorage\" listed twice")),
        ("Protected storage classes without storage class name", "podProtections: {extraEnabled: [PodsWithPVC], config: {PodsWithPVC: {protectedStorageClasses: [{name: \"\"}, {name: a}, {name: \"\"}, {name: b}]}}}", Some("protectedStorageClasses[0].name: name cannot be empty; podProtections.config.PodsWithPVC.protectedStorageClasses[2].name")),
    ];
    for (name, yaml, want) in cases {
        let got = serde_norway::from_str::<EvictorArgs>(yaml)
            .map_err(|e| e.to_string())
            .and_then(|a| a.validate().map_err(|e| e.to_string()));
        match want {
            None => assert_eq!(got, Ok(()), "{name}"),
            Some(words) => {
                let e = got.expect_err(name);
                assert!(e.contains(words), "{name}: {e}");
            }
        }
    }
}

#[test]
fn protected_pvc_storage_classes() {
    // Test_protectedPVCStorageClasses
    let none = EvictorArgs::default();
    assert!(
        none.protected_storage_classes().is_empty(),
        "no PodProtections config"
    );
    let mut no_pvc = EvictorArgs::default();
    no_pvc.pod_protections.config = Some(ProtectionsConfig {
        pods_with_pvc: None,
    });
    assert!(
        no_pvc.protected_storage_classes().is_empty(),
        "no PodsWithPVC config"
    );
    let named: EvictorArgs = serde_norway::from_str(
        "podProtections: {config: {PodsWithPVC: {protectedStorageClasses: [{name: sc1}, {name: sc2}]}}}",
    )
    .unwrap();
    assert_eq!(
        named.protected_storage_classes(),
        ["sc1", "sc2"],
        "storage classes specified"
    );
}

#[test]
fn multiple_profiles_with_different_namespace_label_selectors() {
    // TestMultipleProfilesWithDifferentNamespaceLabelSelectors: two evictors over one cluster, each
    // with its own namespaceLabelSelector.
    let in_ns = |name: &str, ns: &str, extra: (&str, &str)| {
        let (ns, extra) = (ns.to_string(), (extra.0.to_string(), extra.1.to_string()));
        tp(name, 100, 100, "node1").owner("Pod", "").with(move |p| {
            p.namespace = ns.as_str().into();
            p.namespace_labels = labels(&[
                ("kubernetes.io/metadata.name", ns.as_str()),
                (extra.0.as_str(), extra.1.as_str()),
            ])
            .into();
        })
    };
    let pods: Vec<Pod> = vec![
        in_ns("pod-in-prod", "ns-prod", ("env", "prod")).build(),
        in_ns("pod-in-test", "ns-test", ("env", "test")).build(),
        in_ns("pod-in-backend", "ns-backend", ("team", "backend")).build(),
    ];
    let f = Fixture::new(vec![tn("node1", 1000, 2000, 10).build()], pods.clone());
    let cluster = f.cluster();
    let view = View::new(&cluster);
    let profile = |key: &str, value: &str| EvictorArgs {
        namespace_label_selector: Some(Selector {
            match_labels: labels(&[(key, value)]),
            ..Default::default()
        }),
        ..Default::default()
    };
    for (name, args, admitted) in [
        ("profile1", profile("env", "prod"), "pod-in-prod"),
        ("profile2", profile("team", "backend"), "pod-in-backend"),
    ] {
        let e = Evictor::new(&args, &view);
        for p in &pods {
            let want = if p.name == admitted {
                Ok(())
            } else {
                Err(Kept::Namespace)
            };
            assert_eq!(e.pre_evict(p), want, "{name}: {}", p.name);
        }
    }
}
