//! A node's utilization as upstream measures it (`simulator/utilization`): the larger of the requested
//! shares of allocatable cpu and memory, or for a GPU node the share of its GPUs. Pods the caller leaves
//! out (expendable ones, those terminating past their grace period) do not count; with
//! `--ignore-daemonsets-utilization` DaemonSet pods, and with `--ignore-mirror-pods-utilization` mirror
//! (static) pods, count neither in the requests nor in allocatable.

use super::predicates::NodeInfo;
use crate::labels;
use crate::model::workload::Node;

/// A node's utilization and whether it is measured by GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Utilization {
    pub value: f64,
    pub gpu: bool,
}

/// The GPU resource a GPU node is measured by: a node with the GPU label or any GPU resource allocatable
/// is one (upstream's `NodeHasGpu`); the resource is the first GPU resource it has allocatable, else
/// `nvidia.com/gpu`.
pub fn gpu_resource(node: &Node) -> Option<&'static str> {
    let allocatable = labels::GPU_RESOURCES
        .iter()
        .copied()
        .find(|r| node.allocatable.extended.get(*r).is_some_and(|n| *n > 0));
    match allocatable {
        Some(r) => Some(r),
        None => node
            .labels
            .contains_key(labels::GPU)
            .then_some(labels::NVIDIA_GPU),
    }
}

/// The resource a node that is not measured by GPU has nothing allocatable of (cpu, then memory): its
/// utilization cannot be measured (upstream's `CalculateUtilizationOfResource` fails, and the node is
/// kept as `UnexpectedError`). A GPU node is measured by its GPUs alone, unready ones counting 0.
pub fn missing_allocatable(node: &Node) -> Option<&'static str> {
    if gpu_resource(node).is_some() {
        return None;
    }
    if node.allocatable.cpu_milli <= 0 {
        Some("cpu")
    } else if node.allocatable.memory <= 0 {
        Some("memory")
    } else {
        None
    }
}

/// `used` of `total`, with DaemonSet pods' `daemon` taken out of `total`; a node with nothing
/// allocatable is unused (a GPU not exposed yet, as upstream takes it).
fn share(used: i64, total: i64, daemon: i64) -> f64 {
    if total <= 0 {
        return 0.0;
    }
    let total = total - daemon;
    if total <= 0 {
        return if used > 0 { 1.0 } else { 0.0 };
    }
    used as f64 / total as f64
}

/// Which pods leave the measure altogether, their requests taken off allocatable too (upstream's
/// `skipDaemonSetPods`, `skipMirrorPods`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// `--ignore-daemonsets-utilization` (groups may override).
    pub daemonsets: bool,
    /// `--ignore-mirror-pods-utilization`.
    pub mirror_pods: bool,
}

/// Which pods count: those at or above the expendable cutoff that are not terminating past their
/// grace period at `now` (upstream's scale-down leaves both out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    pub cutoff: i32,
    pub now: i64,
}

impl Counted {
    /// Every pod.
    pub const ALL: Counted = Counted {
        cutoff: i32::MIN,
        now: i64::MIN,
    };

    fn counts(&self, priority: i32, overdue_at: i64) -> bool {
        priority >= self.cutoff && overdue_at >= self.now
    }
}

