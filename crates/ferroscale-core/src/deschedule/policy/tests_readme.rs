//! The policies of the descheduler's README (kubernetes-sigs/descheduler README.md at 7d2b28bf),
//! transcribed as written, read into the profiles and arguments the descheduler would run.

use super::tests::{at, draft, names};
use crate::deschedule::args::Strategy;

/// One profile `ProfileName` with a single strategy: its args (checked, defaulted).
fn single(text: &str, s: Strategy) -> serde_norway::Value {
    let (d, warnings) = draft(text);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(names(&d), vec![("ProfileName".to_string(), vec![s])]);
    d.profiles[0].strategies[0].1.args.clone()
}

/// README "Example policy", its `...` placeholders filled with one plugin per extension point.
#[test]
fn readme_example_policy() {
    let text = r#"apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
nodeSelector: "node=node1" # you don't need to set this, if not set all will be processed
maxNoOfPodsToEvictPerNode: 5000 # you don't need to set this, unlimited if not set
maxNoOfPodsToEvictPerNamespace: 5000 # you don't need to set this, unlimited if not set
maxNoOfPodsToEvictTotal: 5000 # you don't need to set this, unlimited if not set
gracePeriodSeconds: 60 # you don't need to set this, 0 if not set
# you don't need to set this, metrics are not collected if not set
metricsProviders:
- source: Prometheus
  prometheus:
    url: http://prometheus-kube-prometheus-prometheus.prom.svc.cluster.local
    authToken:
      secretReference:
        namespace: "kube-system"
        name: "authtoken"
profiles:
  - name: ProfileName
    pluginConfig:
    - name: "DefaultEvictor"
      args:
        podProtections:
          defaultDisabled:
            #- "PodsWithLocalStorage"
            #- "SystemCriticalPods"
            #- "DaemonSetPods"
            #- "FailedBarePods"
          extraEnabled:
            #- "PodsWithPVC"
            #- "PodsWithoutPDB"
            #- "PodsWithResourceClaims"
          config: {}
        nodeFit: true
        minReplicas: 2
    plugins:
      # DefaultEvictor is enabled for both `filter` and `preEvictionFilter`
      # filter:
      #   enabled:
      #     - "DefaultEvictor"
      # preEvictionFilter:
      #   enabled:
      #     - "DefaultEvictor"
      deschedule:
        enabled:
          - "RemovePodsViolatingInterPodAntiAffinity"
      balance:
        enabled:
          - "RemoveDuplicates"
"#;
    let (d, warnings) = draft(text);
    assert_eq!(d.limits.node_selector.as_deref(), Some("node=node1"));
    assert_eq!(d.limits.max_per_node, Some(5000));
    assert_eq!(d.limits.max_per_namespace, Some(5000));
    assert_eq!(d.limits.max_total, Some(5000));
    assert_eq!(d.limits.grace_period_seconds, Some(60));
    assert_eq!(
        names(&d),
        vec![(
            "ProfileName".to_string(),
            vec![
                Strategy::RemovePodsViolatingInterPodAntiAffinity,
                Strategy::RemoveDuplicates
            ]
        )]
    );
    let ev = &d.profiles[0].evictor.args;
    assert_eq!(at(ev, "nodeFit").as_bool(), Some(true));
    assert_eq!(at(ev, "minReplicas").as_u64(), Some(2));
    assert_eq!(
        at(ev, "priorityThreshold.value").as_i64(),
        Some(2_000_000_000)
    );
    // The Prometheus provider is checked, then set aside: Prometheus is not read.
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].field, "metricsProviders[0]");
}

#[test]
fn readme_protecting_pods_using_storage_classes() {
    let text = r#"apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
profiles:
- name: ProfileName
  pluginConfig:
  - name: "DefaultEvictor"
    args:
      podProtections:
        extraEnabled:
        - PodsWithPVC
        config:
          PodsWithPVC:
            protectedStorageClasses:
            - name: storage-class-0
            - name: storage-class-1

"#;
    let (d, warnings) = draft(text);
    assert!(warnings.is_empty());
    assert_eq!(names(&d), vec![("ProfileName".to_string(), vec![])]);
    let ev = &d.profiles[0].evictor.args;
    let classes = at(
        ev,
        "podProtections.config.PodsWithPVC.protectedStorageClasses",
    );
    assert_eq!(classes.as_sequence().map(Vec::len), Some(2));
}

fn strategy_policy(plugin: &str, args: &str, point: &str) -> String {
    format!(
        "apiVersion: \"descheduler/v1alpha2\"\nkind: \"DeschedulerPolicy\"\nprofiles:\n  - name: ProfileName\n    pluginConfig:\n    - name: \"{plugin}\"\n{args}    plugins:\n      {point}:\n        enabled:\n          - \"{plugin}\"\n"
    )
}

#[test]
fn readme_remove_duplicates() {
    let text = strategy_policy(
        "RemoveDuplicates",
        "      args:\n        excludeOwnerKinds:\n          - \"ReplicaSet\"\n",
        "balance",
    );
    let args = single(&text, Strategy::RemoveDuplicates);
    assert_eq!(
        at(&args, "excludeOwnerKinds")[0].as_str(),
        Some("ReplicaSet")
    );
}

