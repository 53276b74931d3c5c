//! Per node group: upstream's `--emit-per-nodegroup-metrics` gauges (min, max and target size in
//! `serve` and `run`; health and backoff in `run`), and what the groups cost per hour.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Label of the per-group gauges (`cluster_autoscaler_node_group_*`, upstream's names).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GroupLabel {
    pub node_group: String,
}

/// Labels of `cluster_autoscaler_node_group_backoff_status`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BackoffLabels {
    pub node_group: String,
    /// The error code of the failure that backed the group off; empty when it is not backed off.
    pub reason: String,
}

/// A group's state as the loop saw it: whether it is healthy and, if backed off, why.
pub struct GroupState<'a> {
    pub group: &'a str,
    pub healthy: bool,
    pub backoff: Option<&'a str>,
}

/// The node groups' sizes (upstream CA's `--emit-per-nodegroup-metrics` gauges) and prices, and what
/// the cluster's instances cost per hour.
pub(super) struct GroupGauges {
    target: Family<GroupLabel, Gauge>,
    min: Family<GroupLabel, Gauge>,
    max: Family<GroupLabel, Gauge>,
    price: Family<GroupLabel, Gauge<f64, AtomicU64>>,
    cost: Gauge<f64, AtomicU64>,
    /// Held while the families are rebuilt and while they are encoded, so a scrape never sees them half set.
    pub(super) lock: Arc<Mutex<()>>,
}

impl GroupGauges {
    pub(super) fn register(registry: &mut Registry) -> Self {
        let g = GroupGauges {
            target: Family::default(),
            min: Family::default(),
            max: Family::default(),
            price: Family::default(),
            cost: Gauge::default(),
            lock: Arc::new(Mutex::new(())),
        };
        for (name, help, family) in [
            (
                "cluster_autoscaler_node_group_target_count",
                "Target number of nodes in the node group",
                &g.target,
            ),
            (
                "cluster_autoscaler_node_group_min_count",
                "Minimum number of nodes in the node group",
                &g.min,
            ),
            (
                "cluster_autoscaler_node_group_max_count",
                "Maximum number of nodes in the node group",
                &g.max,
            ),
        ] {
            registry.register(name, help, family.clone());
        }
        registry.register(
            "ferroscale_node_group_price_per_hour",
            "Price of one node of the group per hour in USD (groups with a known price)",
            g.price.clone(),
        );
        registry.register(
            "ferroscale_cluster_cost_per_hour",
            "What the groups' instances cost per hour in USD: each instance at its own price (its type, zone, on-demand or spot), else its group's (groups with a known price)",
            g.cost.clone(),
        );
        g
    }

    pub(super) fn set(&self, snapshot: &crate::model::Snapshot) {
        let _held = self.lock.lock();
        self.target.clear();
        self.min.clear();
        self.max.clear();
        self.price.clear();
        let mut cost = 0.0;
        for g in snapshot.groups() {
            let label = GroupLabel {
                node_group: g.id.clone(),
            };
            self.target.get_or_create(&label).set(g.target_size.into());
            self.min.get_or_create(&label).set(g.min_size.into());
            self.max.get_or_create(&label).set(g.max_size.into());
            if let Some(price) = g.price_per_hour {
                self.price.get_or_create(&label).set(price);
            }
            // Each instance at its own price (type, zone, on-demand or spot), else the group's.
            cost += g
                .instances
                .iter()
                .filter_map(|i| g.price_of(&i.id))
                .sum::<f64>();
        }
        self.cost.set(cost);
    }
}

/// `cluster_autoscaler_node_group_healthiness{node_group}` and
/// `cluster_autoscaler_node_group_backoff_status{node_group,reason}`, set by each loop of `run`.
#[derive(Clone)]
pub struct GroupStates {
    healthiness: Family<GroupLabel, Gauge>,
    backoff: Family<BackoffLabels, Gauge>,
    /// The registry's encoding lock, shared with [`GroupGauges`].
    lock: Arc<Mutex<()>>,
}

impl GroupStates {
    pub(super) fn register(registry: &mut Registry, lock: Arc<Mutex<()>>) -> Self {
        let m = GroupStates {
            healthiness: Family::default(),
            backoff: Family::default(),
            lock,
        };
        registry.register(
            "cluster_autoscaler_node_group_healthiness",
            "Whether the node group is healthy enough to autoscale (1) or has too many unready nodes (0)",
            m.healthiness.clone(),
        );
        registry.register(
            "cluster_autoscaler_node_group_backoff_status",
            "Whether the node group is backed off after failed scale-ups (1, with the failure's error code as reason) or not (0, empty reason)",
            m.backoff.clone(),
        );
        m
    }

    /// Sets both gauges for every group the loop saw; groups no longer there disappear.
    pub fn set<'a>(&self, groups: impl IntoIterator<Item = GroupState<'a>>) {
        let _held = self.lock.lock();
        self.healthiness.clear();
        self.backoff.clear();
        for g in groups {
            let node_group = g.group.to_string();
            self.healthiness
                .get_or_create(&GroupLabel {
                    node_group: node_group.clone(),
                })
                .set(i64::from(g.healthy));
            self.backoff
                .get_or_create(&BackoffLabels {
                    node_group,
                    reason: g.backoff.unwrap_or_default().to_string(),
                })
                .set(i64::from(g.backoff.is_some()));
        }
    }
}
