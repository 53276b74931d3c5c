//! `TestValidation` and `TestValidatePodLifeTimeArgs`' cases, and the condition and ephemeral
//! container filters.

use super::*;

#[test]
fn conditions_and_ephemeral_containers_are_accepted() {
    // The cases on pod conditions and ephemeral containers: accepted, but for the empty filter.
    let conditions = [
        ("TestConditionFiltering: evict pod with matching condition reason", "conditions: [{reason: PodCompleted, status: \"True\"}]"),
        ("TestConditionFiltering: evict pod matching condition type only", "conditions: [{type: Ready}]"),
        ("TestConditionFiltering: no matching conditions, 0 evictions", "conditions: [{reason: PodCompleted}]"),
        ("TestTransitionTimeFiltering: evict pod with old transition time", "states: [Succeeded]\nconditions: [{reason: PodCompleted, status: \"True\", minTimeSinceLastTransitionSeconds: 300}]"),
        ("TestTransitionTimeFiltering: do not evict pod with recent transition time", "states: [Succeeded]\nconditions: [{minTimeSinceLastTransitionSeconds: 14400}]"),
        ("TestTransitionTimeFiltering: transition time scoped to matching conditions only", "conditions: [{reason: PodCompleted, minTimeSinceLastTransitionSeconds: 300}]"),
        ("TestTransitionTimeFiltering: no conditions on pod, transition time filter returns false", "states: [Running]\nconditions: [{minTimeSinceLastTransitionSeconds: 300}]"),
        ("TestCombinedFilters: user scenario: Succeeded + PodCompleted condition + transition time threshold", "states: [Succeeded]\nconditions: [{reason: PodCompleted, status: \"True\", minTimeSinceLastTransitionSeconds: 300}]"),
        ("TestValidation: valid: conditions set", "conditions: [{type: Ready}]"),
        ("TestValidation: valid: states with conditions", "states: [Running]\nconditions: [{type: Ready}]"),
        ("TestValidation: valid: condition with minTimeSinceLastTransitionSeconds", "conditions: [{type: Ready, minTimeSinceLastTransitionSeconds: 60}]"),
        ("TestValidation: valid: condition with only minTimeSinceLastTransitionSeconds", "conditions: [{minTimeSinceLastTransitionSeconds: 60}]"),
        ("TestValidation: invalid: empty condition filter", "conditions: [{}]"),
    ];
    for (name, yaml) in conditions {
        let a: PodLifeTimeArgs = serde_norway::from_str(yaml).unwrap();
        match a.validate() {
            Ok(()) => assert!(!name.contains("invalid"), "{name}"),
            Err(e) => assert!(
                name.contains("invalid") && e.to_string().contains("conditions[0]"),
                "{name}: {e}"
            ),
        }
    }
    // TestStatesWithEphemeralContainers: "states matches terminated reason on ephemeral container".
    let a: PodLifeTimeArgs =
        serde_norway::from_str("states: [OOMKilled]\nincludingEphemeralContainers: true").unwrap();
    assert_eq!(a.validate(), Ok(()));
}

/// podlifetime TestTransitionTimeFiltering / TestConditionFiltering / TestStatesWithEphemeralContainers:
/// which pods the filters select.
#[test]
fn conditions_and_ephemeral_containers_select_as_the_descheduler() {
    use crate::model::workload::{ContainerState, PodCondition};
    let now = 100_000;
    let cond = |kind: &str, status: &str, reason: &str, at: Option<i64>| PodCondition {
        kind: kind.into(),
        status: status.into(),
        reason: reason.into(),
        last_transition: at,
    };
    let pod = |conds: Vec<PodCondition>| {
        let mut p = Pod::default();
        p.meta.phase = crate::model::workload::PodPhase::Succeeded;
        p.meta.conditions = conds.into();
        p
    };
    let args = |yaml: &str| serde_norway::from_str::<PodLifeTimeArgs>(yaml).unwrap();
    let completed_old = pod(vec![cond("Ready", "True", "PodCompleted", Some(now - 600))]);
    let completed_new = pod(vec![cond("Ready", "True", "PodCompleted", Some(now - 60))]);
    let bare = pod(vec![]);
    // "evict pod with matching condition reason"
    let a = args("conditions: [{reason: PodCompleted, status: \"True\"}]");
    assert!(a.selects(&completed_old, now) && !a.selects(&bare, now));
    // "no matching conditions, 0 evictions"
    let a = args("conditions: [{reason: Other}]");
    assert!(!a.selects(&completed_old, now));
    // "evict pod with old transition time" / "do not evict pod with recent transition time"
    let a = args("states: [Succeeded]\nconditions: [{reason: PodCompleted, status: \"True\", minTimeSinceLastTransitionSeconds: 300}]");
    assert!(a.selects(&completed_old, now));
    assert!(!a.selects(&completed_new, now));
    // "no conditions on pod, transition time filter returns false"; no transition time: no match.
    let a = args("conditions: [{minTimeSinceLastTransitionSeconds: 300}]");
    assert!(!a.selects(&bare, now));
    assert!(!a.selects(&pod(vec![cond("Ready", "True", "", None)]), now));
    // "states matches terminated reason on ephemeral container": only with the flag.
    let mut debug = Pod::default();
    debug.meta.containers.push(ContainerState {
        ephemeral: true,
        terminated: Some("OOMKilled".into()),
        ..ContainerState::default()
    });
    assert!(args("states: [OOMKilled]\nincludingEphemeralContainers: true").selects(&debug, now));
    assert!(!args("states: [OOMKilled]").selects(&debug, now));
}