#[test]
fn readme_low_node_utilization() {
    let args = "      args:\n        thresholds:\n          \"cpu\" : 20\n          \"memory\": 20\n          \"pods\": 20\n        targetThresholds:\n          \"cpu\" : 50\n          \"memory\": 50\n          \"pods\": 50\n        # metricsUtilization:\n        #   source: Prometheus\n        #   prometheus:\n        #     query: instance:node_cpu:rate:sum\n        evictionLimits:\n          node: 5\n";
    let args = single(
        &strategy_policy("LowNodeUtilization", args, "balance"),
        Strategy::LowNodeUtilization,
    );
    assert_eq!(at(&args, "thresholds.pods").as_f64(), Some(20.0));
    assert_eq!(at(&args, "targetThresholds.memory").as_f64(), Some(50.0));
    assert_eq!(at(&args, "evictionLimits.node").as_u64(), Some(5));
}

#[test]
fn readme_high_node_utilization() {
    let args = "      args:\n        thresholds:\n          \"cpu\" : 20\n          \"memory\": 20\n          \"pods\": 20\n        evictableNamespaces:\n          exclude:\n          - \"kube-system\"\n          - \"namespace1\"\n        evictionModes:\n          - \"OnlyThresholdingResources\"\n";
    let args = single(
        &strategy_policy("HighNodeUtilization", args, "balance"),
        Strategy::HighNodeUtilization,
    );
    assert_eq!(
        at(&args, "evictableNamespaces.exclude")[1].as_str(),
        Some("namespace1")
    );
}

#[test]
fn readme_inter_pod_anti_affinity_node_affinity_and_taints() {
    let text = strategy_policy("RemovePodsViolatingInterPodAntiAffinity", "", "deschedule");
    let args = single(&text, Strategy::RemovePodsViolatingInterPodAntiAffinity);
    assert!(args.as_mapping().is_some_and(|m| m.is_empty()));

    let text = strategy_policy(
        "RemovePodsViolatingNodeAffinity",
        "      args:\n        nodeAffinityType:\n        - \"requiredDuringSchedulingIgnoredDuringExecution\"\n",
        "deschedule",
    );
    let args = single(&text, Strategy::RemovePodsViolatingNodeAffinity);
    assert_eq!(
        at(&args, "nodeAffinityType")[0].as_str(),
        Some("requiredDuringSchedulingIgnoredDuringExecution")
    );

    for (key, first) in [
        ("excludedTaints", "dedicated=special-user"),
        ("includedTaints", "decommissioned=end-of-life"),
    ] {
        let args = format!("      args:\n        {key}:\n        - {first} # a comment\n        - reserved # another\n");
        let text = strategy_policy("RemovePodsViolatingNodeTaints", &args, "deschedule");
        let args = single(&text, Strategy::RemovePodsViolatingNodeTaints);
        assert_eq!(at(&args, key)[0].as_str(), Some(first));
        assert_eq!(at(&args, key)[1].as_str(), Some("reserved"));
    }
}

#[test]
fn readme_topology_spread_and_restarts() {
    let text = strategy_policy(
        "RemovePodsViolatingTopologySpreadConstraint",
        "      args:\n        constraints:\n          - DoNotSchedule\n",
        "balance",
    );
    let args = single(&text, Strategy::RemovePodsViolatingTopologySpreadConstraint);
    assert_eq!(at(&args, "constraints")[0].as_str(), Some("DoNotSchedule"));
    assert_eq!(at(&args, "topologyBalanceNodeFit").as_bool(), Some(true));

    let text = strategy_policy(
        "RemovePodsHavingTooManyRestarts",
        "      args:\n        podRestartThreshold: 100\n        includingInitContainers: true\n",
        "deschedule",
    );
    let args = single(&text, Strategy::RemovePodsHavingTooManyRestarts);
    assert_eq!(at(&args, "podRestartThreshold").as_u64(), Some(100));
}

/// README "PodLifeTime" examples, each read unchanged (the first with `conditions`: pods whose
/// condition last changed long ago).
#[test]
fn readme_pod_lifetime_examples() {
    let transitions = "      args:\n        states:\n        - \"Succeeded\"\n        conditions:\n        - reason: \"PodCompleted\"\n          status: \"True\"\n          minTimeSinceLastTransitionSeconds: 14400\n        ownerKinds:\n          exclude:\n          - \"Job\"\n";
    let args = single(
        &strategy_policy("PodLifeTime", transitions, "deschedule"),
        Strategy::PodLifeTime,
    );
    assert_eq!(at(&args, "conditions").as_sequence().map(Vec::len), Some(1));
    let age = "      args:\n        maxPodLifeTimeSeconds: 86400\n        states:\n        - \"Pending\"\n        - \"PodInitializing\"\n";
    let args = single(
        &strategy_policy("PodLifeTime", age, "deschedule"),
        Strategy::PodLifeTime,
    );
    assert_eq!(at(&args, "maxPodLifeTimeSeconds").as_u64(), Some(86400));
    // Namespace filtering, include then exclude; label filtering.
    for key in ["include", "exclude"] {
        let ns = format!("      args:\n        maxPodLifeTimeSeconds: 86400\n        namespaces:\n          {key}:\n          - \"namespace1\"\n          - \"namespace2\"\n");
        let args = single(
            &strategy_policy("PodLifeTime", &ns, "deschedule"),
            Strategy::PodLifeTime,
        );
        assert_eq!(
            at(&args, &format!("namespaces.{key}"))[1].as_str(),
            Some("namespace2")
        );
    }
    let labels = "      args:\n        maxPodLifeTimeSeconds: 86400\n        labelSelector:\n          matchLabels:\n            component: redis\n          matchExpressions:\n            - {key: tier, operator: In, values: [cache]}\n            - {key: environment, operator: NotIn, values: [dev]}\n";
    let args = single(
        &strategy_policy("PodLifeTime", labels, "deschedule"),
        Strategy::PodLifeTime,
    );
    assert_eq!(
        at(&args, "labelSelector.matchExpressions")[1]["operator"].as_str(),
        Some("NotIn")
    );
}

