//! The policy read into the typed profiles the planner runs: order, evictor, limits, and the
//! field named when the typed arguments refuse a value.

use super::{Configured, Draft, DraftProfile, Policy};
use crate::deschedule::args::Strategy;
use crate::deschedule::strategies::PluginArgs;

#[test]
fn a_policy_reads_into_typed_profiles() {
    let text = r#"apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
maxNoOfPodsToEvictPerNode: 2
maxNoOfPodsToEvictTotal: 10
profiles:
- name: spread
  pluginConfig:
  - name: DefaultEvictor
    args: {nodeFit: true, minReplicas: 2, evictLocalStoragePods: true}
  plugins:
    balance:
      enabled: [RemoveDuplicates, RemovePodsViolatingTopologySpreadConstraint]
    deschedule:
      enabled: [RemovePodsViolatingNodeTaints, RemovePodsViolatingInterPodAntiAffinity, RemoveFailedPods]
- name: second
  plugins:
    deschedule:
      enabled: [RemoveFailedPods]
"#;
    let (policy, warnings) = Policy::parse(text).expect("read");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(policy.max_per_node, Some(2));
    assert_eq!(policy.max_total, Some(10));
    assert_eq!(policy.max_per_namespace, None);
    let p = &policy.profiles[0];
    assert_eq!(p.name, "spread");
    let order: Vec<Strategy> = p.strategies.iter().map(PluginArgs::strategy).collect();
    assert_eq!(
        order,
        vec![
            Strategy::RemovePodsViolatingNodeTaints,
            Strategy::RemovePodsViolatingInterPodAntiAffinity,
            Strategy::RemoveFailedPods,
            Strategy::RemoveDuplicates,
            Strategy::RemovePodsViolatingTopologySpreadConstraint,
        ],
        "deschedule plugins first, then balance ones, each in the order enabled"
    );
    assert!(p.evictor.node_fit && p.evictor.evict_local_storage_pods);
    assert_eq!(p.evictor.min_replicas, 2);
    let threshold = p.evictor.priority_threshold.as_ref().and_then(|t| t.value);
    assert_eq!(
        threshold,
        Some(2_000_000_000),
        "system-cluster-critical, as the descheduler"
    );
    let second = &policy.profiles[1];
    assert!(!second.evictor.node_fit);
    assert_eq!(second.strategies.len(), 1);
}

#[test]
fn the_typed_refusal_names_the_field() {
    let draft = Draft {
        limits: Policy::default(),
        profiles: vec![DraftProfile {
            name: "p".into(),
            evictor: Configured {
                args: serde_norway::from_str("{nodeFit: maybe}").expect("yaml"),
                at: "profiles[0].pluginConfig[0].args".into(),
                defaults_only: false,
            },
            strategies: Vec::new(),
        }],
    };
    let e = draft.typed().expect_err("refused");
    assert_eq!(e.path(), Some("profiles[0].pluginConfig[0].args"));
    assert!(e.to_string().starts_with("policy: profile \"p\": "), "{e}");
}

#[test]
fn every_strategy_reads_its_checked_args() {
    for &s in Strategy::ALL {
        let args = match s {
            Strategy::LowNodeUtilization => "{thresholds: {cpu: 20}, targetThresholds: {cpu: 50}}",
            Strategy::HighNodeUtilization => "{thresholds: {cpu: 20}}",
            Strategy::RemovePodsViolatingNodeAffinity => {
                "{nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecution]}"
            }
            Strategy::RemovePodsHavingTooManyRestarts => "{podRestartThreshold: 3}",
            Strategy::PodLifeTime => "{maxPodLifeTimeSeconds: 60}",
            _ => "{}",
        };
        let point = if crate::deschedule::strategies::balances(s) {
            "balance"
        } else {
            "deschedule"
        };
        let text = format!("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  pluginConfig:\n  - name: {s}\n    args: {args}\n  plugins: {{{point}: {{enabled: [{s}]}}}}\n");
        let (policy, _) = Policy::parse(&text).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(policy.profiles[0].strategies[0].strategy(), s);
    }
}
