//! `simulate` under `--gpu-total`: GPUs counted by the nodes' accelerator label, a GPU scale-up held
//! under the maximum beside the same cluster without the flag, and idle GPU nodes kept at the minimum.

use crate::support::fixtures::dump::{node, pod};
use crate::support::simulate_harness::{flags, pacing, reason_of, sim, unremovable, ups};

/// One NVIDIA T4 per node, labelled as AWS labels GPU nodes.
const GROUPS: &str = r#"
nodeGroups:
  - {name: t4, minSize: 0, maxSize: 10, capacity: {cpu: 4, memory: 16Gi, pods: 20, nvidia.com/gpu: 1},
     pricePerHour: 0.526, labels: {k8s.amazonaws.com/accelerator: nvidia-tesla-t4}}
"#;

/// A pending pod asking one GPU.
fn gpu_pod(name: &str) -> String {
    pod("ml", name, "1", "1Gi", None, "")
        .replace("memory: 1Gi}", "memory: 1Gi, nvidia.com/gpu: \"1\"}")
}

/// An idle ready node of the `t4` group with its T4 allocatable and its accelerator label.
fn gpu_node(name: &str) -> String {
    node(name, "t4", "3920m", "15Gi")
        .replace(
            "kubernetes.io/hostname: ",
            "k8s.amazonaws.com/accelerator: nvidia-tesla-t4, kubernetes.io/hostname: ",
        )
        .replace("pods: \"20\"}", "pods: \"20\", nvidia.com/gpu: \"1\"}")
}

#[test]
fn gpu_total_holds_a_gpu_scale_up_under_its_maximum() {
    let cluster: Vec<String> = (0..3).map(|i| gpu_pod(&format!("train-{i}"))).collect();
    let free = sim(&cluster, GROUPS).step(&flags(&[]), &pacing());
    assert_eq!(ups(&free), vec![("t4", 3)], "{free:?}");

    let r = sim(&cluster, GROUPS).step(&flags(&["--gpu-total", "nvidia-tesla-t4:0:2"]), &pacing());
    assert_eq!(ups(&r), vec![("t4", 2)], "{r:?}");
    assert_eq!(r.pending.len(), 1, "{r:?}");
    assert!(
        reason_of(&r, "ml/train-2").contains("would exceed a limit"),
        "{r:?}"
    );

    let other = sim(&cluster, GROUPS).step(&flags(&["--gpu-total", "nvidia-a10g:0:0"]), &pacing());
    assert_eq!(
        ups(&other),
        vec![("t4", 3)],
        "another type's limit holds no T4"
    );
}

#[test]
fn gpu_total_reached_tells_the_pod() {
    let cluster = vec![gpu_pod("train")];
    let r = sim(&cluster, GROUPS).step(&flags(&["--gpu-total", "nvidia-tesla-t4:0:0"]), &pacing());
    assert!(ups(&r).is_empty(), "{r:?}");
    assert!(
        reason_of(&r, "ml/train").contains("--gpu-total reached"),
        "{r:?}"
    );
}

#[test]
fn gpu_total_keeps_idle_gpu_nodes_at_its_minimum() {
    let cluster: Vec<String> = (1..=3).map(|i| gpu_node(&format!("gpu-{i}"))).collect();
    let removed = |args: &[&str]| {
        let args: Vec<&str> = args
            .iter()
            .copied()
            .chain(["--max-disruption", "100%"])
            .collect();
        sim(&cluster, GROUPS).step(&flags(&args), &pacing())
    };
    let free = removed(&[]);
    assert_eq!(free.scale_down.len(), 3, "no minimum: all go {free:?}");

    // 3 T4s, at least 2: one node may go, a second would leave 1.
    let r = removed(&["--gpu-total", "nvidia-tesla-t4:2:10"]);
    assert_eq!(r.scale_down.len(), 1, "{r:?}");
    let kept: Vec<&str> = r
        .unremovable
        .iter()
        .filter(|u| u.reason == "the cluster would go below the minimum of --gpu-total")
        .filter_map(|u| u.node.as_deref())
        .collect();
    assert_eq!(kept.len(), 2, "{r:?}");
    assert_eq!(
        unremovable(&r, kept[0]),
        "the cluster would go below the minimum of --gpu-total"
    );
}
