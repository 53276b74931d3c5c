//! Cases of the descheduler's `failedpods_test.go` (`TestRemoveFailedPods`), each named by its
//! description. The test builds its arguments without the defaults, so `minPodLifetimeSeconds` is
//! unset unless a case sets it.

use super::*;
use crate::deschedule::evictor::EvictorArgs;
use crate::deschedule::fixtures::{DeschedulerPod, Fixture};
use crate::fixtures::{node, pod, resources, PodBuilder};
use crate::model::workload::{ContainerState, Node};

const NOW: i64 = 1_700_000_000;

/// The test's `buildTestPod`: on `on`, owned by a ReplicaSet, created now.
fn failed(name: &str, on: &str) -> PodBuilder {
    pod("default", name)
        .requests(resources(1, 1, 1))
        .on(on)
        .owner("ReplicaSet", "replicaset-1")
        .created(NOW)
        .phase(PodPhase::Failed)
}

fn terminated(init: bool, reason: Option<&str>, code: i32) -> ContainerState {
    ContainerState {
        init,
        terminated: reason.map(String::from),
        exit_code: Some(code),
        ..Default::default()
    }
}

fn waiting(init: bool, reason: &str) -> ContainerState {
    ContainerState {
        init,
        waiting: Some(reason.into()),
        ..Default::default()
    }
}

fn tn(name: &str, cpu: i64, mem: i64) -> Node {
    node(name)
        .allocatable(resources(cpu, mem, 10))
        .ready()
        .build()
}

/// `createRemoveFailedPodsArgs(init, reasons, exitCodes, excludeKinds, minAge)`.
fn args(
    init: bool,
    reasons: &[&str],
    codes: &[i32],
    exclude: &[&str],
    min: Option<u64>,
) -> RemoveFailedPodsArgs {
    RemoveFailedPodsArgs {
        including_init_containers: init,
        reasons: reasons.iter().map(|s| s.to_string()).collect(),
        exit_codes: codes.to_vec(),
        exclude_owner_kinds: exclude.iter().map(|s| s.to_string()).collect(),
        min_pod_lifetime_seconds: min,
        ..Default::default()
    }
}

struct Case {
    name: &'static str,
    args: RemoveFailedPodsArgs,
    nodes: Vec<Node>,
    pods: Vec<PodBuilder>,
    node_fit: bool,
    want: &'static [&'static str],
}

