//! Cases of the descheduler's `toomanyrestarts_test.go` (`TestRemovePodsHavingTooManyRestarts`), each
//! named by its description. Where a case limits evictions per node or namespace
//! (`maxPodsToEvictPerNode`, `maxNoOfPodsToEvictPerNamespace`), the limit is the planner's: the
//! strategy proposes every pod, in the order the limit takes them from.

use super::*;
use crate::deschedule::evictor::EvictorArgs;
use crate::deschedule::fixtures::{DeschedulerPod, Fixture};
use crate::fixtures::{no_schedule, node, pod, resources, PodBuilder};
use crate::model::workload::{ContainerState, Node, PodPhase};

fn tn(name: &str, cpu: i64) -> crate::fixtures::NodeBuilder {
    node(name).allocatable(resources(cpu, 3000, 10)).ready()
}

fn status(init: bool, restarts: i32) -> ContainerState {
    ContainerState {
        init,
        restarts,
        ..Default::default()
    }
}

/// The test's `initPods`: pod-i on node1 with 5·i init restarts and two containers of 10·i; pod-6 a
/// DaemonSet's, pod-7 with local storage, pod-8 a mirror pod; two CPU consumers on node4 and node5.
fn init_pods(apply: fn(PodBuilder) -> PodBuilder) -> Vec<Pod> {
    let mut pods: Vec<Pod> = (0..=9)
        .map(|i| {
            let b = pod("default", format!("pod-{i}"))
                .requests(resources(100, 0, 1))
                .on("node1")
                .container(status(true, 5 * i))
                .container(status(false, 10 * i))
                .container(status(false, 10 * i));
            let b = match i {
                6 => b.owner("DaemonSet", ""),
                7 => b
                    .owner("Pod", "")
                    .with(|p| p.meta.local_volumes = thin_vec::thin_vec!["sample".into()]),
                8 => b.mirror(),
                _ => b.owner("Pod", ""),
            };
            apply(b).build()
        })
        .collect();
    for (name, on) in [("CPU-consumer-1", "node4"), ("CPU-consumer-2", "node5")] {
        pods.push(
            pod("default", name)
                .requests(resources(150, 100, 1))
                .on(on)
                .owner("Pod", "")
                .build(),
        );
    }
    pods
}

struct Case {
    name: &'static str,
    args: RemovePodsHavingTooManyRestartsArgs,
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    node_fit: bool,
    want: &'static [&'static str],
}

fn args(threshold: i32, init: bool) -> RemovePodsHavingTooManyRestartsArgs {
    RemovePodsHavingTooManyRestartsArgs {
        pod_restart_threshold: threshold,
        including_init_containers: init,
        ..Default::default()
    }
}

fn states(threshold: i32, states: &[&str], init: bool) -> RemovePodsHavingTooManyRestartsArgs {
    RemovePodsHavingTooManyRestartsArgs {
        states: states.iter().map(|s| s.to_string()).collect(),
        ..args(threshold, init)
    }
}

fn same(b: PodBuilder) -> PodBuilder {
    b
}

/// Every evictable pod with restarts, most restarted first.
const SIX: &[&str] = &["pod-9", "pod-5", "pod-4", "pod-3", "pod-2", "pod-1"];

