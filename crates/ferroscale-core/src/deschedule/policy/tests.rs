//! Policies refused (each naming its field), accepted with warnings, and never a panic.

use proptest::prelude::*;
use serde_norway::Value;

use super::{read, Draft, Policy, PolicyError, Warning};
use crate::deschedule::args::Strategy;

/// The policy read (args as values), or the test fails with the refusal.
/// The typed read must accept it too (the strategies' args structs take what was checked).
pub(super) fn draft(text: &str) -> (Draft, Vec<Warning>) {
    let (d, w) = read(text).unwrap_or_else(|e| panic!("refused: {e}"));
    if let Err(e) = d.clone().typed() {
        panic!("refused typed: {e}");
    }
    (d, w)
}

/// The refusal of a policy (when read, or by the typed args' checks), which must have one.
pub(super) fn refused(text: &str) -> PolicyError {
    match Policy::parse(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e,
    }
}

/// A value at a dotted path of args (`thresholds.cpu`).
pub(super) fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.')
        .fold(v, |v, k| v.get(k).unwrap_or(&Value::Null))
}

/// The strategies of each profile, by name.
pub(super) fn names(d: &Draft) -> Vec<(String, Vec<Strategy>)> {
    d.profiles
        .iter()
        .map(|p| {
            (
                p.name.clone(),
                p.strategies.iter().map(|(s, _)| *s).collect(),
            )
        })
        .collect()
}

/// A one-profile v1alpha2 policy around a `profiles[0]` body (indented as a profile's fields).
fn profile(body: &str) -> String {
    format!(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n{body}"
    )
}

/// A refusal's field and message, asserting the field.
fn refusal(text: &str, field: &str, says: &str) {
    let e = refused(text);
    assert_eq!(e.path(), Some(field), "{e}");
    assert!(e.why().contains(says), "{e} does not say {says:?}");
}

#[test]
fn an_unknown_plugin_is_refused_naming_it() {
    let text = profile("  plugins:\n    deschedule:\n      enabled: [RemoveDuplicatez]\n");
    refusal(
        &text,
        "profiles[0].plugins.deschedule.enabled[0]",
        "RemoveDuplicatez",
    );
    let e = refused(&text);
    assert_eq!(
        e.to_string(),
        format!(
            "policy: profile \"p\": profiles[0].plugins.deschedule.enabled[0]: {}",
            e.why()
        )
    );
}

#[test]
fn a_plugin_at_the_wrong_extension_point_is_refused() {
    let text = profile(
        "  pluginConfig:\n  - name: LowNodeUtilization\n    args: {thresholds: {cpu: 10}, targetThresholds: {cpu: 50}}\n  plugins:\n    deschedule:\n      enabled: [LowNodeUtilization]\n",
    );
    refusal(
        &text,
        "profiles[0].plugins.deschedule.enabled[0]",
        "plugins.balance",
    );
    let text = profile("  plugins:\n    balance:\n      enabled: [RemoveFailedPods]\n");
    refusal(
        &text,
        "profiles[0].plugins.balance.enabled[0]",
        "plugins.deschedule",
    );
    let text = profile("  plugins:\n    deschedule:\n      enabled: [DefaultEvictor]\n");
    refusal(
        &text,
        "profiles[0].plugins.deschedule.enabled[0]",
        "filter plugin",
    );
}

#[test]
fn a_plugin_config_for_an_unknown_plugin_is_refused() {
    let text = profile("  pluginConfig:\n  - name: Nope\n    args: {}\n");
    refusal(&text, "profiles[0].pluginConfig[0].name", "\"Nope\"");
}

#[test]
fn another_evictor_plugin_is_refused() {
    let text = profile("  plugins:\n    filter:\n      enabled: [MyEvictor]\n");
    refusal(
        &text,
        "profiles[0].plugins.filter.enabled[0]",
        "DefaultEvictor",
    );
    let text = profile("  plugins:\n    preEvictionFilter:\n      enabled: [MyEvictor]\n");
    refusal(
        &text,
        "profiles[0].plugins.preEvictionFilter.enabled[0]",
        "MyEvictor",
    );
}

#[test]
fn duplicates_are_refused() {
    let text = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: a\n- name: a\n";
    refusal(text, "profiles[1].name", "used twice");
    let text = profile(
        "  plugins:\n    deschedule:\n      enabled: [RemoveFailedPods, RemoveFailedPods]\n",
    );
    refusal(&text, "profiles[0].plugins.deschedule.enabled[1]", "twice");
    let text = profile("  pluginConfig:\n  - name: RemoveFailedPods\n  - name: RemoveFailedPods\n");
    refusal(&text, "profiles[0].pluginConfig[1].name", "twice");
}

