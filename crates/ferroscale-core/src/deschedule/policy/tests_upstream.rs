//! The descheduler's own validation cases, transcribed: each plugin's `validation_test.go` and
//! pkg/descheduler/policyconfig_test.go (kubernetes-sigs/descheduler at 7d2b28bf). Where the
//! descheduler reports several errors at once, the policy here names the first it finds, which is
//! one of them.

use super::tests::{at, draft};
use super::{read, Policy};
use crate::deschedule::args::Strategy;

/// One case: (source test, case name, plugin, its args as YAML, None = valid or Some((refused
/// field under the args, what the refusal says))).
type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Option<(&'static str, &'static str)>,
);

const CASES: &[Case] = &[
    ("defaultevictor TestValidateDefaultEvictorArgs", "passing invalid priority", "DefaultEvictor", "{priorityThreshold: {value: 1, name: priority-class-name}}", Some(("priorityThreshold.name", "only one of"))),
    ("defaultevictor TestValidateDefaultEvictorArgs", "passing invalid no eviction policy", "DefaultEvictor", "{noEvictionPolicy: invalid-no-eviction-policy}", Some(("noEvictionPolicy", "Preferred, Mandatory"))),
    ("defaultevictor TestValidateDefaultEvictorArgs", "Valid configuration with no deprecated fields", "DefaultEvictor", "{podProtections: {defaultDisabled: [], extraEnabled: []}}", None),
    ("defaultevictor TestValidateDefaultEvictorArgs", "Valid configuration: both Disabled and ExtraEnabled", "DefaultEvictor", "{podProtections: {defaultDisabled: [DaemonSetPods, PodsWithLocalStorage], extraEnabled: [PodsWithPVC]}}", None),
    ("defaultevictor TestValidateDefaultEvictorArgs", "Valid configuration with ExtraEnabled", "DefaultEvictor", "{podProtections: {extraEnabled: [PodsWithPVC]}}", None),
    ("defaultevictor TestValidateDefaultEvictorArgs", "Invalid configuration: Deprecated field used with Disabled", "DefaultEvictor", "{evictLocalStoragePods: true, podProtections: {defaultDisabled: [DaemonSetPods]}}", Some(("podProtections", "deprecated"))),
    ("defaultevictor TestValidateDefaultEvictorArgs", "Invalid configuration: Deprecated field used with ExtraPodProtections", "DefaultEvictor", "{evictDaemonSetPods: true, podProtections: {extraEnabled: [PodsWithPVC]}}", Some(("podProtections", "deprecated"))),
    ("defaultevictor TestValidateDefaultEvictorArgs", "MinReplicas warning logged but no error", "DefaultEvictor", "{minReplicas: 1}", None),
    ("defaultevictor TestValidateDefaultEvictorArgs", "Invalid ExtraEnabled: Unknown policy", "DefaultEvictor", "{podProtections: {extraEnabled: [InvalidPolicy]}}", Some(("podProtections.extraEnabled[0]", "\"InvalidPolicy\""))),
    ("defaultevictor TestValidateDefaultEvictorArgs", "Invalid ExtraEnabled: Misspelled policy", "DefaultEvictor", "{podProtections: {extraEnabled: [PodsWithPVCC]}}", Some(("podProtections.extraEnabled[0]", "\"PodsWithPVCC\""))),
    ("defaultevictor TestValidateDefaultEvictorArgs", "Invalid ExtraEnabled: Policy from DefaultDisabled list", "DefaultEvictor", "{podProtections: {extraEnabled: [DaemonSetPods]}}", Some(("podProtections.extraEnabled[0]", "PodsWithPVC, PodsWithoutPDB, PodsWithResourceClaims"))),
    ("defaultevictor TestValidateDefaultEvictorArgs", "Invalid DefaultDisabled: Unknown policy", "DefaultEvictor", "{podProtections: {defaultDisabled: [InvalidPolicy]}}", Some(("podProtections.defaultDisabled[0]", "\"InvalidPolicy\""))),
    ("defaultevictor TestValidateDefaultEvictorArgs", "Invalid DefaultDisabled: Misspelled policy", "DefaultEvictor", "{podProtections: {defaultDisabled: [PodsWithLocalStorag]}}", Some(("podProtections.defaultDisabled[0]", "PodsWithLocalStorag"))),
    ("defaultevictor TestValidateDefaultEvictorArgs", "Invalid DefaultDisabled: Policy from ExtraEnabled list", "DefaultEvictor", "{podProtections: {defaultDisabled: [PodsWithPVC]}}", Some(("podProtections.defaultDisabled[0]", "PodsWithLocalStorage, SystemCriticalPods, FailedBarePods, DaemonSetPods"))),
    ("defaultevictor TestValidateDefaultEvictorArgs", "Invalid ExtraEnabled duplicate", "DefaultEvictor", "{podProtections: {extraEnabled: [PodsWithPVC, PodsWithPVC]}}", Some(("podProtections.extraEnabled[1]", "twice"))),
    ("defaultevictor TestValidateDefaultEvictorArgs", "Invalid DefaultDisabled duplicate", "DefaultEvictor", "{podProtections: {defaultDisabled: [DaemonSetPods, DaemonSetPods]}}", Some(("podProtections.defaultDisabled[1]", "twice"))),
    ("defaultevictor TestValidateDefaultEvictorArgs", "Protected storage classes without storage class name", "DefaultEvictor", "{podProtections: {extraEnabled: [PodsWithPVC], config: {PodsWithPVC: {protectedStorageClasses: [{name: ''}, {name: sc-1}, {name: ''}]}}}}", Some(("podProtections.config.PodsWithPVC.protectedStorageClasses[0].name", "cannot be empty"))),
    ("policyconfig TestDecodeVersionedPolicy", "priorityThreshold exceeding maximum", "DefaultEvictor", "{priorityThreshold: {value: 2000000001}}", Some(("priorityThreshold.value", "can't be greater than 2000000000"))),
    ("nodeutilization TestValidateLowNodeUtilizationPluginConfig", "passing invalid thresholds", "LowNodeUtilization", "{thresholds: {cpu: 20, memory: 120}, targetThresholds: {cpu: 80, memory: 80}}", Some(("thresholds.memory", "not in [0, 100]"))),
    ("nodeutilization TestValidateLowNodeUtilizationPluginConfig", "thresholds and targetThresholds configured different num of resources", "LowNodeUtilization", "{thresholds: {cpu: 20, memory: 20}, targetThresholds: {cpu: 80, memory: 80, pods: 80}}", Some(("targetThresholds", "different resources"))),
    ("nodeutilization TestValidateLowNodeUtilizationPluginConfig", "thresholds and targetThresholds configured different resources", "LowNodeUtilization", "{thresholds: {cpu: 20, memory: 20}, targetThresholds: {cpu: 80, pods: 80}}", Some(("targetThresholds", "different resources"))),
    ("nodeutilization TestValidateLowNodeUtilizationPluginConfig", "thresholds' CPU config value is greater than targetThresholds'", "LowNodeUtilization", "{thresholds: {cpu: 90, memory: 20}, targetThresholds: {cpu: 80, memory: 80}}", Some(("thresholds.cpu", "greater than"))),
    ("nodeutilization TestValidateLowNodeUtilizationPluginConfig", "only thresholds configured extended resource", "LowNodeUtilization", "{thresholds: {cpu: 20, memory: 20, example.com/foo: 20}, targetThresholds: {cpu: 80, memory: 80}}", Some(("targetThresholds", "different resources"))),
    ("nodeutilization TestValidateLowNodeUtilizationPluginConfig", "only targetThresholds configured extended resource", "LowNodeUtilization", "{thresholds: {cpu: 20, memory: 20}, targetThresholds: {cpu: 80, memory: 80, example.com/foo: 80}}", Some(("targetThresholds", "different resources"))),
    ("nodeutilization TestValidateLowNodeUtilizationPluginConfig", "thresholds and targetThresholds configured different extended resources", "LowNodeUtilization", "{thresholds: {cpu: 20, memory: 20, example.com/foo: 20}, targetThresholds: {cpu: 80, memory: 80, example.com/bar: 80}}", Some(("targetThresholds", "different resources"))),
    ("nodeutilization TestValidateLowNodeUtilizationPluginConfig", "thresholds' extended resource config value is greater than targetThresholds'", "LowNodeUtilization", "{thresholds: {cpu: 20, memory: 20, example.com/foo: 90}, targetThresholds: {cpu: 80, memory: 80, example.com/foo: 20}}", Some(("thresholds.example.com/foo", "greater than"))),
    ("nodeutilization TestValidateLowNodeUtilizationPluginConfig", "passing valid plugin config", "LowNodeUtilization", "{thresholds: {cpu: 20, memory: 20}, targetThresholds: {cpu: 80, memory: 80}}", None),
    ("nodeutilization TestValidateLowNodeUtilizationPluginConfig", "passing valid plugin config with extended resource", "LowNodeUtilization", "{thresholds: {cpu: 20, memory: 20, example.com/foo: 20}, targetThresholds: {cpu: 80, memory: 80, example.com/foo: 80}}", None),
    ("nodeutilization TestValidateLowNodeUtilizationPluginConfig", "setting both kubernetes metrics source and metricsserver", "LowNodeUtilization", "{thresholds: {cpu: 20}, targetThresholds: {cpu: 80}, metricsUtilization: {metricsServer: true, source: KubernetesMetrics}}", Some(("metricsUtilization.metricsServer", "KubernetesMetrics"))),
    ("nodeutilization TestValidateLowNodeUtilizationPluginConfig", "missing prometheus query", "LowNodeUtilization", "{thresholds: {cpu: 20}, targetThresholds: {cpu: 80}, metricsUtilization: {source: Prometheus}}", Some(("metricsUtilization.prometheus", "query is required"))),
    ("nodeutilization TestValidateLowNodeUtilizationPluginConfig", "prometheus set when source set to kubernetes metrics", "LowNodeUtilization", "{thresholds: {cpu: 20}, targetThresholds: {cpu: 80}, metricsUtilization: {source: KubernetesMetrics, prometheus: {query: up}}}", Some(("metricsUtilization.prometheus", "KubernetesMetrics"))),
    ("nodeutilization TestValidateHighNodeUtilizationPluginConfig", "valid configuration with CPU and memory", "HighNodeUtilization", "{thresholds: {cpu: 80, memory: 90}}", None),
    ("nodeutilization TestValidateHighNodeUtilizationPluginConfig", "valid configuration with extended resource", "HighNodeUtilization", "{thresholds: {cpu: 80, example.com/foo: 50}}", None),
    ("nodeutilization TestValidateHighNodeUtilizationPluginConfig", "empty thresholds", "HighNodeUtilization", "{thresholds: {}}", Some(("thresholds", "no resource threshold"))),
    ("nodeutilization TestValidateHighNodeUtilizationPluginConfig", "threshold below minimum (0%)", "HighNodeUtilization", "{thresholds: {cpu: -1}}", Some(("thresholds.cpu", "not in [0, 100]"))),
    ("nodeutilization TestValidateHighNodeUtilizationPluginConfig", "threshold above maximum (100%)", "HighNodeUtilization", "{thresholds: {memory: 101}}", Some(("thresholds.memory", "not in [0, 100]"))),
    ("nodeutilization TestValidateHighNodeUtilizationPluginConfig", "multiple thresholds with one out of range", "HighNodeUtilization", "{thresholds: {cpu: 50, memory: 150}}", Some(("thresholds.memory", "not in [0, 100]"))),
    ("nodeutilization TestValidateHighNodeUtilizationPluginConfig", "evictableNamespaces with Exclude (allowed)", "HighNodeUtilization", "{thresholds: {cpu: 50}, evictableNamespaces: {exclude: [ns1, ns2]}}", None),
    ("nodeutilization TestValidateHighNodeUtilizationPluginConfig", "invalid eviction mode", "HighNodeUtilization", "{thresholds: {cpu: 50}, evictionModes: [InvalidMode]}", Some(("evictionModes[0]", "invalid eviction mode"))),
    ("nodeutilization TestValidateHighNodeUtilizationPluginConfig", "missing eviction modes (nil)", "HighNodeUtilization", "{thresholds: {cpu: 50}, evictionModes: null}", None),
    ("nodeutilization TestValidateHighNodeUtilizationPluginConfig", "empty eviction modes slice", "HighNodeUtilization", "{thresholds: {cpu: 50}, evictionModes: []}", None),
    ("podlifetime TestValidateRemovePodLifeTimeArgs", "valid arg, no errors", "PodLifeTime", "{maxPodLifeTimeSeconds: 1, states: [Running]}", None),
    ("podlifetime TestValidateRemovePodLifeTimeArgs", "Pod Status Reasons Succeeded or Failed", "PodLifeTime", "{maxPodLifeTimeSeconds: 1, states: [Succeeded, Failed]}", None),
    ("podlifetime TestValidateRemovePodLifeTimeArgs", "Pod Status Reasons CrashLoopBackOff", "PodLifeTime", "{maxPodLifeTimeSeconds: 1, states: [CrashLoopBackOff]}", None),
    ("podlifetime TestValidateRemovePodLifeTimeArgs", "nil MaxPodLifeTimeSeconds arg, expects errors", "PodLifeTime", "{maxPodLifeTimeSeconds: null}", Some(("maxPodLifeTimeSeconds", "at least one filter"))),
    ("podlifetime TestValidateRemovePodLifeTimeArgs", "invalid pod state arg, expects errors", "PodLifeTime", "{maxPodLifeTimeSeconds: 1, states: [InvalidState]}", Some(("states[0]", "states must be one of"))),
    ("podlifetime TestValidateRemovePodLifeTimeArgs", "nil MaxPodLifeTimeSeconds arg and invalid pod state arg", "PodLifeTime", "{states: [InvalidState]}", Some(("states[0]", "states must be one of"))),
    ("removeduplicates TestValidateRemovePodsViolatingNodeTaintsArgs", "valid namespace args, no errors", "RemoveDuplicates", "{namespaces: {include: [default]}}", None),
    ("removeduplicates TestValidateRemovePodsViolatingNodeTaintsArgs", "invalid namespaces args, expects error", "RemoveDuplicates", "{namespaces: {include: [default], exclude: [kube-system]}}", Some(("namespaces.exclude", "only one of"))),
    ("removefailedpods TestValidateRemoveFailedPodsArgs", "valid label selector args, no errors", "RemoveFailedPods", "{labelSelector: {matchLabels: {role.kubernetes.io/node: ''}}}", None),
    ("removefailedpods TestValidateRemoveFailedPodsArgs", "invalid label selector args, expects errors", "RemoveFailedPods", "{labelSelector: {matchExpressions: [{operator: In}]}}", Some(("labelSelector.matchExpressions[0].key", "label key"))),
    ("removepodshavingtoomanyrestarts TestValidateRemovePodsHavingTooManyRestartsArgs", "valid arg, no errors", "RemovePodsHavingTooManyRestarts", "{podRestartThreshold: 1, states: [Running]}", None),
    ("removepodshavingtoomanyrestarts TestValidateRemovePodsHavingTooManyRestartsArgs", "invalid PodRestartThreshold arg, expects errors", "RemovePodsHavingTooManyRestarts", "{podRestartThreshold: -1}", Some(("podRestartThreshold", "at least 1"))),
    ("removepodshavingtoomanyrestarts TestValidateRemovePodsHavingTooManyRestartsArgs", "invalid States arg, expects errors", "RemovePodsHavingTooManyRestarts", "{podRestartThreshold: 1, states: [InvalidState]}", Some(("states[0]", "Running, CrashLoopBackOff"))),
    ("removepodshavingtoomanyrestarts TestValidateRemovePodsHavingTooManyRestartsArgs", "allows CrashLoopBackOff state", "RemovePodsHavingTooManyRestarts", "{podRestartThreshold: 1, states: [CrashLoopBackOff]}", None),
    ("removepodsviolatinginterpodantiaffinity TestValidateRemovePodsViolatingInterPodAntiAffinityArgs", "invalid namespaces args, expects error", "RemovePodsViolatingInterPodAntiAffinity", "{namespaces: {include: [default], exclude: [kube-system]}}", Some(("namespaces.exclude", "only one of"))),
    ("removepodsviolatinginterpodantiaffinity TestValidateRemovePodsViolatingInterPodAntiAffinityArgs", "invalid label selector args, expects errors", "RemovePodsViolatingInterPodAntiAffinity", "{labelSelector: {matchExpressions: [{operator: In}]}}", Some(("labelSelector.matchExpressions[0].key", "label key"))),
    ("removepodsviolatingnodeaffinity TestValidateRemovePodsViolatingNodeAffinityArgs", "nil NodeAffinityType args, expects errors", "RemovePodsViolatingNodeAffinity", "{}", Some(("nodeAffinityType", "needs to be set"))),
    ("removepodsviolatingnodeaffinity TestValidateRemovePodsViolatingNodeAffinityArgs", "empty NodeAffinityType args, expects errors", "RemovePodsViolatingNodeAffinity", "{nodeAffinityType: []}", Some(("nodeAffinityType", "needs to be set"))),
    ("removepodsviolatingnodeaffinity TestValidateRemovePodsViolatingNodeAffinityArgs", "valid NodeAffinityType args, no errors", "RemovePodsViolatingNodeAffinity", "{nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecution]}", None),
    ("removepodsviolatingnodeaffinity TestValidateRemovePodsViolatingNodeAffinityArgs", "invalid namespaces args, expects error", "RemovePodsViolatingNodeAffinity", "{nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecution], namespaces: {include: [default], exclude: [kube-system]}}", Some(("namespaces.exclude", "only one of"))),
    ("removepodsviolatingnodetaints TestValidateRemovePodsViolatingNodeTaintsArgs", "valid taint filters, no errors", "RemovePodsViolatingNodeTaints", "{includedTaints: [testTaint1=test1]}", None),
    ("removepodsviolatingnodetaints TestValidateRemovePodsViolatingNodeTaintsArgs", "invalid taint filters args, expects errors", "RemovePodsViolatingNodeTaints", "{excludedTaints: [do-not-evict], includedTaints: [testTaint1=test1]}", Some(("includedTaints", "not both"))),
    ("removepodsviolatingtopologyspreadconstraint TestValidateRemovePodsViolatingTopologySpreadConstraintArgs", "valid constraints args, no errors", "RemovePodsViolatingTopologySpreadConstraint", "{constraints: [DoNotSchedule, ScheduleAnyway]}", None),
    ("removepodsviolatingtopologyspreadconstraint TestValidateRemovePodsViolatingTopologySpreadConstraintArgs", "invalid constraints args, expects errors", "RemovePodsViolatingTopologySpreadConstraint", "{constraints: [foo]}", Some(("constraints[0]", "\"foo\" is not one of"))),
];