#[test]
fn remove_pods_having_too_many_restarts() {
    let n1 = || tn("node1", 2000).build();
    let crash = |b: PodBuilder| {
        b.with(|p| {
            let c = p.meta.containers.iter_mut().find(|c| !c.init).unwrap();
            c.waiting = Some("CrashLoopBackOff".into());
        })
    };
    let init_crash = |b: PodBuilder| {
        b.with(|p| {
            p.meta.containers.retain(|c| !c.init);
            p.meta.containers.insert(
                0,
                ContainerState {
                    init: true,
                    waiting: Some("CrashLoopBackOff".into()),
                    ..Default::default()
                },
            );
        })
    };
    let case = |name, args, nodes, pods, node_fit, want| Case {
        name,
        args,
        nodes,
        pods,
        node_fit,
        want,
    };
    let cases = vec![
        case("All pods have total restarts under threshold, no pod evictions", args(10000, true), vec![n1()], init_pods(same), false, &[]),
        case("Some pods have total restarts bigger than threshold", args(1, true), vec![n1()], init_pods(same), false, SIX),
        case("Nine pods have total restarts equals threshold(includingInitContainers=true), 6 pod evictions", args(25, true), vec![n1()], init_pods(same), false, SIX),
        case("Nine pods have total restarts equals threshold(includingInitContainers=false), 5 pod evictions", args(25, false), vec![n1()], init_pods(same), false, &["pod-9", "pod-5", "pod-4", "pod-3", "pod-2"]),
        case("All pods have total restarts equals threshold(includingInitContainers=true), 6 pod evictions", args(20, true), vec![n1()], init_pods(same), false, SIX),
        case("Nine pods have total restarts equals threshold(includingInitContainers=false), 6 pod evictions", args(20, false), vec![n1()], init_pods(same), false, SIX),
        case("Five pods have total restarts bigger than threshold(includingInitContainers=true), but only 1 pod eviction", args(5 * 25 + 1, true), vec![n1()], init_pods(same), false, &["pod-9"]),
        case("Five pods have total restarts bigger than threshold(includingInitContainers=false), but only 1 pod eviction", args(5 * 20 + 1, false), vec![n1()], init_pods(same), false, &["pod-9"]),
        // maxPodsToEvictPerNode=3 / maxNoOfPodsToEvictPerNamespace=3: the planner takes the first 3.
        case("All pods have total restarts equals threshold(maxPodsToEvictPerNode=3), 3 pod evictions", args(1, true), vec![n1()], init_pods(same), false, SIX),
        case("All pods have total restarts equals threshold(maxNoOfPodsToEvictPerNamespace=3), 3 pod evictions", args(1, true), vec![n1()], init_pods(same), false, SIX),
        case("All pods have total restarts equals threshold(maxPodsToEvictPerNode=3) but the only other node is tainted, 0 pod evictions", args(1, true), vec![n1(), tn("node2", 2000).taint(no_schedule("hardware", "gpu")).build()], init_pods(same), true, &[]),
        case("All pods have total restarts equals threshold(maxPodsToEvictPerNode=3) but the only other node is not schedulable, 0 pod evictions", args(1, true), vec![n1(), tn("node3", 2000).with(|n| n.unschedulable = true).build()], init_pods(same), true, &[]),
        case("All pods have total restarts equals threshold(maxPodsToEvictPerNode=3) but the only other node does not have enough CPU, 0 pod evictions", args(1, true), vec![n1(), tn("node4", 200).build()], init_pods(same), true, &[]),
        case("All pods have total restarts equals threshold(maxPodsToEvictPerNode=3) but the only other node has enough CPU, 3 pod evictions", args(1, true), vec![n1(), tn("node5", 2000).build()], init_pods(same), true, SIX),
        case("pods are in CrashLoopBackOff with states=CrashLoopBackOff, 3 pod evictions", states(1, &["CrashLoopBackOff"], false), vec![n1(), tn("node5", 2000).build()], init_pods(crash), true, &["pod-9", "pod-5", "pod-4", "pod-3", "pod-2", "pod-1"]),
        case("pods without CrashLoopBackOff with states=CrashLoopBackOff, 0 pod evictions", states(1, &["CrashLoopBackOff"], false), vec![n1(), tn("node5", 2000).build()], init_pods(same), true, &[]),
        case("pods running with state=Running, 3 pod evictions", states(1, &["Running"], false), vec![n1()], init_pods(|b| b.phase(PodPhase::Running)), false, &["pod-9", "pod-5", "pod-4", "pod-3", "pod-2", "pod-1"]),
        case("pods pending with state=Running, 0 pod evictions", states(1, &["Running"], false), vec![n1()], init_pods(|b| b.phase(PodPhase::Pending)), false, &[]),
        case("pods pending with initContainer with states=CrashLoopBackOff threshold(includingInitContainers=true), 3 pod evictions", states(1, &["CrashLoopBackOff"], true), vec![n1()], init_pods(init_crash), false, SIX),
        case("pods pending with initContainer with states=CrashLoopBackOff threshold(includingInitContainers=false), 0 pod evictions", states(1, &["CrashLoopBackOff"], false), vec![n1()], init_pods(init_crash), false, &[]),
    ];
    for c in cases {
        let f = Fixture::new(c.nodes, c.pods);
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
                assert_eq!(p.strategy, Strategy::RemovePodsHavingTooManyRestarts);
                assert_eq!(p.node, "node1");
                p.pod.name.clone()
            })
            .collect();
        assert_eq!(got, c.want, "{}", c.name);
    }
}

