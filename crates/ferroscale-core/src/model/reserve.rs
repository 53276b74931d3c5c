//! What a node keeps for itself: allocatable = capacity − kube-reserved − eviction threshold.
//!
//! The formula is the one the EKS AMIs' bootstrap applies, so templates match the nodes that later register
//! (upstream's AWS provider uses allocatable = capacity and over-promises, which causes spurious scale-ups):
//! - cpu: 6% of the first core, 1% of the second, 0.5% of the third and fourth, 0.25% of every further core;
//! - memory: 11 MiB × max pods + 255 MiB, plus the 100 MiB `memory.available` hard eviction threshold;
//! - ephemeral-storage: the 10% `nodefs.available` hard eviction threshold;
//! - pods and extended resources (GPUs): nothing reserved.

use super::Resources;

const MIB: i64 = 1 << 20;
/// The kubelet's `memory.available` hard eviction threshold on EKS.
pub const EVICTION_MEMORY_BYTES: i64 = 100 * MIB;

/// Millicores kube-reserved for a node of `cpu_milli` cores.
pub fn reserved_cpu_milli(cpu_milli: i64) -> i64 {
    // (band width in millicores, reserved parts per 10,000)
    const BANDS: [(i64, i64); 4] = [(1000, 600), (1000, 100), (2000, 50), (i64::MAX, 25)];
    let mut left = cpu_milli.max(0);
    let mut reserved_x10k = 0i64;
    for (width, rate) in BANDS {
        let take = left.min(width);
        reserved_x10k += take * rate;
        left -= take;
    }
    (reserved_x10k + 9_999) / 10_000
}

/// Bytes of memory kube-reserved for a node that runs at most `max_pods` pods.
pub fn reserved_memory_bytes(max_pods: i64) -> i64 {
    11 * MIB * max_pods.max(0) + 255 * MIB
}

/// Allocatable resources of a node with `capacity`, by the formula above. Never negative.
pub fn allocatable_from_capacity(capacity: &Resources) -> Resources {
    Resources {
        cpu_milli: (capacity.cpu_milli - reserved_cpu_milli(capacity.cpu_milli)).max(0),
        memory: (capacity.memory - reserved_memory_bytes(capacity.pods) - EVICTION_MEMORY_BYTES)
            .max(0),
        pods: capacity.pods,
        ephemeral_storage: capacity.ephemeral_storage - capacity.ephemeral_storage / 10,
        extended: capacity.extended.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_reserve_follows_the_eks_bands() {
        assert_eq!(reserved_cpu_milli(1000), 60);
        assert_eq!(reserved_cpu_milli(2000), 70);
        assert_eq!(reserved_cpu_milli(4000), 80);
        assert_eq!(reserved_cpu_milli(8000), 90);
        assert_eq!(reserved_cpu_milli(96_000), 310);
    }

    #[test]
    fn m5_xlarge_allocatable() {
        // m5.xlarge: 4 vCPU, 16 GiB, 58 pods → 3920m and 16384 − (638 + 255) − 100 = 15391 MiB.
        let cap = Resources {
            cpu_milli: 4000,
            memory: 16 << 30,
            pods: 58,
            ..Default::default()
        };
        let alloc = allocatable_from_capacity(&cap);
        assert_eq!(alloc.cpu_milli, 3920);
        assert_eq!(alloc.memory, 15391 * MIB);
        assert_eq!(alloc.pods, 58);
    }
}
