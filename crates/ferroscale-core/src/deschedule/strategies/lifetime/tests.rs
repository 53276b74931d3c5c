//! Cases of the descheduler's `pod_lifetime_test.go`, each named by its test and description. The
//! eviction limits of `TestPodLifeTime_EvictionLimits` are the planner's: the strategy proposes every
//! pod, oldest first, and the limit takes from the front. Cases on pod conditions and ephemeral
//! containers, which ferroscale's model does not carry, are refused by `validate` instead.

use super::*;
use crate::deschedule::evictor::EvictorArgs;
use crate::deschedule::fixtures::{DeschedulerPod, Fixture};
use crate::fixtures::{node, pod, resources, PodBuilder};
use crate::model::volumes::{Claim, ClaimState};
use crate::model::workload::{ContainerState, PodPhase};

mod validation;

const NOW: i64 = 1_700_000_000;
/// 2009-11-10T23:00:00Z, the test's `olderPodCreationTime`.
const OLDER: i64 = 1_257_894_000;
const NEWER: i64 = NOW;

/// `buildTestPodForNode1`: on n1, created at `created`, no owner.
fn bare(name: &str, created: i64) -> PodBuilder {
    pod("default", name)
        .requests(resources(100, 0, 1))
        .on("n1")
        .created(created)
}

/// `buildTestPodWithRSOwnerRefForNode1`.
fn rs(name: &str, created: i64) -> PodBuilder {
    bare(name, created).owner("ReplicaSet", "replicaset-1")
}

/// `buildTestPodWithRSOwnerRefWithPendingPhaseForNode1`.
fn pending(name: &str, created: i64) -> PodBuilder {
    rs(name, created).phase(PodPhase::Pending)
}

/// `buildPod`: on node1 (here n1 too), owned by a ReplicaSet; the test leaves its creation time zero,
/// which reads as very old.
fn built(name: &str) -> PodBuilder {
    rs(name, OLDER)
}

fn waiting(init: bool, reason: &str) -> ContainerState {
    ContainerState {
        init,
        waiting: Some(reason.into()),
        ..Default::default()
    }
}

fn terminated(init: bool, reason: Option<&str>, code: i32) -> ContainerState {
    ContainerState {
        init,
        terminated: reason.map(String::from),
        exit_code: Some(code),
        ..Default::default()
    }
}

fn max(secs: u64) -> PodLifeTimeArgs {
    PodLifeTimeArgs {
        max_pod_life_time_seconds: Some(secs),
        ..Default::default()
    }
}

fn states(a: PodLifeTimeArgs, s: &[&str]) -> PodLifeTimeArgs {
    PodLifeTimeArgs {
        states: s.iter().map(|s| s.to_string()).collect(),
        ..a
    }
}

fn only(s: &[&str]) -> PodLifeTimeArgs {
    states(PodLifeTimeArgs::default(), s)
}

/// The pods proposed, by name, in order.
fn run(args: &PodLifeTimeArgs, evictor: EvictorArgs, pods: Vec<PodBuilder>) -> Vec<String> {
    assert_eq!(args.validate(), Ok(()));
    let pods = pods.into_iter().map(PodBuilder::build).collect();
    let n1 = node("n1")
        .allocatable(resources(2000, 3000, 10))
        .ready()
        .build();
    let mut f = Fixture::new(vec![n1], pods);
    f.now = NOW;
    let cluster = f.cluster();
    let view = View::new(&cluster);
    let evictor = Evictor::new(&evictor, &view);
    propose(args, &view, &evictor)
        .into_iter()
        .map(|p| {
            assert_eq!(p.strategy, Strategy::PodLifeTime);
            p.pod.name.clone()
        })
        .collect()
}

type Case = (
    &'static str,
    PodLifeTimeArgs,
    Vec<PodBuilder>,
    &'static [&'static str],
);

