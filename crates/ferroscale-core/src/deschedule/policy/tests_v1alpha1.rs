//! `descheduler/v1alpha1` policies converted as the descheduler's conversion did: the examples of
//! its v1alpha1 guide (docs/deprecated/v1alpha1.md, removed in 1e0b1a984) and the cases of its
//! conversion tests (pkg/descheduler/policyconfig_test.go before 1e0b1a984).

use super::tests::{at, draft, names, refused};
use crate::deschedule::args::Strategy;

fn v1(strategies: &str) -> String {
    format!("apiVersion: \"descheduler/v1alpha1\"\nkind: \"DeschedulerPolicy\"\nstrategies:\n{strategies}")
}

/// The guide's policy example, its `...` filled with two of the guide's strategy examples.
#[test]
fn guide_policy_converts_one_profile_per_enabled_strategy() {
    let text = r#"apiVersion: "descheduler/v1alpha1"
kind: "DeschedulerPolicy"
nodeSelector: prod=dev
evictFailedBarePods: false
evictLocalStoragePods: true
evictDaemonSetPods: true
evictSystemCriticalPods: true
maxNoOfPodsToEvictPerNode: 40
ignorePvcPods: false
strategies:
  "LowNodeUtilization":
     enabled: true
     params:
       nodeResourceUtilizationThresholds:
         thresholds:
           "cpu" : 20
           "memory": 20
           "pods": 20
         targetThresholds:
           "cpu" : 50
           "memory": 50
           "pods": 50
  "RemovePodsHavingTooManyRestarts":
     enabled: true
     params:
       podsHavingTooManyRestarts:
         podRestartThreshold: 100
         includingInitContainers: true
"#;
    let (d, warnings) = draft(text);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(d.limits.node_selector.as_deref(), Some("prod=dev"));
    assert_eq!(d.limits.max_per_node, Some(40));
    assert_eq!(
        names(&d),
        vec![
            (
                "strategy-LowNodeUtilization-profile".to_string(),
                vec![Strategy::LowNodeUtilization]
            ),
            (
                "strategy-RemovePodsHavingTooManyRestarts-profile".to_string(),
                vec![Strategy::RemovePodsHavingTooManyRestarts]
            ),
        ]
    );
    for p in &d.profiles {
        let ev = &p.evictor.args;
        for key in [
            "evictLocalStoragePods",
            "evictDaemonSetPods",
            "evictSystemCriticalPods",
        ] {
            assert_eq!(at(ev, key).as_bool(), Some(true), "{key}");
        }
        assert!(at(ev, "evictFailedBarePods").is_null());
        assert_eq!(
            at(ev, "priorityThreshold.value").as_i64(),
            Some(2_000_000_000)
        );
    }
    let lnu = &d.profiles[0].strategies[0].1.args;
    assert_eq!(at(lnu, "targetThresholds.pods").as_f64(), Some(50.0));
    let restarts = &d.profiles[1].strategies[0].1.args;
    assert_eq!(at(restarts, "podRestartThreshold").as_u64(), Some(100));
    assert_eq!(
        at(restarts, "includingInitContainers").as_bool(),
        Some(true)
    );
}