/// A policy configuring and enabling the plugin (the evictor is only configured).
fn policy(plugin: &str, args: &str) -> String {
    let enable = match Strategy::parse(plugin) {
        Some(s) if crate::deschedule::strategies::balances(s) => {
            format!("balance: {{enabled: [{plugin}]}}")
        }
        Some(_) => format!("deschedule: {{enabled: [{plugin}]}}"),
        None => String::new(),
    };
    format!("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  pluginConfig:\n  - name: {plugin}\n    args: {args}\n  plugins: {{{enable}}}\n")
}

#[test]
fn upstream_validation_cases() {
    for (source, case, plugin, args, want) in CASES {
        match (want, Policy::parse(&policy(plugin, args))) {
            (None, Ok(_)) => {}
            (None, Err(e)) => panic!("{source} {case:?}: refused: {e}"),
            (Some(_), Ok(_)) => panic!("{source} {case:?}: accepted"),
            (Some((field, says)), Err(e)) => {
                let want_field = format!("profiles[0].pluginConfig[0].args.{field}");
                assert_eq!(
                    e.path(),
                    Some(want_field.as_str()),
                    "{source} {case:?}: {e}"
                );
                assert!(
                    e.why().contains(says),
                    "{source} {case:?}: {e} does not say {says:?}"
                );
            }
        }
    }
    assert_eq!(CASES.len(), 65, "the count the closing note reports");
}

