//! `simulate` on upstream's utilisation: a node exactly at the threshold is underutilized (upstream's
//! `core/scaledown/eligibility/eligibility.go`, `isNodeAtOrBelowUtilizationThreshold`), GPU nodes are judged
//! by their GPUs, DaemonSet pods leave the sum with `--ignore-daemonsets-utilization`.

use crate::support::fixtures::dump::{node, pod, GROUPS};
use crate::support::simulate_harness::{flags, pacing, sim, unremovable};

fn removed(r: &ferroscale::simulate::LoopReport) -> Vec<&str> {
    r.scale_down.iter().map(|d| d.node.as_str()).collect()
}

#[test]
fn a_node_below_the_threshold_is_removed_and_so_is_one_exactly_at_it() {
    // 8 cpu with 4.5 used: kept, with room for the others' pods.
    let roomy = || {
        vec![
            node("roomy", "big", "8", "32Gi"),
            pod("a", "three", "4500m", "1Gi", Some("roomy"), ""),
        ]
    };
    let mut below = roomy();
    below.push(node("below", "small", "2", "8Gi"));
    below.push(pod("a", "one", "900m", "1Gi", Some("below"), ""));
    let r = sim(&below, GROUPS).step(&flags(&[]), &pacing());
    assert_eq!(removed(&r), vec!["below"], "{r:?}");
    assert_eq!(
        r.scale_down[0].reason,
        "utilization 0.45 at or below 0.50 for 0s, its pods fit elsewhere"
    );
    let mut at = roomy();
    at.push(node("at", "small", "2", "8Gi"));
    at.push(pod("a", "two", "1", "1Gi", Some("at"), ""));
    let r = sim(&at, GROUPS).step(&flags(&[]), &pacing());
    assert_eq!(removed(&r), vec!["at"], "{r:?}");
    // A hair above it, kept.
    let mut above = roomy();
    above.push(node("above", "small", "2", "8Gi"));
    above.push(pod("a", "two", "1001m", "1Gi", Some("above"), ""));
    let r = sim(&above, GROUPS).step(&flags(&[]), &pacing());
    assert!(removed(&r).is_empty(), "{r:?}");
    assert_eq!(
        unremovable(&r, "above"),
        "utilization 0.50 above threshold 0.50"
    );
}

/// A node of group `gpu` with `gpus` GPUs allocatable.
fn gpu_node(name: &str, cpu: &str, gpus: u32) -> String {
    node(name, "gpu", cpu, "16Gi").replace(
        "pods: \"20\"}",
        &format!("pods: \"20\", nvidia.com/gpu: \"{gpus}\"}}"),
    )
}

fn gpu_pod(name: &str, cpu: &str, gpus: u32, on: &str) -> String {
    pod("ml", name, cpu, "1Gi", Some(on), "").replace(
        "memory: 1Gi}",
        &format!("memory: 1Gi, nvidia.com/gpu: \"{gpus}\"}}"),
    )
}

#[test]
fn a_gpu_node_is_judged_by_its_gpus_against_the_gpu_threshold() {
    let cluster = vec![
        // Three of four GPUs used: kept, with room for the pod of gpu-a.
        gpu_node("gpu-b", "8", 4),
        gpu_pod("train-b", "1", 3, "gpu-b"),
        // A third of its GPUs used, cpu at 0.75: judged by GPU it is below the threshold.
        gpu_node("gpu-a", "2", 3),
        gpu_pod("train-a", "1500m", 1, "gpu-a"),
    ];
    let r = sim(&cluster, GROUPS).step(&flags(&[]), &pacing());
    assert_eq!(removed(&r), vec!["gpu-a"], "{r:?}");
    assert_eq!(r.scale_down[0].evicted, vec!["ml/train-a"]);
    assert_eq!(
        unremovable(&r, "gpu-b"),
        "GPU utilization 0.75 above threshold 0.50"
    );
    let r = sim(&cluster, GROUPS).step(
        &flags(&["--scale-down-gpu-utilization-threshold", "0.3"]),
        &pacing(),
    );
    assert!(removed(&r).is_empty(), "{r:?}");
    assert_eq!(
        unremovable(&r, "gpu-a"),
        "GPU utilization 0.33 above threshold 0.30"
    );
    // --scale-down-utilization-threshold does not apply to GPU nodes.
    let r = sim(&cluster, GROUPS).step(
        &flags(&["--scale-down-utilization-threshold", "0.9"]),
        &pacing(),
    );
    assert!(
        unremovable(&r, "gpu-b").starts_with("GPU utilization"),
        "{r:?}"
    );
}

#[test]
fn daemonset_pods_are_left_out_of_utilisation_with_the_flag() {
    let daemon = pod("kube-system", "agent", "800m", "100Mi", Some("ds"), "")
        .replace("kind: ReplicaSet, name: rs", "kind: DaemonSet, name: agent");
    let cluster = vec![
        node("ds", "small", "2", "8Gi"),
        daemon,
        pod("a", "web", "500m", "1Gi", Some("ds"), ""),
        node("spare", "small", "2", "8Gi"),
        pod("a", "api", "200m", "1Gi", Some("spare"), ""),
    ];
    let r = sim(&cluster, GROUPS).step(&flags(&[]), &pacing());
    assert_eq!(
        unremovable(&r, "ds"),
        "utilization 0.65 above threshold 0.50",
        "1.3 of 2 cpu"
    );
    // 0.5 of the 1.2 cpu the DaemonSet pod leaves: below the threshold.
    let r = sim(&cluster, GROUPS).step(&flags(&["--ignore-daemonsets-utilization"]), &pacing());
    assert_eq!(removed(&r), vec!["ds"], "{r:?}");
    assert_eq!(
        r.scale_down[0].evicted,
        vec!["a/web"],
        "the DaemonSet pod stays"
    );
}