/// The utilization of `info`'s node, counting the pods `counted` says, from the figures its pod list
/// keeps ([`super::predicates::PodList::facts`]); only a node measured by GPU reads its pods' GPUs.
pub fn utilization(info: &NodeInfo, left_out: LeftOut, counted: Counted) -> Utilization {
    let node = &info.node;
    let gpu = gpu_resource(node);
    let daemon = |daemon_set: bool, mirror: bool| {
        (left_out.daemonsets && daemon_set) || (left_out.mirror_pods && mirror)
    };
    // (cpu, memory, gpu) requested by the pods counted, and by the DaemonSet and mirror pods left out.
    let (mut used, mut left_out) = ([0i64; 3], [0i64; 3]);
    for (f, p) in info.pods.facts().iter().zip(info.pods.iter()) {
        let into = if daemon(f.daemon_set, f.mirror) {
            &mut left_out
        } else if counted.counts(f.priority, f.overdue_at) {
            &mut used
        } else {
            continue;
        };
        into[0] += f.cpu_milli;
        into[1] += f.memory;
        if let Some(g) = gpu {
            into[2] += p.requests.extended.get(g).copied().unwrap_or(0);
        }
    }
    let a = &node.allocatable;
    match gpu {
        Some(g) => Utilization {
            value: share(
                used[2],
                a.extended.get(g).copied().unwrap_or(0),
                left_out[2],
            ),
            gpu: true,
        },
        None => Utilization {
            value: share(used[0], a.cpu_milli, left_out[0]).max(share(
                used[1],
                a.memory,
                left_out[1],
            )),
            gpu: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{node, pod, resources};

    const DAEMONSETS: LeftOut = LeftOut {
        daemonsets: true,
        mirror_pods: false,
    };

    /// Requests of `cpu` millicores (and a pod slot), by a pod of a `controller`.
    fn requests(cpu: i64, controller: &str) -> crate::fixtures::PodBuilder {
        pod("", "")
            .requests(resources(cpu, 0, 1))
            .controller(controller)
    }

    #[test]
    fn gpu_nodes_are_measured_by_gpu() {
        let cpu4 = || node("").allocatable(resources(4000, 16 << 30, 110));
        let n = cpu4()
            .gpus(2)
            .info_with([requests(3500, "Job").gpus(1).build()]);
        let u = utilization(&n, LeftOut::default(), Counted::ALL);
        assert_eq!((u.value, u.gpu), (0.5, true), "cpu at 0.875 does not count");
        // Labelled but its GPUs not exposed yet: unused.
        let n = cpu4()
            .label(labels::GPU, "nvidia-t4")
            .info_with([requests(3500, "Job").build()]);
        assert_eq!(utilization(&n, LeftOut::default(), Counted::ALL).value, 0.0);
    }

    #[test]
    fn a_node_without_allocatable_cpu_or_memory_cannot_be_measured_unless_by_gpu() {
        let n = |cpu, memory| node("n").allocatable(resources(cpu, memory, 10));
        assert_eq!(missing_allocatable(&n(1000, 1 << 30).build()), None);
        assert_eq!(missing_allocatable(&n(0, 1 << 30).build()), Some("cpu"));
        assert_eq!(missing_allocatable(&n(1000, 0).build()), Some("memory"));
        let gpu = n(0, 0).label(labels::GPU, "nvidia-t4").build();
        assert_eq!(missing_allocatable(&gpu), None);
    }

    #[test]
    fn daemonset_pods_leave_requests_and_allocatable_when_ignored() {
        let n = node("")
            .allocatable(resources(4000, 16 << 30, 110))
            .info_with([
                requests(1000, "DaemonSet").build(),
                requests(1000, "ReplicaSet").build(),
            ]);
        assert_eq!(utilization(&n, LeftOut::default(), Counted::ALL).value, 0.5);
        assert_eq!(utilization(&n, DAEMONSETS, Counted::ALL).value, 1.0 / 3.0);
    }

    /// Upstream's scale-down counts neither expendable pods nor pods terminating past their grace
    /// period; the same on a node measured by GPU, whose pods are read one by one.
    #[test]
    fn expendable_and_long_terminating_pods_do_not_count() {
        let pods = || {
            [
                requests(1000, "ReplicaSet").gpus(1).build(),
                requests(1000, "ReplicaSet").gpus(1).priority(-20).build(),
                requests(1000, "ReplicaSet")
                    .gpus(1)
                    .with(|p| {
                        p.meta.deleted = Some(1000);
                        p.meta.grace_period = Some(30);
                    })
                    .build(),
            ]
        };
        let cpu = node("")
            .allocatable(resources(4000, 16 << 30, 110))
            .info_with(pods());
        let gpu = node("")
            .allocatable(resources(4000, 16 << 30, 110))
            .gpus(4)
            .info_with(pods());
        // Deleted at 1000 with 30 s of grace: overdue after 1060.
        for (now, want) in [(1060, 2.0), (1061, 1.0)] {
            let counted = Counted { cutoff: -10, now };
            assert_eq!(
                utilization(&cpu, LeftOut::default(), counted).value,
                want / 4.0
            );
            assert_eq!(
                utilization(&gpu, LeftOut::default(), counted).value,
                want / 4.0
            );
        }
        assert_eq!(
            utilization(&cpu, LeftOut::default(), Counted::ALL).value,
            0.75
        );
    }

    /// Upstream: `simulator/utilization/info.go` (`CalculateUtilizationOfResource`, `skipMirrorPods`).
    #[test]
    fn mirror_pods_leave_requests_and_allocatable_when_ignored() {
        let n = node("")
            .allocatable(resources(4000, 16 << 30, 110))
            .info_with([
                requests(1000, "").mirror().build(),
                requests(1000, "ReplicaSet").build(),
            ]);
        assert_eq!(utilization(&n, LeftOut::default(), Counted::ALL).value, 0.5);
        let mirror = LeftOut {
            daemonsets: false,
            mirror_pods: true,
        };
        assert_eq!(utilization(&n, mirror, Counted::ALL).value, 1.0 / 3.0);
        assert_eq!(
            utilization(&n, DAEMONSETS, Counted::ALL).value,
            0.5,
            "a mirror pod is no DaemonSet pod"
        );
    }
}