#[test]
fn unknown_fields_are_refused_with_their_path() {
    let text =
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nevictLocalStoragePods: true\n";
    refusal(text, "evictLocalStoragePods", "unknown field");
    refusal(
        &profile("  plugin: {}\n"),
        "profiles[0].plugin",
        "unknown field",
    );
    let text = profile(
        "  pluginConfig:\n  - name: RemoveDuplicates\n    args: {excludeOwnerKind: [Job]}\n  plugins:\n    balance:\n      enabled: [RemoveDuplicates]\n",
    );
    refusal(
        &text,
        "profiles[0].pluginConfig[0].args.excludeOwnerKind",
        "unknown field",
    );
    let text = profile("  pluginConfig:\n  - name: DefaultEvictor\n    args: {nodefit: true}\n");
    refusal(
        &text,
        "profiles[0].pluginConfig[0].args.nodefit",
        "unknown field",
    );
}

#[test]
fn thresholds_out_of_range_are_refused() {
    let lnu = |t: &str, target: &str| {
        profile(&format!("  pluginConfig:\n  - name: LowNodeUtilization\n    args:\n      thresholds: {t}\n      targetThresholds: {target}\n  plugins:\n    balance:\n      enabled: [LowNodeUtilization]\n"))
    };
    let args = "profiles[0].pluginConfig[0].args";
    refusal(
        &lnu("{cpu: -1}", "{cpu: 50}"),
        &format!("{args}.thresholds.cpu"),
        "not in [0, 100]",
    );
    refusal(
        &lnu("{cpu: 10}", "{cpu: 101}"),
        &format!("{args}.targetThresholds.cpu"),
        "[0, 100]",
    );
    refusal(
        &lnu("{cpu: 10}", "{memory: 50}"),
        &format!("{args}.targetThresholds"),
        "different resources",
    );
    refusal(
        &lnu("{cpu: 60}", "{cpu: 50}"),
        &format!("{args}.thresholds.cpu"),
        "greater than",
    );
    refusal(
        &lnu("{}", "{cpu: 50}"),
        &format!("{args}.thresholds"),
        "no resource threshold",
    );
    refusal(
        &lnu("{cpu: ten}", "{cpu: 50}"),
        &format!("{args}.thresholds.cpu"),
        "want a number",
    );
}

#[test]
fn namespaces_are_include_or_exclude() {
    let text = profile(
        "  pluginConfig:\n  - name: PodLifeTime\n    args:\n      maxPodLifeTimeSeconds: 60\n      namespaces: {include: [a], exclude: [b]}\n  plugins:\n    deschedule:\n      enabled: [PodLifeTime]\n",
    );
    refusal(
        &text,
        "profiles[0].pluginConfig[0].args.namespaces.exclude",
        "only one of",
    );
    let text = profile(
        "  pluginConfig:\n  - name: HighNodeUtilization\n    args:\n      thresholds: {cpu: 20}\n      evictableNamespaces: {include: [a]}\n  plugins:\n    balance:\n      enabled: [HighNodeUtilization]\n",
    );
    refusal(
        &text,
        "profiles[0].pluginConfig[0].args.evictableNamespaces.include",
        "only exclude",
    );
}

#[test]
fn plugins_whose_defaults_are_not_enough_need_their_config() {
    for (plugin, point) in [
        ("PodLifeTime", "deschedule"),
        ("RemovePodsHavingTooManyRestarts", "deschedule"),
        ("RemovePodsViolatingNodeAffinity", "deschedule"),
        ("LowNodeUtilization", "balance"),
        ("HighNodeUtilization", "balance"),
    ] {
        let text = profile(&format!(
            "  plugins:\n    {point}:\n      enabled: [{plugin}]\n"
        ));
        refusal(
            &text,
            &format!("profiles[0].plugins.{point}.enabled[0]"),
            "no pluginConfig entry",
        );
    }
}

#[test]
fn top_level_fields_are_checked() {
    let top =
        |line: &str| format!("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n{line}\n");
    refusal(
        &top("maxNoOfPodsToEvictPerNode: -1"),
        "maxNoOfPodsToEvictPerNode",
        "negative",
    );
    refusal(
        &top("maxNoOfPodsToEvictTotal: 1.5"),
        "maxNoOfPodsToEvictTotal",
        "integer",
    );
    refusal(&top("nodeSelector: 'a in (b'"), "nodeSelector", "(list)");
    refusal(
        &top("gracePeriodSeconds: -5"),
        "gracePeriodSeconds",
        "negative",
    );
    refusal(
        "kind: DeschedulerPolicy\n",
        "apiVersion",
        "descheduler/v1alpha2",
    );
    refusal(
        "apiVersion: descheduler/v1alpha3\nkind: DeschedulerPolicy\n",
        "apiVersion",
        "v1alpha3",
    );
    refusal(
        "apiVersion: descheduler/v1alpha2\nkind: Policy\n",
        "kind",
        "DeschedulerPolicy",
    );
    assert!(matches!(refused("a: [b"), PolicyError::Syntax(_)));
    let (d, _) = draft(&top("nodeSelector: 'node=node1,zone in (a,b),!spot'\nmaxNoOfPodsToEvictPerNamespace: 3\ngracePeriodSeconds: 0"));
    assert_eq!(
        d.limits.node_selector.as_deref(),
        Some("node=node1,zone in (a,b),!spot")
    );
    assert_eq!(d.limits.max_per_namespace, Some(3));
    assert_eq!(d.limits.grace_period_seconds, Some(0));
}