fn check(test: &str, cases: Vec<Case>) {
    for (name, args, pods, want) in cases {
        assert_eq!(
            run(&args, EvictorArgs::default(), pods),
            want,
            "{test}: {name}"
        );
    }
}

#[test]
fn pod_life_time_and_evictor_configuration() {
    let terminating = |b: PodBuilder| b.with(|p| p.meta.deleted = Some(0));
    let foo_bar = PodLifeTimeArgs {
        label_selector: Some(Selector {
            match_labels: crate::fixtures::labels(&[("foo", "bar")]),
            ..Default::default()
        }),
        ..max(600)
    };
    check(
        "TestPodLifeTime",
        vec![(
            "No pod should be evicted since pod terminating",
            foo_bar.clone(),
            vec![terminating(rs("p14", OLDER)), terminating(rs("p15", OLDER))],
            &[],
        )],
    );
    check(
        "TestPodLifeTime_GenericFiltering",
        vec![(
            "1 pod matching label selector should be evicted",
            foo_bar,
            vec![
                rs("p12", OLDER).label("foo", "bar"),
                rs("p13", OLDER).label("foo", "bar1"),
            ],
            &["p12"],
        )],
    );
    // TestPodLifeTime_EvictorConfiguration
    let with_pvc = || {
        rs("p11", OLDER).claims(vec![Claim {
            key: "default/foo".into(),
            state: ClaimState::Bound {
                volume: "pv".into(),
                node_affinity: vec![],
                zones: vec![],
                driver: None,
            },
            exclusive: false,
            ephemeral: false,
            class: None,
        }])
    };
    let ignore_pvc = EvictorArgs {
        ignore_pvc_pods: true,
        ..Default::default()
    };
    assert_eq!(
        run(&max(600), ignore_pvc, vec![with_pvc()]),
        Vec::<String>::new(),
        "Does not evict pvc pods with ignorePvcPods set to true"
    );
    assert_eq!(
        run(&max(600), EvictorArgs::default(), vec![with_pvc()]),
        ["p11"],
        "Evicts pvc pods with ignorePvcPods set to false (or unset)"
    );
}

#[test]
fn pod_life_time_eviction_limits_age_and_phases() {
    check("TestPodLifeTime_EvictionLimits", vec![
        ("2 Oldest pods should be evicted when maxPodsToEvictPerNode and maxPodsToEvictPerNamespace are not set", max(600), vec![rs("p1", NEWER), rs("p2", OLDER), pending("p9", OLDER)], &["p2", "p9"]),
        ("1 Oldest pod should be evicted when maxPodsToEvictPerNamespace is set to 1", max(600), vec![rs("p1", NEWER), rs("p2", OLDER)], &["p2"]),
        ("1 Oldest pod should be evicted when maxPodsToEvictTotal is set to 1", max(600), vec![rs("p1", NEWER), rs("p2", OLDER)], &["p2"]),
        ("1 Oldest pod should be evicted when maxPodsToEvictPerNode is set to 1", max(600), vec![rs("p1", NEWER), rs("p2", OLDER)], &["p2"]),
    ]);
    check("TestPodLifeTime_AgeThreshold", vec![
        ("Two pods in the default namespace, 1 is new and 1 very is old. 1 should be evicted.", max(600), vec![rs("p1", NEWER), rs("p2", OLDER)], &["p2"]),
        ("Two pods in the default namespace, 2 are new and 0 are old. 0 should be evicted.", max(600), vec![rs("p3", NEWER), rs("p4", NEWER)], &[]),
        ("Two pods in the default namespace, 1 created 605 seconds ago. 1 should be evicted.", max(600), vec![rs("p5", NEWER), rs("p6", NOW - 605)], &["p6"]),
        ("Two pods in the default namespace, 1 created 595 seconds ago. 0 should be evicted.", max(600), vec![bare("p7", NEWER), bare("p8", NOW - 595)], &[]),
    ]);
    check(
        "TestPodLifeTime_PodPhaseStates",
        vec![
            (
                "Two old pods with different states. 1 should be evicted.",
                states(max(600), &["Pending"]),
                vec![
                    pending("p9", OLDER),
                    rs("p10", OLDER).phase(PodPhase::Running),
                ],
                &["p9"],
            ),
            (
                "1 pod with pod status phase v1.PodSucceeded should be evicted",
                states(max(600), &["Succeeded"]),
                vec![rs("p16", OLDER).phase(PodPhase::Succeeded)],
                &["p16"],
            ),
            (
                "1 pod with pod status phase v1.PodFailed should be evicted",
                states(max(600), &["Failed"]),
                vec![rs("p16", OLDER).phase(PodPhase::Failed)],
                &["p16"],
            ),
            (
                "1 pod with pod status phase v1.PodUnknown should be evicted",
                states(max(600), &["Unknown"]),
                vec![rs("p16", OLDER).phase(PodPhase::Unknown)],
                &["p16"],
            ),
        ],
    );
}

