//! What the descheduler honours but ferroscale cannot is refused, naming the profile, the plugin and
//! the field, never ignored: each of these narrows which pods go (or changes how nodes are classed),
//! so ignoring it would evict more than the policy asks.

use super::tests::{draft, refused};
use super::PolicyError;

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

#[test]
fn pod_lifetime_conditions_are_refused() {
    let lifetime = |args: &str| policy("PodLifeTime", args, "deschedule: {enabled: [PodLifeTime]}");
    let e = refused(&lifetime(
        "{states: [Succeeded], conditions: [{reason: PodCompleted, status: 'True'}]}",
    ));
    assert_refused(&e, "PodLifeTime", "conditions", "not supported");
    // The only filter: ignoring it would leave none, and every pod would go.
    let e = refused(&lifetime("{conditions: [{type: Ready}]}"));
    assert_refused(&e, "PodLifeTime", "conditions", "pod conditions");
    // The descheduler's own check of an entry comes first.
    let e = refused(&lifetime("{maxPodLifeTimeSeconds: 60, conditions: [{}]}"));
    assert_refused(&e, "PodLifeTime", "conditions[0]", "at least one of type");
    assert!(e.why().contains("also: conditions: not supported"), "{e}");
    draft(&lifetime("{maxPodLifeTimeSeconds: 60, conditions: []}"));
}

#[test]
fn pod_lifetime_ephemeral_containers_are_refused() {
    let lifetime = |args: &str| policy("PodLifeTime", args, "deschedule: {enabled: [PodLifeTime]}");
    let e = refused(&lifetime(
        "{states: [OOMKilled], includingEphemeralContainers: true}",
    ));
    assert_refused(
        &e,
        "PodLifeTime",
        "includingEphemeralContainers",
        "not supported",
    );
    draft(&lifetime(
        "{states: [OOMKilled], includingEphemeralContainers: false}",
    ));
}

#[test]
fn a_mandatory_no_eviction_policy_is_refused() {
    let e = refused(&policy(
        "DefaultEvictor",
        "{noEvictionPolicy: Mandatory}",
        "",
    ));
    assert_refused(
        &e,
        "DefaultEvictor",
        "noEvictionPolicy",
        "prefer-no-eviction",
    );
    // Preferred: a preference the descheduler's evictor does not act on either.
    draft(&policy(
        "DefaultEvictor",
        "{noEvictionPolicy: Preferred}",
        "",
    ));
}

#[test]
fn the_resource_claims_protection_is_refused() {
    let e = refused(&policy(
        "DefaultEvictor",
        "{podProtections: {extraEnabled: [PodsWithPVC, PodsWithResourceClaims]}}",
        "",
    ));
    assert_refused(
        &e,
        "DefaultEvictor",
        "podProtections.extraEnabled[1]",
        "PodsWithResourceClaims is not supported",
    );
}

#[test]
fn metrics_utilization_is_refused() {
    let e = refused(&policy(
        "LowNodeUtilization",
        "{thresholds: {cpu: 20}, targetThresholds: {cpu: 50}, metricsUtilization: {source: KubernetesMetrics}}",
        "balance: {enabled: [LowNodeUtilization]}",
    ));
    assert_refused(
        &e,
        "LowNodeUtilization",
        "metricsUtilization",
        "not supported",
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
