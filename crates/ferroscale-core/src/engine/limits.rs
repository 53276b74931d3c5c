//! `--cores-total` and `--memory-total` as upstream counts them: node capacity (cores rounded up, memory
//! in bytes against the flag's GiB), not allocatable. A node or template that declares no capacity counts
//! its allocatable. Scale-up stays under the maxima; scale-down keeps the cluster at or above the minima.

use std::fmt;

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
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Resource::Cores => "cores",
            Resource::Memory => "memory",
        })
    }
}

/// Cores and memory (bytes) of a node, or of a whole cluster.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Amount {
    pub cores: i64,
    pub memory: i64,
}

impl Amount {
    fn of(capacity: &Resources, allocatable: &Resources) -> Amount {
        let pick = |c: i64, a: i64| if c > 0 { c } else { a.max(0) };
        Amount {
            cores: (pick(capacity.cpu_milli, allocatable.cpu_milli) + 999) / 1000,
            memory: pick(capacity.memory, allocatable.memory),
        }
    }

    /// What a node counts.
    pub fn of_node(n: &Node) -> Amount {
        Amount::of(&n.capacity, &n.allocatable)
    }

    /// What a new node of a template counts.
    pub fn of_template(t: &TemplateNode) -> Amount {
        Amount::of(&t.capacity, &t.allocatable)
    }

    pub fn add(&mut self, other: Amount, times: i64) {
        self.cores += other.cores * times;
        self.memory += other.memory * times;
    }
}

/// `--memory-total`'s GiB in bytes.
pub fn gib(n: i64) -> i64 {
    n.saturating_mul(GIB)
}

/// How much scale-down may still take before the cluster goes below the minima.
#[derive(Debug, Clone, Copy)]
pub struct AboveMin(Amount);

impl AboveMin {
    /// The room above `min_cores` and `min_memory_gib` of a cluster of `total`.
    pub fn new(total: Amount, min_cores: i64, min_memory_gib: i64) -> AboveMin {
        AboveMin(Amount {
            cores: (total.cores - min_cores).max(0),
            memory: (total.memory - gib(min_memory_gib)).max(0),
        })
    }

    /// Takes a node out, or names the resource whose minimum it would break.
    pub fn take(&mut self, node: Amount) -> Result<(), Resource> {
        if node.cores > self.0.cores {
            return Err(Resource::Cores);
        }
        if node.memory > self.0.memory {
            return Err(Resource::Memory);
        }
        self.0.cores -= node.cores;
        self.0.memory -= node.memory;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{node, resources};

    #[test]
    fn capacity_counts_rounded_up_and_allocatable_only_without_it() {
        let n = node("")
            .capacity(resources(2000, 8 * GIB, 0))
            .allocatable(resources(1930, 7 * GIB, 0))
            .build();
        assert_eq!(
            Amount::of_node(&n),
            Amount {
                cores: 2,
                memory: 8 * GIB
            }
        );
        let bare = node("").allocatable(resources(1500, GIB, 0)).build();
        assert_eq!(Amount::of_node(&bare).cores, 2, "1.5 cores count as 2");
    }

    #[test]
    fn the_minima_stop_removals() {
        let node = Amount {
            cores: 2,
            memory: 8 * GIB,
        };
        let total = Amount {
            cores: 6,
            memory: 24 * GIB,
        };
        let mut left = AboveMin::new(total, 3, 0);
        assert_eq!(left.take(node), Ok(()));
        assert_eq!(
            left.take(node),
            Err(Resource::Cores),
            "4 cores left, 3 the minimum"
        );
        let mut left = AboveMin::new(total, 0, 20);
        assert_eq!(left.take(node), Err(Resource::Memory));
    }
}