#[test]
fn pod_life_time_container_and_pod_reasons() {
    let w = |name: &str, init: bool, reason: &str| {
        pending(name, OLDER).container(waiting(init, reason))
    };
    let stuck = |name: &str, reason: &str| {
        pod("default", name)
            .on("n1")
            .container(waiting(false, reason))
            .owner("ReplicaSet", "replicaset-1")
            .created(OLDER)
    };
    let mut cases: Vec<Case> = vec![
        ("Two pods, one with ContainerCreating state. 1 should be evicted.", states(max(600), &["ContainerCreating"]), vec![pending("p9", OLDER), stuck("container-creating-stuck", "ContainerCreating")], &["container-creating-stuck"]),
        ("Two pods, one with PodInitializing state. 1 should be evicted.", states(max(600), &["PodInitializing"]), vec![pending("p9", OLDER), stuck("pod-initializing-stuck", "PodInitializing")], &["pod-initializing-stuck"]),
        ("1 pod with init container status CreateContainerError should not be evicted without includingInitContainers", states(max(600), &["CreateContainerError"]), vec![w("p9", true, "CreateContainerError")], &[]),
        ("1 pod with init container status CreateContainerError should be evicted with includingInitContainers", PodLifeTimeArgs { including_init_containers: true, ..states(max(600), &["CreateContainerError"]) }, vec![w("p9", true, "CreateContainerError")], &["p9"]),
        ("1 pod with ImagePullBackOff status should be ignored when States filter is ContainerCreating", states(max(600), &["ContainerCreating"]), vec![w("p9", false, "ImagePullBackOff")], &[]),
    ];
    for (name, reason) in [
        (
            "1 pod with container status ImagePullBackOff should be evicted",
            "ImagePullBackOff",
        ),
        (
            "1 pod with container status CrashLoopBackOff should be evicted",
            "CrashLoopBackOff",
        ),
        (
            "1 pod with container status CreateContainerConfigError should be evicted",
            "CreateContainerConfigError",
        ),
        (
            "1 pod with container status ErrImagePull should be evicted",
            "ErrImagePull",
        ),
        (
            "1 pod with container status CreateContainerError should be evicted",
            "CreateContainerError",
        ),
        (
            "1 pod with container status InvalidImageName should be evicted",
            "InvalidImageName",
        ),
    ] {
        cases.push((
            name,
            states(max(600), &[reason]),
            vec![w("p9", false, reason)],
            &["p9"],
        ));
    }
    check("TestPodLifeTime_ContainerWaitingReasons", cases);

    let mut cases: Vec<Case> = Vec::new();
    for (name, reason) in [
        (
            "1 pod with pod status reason NodeLost should be evicted",
            "NodeLost",
        ),
        (
            "1 pod with pod status reason NodeAffinity should be evicted",
            "NodeAffinity",
        ),
        (
            "1 pod with pod status reason Shutdown should be evicted",
            "Shutdown",
        ),
        (
            "1 pod with pod status reason UnexpectedAdmissionError should be evicted",
            "UnexpectedAdmissionError",
        ),
    ] {
        let p = pending("p9", OLDER).with(move |p| p.meta.status_reason = Some(reason.into()));
        cases.push((name, states(max(600), &[reason]), vec![p], &["p9"]));
    }
    check("TestPodLifeTime_PodStatusReasons", cases);

    let failed = |name: &str| built(name).phase(PodPhase::Failed);
    check(
        "TestStatesWithTerminatedReasons",
        vec![
            (
                "evict pod with matching terminated reason via states",
                only(&["NodeAffinity"]),
                vec![failed("p1").container(terminated(false, Some("NodeAffinity"), 0))],
                &["p1"],
            ),
            (
                "evict pod with matching pod status reason via states",
                only(&["Shutdown"]),
                vec![failed("p1").with(|p| p.meta.status_reason = Some("Shutdown".into()))],
                &["p1"],
            ),
            (
                "states matches terminated reason on init container",
                PodLifeTimeArgs {
                    including_init_containers: true,
                    ..only(&["CreateContainerConfigError"])
                },
                vec![built("p1").container(terminated(
                    true,
                    Some("CreateContainerConfigError"),
                    0,
                ))],
                &["p1"],
            ),
            (
                "states does not match terminated reason on init container without flag",
                only(&["CreateContainerConfigError"]),
                vec![built("p1").container(terminated(
                    true,
                    Some("CreateContainerConfigError"),
                    0,
                ))],
                &[],
            ),
        ],
    );
}

