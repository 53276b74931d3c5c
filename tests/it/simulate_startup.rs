//! `simulate` models node start-up: a new node registers NotReady with the `not-ready` taint (and its
//! group's start-up taints), the scheduler binds nothing to it, and the engine counts it as upcoming
//! (upstream's `GetUpcomingNodes`) until it is Ready — or until its group's `maxNodeStartupTime` is over.

use std::time::Duration;

use ferroscale::simulate::{LoopReport, Pacing, Simulation};

use crate::support::fixtures::dump::pod;
use crate::support::simulate_harness::{reason_of, sim, ups};

/// One group of 2-cpu nodes, none yet; `extra` is more YAML of the group's mapping.
fn groups(extra: &str) -> String {
    format!(
        "nodeGroups:\n  - {{name: small, minSize: 0, maxSize: 10, capacity: {{cpu: 2, memory: 8Gi, pods: 20}}, \
         pricePerHour: 0.096{extra}}}\n"
    )
}

/// Three pods that each need a node of their own.
fn three_pods() -> Vec<String> {
    (0..3)
        .map(|k| pod("a", &format!("web-{k}"), "1500m", "1Gi", None, ""))
        .collect()
}

/// Loops of `scan` seconds; nodes join at the next loop and are Ready `ready` seconds later.
fn pacing(scan: u64, ready: u64) -> Pacing {
    Pacing {
        loops: 1,
        scan_interval: Duration::from_secs(scan),
        provision_delay: Duration::ZERO,
        node_ready_delay: Duration::from_secs(ready),
        by_group: Default::default(),
    }
}

/// `loops` loops of the simulation.
fn steps(s: &mut Simulation, pacing: &Pacing, loops: usize) -> Vec<LoopReport> {
    let settings = ferroscale::cli::flags::default_engine();
    (0..loops).map(|_| s.step(&settings, pacing)).collect()
}

/// The nodes the simulated cluster has: (name, Ready, taint keys).
fn nodes(s: &Simulation) -> Vec<(String, bool, Vec<String>)> {
    s.cluster()
        .state()
        .nodes
        .iter()
        .map(|n| {
            let taints = n.taints.iter().map(|t| t.key.clone()).collect();
            (n.name.clone(), n.ready, taints)
        })
        .collect()
}

#[test]
fn booting_nodes_are_asked_for_once_and_take_their_pods_when_ready() {
    let mut s = sim(&three_pods(), &groups(""));
    // Nodes join 10s after the scale-up and are Ready 30s later: NotReady for three loops.
    let pacing = pacing(10, 30);
    let r = steps(&mut s, &pacing, 1);
    assert_eq!(ups(&r[0]), vec![("small", 3)], "{:?}", r[0]);

    let r = steps(&mut s, &pacing, 3);
    for (k, r) in r.iter().enumerate() {
        assert!(r.scale_up.is_empty(), "loop {}: {r:?}", k + 2);
        assert_eq!(r.nodes.get("small"), Some(&3), "{r:?}");
        for p in ["a/web-0", "a/web-1", "a/web-2"] {
            assert_eq!(
                reason_of(r, p),
                "fits on an upcoming node of small; no scale-up needed",
                "loop {}",
                k + 2
            );
        }
    }
    let booting = nodes(&s);
    assert_eq!(booting.len(), 3);
    for (name, ready, taints) in &booting {
        assert!(!ready, "{name} not Ready yet");
        assert_eq!(taints, &["node.kubernetes.io/not-ready"], "{name}");
    }

    // 30s after joining the nodes are Ready, untainted, and the pods run on them.
    let r = steps(&mut s, &pacing, 2);
    for r in &r {
        assert!(r.scale_up.is_empty(), "{r:?}");
        assert!(r.pending.is_empty(), "every pod bound: {r:?}");
        assert_eq!(r.nodes.get("small"), Some(&3), "{r:?}");
    }
    assert!(nodes(&s)
        .iter()
        .all(|(_, ready, taints)| *ready && taints.is_empty()));
    let state = s.cluster().state();
    assert!(state.pods.iter().all(|p| p.node_name.is_some()));
}

#[test]
fn a_group_start_up_taint_keeps_a_node_starting_until_it_goes() {
    let taint =
        ", taints: [{key: startup-taint.cluster-autoscaler.kubernetes.io/cni, value: \"no\", \
                 effect: NoSchedule}]";
    let mut s = sim(&three_pods()[..1], &groups(taint));
    let pacing = pacing(10, 20);
    // The template leaves the start-up taint out (upstream sanitises it): the pod asks for a node.
    let r = steps(&mut s, &pacing, 2);
    assert_eq!(ups(&r[0]), vec![("small", 1)], "{:?}", r[0]);
    assert!(r[1].scale_up.is_empty(), "{:?}", r[1]);
    let (_, ready, taints) = &nodes(&s)[0];
    assert!(!ready);
    assert_eq!(
        taints,
        &[
            "startup-taint.cluster-autoscaler.kubernetes.io/cni",
            "node.kubernetes.io/not-ready"
        ]
    );
    let r = steps(&mut s, &pacing, 2);
    assert!(r.iter().all(|r| r.scale_up.is_empty()), "{r:?}");
    assert!(r[1].pending.is_empty(), "{:?}", r[1]);
    assert!(nodes(&s)[0].2.is_empty(), "both taints gone once Ready");
}

#[test]
fn a_node_not_ready_within_its_startup_time_is_unready_and_replaced() {
    // The node needs 10 minutes to be Ready; the group allows it 2.
    let mut s = sim(
        &three_pods()[..1],
        &groups(", options: {maxNodeStartupTime: 2m}"),
    );
    let pacing = pacing(30, 600);
    let r = steps(&mut s, &pacing, 1);
    assert_eq!(ups(&r[0]), vec![("small", 1)]);
    // It joins at 30s; until 150s (2 minutes later) it is still starting: nothing more is asked for.
    let r = steps(&mut s, &pacing, 4);
    for r in &r {
        assert!(r.scale_up.is_empty(), "at {}s: {r:?}", r.time);
        assert_eq!(
            reason_of(r, "a/web-0"),
            "fits on an upcoming node of small; no scale-up needed"
        );
    }
    // At 150s it is unready, no longer upcoming (as upstream): the pod asks for another node.
    let r = steps(&mut s, &pacing, 1);
    assert_eq!(r[0].time, 150);
    assert_eq!(ups(&r[0]), vec![("small", 1)], "{:?}", r[0]);
    assert_eq!(r[0].nodes.get("small"), Some(&1), "the unready node stays");
}