#[test]
fn readme_remove_failed_pods() {
    let args = "      args:\n        reasons:\n        - \"NodeAffinity\"\n        exitCodes:\n        - 1\n        includingInitContainers: true\n        excludeOwnerKinds:\n        - \"Job\"\n        minPodLifetimeSeconds: 3600\n";
    let args = single(
        &strategy_policy("RemoveFailedPods", args, "deschedule"),
        Strategy::RemoveFailedPods,
    );
    assert_eq!(at(&args, "exitCodes")[0].as_i64(), Some(1));
    assert_eq!(at(&args, "minPodLifetimeSeconds").as_u64(), Some(3600));
}

/// README "Priority filtering" (value, then class name) and "Node Fit filtering": the evictor's
/// args with PodLifeTime.
#[test]
fn readme_priority_and_node_fit_filtering() {
    for (evictor, key, want) in [
        (
            "priorityThreshold:\n          value: 10000",
            "priorityThreshold.value",
            "10000",
        ),
        (
            "priorityThreshold:\n          name: \"priorityClassName1\"",
            "priorityThreshold.name",
            "priorityClassName1",
        ),
        ("nodeFit: true", "nodeFit", "true"),
    ] {
        let text = format!("apiVersion: \"descheduler/v1alpha2\"\nkind: \"DeschedulerPolicy\"\nprofiles:\n  - name: ProfileName\n    pluginConfig:\n    - name: \"DefaultEvictor\"\n      args:\n        {evictor}\n    - name: \"PodLifeTime\"\n      args:\n        maxPodLifeTimeSeconds: 86400\n    plugins:\n      deschedule:\n        enabled:\n          - \"PodLifeTime\"\n");
        let (d, _) = draft(&text);
        assert_eq!(names(&d)[0].1, vec![Strategy::PodLifeTime]);
        let got = at(&d.profiles[0].evictor.args, key);
        let got = serde_norway::to_string(got).unwrap_or_default();
        assert_eq!(got.trim(), want, "{key}");
    }
}

/// The descheduler's `examples/` policy files (at 7d2b28bf, copied unchanged into `examples/`): each
/// reads unchanged.
#[test]
fn upstream_example_files_read_unchanged() {
    use Strategy::*;
    single(
        include_str!("examples/pod-life-time-transition.yml"),
        PodLifeTime,
    );
    let cases: [(&str, &str, Vec<Strategy>); 8] = [
        (
            "failed-pods.yaml",
            include_str!("examples/failed-pods.yaml"),
            vec![RemoveFailedPods],
        ),
        (
            "high-node-utilization.yml",
            include_str!("examples/high-node-utilization.yml"),
            vec![HighNodeUtilization],
        ),
        (
            "low-node-utilization.yml",
            include_str!("examples/low-node-utilization.yml"),
            vec![LowNodeUtilization],
        ),
        (
            "node-affinity.yml",
            include_str!("examples/node-affinity.yml"),
            vec![RemovePodsViolatingNodeAffinity],
        ),
        (
            "pod-life-time.yml",
            include_str!("examples/pod-life-time.yml"),
            vec![PodLifeTime],
        ),
        (
            "policy.yaml",
            include_str!("examples/policy.yaml"),
            vec![
                RemovePodsViolatingInterPodAntiAffinity,
                RemovePodsHavingTooManyRestarts,
                RemoveDuplicates,
                LowNodeUtilization,
                RemovePodsViolatingTopologySpreadConstraint,
            ],
        ),
        (
            "too-many-restarts.yml",
            include_str!("examples/too-many-restarts.yml"),
            vec![RemovePodsHavingTooManyRestarts],
        ),
        (
            "topology-spread-constraint.yaml",
            include_str!("examples/topology-spread-constraint.yaml"),
            vec![RemovePodsViolatingTopologySpreadConstraint],
        ),
    ];
    for (file, text, want) in cases {
        let (d, warnings) = draft(text);
        assert!(warnings.is_empty(), "{file}: {warnings:?}");
        assert_eq!(names(&d), vec![("ProfileName".to_string(), want)], "{file}");
    }
}