#[test]
fn arguments_read_and_checked_as_the_descheduler_does() {
    let a: RemovePodsHavingTooManyRestartsArgs = serde_norway::from_str(
        "podRestartThreshold: 100\nincludingInitContainers: true\nstates: [CrashLoopBackOff]\n\
         namespaces: {exclude: [kube-system]}\n",
    )
    .unwrap();
    assert_eq!(a.pod_restart_threshold, 100);
    assert_eq!(a.validate(), Ok(()));
    let bad = |yaml: &str, field: &str| {
        let a: RemovePodsHavingTooManyRestartsArgs = serde_norway::from_str(yaml).unwrap();
        let e = a.validate().unwrap_err().to_string();
        assert!(e.contains(field), "{yaml}: {e}");
    };
    bad("{}", "podRestartThreshold");
    bad("podRestartThreshold: -1", "podRestartThreshold");
    bad("podRestartThreshold: 1\nstates: [Pending]", "states");
    bad(
        "podRestartThreshold: 1\nnamespaces: {include: [a], exclude: [b]}",
        "namespaces",
    );
    let e = serde_norway::from_str::<RemovePodsHavingTooManyRestartsArgs>("restartThreshold: 1")
        .unwrap_err();
    assert!(e.to_string().contains("restartThreshold"), "{e}");
}

#[test]
fn validate_remove_pods_having_too_many_restarts_args() {
    // TestValidateRemovePodsHavingTooManyRestartsArgs
    let cases: [(&str, &str, &[&str]); 5] = [
        (
            "valid arg, no errors",
            "podRestartThreshold: 1\nstates: [Running]",
            &[],
        ),
        (
            "invalid PodRestartThreshold arg, expects errors",
            "podRestartThreshold: 0",
            &["podRestartThreshold"],
        ),
        (
            "invalid States arg, expects errors",
            "podRestartThreshold: 1\nstates: [Failed]",
            &["states[0]: \"Failed\""],
        ),
        (
            "allows CrashLoopBackOff state",
            "podRestartThreshold: 1\nstates: [CrashLoopBackOff]",
            &[],
        ),
        (
            "invalid PodRestartThreshold arg and invalid States arg, expects errors",
            "podRestartThreshold: 0\nstates: [Failed]",
            &["podRestartThreshold", "states[0]: \"Failed\""],
        ),
    ];
    for (name, yaml, fields) in cases {
        let a: RemovePodsHavingTooManyRestartsArgs = serde_norway::from_str(yaml).unwrap();
        match a.validate().map_err(|e| e.to_string()) {
            Ok(()) => assert!(fields.is_empty(), "{name}: accepted"),
            Err(e) => {
                assert!(!fields.is_empty(), "{name}: {e}");
                assert!(fields.iter().all(|f| e.contains(f)), "{name}: {e}");
            }
        }
    }
    // TestSetDefaults_RemovePodsHavingTooManyRestartsArgs: nothing is defaulted.
    let empty: RemovePodsHavingTooManyRestartsArgs = serde_norway::from_str("{}").unwrap();
    assert_eq!(empty, RemovePodsHavingTooManyRestartsArgs::default());
    assert_eq!(empty.pod_restart_threshold, 0);
}