/// policyconfig_test.go TestValidateDeschedulerConfiguration "multiple errors": two profiles each
/// with namespaces both included and excluded; the first is named.
#[test]
fn upstream_multiple_errors_name_the_first_profile() {
    let text = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: RemoveFailedPods\n  pluginConfig:\n  - name: RemoveFailedPods\n    args: {namespaces: {include: [test1], exclude: [test1]}}\n  plugins: {deschedule: {enabled: [RemoveFailedPods]}}\n- name: RemovePodsViolatingTopologySpreadConstraint\n  pluginConfig:\n  - name: RemovePodsViolatingTopologySpreadConstraint\n    args: {namespaces: {include: [test1], exclude: [test1]}}\n  plugins: {balance: {enabled: [RemovePodsViolatingTopologySpreadConstraint]}}\n";
    let e = Policy::parse(text).expect_err("refused");
    assert!(
        e.to_string().contains("profile \"RemoveFailedPods\""),
        "{e}"
    );
    assert!(
        e.why().contains("only one of include/exclude namespaces"),
        "{e}"
    );
}

/// policyconfig_test.go TestValidateDeschedulerConfiguration's metrics provider cases.
#[test]
fn upstream_metrics_provider_cases() {
    let top =
        |body: &str| format!("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n{body}");
    let cases = [
        ("Duplicit metrics providers error", "metricsProviders: [{source: KubernetesMetrics}, {source: KubernetesMetrics}]", Some(("metricsProviders[1].source", "already configured"))),
        ("Too many metrics providers error", "metricsCollector: {enabled: true}\nmetricsProviders: [{source: KubernetesMetrics}]", Some(("metricsProviders[0].source", "not allowed to combine"))),
        ("missing prometheus url error", "metricsProviders: [{source: Prometheus, prometheus: {}}]", Some(("metricsProviders[0].prometheus.url", "URL is required"))),
        ("prometheus url is not valid error", "metricsProviders: [{source: Prometheus, prometheus: {url: 'http://example.com:-80'}}]", Some(("metricsProviders[0].prometheus.url", "invalid port \":-80\""))),
        ("prometheus authtoken with no secret reference error", "metricsProviders: [{source: Prometheus, prometheus: {url: 'https://example.com:93', authToken: {}}}]", Some(("metricsProviders[0].prometheus.authToken.secretReference", "expected to be set"))),
        ("prometheus authtoken with empty secret reference error", "metricsProviders: [{source: Prometheus, prometheus: {url: 'https://example.com:93', authToken: {secretReference: {}}}}]", Some(("metricsProviders[0].prometheus.authToken.secretReference.namespace", "both namespace and name"))),
        ("prometheus authtoken missing secret reference namespace error", "metricsProviders: [{source: Prometheus, prometheus: {url: 'https://example.com:93', authToken: {secretReference: {name: secretname}}}}]", Some(("metricsProviders[0].prometheus.authToken.secretReference.namespace", "both namespace and name"))),
        ("prometheus authtoken missing secret reference name error", "metricsProviders: [{source: Prometheus, prometheus: {url: 'https://example.com:93', authToken: {secretReference: {namespace: secretns}}}}]", Some(("metricsProviders[0].prometheus.authToken.secretReference.name", "both namespace and name"))),
        ("valid prometheus authtoken secret reference", "metricsProviders: [{source: Prometheus, prometheus: {url: 'https://example.com:93', authToken: {secretReference: {name: secretname, namespace: secretns}}}}]", None),
    ];
    for (case, body, want) in cases {
        match (want, read(&top(body))) {
            (None, Ok(_)) => {}
            (None, Err(e)) => panic!("{case}: refused: {e}"),
            (Some(_), Ok(_)) => panic!("{case}: accepted"),
            (Some((field, says)), Err(e)) => {
                assert_eq!(e.path(), Some(field), "{case}: {e}");
                assert!(e.why().contains(says), "{case}: {e}");
            }
        }
    }
}

