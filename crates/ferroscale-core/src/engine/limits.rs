//! `--cores-total`, `--memory-total` and `--gpu-total` as upstream counts them: node capacity (cores
//! rounded up, memory in bytes against the flag's GiB), not allocatable. A node or template that declares
//! no capacity counts its allocatable. GPUs count by type, the node's `k8s.amazonaws.com/accelerator`
//! label (upstream's `GPULabel` on AWS), as many as its allocatable `nvidia.com/gpu` (its capacity while
//! none is allocatable yet); a node without the label counts none (upstream's `GetNodeTargetGpus`).
//! Scale-up stays under the maxima; scale-down keeps the cluster at or above the minima. A limit only
//! stops a change that moves its own resource: a node without GPUs of a type never breaks that type's.

use std::collections::BTreeMap;
use std::fmt;

use crate::labels;
use crate::model::workload::Node;
use crate::model::{Resources, TemplateNode};

const GIB: i64 = 1 << 30;

/// A resource with a cluster-wide limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    /// `--cores-total`.
    Cores,
    /// `--memory-total`.
    Memory,
    /// `--gpu-total` (of any of its GPU types).
    Gpu,
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Resource::Cores => "cores",
            Resource::Memory => "memory",
            Resource::Gpu => "gpu",
        })
    }
}

/// One `--gpu-total` value: `<gpu_type>:<min>:<max>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuLimit {
    /// The GPU type, as the node's accelerator label names it.
    pub gpu_type: String,
    pub min: i64,
    pub max: i64,
}

/// Cores, memory (bytes) and GPUs by type of a node, or of a whole cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Amount {
    pub cores: i64,
    pub memory: i64,
    /// GPUs by type (the accelerator label's value); types with none are left out.
    pub gpus: BTreeMap<String, i64>,
}

impl Amount {
    fn of(
        labels: &BTreeMap<String, String>,
        capacity: &Resources,
        allocatable: &Resources,
    ) -> Amount {
        let pick = |c: i64, a: i64| if c > 0 { c } else { a.max(0) };
        let mut gpus = BTreeMap::new();
        if let Some(kind) = labels.get(labels::GPU) {
            let of = |r: &Resources| r.extended.get(labels::NVIDIA_GPU).copied().unwrap_or(0);
            let n = match of(allocatable) {
                0 => of(capacity),
                n => n,
            };
            if n > 0 {
                gpus.insert(kind.clone(), n);
            }
        }
        Amount {
            cores: (pick(capacity.cpu_milli, allocatable.cpu_milli) + 999) / 1000,
            memory: pick(capacity.memory, allocatable.memory),
            gpus,
        }
    }

    /// What a node counts.
    pub fn of_node(n: &Node) -> Amount {
        Amount::of(&n.labels, &n.capacity, &n.allocatable)
    }

    /// What a new node of a template counts.
    pub fn of_template(t: &TemplateNode) -> Amount {
        Amount::of(&t.labels, &t.capacity, &t.allocatable)
    }

    pub fn add(&mut self, other: &Amount, times: i64) {
        self.cores += other.cores * times;
        self.memory += other.memory * times;
        for (kind, n) in &other.gpus {
            *self.gpus.entry(kind.clone()).or_default() += n * times;
        }
    }

    /// The GPUs of one type.
    pub fn gpus_of(&self, kind: &str) -> i64 {
        self.gpus.get(kind).copied().unwrap_or(0)
    }
}

/// How many more nodes of `per` the `--gpu-total` maxima leave room for in a cluster of `total`
/// (`usize::MAX` when no limit counts a GPU of `per`).
pub fn gpu_room(limits: &[GpuLimit], total: &Amount, per: &Amount) -> usize {
    limits
        .iter()
        .filter(|l| per.gpus_of(&l.gpu_type) > 0)
        .map(|l| {
            let left = l.max.saturating_sub(total.gpus_of(&l.gpu_type)).max(0);
            usize::try_from(left / per.gpus_of(&l.gpu_type)).unwrap_or(usize::MAX)
        })
        .min()
        .unwrap_or(usize::MAX)
}

/// Whether `added` takes a GPU type of `after` (the cluster with it) above its `--gpu-total` maximum.
pub fn above_gpu_max(limits: &[GpuLimit], after: &Amount, added: &Amount) -> bool {
    limits
        .iter()
        .any(|l| added.gpus_of(&l.gpu_type) > 0 && after.gpus_of(&l.gpu_type) > l.max)
}

/// Whether taking `taken` out of the cluster and adding `added` leaves a GPU type of `after` below its
/// `--gpu-total` minimum (only a type the change lessens counts).
pub fn below_gpu_min(limits: &[GpuLimit], after: &Amount, taken: &Amount, added: &Amount) -> bool {
    limits.iter().any(|l| {
        taken.gpus_of(&l.gpu_type) > added.gpus_of(&l.gpu_type)
            && after.gpus_of(&l.gpu_type) < l.min
    })
}

/// `--memory-total`'s GiB in bytes.
pub fn gib(n: i64) -> i64 {
    n.saturating_mul(GIB)
}

/// How much scale-down may still take before the cluster goes below the minima.
#[derive(Debug, Clone)]
pub struct AboveMin(Amount);

impl AboveMin {
    /// The room above `min_cores`, `min_memory_gib` and the `--gpu-total` minima of a cluster of
    /// `total`.
    pub fn new(total: &Amount, min_cores: i64, min_memory_gib: i64, gpus: &[GpuLimit]) -> AboveMin {
        AboveMin(Amount {
            cores: (total.cores - min_cores).max(0),
            memory: (total.memory - gib(min_memory_gib)).max(0),
            gpus: gpus
                .iter()
                .map(|l| {
                    let left = (total.gpus_of(&l.gpu_type) - l.min).max(0);
                    (l.gpu_type.clone(), left)
                })
                .collect(),
        })
    }