#[test]
fn remove_failed_pods() {
    let n1 = || vec![tn("node1", 2000, 3000)];
    let none = || args(false, &[], &[], &[], None);
    let case = |name, args, nodes, pods, want| Case {
        name,
        args,
        nodes,
        pods,
        node_fit: false,
        want,
    };
    let node_affinity =
        |name: &str| failed(name, "node1").container(terminated(false, Some("NodeAffinity"), 0));
    let code = |name: &str, c: i32| failed(name, "node1").container(terminated(false, None, c));
    let init_affinity =
        || failed("p1", "node1").container(terminated(true, Some("NodeAffinity"), 0));
    let shutdown =
        |name: &str| failed(name, "node1").with(|p| p.meta.status_reason = Some("Shutdown".into()));
    let cases = vec![
        case("0 failures, 0 evictions", none(), n1(), vec![], &[]),
        case("1 container terminated with reason NodeAffinity, 1 eviction", none(), n1(), vec![node_affinity("p1")], &["p1"]),
        case("1 container terminated with exitCode 1, 1 eviction", args(false, &[], &[1], &[], None), n1(), vec![code("p1", 1)], &["p1"]),
        case("1 container terminated with exitCode 1, reason NodeAffinity, 1 eviction", args(false, &[], &[1], &[], None), n1(), vec![failed("p1", "node1").container(terminated(false, Some("NodeAffinity"), 1))], &["p1"]),
        case("1 container terminated with exitCode 1, expected exitCode 2, 0 eviction", args(false, &[], &[2], &[], None), n1(), vec![code("p1", 1)], &[]),
        case("2 containers terminated with exitCode 1 and 2 respectively, 2 evictions", args(false, &[], &[1, 2, 3], &[], None), n1(), vec![code("p1", 1), code("p2", 2)], &["p1", "p2"]),
        case("2 containers terminated with exitCode 1 and 2 respectively, expected exitCode 1, 1 eviction", args(false, &[], &[1], &[], None), n1(), vec![code("p1", 1), code("p2", 2)], &["p1"]),
        case("1 init container terminated with reason NodeAffinity, 1 eviction", args(true, &[], &[], &[], None), n1(), vec![init_affinity()], &["p1"]),
        case("1 init container terminated with exitCode 1, 1 eviction", args(true, &[], &[1], &[], None), n1(), vec![code("p1", 1)], &["p1"]),
        case("1 init container terminated with exitCode 2, expected 1, 0 eviction", args(true, &[], &[1], &[], None), n1(), vec![code("p1", 2)], &[]),
        case("1 init container waiting with reason CreateContainerConfigError, 1 eviction", args(true, &[], &[], &[], None), n1(), vec![failed("p1", "node1").container(waiting(true, "CreateContainerConfigError"))], &["p1"]),
        case("2 init container waiting with reason CreateContainerConfigError, 2 nodes, 2 evictions", args(true, &[], &[], &[], None), vec![tn("node1", 2000, 3000), tn("node2", 2000, 3000)], vec![
            failed("p1", "node1").container(terminated(true, Some("CreateContainerConfigError"), 0)),
            failed("p2", "node2").container(terminated(true, Some("CreateContainerConfigError"), 0)),
        ], &["p1", "p2"]),
        case("include reason=CreateContainerConfigError, 1 container terminated with reason CreateContainerConfigError, 1 eviction", args(false, &["CreateContainerConfigError"], &[], &[], None), n1(), vec![failed("p1", "node1").container(terminated(false, Some("CreateContainerConfigError"), 0))], &["p1"]),
        case("include reason=CreateContainerConfigError+NodeAffinity, 1 container terminated with reason CreateContainerConfigError, 1 eviction", args(false, &["CreateContainerConfigError", "NodeAffinity"], &[], &[], None), n1(), vec![failed("p1", "node1").container(terminated(false, Some("CreateContainerConfigError"), 0))], &["p1"]),
        case("include reason=CreateContainerConfigError, 1 container terminated with reason NodeAffinity, 0 eviction", args(false, &["CreateContainerConfigError"], &[], &[], None), n1(), vec![node_affinity("p1")], &[]),
        case("include init container=false, 1 init container waiting with reason CreateContainerConfigError, 0 eviction", args(false, &["CreateContainerConfigError"], &[], &[], None), n1(), vec![failed("p1", "node1").container(waiting(true, "CreateContainerConfigError"))], &[]),
        case("lifetime 1 hour, 1 container terminated with reason NodeAffinity, 0 eviction", args(false, &[], &[], &[], Some(3600)), n1(), vec![node_affinity("p1")], &[]),
        Case {
            node_fit: true,
            ..case("nodeFit=true, 1 unschedulable node, 1 container terminated with reason NodeAffinity, 0 eviction", none(), vec![tn("node1", 2000, 3000), node("node2").allocatable(resources(2000, 2000, 10)).ready().with(|n| n.unschedulable = true).build()], vec![node_affinity("p1")], &[])
        },
        Case {
            node_fit: true,
            ..case("nodeFit=true, only available node does not have enough resources, 1 container terminated with reason CreateContainerConfigError, 0 eviction", args(false, &["CreateContainerConfigError"], &[], &[], None), vec![tn("node1", 1, 1), tn("node2", 0, 0)], vec![failed("p1", "node1").container(terminated(false, Some("CreateContainerConfigError"), 0))], &[])
        },
        case("excluded owner kind=ReplicaSet, 1 init container terminated with owner kind=ReplicaSet, 0 eviction", args(true, &[], &[], &["ReplicaSet"], None), n1(), vec![init_affinity()], &[]),
        case("excluded owner kind=DaemonSet, 1 init container terminated with owner kind=ReplicaSet, 1 eviction", args(true, &[], &[], &["DaemonSet"], None), n1(), vec![init_affinity()], &["p1"]),
        case("excluded owner kind=DaemonSet, 1 init container terminated with owner kind=ReplicaSet, 1 pod in termination; nothing should be moved", args(true, &[], &[], &["DaemonSet"], None), n1(), vec![init_affinity().with(|p| p.meta.deleted = Some(0))], &[]),
        Case {
            node_fit: true,
            ..case("1 container terminated with reason ShutDown, 0 evictions", none(), n1(), vec![shutdown("p1")], &[])
        },
        case("include reason=Shutdown, 2 containers terminated with reason ShutDown, 2 evictions", args(false, &["Shutdown"], &[], &[], None), n1(), vec![shutdown("p1"), shutdown("p2")], &["p1", "p2"]),
    ];
    for c in cases {
        let pods = c.pods.into_iter().map(PodBuilder::build).collect();
        let mut f = Fixture::new(c.nodes, pods);
        f.now = NOW;
        let cluster = f.cluster();
        let view = View::new(&cluster);
        let evictor_args = EvictorArgs {
            node_fit: c.node_fit,
            ..Default::default()
        };
        let evictor = Evictor::new(&evictor_args, &view);
        let got: Vec<String> = propose(&c.args, &view, &evictor)
            .into_iter()
            .map(|p| {
                assert_eq!(p.strategy, Strategy::RemoveFailedPods);
                assert_eq!(Some(&p.node), p.pod.node_name.as_ref());
                p.pod.name.clone()
            })
            .collect();
        assert_eq!(got, c.want, "{}", c.name);
    }
}