#[test]
fn the_node_selector_selects_as_kubernetes_reads_it() {
    let p = Policy {
        node_selector: Some("node=node1,zone in (a,b),!spot".into()),
        ..Policy::default()
    };
    let sel = p.nodes().expect("a selector");
    let labels = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    assert!(sel.matches(&labels(&[("node", "node1"), ("zone", "a")])));
    assert!(!sel.matches(&labels(&[("node", "node1"), ("zone", "c")])));
    assert!(!sel.matches(&labels(&[("node", "node1"), ("zone", "a"), ("spot", "")])));
    assert!(Policy::default().nodes().is_none());
}

#[test]
fn what_the_descheduler_ignores_is_accepted_with_a_warning() {
    let text = profile(
        "  pluginConfig:\n  - name: RemoveFailedPods\n  - name: RemoveDuplicates\n  plugins:\n    deschedule:\n      enabled: [RemoveFailedPods]\n      disabled: [PodLifeTime]\n    sort:\n      enabled: [Anything]\n",
    );
    let (d, warnings) = draft(&text);
    assert_eq!(
        names(&d),
        vec![("p".to_string(), vec![Strategy::RemoveFailedPods])]
    );
    let fields: Vec<&str> = warnings.iter().map(|w| w.field.as_str()).collect();
    assert_eq!(
        fields,
        vec![
            "profiles[0].plugins.sort",
            "profiles[0].plugins.deschedule.disabled",
            "profiles[0].pluginConfig[1]",
        ]
    );
    assert!(warnings.iter().all(|w| w.profile.as_deref() == Some("p")));
    assert!(warnings[2]
        .to_string()
        .contains("RemoveDuplicates is configured but not enabled"));
}

#[test]
fn the_evictor_gets_the_descheduler_s_defaults() {
    let (d, _) = draft(&profile("  plugins: {}\n"));
    let ev = &d.profiles[0].evictor.args;
    assert_eq!(
        at(ev, "priorityThreshold.value").as_i64(),
        Some(2_000_000_000)
    );
    let text = profile("  pluginConfig:\n  - name: DefaultEvictor\n    args: {priorityThreshold: {name: high}, minPodAge: 5m}\n");
    let (d, _) = draft(&text);
    let ev = &d.profiles[0].evictor.args;
    assert_eq!(at(ev, "priorityThreshold.name").as_str(), Some("high"));
    assert!(at(ev, "priorityThreshold.value").is_null());
    let text = profile("  pluginConfig:\n  - name: DefaultEvictor\n    args: {minPodAge: five}\n");
    refusal(&text, "profiles[0].pluginConfig[0].args.minPodAge", "five");
}

/// A valid policy touching every part, for mutations.
const VALID: &str = r#"apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
nodeSelector: "node=node1"
maxNoOfPodsToEvictPerNode: 5
profiles:
  - name: ProfileName
    pluginConfig:
    - name: "DefaultEvictor"
      args:
        nodeFit: true
        priorityThreshold: {value: 100}
    - name: "LowNodeUtilization"
      args:
        thresholds: {cpu: 20, memory: 20}
        targetThresholds: {cpu: 50, memory: 50}
    - name: "PodLifeTime"
      args:
        maxPodLifeTimeSeconds: 86400
        labelSelector:
          matchExpressions:
          - {key: tier, operator: In, values: [cache]}
    plugins:
      deschedule:
        enabled: ["PodLifeTime"]
      balance:
        enabled: ["LowNodeUtilization"]
"#;

#[test]
fn the_mutation_base_is_valid() {
    let (d, w) = draft(VALID);
    assert_eq!(
        names(&d)[0].1,
        vec![Strategy::PodLifeTime, Strategy::LowNodeUtilization]
    );
    assert!(w.is_empty(), "{w:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parse_never_panics(text in "\\PC{0,400}") {
        let _ = Policy::parse(&text);
    }

    #[test]
    fn parse_never_panics_on_a_mutated_policy(
        edits in proptest::collection::vec((0usize..2000, 0usize..40, "[ -~\\n]{0,12}"), 1..6)
    ) {
        let mut text = VALID.to_string();
        for (pos, cut, insert) in edits {
            let start = pos % (text.len() + 1);
            let end = (start + cut).min(text.len());
            text.replace_range(start..end, &insert);
        }
        match Policy::parse(&text) {
            Ok(_) => {}
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}

#[test]
fn json_and_the_lower_case_extension_point_names_read_alike() {
    let json = r#"{"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy",
      "profiles": [{"name": "j", "pluginConfig": [{"name": "PodLifeTime", "args": {"maxPodLifeTimeSeconds": 60}}],
        "plugins": {"preevictionfilter": {"enabled": ["DefaultEvictor"]}, "presort": {"enabled": []},
                    "deschedule": {"enabled": ["PodLifeTime"]}}}]}"#;
    let (d, w) = draft(json);
    assert_eq!(
        names(&d),
        vec![("j".to_string(), vec![Strategy::PodLifeTime])]
    );
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(
        at(&d.profiles[0].strategies[0].1.args, "maxPodLifeTimeSeconds").as_u64(),
        Some(60)
    );
}
