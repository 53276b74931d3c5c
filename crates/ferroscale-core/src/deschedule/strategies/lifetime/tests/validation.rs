//! `TestValidation` and `TestValidatePodLifeTimeArgs`' cases, and the fields ferroscale refuses.

use super::*;

#[test]
fn what_the_model_cannot_read_is_refused_by_name() {
    // The cases on pod conditions and ephemeral containers: ferroscale refuses their arguments.
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
        let e = a.validate().unwrap_err().to_string();
        assert!(e.contains("conditions: not supported"), "{name}: {e}");
    }
    // TestStatesWithEphemeralContainers: "states matches terminated reason on ephemeral container".
    let a: PodLifeTimeArgs =
        serde_norway::from_str("states: [OOMKilled]\nincludingEphemeralContainers: true").unwrap();
    assert!(a
        .validate()
        .unwrap_err()
        .to_string()
        .contains("includingEphemeralContainers"));
    // ... and the same with the flag off: accepted (ephemeral containers are never read).
    let a: PodLifeTimeArgs = serde_norway::from_str("states: [OOMKilled]").unwrap();
    assert_eq!(a.validate(), Ok(()));
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