#[test]
fn default_empty_args_and_the_default_lifetime() {
    // "default empty args, 0 failures, 0 evictions", and the descheduler's default of an hour.
    let a: RemoveFailedPodsArgs = serde_norway::from_str("{}").unwrap();
    assert_eq!(a.min_pod_lifetime_seconds, Some(3600));
    assert_eq!(a.validate(), Ok(()));
    let old = failed("old", "node1").created(NOW - 3600);
    let young = failed("young", "node1").created(NOW - 3599);
    let running = pod("default", "running")
        .on("node1")
        .owner("ReplicaSet", "rs")
        .created(NOW - 7200);
    let mut f = Fixture::new(
        vec![tn("node1", 2000, 3000)],
        vec![old.build(), young.build(), running.build()],
    );
    f.now = NOW;
    let cluster = f.cluster();
    let view = View::new(&cluster);
    let e = EvictorArgs::default();
    let evictor = Evictor::new(&e, &view);
    let got: Vec<String> = propose(&a, &view, &evictor)
        .into_iter()
        .map(|p| p.pod.name.clone())
        .collect();
    assert_eq!(got, ["old"]);

    let bad: RemoveFailedPodsArgs =
        serde_norway::from_str("namespaces: {include: [a], exclude: [b]}").unwrap();
    assert!(bad
        .validate()
        .unwrap_err()
        .to_string()
        .starts_with("namespaces"));
    let e = serde_norway::from_str::<RemoveFailedPodsArgs>("excludeOwnerKind: [Job]").unwrap_err();
    assert!(e.to_string().contains("excludeOwnerKind"), "{e}");
}

#[test]
fn validate_remove_failed_pods_args() {
    // TestValidateRemoveFailedPodsArgs
    let cases: [(&str, &str, Option<&str>); 4] = [
        ("valid namespace args, no errors", "namespaces: {include: [default]}\nexcludeOwnerKinds: [Job]\nminPodLifetimeSeconds: 3600", None),
        ("invalid namespaces args, expects error", "namespaces: {include: [default], exclude: [kube-system]}", Some("namespaces")),
        ("valid label selector args, no errors", "labelSelector: {matchLabels: {role.kubernetes.io/node: \"\"}}", None),
        ("invalid label selector args, expects errors", "labelSelector: {matchExpressions: [{operator: Between}]}", Some("labelSelector")),
    ];
    for (name, yaml, field) in cases {
        let a: RemoveFailedPodsArgs = serde_norway::from_str(yaml).unwrap();
        match (a.validate().map_err(|e| e.to_string()), field) {
            (Ok(()), None) => {}
            (Err(e), Some(f)) => assert!(e.starts_with(f), "{name}: {e}"),
            (got, _) => panic!("{name}: {got:?}"),
        }
    }
    // TestSetDefaults_RemoveFailedPodsArgs ("with value"): a value written stays, 0 included.
    let a: RemoveFailedPodsArgs = serde_norway::from_str(
        "excludeOwnerKinds: [ReplicaSet]\nminPodLifetimeSeconds: 0\nreasons: [reason]\nincludingInitContainers: true",
    )
    .unwrap();
    assert_eq!(a.min_pod_lifetime_seconds, Some(0));
    assert_eq!(a.exclude_owner_kinds, ["ReplicaSet"]);
}