/// Each strategy example of the guide converts to its plugin's args.
#[test]
fn guide_strategy_examples_convert() {
    let cases: [(&str, Strategy, &str, &str); 8] = [
        ("\"RemoveDuplicates\":\n   enabled: true\n   params:\n     removeDuplicates:\n       excludeOwnerKinds:\n       - \"ReplicaSet\"\n", Strategy::RemoveDuplicates, "excludeOwnerKinds", "[ReplicaSet]"),
        ("\"HighNodeUtilization\":\n   enabled: true\n   params:\n     nodeResourceUtilizationThresholds:\n       thresholds:\n         \"cpu\" : 20\n         \"memory\": 20\n         \"pods\": 20\n", Strategy::HighNodeUtilization, "thresholds.cpu", "20"),
        ("\"RemovePodsViolatingInterPodAntiAffinity\":\n   enabled: true\n", Strategy::RemovePodsViolatingInterPodAntiAffinity, "namespaces", "null"),
        ("\"RemovePodsViolatingNodeAffinity\":\n  enabled: true\n  params:\n    nodeAffinityType:\n    - \"requiredDuringSchedulingIgnoredDuringExecution\"\n", Strategy::RemovePodsViolatingNodeAffinity, "nodeAffinityType", "[requiredDuringSchedulingIgnoredDuringExecution]"),
        ("\"RemovePodsViolatingNodeTaints\":\n  enabled: true\n  params:\n    excludedTaints:\n    - dedicated=special-user # exclude\n    - reserved # exclude all\n", Strategy::RemovePodsViolatingNodeTaints, "excludedTaints", "[dedicated=special-user, reserved]"),
        ("\"RemovePodsViolatingTopologySpreadConstraint\":\n   enabled: true\n   params:\n     includeSoftConstraints: false\n", Strategy::RemovePodsViolatingTopologySpreadConstraint, "constraints", "[DoNotSchedule]"),
        ("\"RemovePodsViolatingTopologySpreadConstraint\":\n   enabled: true\n   params:\n     includeSoftConstraints: true\n", Strategy::RemovePodsViolatingTopologySpreadConstraint, "constraints", "[DoNotSchedule, ScheduleAnyway]"),
        ("\"PodLifeTime\":\n   enabled: true\n   params:\n     podLifeTime:\n       maxPodLifeTimeSeconds: 86400\n       podStatusPhases: [Pending]\n       states: [CrashLoopBackOff]\n", Strategy::PodLifeTime, "states", "[Pending, CrashLoopBackOff]"),
    ];
    for (strategies, s, key, want) in cases {
        let indented: String = strategies.lines().map(|l| format!("  {l}\n")).collect();
        let (d, _) = draft(&v1(&indented));
        assert_eq!(names(&d), vec![(format!("strategy-{s}-profile"), vec![s])]);
        let got = at(&d.profiles[0].strategies[0].1.args, key);
        let got = serde_norway::to_string(got)
            .unwrap_or_default()
            .replace('\n', " ");
        let want_yaml: serde_norway::Value = serde_norway::from_str(want).unwrap_or_default();
        assert_eq!(
            got,
            serde_norway::to_string(&want_yaml)
                .unwrap_or_default()
                .replace('\n', " "),
            "{s} {key}"
        );
    }
}

/// policyconfig_test.go TestV1alpha1ToV1alpha2, "RemoveFailedPods enabled, LowNodeUtilization
/// disabled strategies to profile" and "convert global policy fields to defaultevictor".
#[test]
fn upstream_disabled_strategies_make_no_profile_and_globals_go_to_the_evictor() {
    let text = format!(
        "evictFailedBarePods: true\nevictLocalStoragePods: true\nevictSystemCriticalPods: true\nevictDaemonSetPods: true\nignorePvcPods: true\n{}",
        v1("  RemoveDuplicates:\n    enabled: true\n    params:\n      namespaces:\n        exclude: [test2]\n  LowNodeUtilization:\n    enabled: false\n    params:\n      nodeResourceUtilizationThresholds:\n        thresholds: {cpu: 20, memory: 20, pods: 20}\n        targetThresholds: {cpu: 50, memory: 50, pods: 50}\n")
    );
    let (d, _) = draft(&text);
    assert_eq!(
        names(&d),
        vec![(
            "strategy-RemoveDuplicates-profile".to_string(),
            vec![Strategy::RemoveDuplicates]
        )]
    );
    assert_eq!(
        at(&d.profiles[0].strategies[0].1.args, "namespaces.exclude")[0].as_str(),
        Some("test2")
    );
    let ev = &d.profiles[0].evictor.args;
    for key in [
        "evictFailedBarePods",
        "evictLocalStoragePods",
        "evictSystemCriticalPods",
        "evictDaemonSetPods",
        "ignorePvcPods",
    ] {
        assert_eq!(at(ev, key).as_bool(), Some(true), "{key}");
    }
}

/// policyconfig_test.go TestV1alpha1ToV1alpha2 "invalid strategy name" and "invalid threshold
/// priority"; TestDecodeVersionedPolicy "v1alpha1 to internal with priorityThreshold value and
/// name should return error".
#[test]
fn upstream_v1alpha1_refusals() {
    let e = refused(&v1("  InvalidName:\n    enabled: true\n    params: {}\n"));
    assert_eq!(e.path(), Some("strategies.InvalidName"));
    assert!(e.why().contains("unknown strategy name"));
    let e = refused(&v1("  LowNodeUtilization:\n    enabled: true\n    params:\n      thresholdPriority: 100\n      thresholdPriorityClassName: name\n      nodeResourceUtilizationThresholds:\n        thresholds: {cpu: 20, memory: 20, pods: 20}\n        targetThresholds: {cpu: 50, memory: 50, pods: 50}\n"));
    assert_eq!(
        e.path(),
        Some("strategies.LowNodeUtilization.params.thresholdPriorityClassName")
    );
    assert!(e
        .why()
        .contains("priority threshold misconfigured for plugin LowNodeUtilization"));
    let e = refused(&v1("  \"PodLifeTime\":\n    enabled: true\n    params:\n      podLifeTime:\n        maxPodLifeTimeSeconds: 5\n      thresholdPriority: 222\n      thresholdPriorityClassName: prioritym\n"));
    assert!(e
        .why()
        .contains("priority threshold misconfigured for plugin PodLifeTime"));
}

