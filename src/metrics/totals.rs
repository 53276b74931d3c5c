//! Upstream's cluster totals: the cores and memory of the cluster's nodes and the limits put on them
//! (`--cores-total`, `--memory-total`), under cluster-autoscaler's names and labels, so its dashboards
//! show how close the cluster is to its limits.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::model::workload::Node;

/// Which end of a limit: `minimum` or `maximum`, as upstream labels it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DirectionLabel {
    pub direction: &'static str,
}

/// `cluster_autoscaler_cluster_cpu_current_cores`, `_cluster_memory_current_bytes`, `_cpu_limits_cores`
/// and `_memory_limits_bytes`.
#[derive(Clone, Default)]
pub struct ClusterTotals {
    cpu_current: Gauge,
    memory_current: Gauge,
    cpu_limits: Family<DirectionLabel, Gauge>,
    memory_limits: Family<DirectionLabel, Gauge>,
}

const GIB: i64 = 1 << 30;

impl ClusterTotals {
    pub(super) fn register(registry: &mut Registry) -> Self {
        let m = ClusterTotals::default();
        let p = "cluster_autoscaler_";
        registry.register(
            format!("{p}cluster_cpu_current_cores"),
            "Cores of the cluster's nodes (capacity), nodes being removed left out",
            m.cpu_current.clone(),
        );
        registry.register(
            format!("{p}cluster_memory_current_bytes"),
            "Memory of the cluster's nodes (capacity) in bytes, nodes being removed left out",
            m.memory_current.clone(),
        );
        registry.register(
            format!("{p}cpu_limits_cores"),
            "Minimum and maximum cores of the cluster (--cores-total)",
            m.cpu_limits.clone(),
        );
        registry.register(
            format!("{p}memory_limits_bytes"),
            "Minimum and maximum memory of the cluster in bytes (--memory-total)",
            m.memory_limits.clone(),
        );
        m
    }

    /// Sets the totals from one loop's nodes (those not being removed) and the limits in cores and GiB.
    /// A node's cores are its capacity rounded up, as Kubernetes quantities' whole values are.
    pub fn set<'a>(
        &self,
        nodes: impl IntoIterator<Item = &'a Node>,
        cores: (i64, i64),
        memory_gib: (i64, i64),
    ) {
        let (mut cpu, mut memory) = (0i64, 0i64);
        for n in nodes {
            cpu += (n.capacity.cpu_milli + 999) / 1000;
            memory += n.capacity.memory;
        }
        self.cpu_current.set(cpu);
        self.memory_current.set(memory);
        for (direction, c, m) in [
            ("minimum", cores.0, memory_gib.0),
            ("maximum", cores.1, memory_gib.1),
        ] {
            self.cpu_limits
                .get_or_create(&DirectionLabel { direction })
                .set(c);
            self.memory_limits
                .get_or_create(&DirectionLabel { direction })
                .set(m.saturating_mul(GIB));
        }
    }
}