/// policyconfig_test.go TestDecodeVersionedPolicy "v1alpha2 to internal", "use empty
/// RemoveFailedPods, check MinPodLifetimeSeconds default" and "omit default evictor extension
/// point with their enablement".
#[test]
fn upstream_decode_cases() {
    let evictor = "  - name: \"DefaultEvictor\"\n    args:\n      evictSystemCriticalPods: true\n      evictFailedBarePods: true\n      evictLocalStoragePods: true\n      evictDaemonSetPods: true\n      nodeFit: true\n";
    let head = "apiVersion: \"descheduler/v1alpha2\"\nkind: \"DeschedulerPolicy\"\nprofiles:\n- name: ProfileName\n  pluginConfig:\n";
    let text = format!("{head}{evictor}  - name: \"RemovePodsHavingTooManyRestarts\"\n    args:\n      podRestartThreshold: 100\n      includingInitContainers: true\n  plugins:\n    deschedule:\n      enabled:\n        - \"RemovePodsHavingTooManyRestarts\"\n");
    let (d, _) = draft(&text);
    let ev = &d.profiles[0].evictor.args;
    assert_eq!(
        at(ev, "priorityThreshold.value").as_i64(),
        Some(2_000_000_000)
    );
    assert_eq!(at(ev, "evictDaemonSetPods").as_bool(), Some(true));
    assert_eq!(
        at(&d.profiles[0].strategies[0].1.args, "podRestartThreshold").as_u64(),
        Some(100)
    );

    let text = format!("{head}{evictor}  - name: \"RemoveFailedPods\"\n  plugins:\n    filter:\n      enabled:\n        - \"DefaultEvictor\"\n    preEvictionFilter:\n      enabled:\n        - \"DefaultEvictor\"\n    deschedule:\n      enabled:\n        - \"RemoveFailedPods\"\n");
    let (d, _) = draft(&text);
    assert_eq!(d.profiles[0].strategies[0].0, Strategy::RemoveFailedPods);
    assert_eq!(
        at(&d.profiles[0].strategies[0].1.args, "minPodLifetimeSeconds").as_u64(),
        Some(3600)
    );

    // RemovePodsHavingTooManyRestarts enabled with no pluginConfig entry: the descheduler decodes
    // it, then cannot build the plugin ("unable to find plugin config"); its defaults (threshold 0)
    // would evict every pod, so it is refused here when read.
    let text = format!("{head}{evictor}  - name: \"RemoveFailedPods\"\n  plugins:\n    deschedule:\n      enabled:\n        - \"RemovePodsHavingTooManyRestarts\"\n");
    let e = Policy::parse(&text).expect_err("refused");
    assert_eq!(
        e.path(),
        Some("profiles[0].plugins.deschedule.enabled[0]"),
        "{e}"
    );
}