/// policyconfig_test.go TestDecodeVersionedPolicy "v1alpha1 to internal" and "... with
/// priorityThreshold" (a null value and a class name: the class, resolved when the cluster is read).
#[test]
fn upstream_v1alpha1_to_internal() {
    let base = "  \"PodLifeTime\":\n    enabled: true\n    params:\n      podLifeTime:\n        maxPodLifeTimeSeconds: 5\n      namespaces:\n        include:\n          - \"testleaderelection-a\"\n";
    let (d, _) = draft(&v1(base));
    let p = &d.profiles[0];
    assert_eq!(p.name, "strategy-PodLifeTime-profile");
    assert_eq!(
        at(&p.strategies[0].1.args, "maxPodLifeTimeSeconds").as_u64(),
        Some(5)
    );
    assert_eq!(
        at(&p.strategies[0].1.args, "namespaces.include")[0].as_str(),
        Some("testleaderelection-a")
    );
    assert_eq!(
        at(&p.evictor.args, "priorityThreshold.value").as_i64(),
        Some(2_000_000_000)
    );
    let (d, _) = draft(&v1(&format!(
        "{base}      thresholdPriority: null\n      thresholdPriorityClassName: prioritym\n"
    )));
    assert_eq!(
        at(&d.profiles[0].evictor.args, "priorityThreshold.name").as_str(),
        Some("prioritym")
    );
}

#[test]
fn v1alpha1_strategy_params_are_checked_as_v1alpha2_args() {
    let e = refused(&v1(
        "  RemovePodsHavingTooManyRestarts:\n    enabled: true\n",
    ));
    assert!(e.why().contains("at least 1"), "{e}");
    assert!(
        e.path().is_some_and(|p| p
            .starts_with("strategies.RemovePodsHavingTooManyRestarts.params")
            && p.ends_with(".podRestartThreshold")),
        "{e}"
    );
    let e = refused(&v1("  HighNodeUtilization:\n    enabled: true\n    params:\n      namespaces: {include: [a]}\n      nodeResourceUtilizationThresholds: {thresholds: {cpu: 20}}\n"));
    assert!(e.why().contains("only exclude"), "{e}");
    let e = refused(&v1(
        "  PodLifeTime:\n    enabled: true\n    params:\n      podLifeTime: {maxPodLifeTime: 5}\n",
    ));
    assert_eq!(
        e.path(),
        Some("strategies.PodLifeTime.params.podLifeTime.maxPodLifeTime")
    );
    // nodeFit goes to the evictor, except for PodLifeTime (as the conversion did); weights and
    // params a strategy does not read are accepted with a warning.
    let (d, w) = draft(&v1("  PodLifeTime:\n    enabled: true\n    weight: 3\n    params:\n      nodeFit: true\n      podLifeTime: {maxPodLifeTimeSeconds: 5}\n  RemoveFailedPods:\n    enabled: true\n    params:\n      nodeFit: true\n      includedTaints: [a]\n"));
    assert!(at(&d.profiles[0].evictor.args, "nodeFit").is_null());
    assert_eq!(
        at(&d.profiles[1].evictor.args, "nodeFit").as_bool(),
        Some(true)
    );
    assert_eq!(
        at(&d.profiles[1].strategies[0].1.args, "minPodLifetimeSeconds").as_u64(),
        Some(3600)
    );
    let fields: Vec<&str> = w.iter().map(|w| w.field.as_str()).collect();
    assert_eq!(
        fields,
        vec![
            "strategies.PodLifeTime.weight",
            "strategies.PodLifeTime.params.nodeFit",
            "strategies.RemoveFailedPods.params.includedTaints"
        ]
    );
}
