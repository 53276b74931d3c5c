//! What "ready" means, defined once for every part of the engine (re-exported as `health::is_ready`):
//! upstream's `GetNodeReadiness` (utils/kubernetes/ready.go), its start-up taints
//! (`FilterOutNodesWithStartupTaints`) and its GPU processor (`FilterOutNodesWithUnreadyResources`).
//! Kept apart from `health` so that `templates`, below `context`, can read it too.

use super::taints::TaintConfig;
use crate::labels;
use crate::model::workload::Node;

/// Taints that say a node is not ready whatever its conditions read (upstream's `GetNodeReadiness`):
/// the node lifecycle controller puts them on before the conditions are read.
pub const NOT_READY_TAINTS: &[&str] = &[
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/network-unavailable",
];

/// Whether `node` is ready as upstream reads it: its `Ready` condition true, neither `DiskPressure`
/// nor `NetworkUnavailable` true, no not-ready taint, no start-up taint (`startup-taint.`/`ignore-taint.`
/// prefixes: a node still starting), and, when it carries the GPU label, its GPUs allocatable (the
/// device plugin has started: until then upstream counts it as a node still starting, so a pending GPU
/// pod waits for it instead of asking for another).
pub fn is_ready(node: &Node, taints: &TaintConfig) -> bool {
    node.ready
        && !node.disk_pressure
        && !node.network_unavailable
        && !gpu_unready(node)
        && !node
            .taints
            .iter()
            .any(|t| NOT_READY_TAINTS.contains(&t.key.as_str()) || taints.is_startup(t))
}

/// A node with the GPU label but no GPU allocatable yet (upstream's GPU processor): none of
/// `nvidia.com/gpu`, `microsoft.com/directx`, or another NVIDIA resource (a shared GPU's
/// `nvidia.com/gpu.shared`, a MIG profile's `nvidia.com/mig-1g.5gb`).
pub fn gpu_unready(node: &Node) -> bool {
    node.labels.contains_key(labels::GPU)
        && !node
            .allocatable
            .extended
            .iter()
            .any(|(name, n)| *n > 0 && (name.starts_with("nvidia.com/") || name == DIRECTX))
}

/// The DirectX GPU resource upstream's GPU processor also accepts.
const DIRECTX: &str = "microsoft.com/directx";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{no_schedule as taint, node};

    /// Upstream: ready_test.go TestGetReadiness and gpu_processor_test.go
    /// TestFilterOutNodesWithUnreadyResources, as the model carries their nodes.
    #[test]
    fn conditions_taints_and_gpus_make_a_node_unready() {
        let cfg = TaintConfig::default();
        let ready = node("n").ready().build();
        assert!(is_ready(&ready, &cfg));
        let with = |f: fn(&mut Node)| {
            let mut n = ready.clone();
            f(&mut n);
            is_ready(&n, &cfg)
        };
        assert!(!with(|n| n.ready = false), "Ready false or unknown");
        assert!(!with(|n| n.disk_pressure = true), "DiskPressure true");
        assert!(
            !with(|n| n.network_unavailable = true),
            "NetworkUnavailable true"
        );
        for key in NOT_READY_TAINTS {
            let n = node("n").ready().taint(taint(key, "")).build();
            assert!(!is_ready(&n, &cfg), "{key}");
        }
        let other = node("n").ready().taint(taint("dedicated", "x")).build();
        assert!(
            is_ready(&other, &cfg),
            "an ordinary taint says nothing of readiness"
        );
        // A GPU node is ready once its GPUs are allocatable; a node without the label needs none.
        let gpu = |n: i64| {
            node("g")
                .ready()
                .label(labels::GPU, "nvidia-tesla-t4")
                .gpus(n)
                .build()
        };
        assert!(!is_ready(
            &node("g").ready().label(labels::GPU, "t4").build(),
            &cfg
        ));
        assert!(!is_ready(&gpu(0), &cfg), "zero GPUs allocatable");
        assert!(is_ready(&gpu(1), &cfg));
        for shared in ["nvidia.com/gpu.shared", "nvidia.com/mig-1g.5gb", DIRECTX] {
            let mut n = gpu(0);
            n.allocatable.extended.insert(shared.into(), 4);
            assert!(is_ready(&n, &cfg), "{shared}");
        }
        let mut other = gpu(0);
        other
            .allocatable
            .extended
            .insert("example.com/fpga".into(), 1);
        assert!(!is_ready(&other, &cfg), "not a GPU resource");
        assert!(
            is_ready(&node("c").ready().gpus(0).build(), &cfg),
            "no GPU label"
        );
    }
}
