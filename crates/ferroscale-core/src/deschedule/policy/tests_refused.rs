//! What the descheduler honours but ferroscale cannot is refused, naming the profile, the plugin and
//! the field, never ignored: each of these narrows which pods go (or changes how nodes are classed),
//! so ignoring it would evict more than the policy asks.

use super::tests::{draft, refused};
use super::{Policy, PolicyError};

/// A one-profile policy `p` configuring `plugin` with `args` (and enabling `enable`, if any).
fn policy(plugin: &str, args: &str, enable: &str) -> String {
    format!("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  pluginConfig:\n  - name: {plugin}\n    args: {args}\n  plugins: {{{enable}}}\n")
}

/// The refusal names the profile, the plugin and the field under its args, and says why.
fn assert_refused(e: &PolicyError, plugin: &str, field: &str, says: &str) {
    let want = format!("profiles[0].pluginConfig[0].args.{field}");
    assert_eq!(e.path(), Some(want.as_str()), "{e}");
    assert!(e.why().contains(&format!("(plugin {plugin})")), "{e}");
    assert!(e.why().contains(says), "{e} does not say {says:?}");
    assert!(e.to_string().starts_with("policy: profile \"p\": "), "{e}");
}

/// What the descheduler accepts and the pod model now carries the facts for is accepted: pod
/// `conditions`, `includingEphemeralContainers`, `noEvictionPolicy: Mandatory`,
/// `PodsWithResourceClaims` (their behaviour: lifetime/tests/validation.rs, evictor/tests/filter.rs).
#[test]
fn pod_facts_options_are_accepted() {
    let lifetime = |args: &str| policy("PodLifeTime", args, "deschedule: {enabled: [PodLifeTime]}");
    draft(&lifetime(
        "{states: [Succeeded], conditions: [{reason: PodCompleted, status: 'True'}]}",
    ));
    draft(&lifetime("{conditions: [{type: Ready}]}"));
    draft(&lifetime(
        "{states: [OOMKilled], includingEphemeralContainers: true}",
    ));
    // The descheduler's own check of an entry still applies.
    let e = refused(&lifetime("{maxPodLifeTimeSeconds: 60, conditions: [{}]}"));
    assert_refused(&e, "PodLifeTime", "conditions[0]", "at least one of type");
    draft(&policy(
        "DefaultEvictor",
        "{noEvictionPolicy: Mandatory}",
        "",
    ));
    draft(&policy(
        "DefaultEvictor",
        "{noEvictionPolicy: Preferred}",
        "",
    ));
    draft(&policy(
        "DefaultEvictor",
        "{podProtections: {extraEnabled: [PodsWithPVC, PodsWithResourceClaims]}}",
        "",
    ));
}

/// Actual usage from metrics-server is read; Prometheus is refused by name.
#[test]
fn metrics_utilization_from_prometheus_is_refused() {
    let (p, _) = Policy::parse(&policy(
        "LowNodeUtilization",
        "{thresholds: {cpu: 20}, targetThresholds: {cpu: 50}, metricsUtilization: {source: KubernetesMetrics}}",
        "balance: {enabled: [LowNodeUtilization]}",
    ))
    .unwrap();
    assert!(crate::deschedule::plan::reads_metrics(&p));
    let e = refused(&policy(
        "LowNodeUtilization",
        "{thresholds: {cpu: 20}, targetThresholds: {cpu: 50}, metricsUtilization: {source: Prometheus, prometheus: {query: up}}}",
        "balance: {enabled: [LowNodeUtilization]}",
    ));
    assert_refused(
        &e,
        "LowNodeUtilization",
        "metricsUtilization.source",
        "Prometheus is not supported",
    );
}

/// Every policy goes through the typed checks, whichever way its plugin is configured: a plugin
/// enabled without a `pluginConfig` entry is refused where it is enabled, naming the field its
/// defaults leave wrong.
#[test]
fn defaults_that_fail_the_checks_are_refused_where_enabled() {
    let text = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  plugins: {deschedule: {enabled: [RemovePodsViolatingNodeAffinity]}}\n";
    let e = refused(text);
    assert_eq!(
        e.path(),
        Some("profiles[0].plugins.deschedule.enabled[0]"),
        "{e}"
    );
    assert!(
        e.why().contains("no pluginConfig entry") && e.why().contains("nodeAffinityType"),
        "{e}"
    );
}