#[test]
fn pod_life_time_owner_kinds_exit_codes_and_combined() {
    let failed = |name: &str| built(name).phase(PodPhase::Failed);
    let job = |name: &str| {
        pod("default", name)
            .on("n1")
            .created(OLDER)
            .phase(PodPhase::Failed)
            .owner("Job", "job1")
    };
    let kinds = |include: &[&str], exclude: &[&str]| PodLifeTimeArgs {
        owner_kinds: Some(OwnerKinds {
            include: include.iter().map(|s| s.to_string()).collect(),
            exclude: exclude.iter().map(|s| s.to_string()).collect(),
        }),
        ..only(&["Failed"])
    };
    check(
        "TestOwnerKindsFiltering",
        vec![
            (
                "exclude Job owner kind: Job-owned pod not evicted",
                kinds(&[], &["Job"]),
                vec![job("p1")],
                &[],
            ),
            (
                "exclude Job owner kind: non-Job pod still evicted",
                kinds(&[], &["Job"]),
                vec![job("p1"), failed("p2")],
                &["p2"],
            ),
            (
                "include only Job owner kind",
                kinds(&["Job"], &[]),
                vec![job("p1"), failed("p2")],
                &["p1"],
            ),
        ],
    );
    let codes = |c: &[i32]| PodLifeTimeArgs {
        exit_codes: c.to_vec(),
        ..only(&["Failed"])
    };
    check(
        "TestExitCodesFiltering",
        vec![
            (
                "evict pod with matching exit code",
                codes(&[1]),
                vec![failed("p1").container(terminated(false, None, 1))],
                &["p1"],
            ),
            (
                "exit code not matched, 0 evictions",
                codes(&[2]),
                vec![failed("p1").container(terminated(false, None, 1))],
                &[],
            ),
        ],
    );
    check(
        "TestCombinedFilters",
        vec![(
            "failed pod removal compat: Failed + min age + exclude Job",
            PodLifeTimeArgs {
                max_pod_life_time_seconds: Some(0),
                ..kinds(&[], &["Job"])
            },
            vec![
                failed("failed-rs").container(terminated(false, Some("Error"), 1)),
                job("failed-job"),
            ],
            &["failed-rs"],
        )],
    );
}