#[test]
fn validation() {
    // TestValidation
    let ok = [
        ("valid: states set", "states: [Running]"),
        (
            "valid: maxPodLifeTimeSeconds set",
            "maxPodLifeTimeSeconds: 600",
        ),
        (
            "valid: states with maxPodLifeTimeSeconds",
            "states: [Running]\nmaxPodLifeTimeSeconds: 600",
        ),
        ("valid: exitCodes only", "exitCodes: [1]"),
    ];
    for (name, yaml) in ok {
        let a: PodLifeTimeArgs = serde_norway::from_str(yaml).unwrap();
        assert_eq!(a.validate(), Ok(()), "{name}");
    }
    let bad = [
        (
            "invalid: no filter criteria",
            "namespaces: {include: [a]}",
            "maxPodLifeTimeSeconds: at least one filter",
        ),
        (
            "invalid: both include and exclude namespaces",
            "states: [Running]\nnamespaces: {include: [a], exclude: [b]}",
            "namespaces",
        ),
        (
            "invalid: both include and exclude ownerKinds",
            "states: [Running]\nownerKinds: {include: [Job], exclude: [ReplicaSet]}",
            "ownerKinds",
        ),
        (
            "invalid: bad state name",
            "states: [Sleeping]",
            "states[0]: \"Sleeping\"",
        ),
    ];
    for (name, yaml, field) in bad {
        let a: PodLifeTimeArgs = serde_norway::from_str(yaml).unwrap();
        let e = a.validate().unwrap_err().to_string();
        assert!(e.contains(field), "{name}: {e}");
    }
    let e = serde_norway::from_str::<PodLifeTimeArgs>("maxPodLifeTime: 60").unwrap_err();
    assert!(e.to_string().contains("maxPodLifeTime"), "{e}");
}

#[test]
fn validate_pod_life_time_args() {
    // TestValidatePodLifeTimeArgs
    let ok = [
        (
            "valid arg, no errors",
            "maxPodLifeTimeSeconds: 1\nstates: [Running]",
        ),
        (
            "Pod Status Reasons Succeeded or Failed",
            "maxPodLifeTimeSeconds: 1\nstates: [Succeeded, Failed]",
        ),
        (
            "Pod Status Reasons CrashLoopBackOff ",
            "maxPodLifeTimeSeconds: 1\nstates: [CrashLoopBackOff]",
        ),
    ];
    for (name, yaml) in ok {
        let a: PodLifeTimeArgs = serde_norway::from_str(yaml).unwrap();
        assert_eq!(a.validate(), Ok(()), "{name}");
    }
    let bad = [
        (
            "nil MaxPodLifeTimeSeconds arg, expects errors",
            "{}",
            "maxPodLifeTimeSeconds: at least one filter",
        ),
        (
            "invalid pod state arg, expects errors",
            "maxPodLifeTimeSeconds: 1\nstates: [InvalidState]",
            "InvalidState",
        ),
        (
            "nil MaxPodLifeTimeSeconds arg and invalid pod state arg, expects errors",
            "states: [InvalidState]",
            "InvalidState",
        ),
    ];
    for (name, yaml, words) in bad {
        let a: PodLifeTimeArgs = serde_norway::from_str(yaml).unwrap();
        let e = a.validate().unwrap_err().to_string();
        assert!(e.contains(words), "{name}: {e}");
    }
}
