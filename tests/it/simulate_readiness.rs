//! `simulate` and what makes a node ready, as upstream's `GetNodeReadiness` and GPU processor read it:
//! DiskPressure, NetworkUnavailable and their taints make a node unready; a GPU node whose GPUs are not
//! allocatable yet is a node still starting, so a GPU pod waits for it instead of asking for another.

use crate::support::fixtures::dump::{node, pod};
use crate::support::simulate_harness::{flags, pacing, reason_of, sim, unremovable, ups};
use ferroscale::simulate::{LoopReport, Simulation};

/// One loop over `cluster` an hour after its nodes appeared: an unready node is no longer starting.
fn an_hour_on(cluster: &[String], settings: &ferroscale::engine::Settings) -> LoopReport {
    let mut s: Simulation = sim(cluster, GROUPS);
    s.set_now(s.now() + 3600);
    s.step(settings, &pacing())
}

/// Two groups: plain small nodes, and one NVIDIA T4 per node, labelled as AWS labels GPU nodes.
const GROUPS: &str = r#"
nodeGroups:
  - {name: small, minSize: 0, maxSize: 10, capacity: {cpu: 2, memory: 8Gi, pods: 20}, labels: {size: small}}
  - {name: t4, minSize: 0, maxSize: 10, capacity: {cpu: 4, memory: 16Gi, pods: 20, nvidia.com/gpu: 1},
     pricePerHour: 0.526, labels: {k8s.amazonaws.com/accelerator: nvidia-tesla-t4}}
"#;

/// `node` with one more condition, `kind` true.
fn with_condition(node: String, kind: &str) -> String {
    node.replace(
        "conditions: [{type: Ready, status: \"True\"}]",
        &format!(
            "conditions: [{{type: Ready, status: \"True\"}}, {{type: {kind}, status: \"True\"}}]"
        ),
    )
}

#[test]
fn disk_pressure_and_network_unavailable_make_an_idle_node_unready() {
    let idle = |name: &str| node(name, "small", "1500m", "7Gi");
    let kept = flags(&["--scale-down-unready-enabled=false"]);
    // A healthy idle node goes; the same node under DiskPressure is unready, and kept by the flag.
    let r = an_hour_on(&[idle("fine")], &kept);
    assert_eq!(r.scale_down.len(), 1, "{r:?}");
    for kind in ["DiskPressure", "NetworkUnavailable"] {
        let r = an_hour_on(&[with_condition(idle("sick"), kind)], &kept);
        assert!(r.scale_down.is_empty(), "{kind}: {r:?}");
        assert_eq!(
            unremovable(&r, "sick"),
            "unready, and --scale-down-unready-enabled is false",
            "{kind}"
        );
    }
    // A DiskPressure condition that is False says nothing.
    let r = an_hour_on(
        &[idle("fine").replace(
            "conditions: [{type: Ready, status: \"True\"}]",
            "conditions: [{type: Ready, status: \"True\"}, {type: DiskPressure, status: \"False\"}]",
        )],
        &kept,
    );
    assert_eq!(r.scale_down.len(), 1, "{r:?}");
    // The lifecycle controller's taint alone makes it unready too.
    let tainted = idle("tainted").replace(
        "status:\n",
        "spec:\n  taints: [{key: node.kubernetes.io/disk-pressure, effect: NoSchedule}]\nstatus:\n",
    );
    let r = an_hour_on(&[tainted], &kept);
    assert_eq!(
        unremovable(&r, "tainted"),
        "unready, and --scale-down-unready-enabled is false"
    );
}

/// A GPU node of the `t4` group created at `at`, Ready, with `gpus` allocatable.
fn gpu_node(name: &str, gpus: Option<&str>) -> String {
    let gpus = gpus
        .map(|n| format!(", nvidia.com/gpu: \"{n}\""))
        .unwrap_or_default();
    node(name, "t4", "3920m", "15Gi")
        .replace(
            "kubernetes.io/hostname: ",
            "k8s.amazonaws.com/accelerator: nvidia-tesla-t4, kubernetes.io/hostname: ",
        )
        .replace("pods: \"20\"}", &format!("pods: \"20\"{gpus}}}"))
        .replace(
            "metadata:\n",
            "metadata:\n  creationTimestamp: \"2026-01-01T00:00:00Z\"\n",
        )
}

/// A pending pod asking one GPU, created with the node.
fn gpu_pod(name: &str) -> String {
    pod("ml", name, "1", "1Gi", None, "")
        .replace("memory: 1Gi}", "memory: 1Gi, nvidia.com/gpu: \"1\"}")
        .replace(
            "metadata:\n",
            "metadata:\n  creationTimestamp: \"2026-01-01T00:00:00Z\"\n",
        )
}

#[test]
fn a_gpu_node_whose_gpus_are_not_allocatable_yet_is_waited_for() {
    // The device plugin has not started: no GPU allocatable (absent, or zero). Upstream counts the node
    // as still starting, its GPU coming: the pod waits for it, no second GPU node is asked for.
    for gpus in [None, Some("0")] {
        let cluster = vec![gpu_node("t4-1", gpus), gpu_pod("train")];
        let r = sim(&cluster, GROUPS).step(&flags(&[]), &pacing());
        assert!(ups(&r).is_empty(), "{gpus:?}: {r:?}");
        assert!(
            reason_of(&r, "ml/train").contains("fits on an upcoming node of t4"),
            "{gpus:?}: {r:?}"
        );
        // Starting, it is no scale-down candidate either.
        assert!(r.scale_down.is_empty(), "{r:?}");
        assert!(
            !r.unremovable
                .iter()
                .any(|u| u.node.as_deref() == Some("t4-1")),
            "{r:?}"
        );
    }
    // Once its GPU is allocatable it is an ordinary ready node and the pod goes there.
    let cluster = vec![gpu_node("t4-1", Some("1")), gpu_pod("train")];
    let r = sim(&cluster, GROUPS).step(&flags(&[]), &pacing());
    assert!(ups(&r).is_empty(), "{r:?}");
    assert!(r.pending.is_empty(), "bound to the node itself: {r:?}");
    assert!(
        unremovable(&r, "t4-1").starts_with("GPU utilization 1.00"),
        "{r:?}"
    );
    // Two GPU pods, one starting node: only one more node is asked for.
    let cluster = vec![gpu_node("t4-1", None), gpu_pod("a"), gpu_pod("b")];
    let r = sim(&cluster, GROUPS).step(&flags(&[]), &pacing());
    assert_eq!(ups(&r), vec![("t4", 1)], "{r:?}");
}