    /// Takes a node out, or names the resource whose minimum it would break.
    pub fn take(&mut self, node: &Amount) -> Result<(), Resource> {
        if node.cores > self.0.cores {
            return Err(Resource::Cores);
        }
        if node.memory > self.0.memory {
            return Err(Resource::Memory);
        }
        let limited = |kind: &String| self.0.gpus.contains_key(kind);
        if node
            .gpus
            .iter()
            .any(|(kind, &n)| limited(kind) && n > self.0.gpus_of(kind))
        {
            return Err(Resource::Gpu);
        }
        self.0.cores -= node.cores;
        self.0.memory -= node.memory;
        for (kind, n) in &node.gpus {
            if let Some(left) = self.0.gpus.get_mut(kind) {
                *left -= n;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{node, resources};

    fn gpus(n: i64) -> Resources {
        let mut r = resources(4000, 16 * GIB, 0);
        r.extended.insert(labels::NVIDIA_GPU.into(), n);
        r
    }

    fn amount(cores: i64, memory: i64, gpus: &[(&str, i64)]) -> Amount {
        Amount {
            cores,
            memory,
            gpus: gpus.iter().map(|&(k, n)| (k.to_string(), n)).collect(),
        }
    }

    #[test]
    fn capacity_counts_rounded_up_and_allocatable_only_without_it() {
        let n = node("")
            .capacity(resources(2000, 8 * GIB, 0))
            .allocatable(resources(1930, 7 * GIB, 0))
            .build();
        assert_eq!(Amount::of_node(&n), amount(2, 8 * GIB, &[]));
        let bare = node("").allocatable(resources(1500, GIB, 0)).build();
        assert_eq!(Amount::of_node(&bare).cores, 2, "1.5 cores count as 2");
    }

    #[test]
    fn gpus_count_by_the_accelerator_label() {
        let labelled = node("")
            .label(labels::GPU, "nvidia-tesla-t4")
            .capacity(gpus(4))
            .allocatable(gpus(4))
            .build();
        assert_eq!(Amount::of_node(&labelled).gpus_of("nvidia-tesla-t4"), 4);
        let unlabelled = node("").capacity(gpus(4)).allocatable(gpus(4)).build();
        assert!(
            Amount::of_node(&unlabelled).gpus.is_empty(),
            "no label, no GPU type: upstream counts none"
        );
        let no_driver_yet = node("")
            .label(labels::GPU, "nvidia-tesla-t4")
            .capacity(gpus(1))
            .allocatable(gpus(0))
            .build();
        assert_eq!(
            Amount::of_node(&no_driver_yet).gpus_of("nvidia-tesla-t4"),
            1
        );
    }

    #[test]
    fn the_minima_stop_removals() {
        let node = amount(2, 8 * GIB, &[]);
        let total = amount(6, 24 * GIB, &[]);
        let mut left = AboveMin::new(&total, 3, 0, &[]);
        assert_eq!(left.take(&node), Ok(()));
        assert_eq!(
            left.take(&node),
            Err(Resource::Cores),
            "4 cores left, 3 the minimum"
        );
        let mut left = AboveMin::new(&total, 0, 20, &[]);
        assert_eq!(left.take(&node), Err(Resource::Memory));
    }

    fn t4(min: i64, max: i64) -> Vec<GpuLimit> {
        vec![GpuLimit {
            gpu_type: "t4".into(),
            min,
            max,
        }]
    }

    #[test]
    fn the_gpu_minimum_stops_removals_of_its_type_only() {
        let total = amount(12, 48 * GIB, &[("t4", 2), ("a10g", 1)]);
        let mut left = AboveMin::new(&total, 0, 0, &t4(1, 10));
        let gpu_node = amount(4, 16 * GIB, &[("t4", 1)]);
        assert_eq!(left.take(&gpu_node), Ok(()));
        assert_eq!(
            left.take(&gpu_node),
            Err(Resource::Gpu),
            "1 T4 left, 1 the minimum"
        );
        assert_eq!(
            left.take(&amount(4, 16 * GIB, &[("a10g", 1)])),
            Ok(()),
            "no limit on A10G"
        );
        assert_eq!(left.take(&amount(2, GIB, &[])), Ok(()));
    }

    #[test]
    fn the_gpu_maximum_caps_nodes_with_gpus_of_its_type() {
        let limits = t4(0, 5);
        let total = amount(8, 32 * GIB, &[("t4", 2)]);
        let two = amount(8, 32 * GIB, &[("t4", 2)]);
        assert_eq!(
            gpu_room(&limits, &total, &two),
            1,
            "3 T4 left: one node of 2"
        );
        assert_eq!(gpu_room(&limits, &total, &amount(2, GIB, &[])), usize::MAX);
        let mut after = total.clone();
        after.add(&two, 2);
        assert!(above_gpu_max(&limits, &after, &two));
        let cpu_only = amount(2, GIB, &[]);
        let mut over = amount(0, 0, &[("t4", 9)]);
        over.add(&cpu_only, 1);
        assert!(
            !above_gpu_max(&limits, &over, &cpu_only),
            "a node without T4s does not break a T4 maximum already passed"
        );
    }

    #[test]
    fn the_gpu_minimum_counts_what_a_replacement_brings_back() {
        let limits = t4(2, 10);
        let after = amount(0, 0, &[("t4", 1)]);
        let one = amount(4, 16 * GIB, &[("t4", 1)]);
        assert!(below_gpu_min(&limits, &after, &one, &Amount::default()));
        assert!(
            !below_gpu_min(&limits, &after, &one, &one),
            "a T4 node for a T4 node lessens nothing"
        );
    }
}
