//! Prometheus metrics served on `/metrics`: per-RPC counters and latency histograms with the label names
//! of go-grpc-prometheus (`grpc_service`, `grpc_method`, `grpc_code`), which dashboards for Go gRPC
//! servers such as cluster-autoscaler's already use.

mod totals;

pub use totals::ClusterTotals;

use std::sync::atomic::AtomicU64;
use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Labels named as upstream names them where the name is a Rust keyword (`type`): (name, value) pairs.
pub type Labels = Vec<(&'static str, &'static str)>;

/// Labels of one RPC outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RpcLabels {
    pub grpc_service: &'static str,
    pub grpc_method: &'static str,
    pub grpc_code: &'static str,
}

/// Labels of one AWS API call, in upstream CA's `cluster_autoscaler_aws_request_duration_seconds` shape.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AwsLabels {
    /// The AWS operation, e.g. `autoscaling/DescribeAutoScalingGroups`.
    pub endpoint: &'static str,
    /// `success`, or the AWS error code (`Throttling`, `AccessDenied`, `ValidationError`, ...), or
    /// `timeout` / `error` when AWS gave no code.
    pub status: String,
}

/// Upper bounds in seconds, from 50µs (a cached read) to 5s (CA's default deadline).
const LATENCY_BUCKETS: [f64; 16] = [
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0,
];

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// Label of `cluster_autoscaler_function_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FunctionLabel {
    pub function: &'static str,
}

/// Label of `cluster_autoscaler_nodes_count`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    pub state: &'static str,
}

/// Label of `cluster_autoscaler_scaled_down_nodes_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: &'static str,
}

/// Label of `cluster_autoscaler_evicted_pods_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EvictionLabel {
    pub eviction_result: &'static str,
}

/// Label of `cluster_autoscaler_last_activity`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ActivityLabel {
    pub activity: &'static str,
}

/// Label of the per-group gauges (`cluster_autoscaler_node_group_*_count`, upstream's names).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GroupLabel {
    pub node_group: String,
}

/// Upper bounds in seconds of loop phases, from 10ms to 5 minutes.
const FUNCTION_BUCKETS: [f64; 12] = [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0, 300.0,
];

fn function_histogram() -> Histogram {
    Histogram::new(FUNCTION_BUCKETS)
}

/// The autoscaling loop's metrics (`ferroscale run`), under upstream cluster-autoscaler's names so its
/// dashboards and alerts apply unchanged. The loop records through its methods, one per thing that
/// happened; a recorder that is not registered ([`LoopMetrics::unregistered`]) records nowhere.
#[derive(Clone)]
pub struct LoopMetrics {
    function_duration: Family<FunctionLabel, Histogram, fn() -> Histogram>,
    unschedulable_pods: Family<Labels, Gauge>,
    nodes: Family<StateLabel, Gauge>,
    node_groups: Family<Labels, Gauge>,
    unneeded_nodes: Gauge,
    scaled_up_nodes: Counter,
    scaled_down_nodes: Family<ReasonLabel, Counter>,
    failed_scale_ups: Family<ReasonLabel, Counter>,
    evicted_pods: Family<EvictionLabel, Counter>,
    errors: Family<Labels, Counter>,
    last_activity: Family<ActivityLabel, Gauge>,
    safe_to_autoscale: Gauge,
    held_back: Gauge,
    /// The cluster's cores and memory and their limits.
    pub totals: ClusterTotals,
}

impl LoopMetrics {
    /// Whether the loop may act (upstream's cluster health) and whether removals are held back because
    /// the state read cannot be trusted (a watch down, an object unreadable).
    pub fn safety(&self, safe_to_autoscale: bool, held_back: bool) {
        self.safe_to_autoscale.set(i64::from(safe_to_autoscale));
        self.held_back.set(i64::from(held_back));
    }

    /// A recorder whose figures go nowhere (a loop run without `Metrics::for_run`).
    pub fn unregistered() -> Self {
        LoopMetrics::register(&mut Registry::default())
    }

    /// `count` nodes were asked for.
    pub fn scaled_up(&self, count: u64, unix: i64) {
        self.scaled_up_nodes.inc_by(count);
        self.activity("scaleUp", unix);
    }

    /// A scale-up failed (`cloudProviderError`, ...).
    pub fn scale_up_failed(&self, reason: &'static str) {
        self.failed_scale_ups
            .get_or_create(&ReasonLabel { reason })
            .inc();
    }

    /// A node was removed (`empty`, `underutilized`, `unregistered`).
    pub fn scaled_down(&self, reason: &'static str) {
        self.scaled_down_nodes
            .get_or_create(&ReasonLabel { reason })
            .inc();
    }

    /// A pod eviction for a scale-down ended.
    pub fn evicted(&self, succeeded: bool) {
        self.evicted_pods
            .get_or_create(&EvictionLabel {
                eviction_result: if succeeded { "succeeded" } else { "failed" },
            })
            .inc();
    }

    /// A loop failed (`cloudProviderError`, ...).
    pub fn error(&self, kind: &'static str) {
        self.errors.get_or_create(&vec![("type", kind)]).inc();
    }

    /// What one loop saw: pods no node takes, nodes unneeded, groups, and nodes by state.
    pub fn cluster(
        &self,
        unschedulable: usize,
        unneeded: usize,
        groups: usize,
        nodes: &[(&'static str, usize)],
    ) {
        // Upstream's other types (`scheduler_unprocessed`, `autoprovisioned`) have no counterpart here.
        self.unschedulable_pods
            .get_or_create(&vec![("type", "unschedulable")])
            .set(unschedulable as i64);
        self.unneeded_nodes.set(unneeded as i64);
        self.node_groups
            .get_or_create(&vec![("node_group_type", "autoscaled")])
            .set(groups as i64);
        for &(state, n) in nodes {
            self.nodes
                .get_or_create(&StateLabel { state })
                .set(n as i64);
        }
    }

    fn register(registry: &mut Registry) -> Self {
        let m = LoopMetrics {
            function_duration: Family::new_with_constructor(function_histogram),
            unschedulable_pods: Family::default(),
            nodes: Family::default(),
            node_groups: Family::default(),
            unneeded_nodes: Gauge::default(),
            scaled_up_nodes: Counter::default(),
            scaled_down_nodes: Family::default(),
            failed_scale_ups: Family::default(),
            evicted_pods: Family::default(),
            errors: Family::default(),
            last_activity: Family::default(),
            safe_to_autoscale: Gauge::default(),
            held_back: Gauge::default(),
            totals: ClusterTotals::register(registry),
        };
        registry.register(
            "cluster_autoscaler_cluster_safe_to_autoscale",
            "Whether the cluster is healthy enough to autoscale (1) or has too many unready nodes (0)",
            m.safe_to_autoscale.clone(),
        );
        registry.register(
            "ferroscale_scale_down_held_back",
            "1 while nothing is removed because the cluster state cannot be trusted (a watch not synced or failing, an object unreadable)",
            m.held_back.clone(),
        );
        let p = "cluster_autoscaler_";
        registry.register(
            format!("{p}function_duration_seconds"),
            "Time taken by the phases of the autoscaling loop",
            m.function_duration.clone(),
        );
        registry.register(
            format!("{p}unschedulable_pods_count"),
            "Pods the scheduler could not place, after filtering those existing or upcoming nodes take",
            m.unschedulable_pods.clone(),
        );
        registry.register(
            format!("{p}nodes_count"),
            "Nodes by state: ready, unready, notStarted, unregistered, longUnregistered",
            m.nodes.clone(),
        );
        registry.register(
            format!("{p}node_groups_count"),
            "Node groups the autoscaler manages",
            m.node_groups.clone(),
        );
        registry.register(
            format!("{p}unneeded_nodes_count"),
            "Nodes currently considered for removal",
            m.unneeded_nodes.clone(),
        );
        registry.register(
            format!("{p}scaled_up_nodes"),
            "Nodes added by scale-ups",
            m.scaled_up_nodes.clone(),
        );
        registry.register(
            format!("{p}scaled_down_nodes"),
            "Nodes removed, by reason: empty, underutilized, unregistered",
            m.scaled_down_nodes.clone(),
        );
        registry.register(
            format!("{p}failed_scale_ups"),
            "Scale-ups that failed, by reason",
            m.failed_scale_ups.clone(),
        );
        registry.register(
            format!("{p}evicted_pods"),
            "Pods evicted for scale-downs, by result",
            m.evicted_pods.clone(),
        );
        registry.register(
            format!("{p}errors"),
            "Loop errors, by type",
            m.errors.clone(),
        );
        registry.register(
            format!("{p}last_activity"),
            "Unix time of the last activity: main (a loop), autoscaling (a successful loop), scaleUp, scaleDown",
            m.last_activity.clone(),
        );
        m
    }

    /// Observes one phase of the loop.
    pub fn observe(&self, function: &'static str, elapsed: Duration) {
        self.function_duration
            .get_or_create(&FunctionLabel { function })
            .observe(elapsed.as_secs_f64());
    }

    /// Sets an activity's time.
    pub fn activity(&self, activity: &'static str, unix: i64) {
        self.last_activity
            .get_or_create(&ActivityLabel { activity })
            .set(unix);
    }
}

/// The process's metrics registry and the handles the services record into.
pub struct Metrics {
    registry: Registry,
    handled: Family<RpcLabels, Counter>,
    handling_seconds: Family<RpcLabels, Histogram, fn() -> Histogram>,
    aws_request_seconds: Family<AwsLabels, Histogram, fn() -> Histogram>,
    state_age_seconds: Gauge<f64, AtomicU64>,
    price_age_seconds: Gauge<f64, AtomicU64>,
    groups: GroupGauges,
    /// The loop's metrics, registered by [`Metrics::for_run`] only.
    pub autoscaler: Option<LoopMetrics>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let handled = Family::<RpcLabels, Counter>::default();
        let handling_seconds =
            Family::<RpcLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                latency_histogram,
            );
        registry.register(
            "grpc_server_handled",
            "RPCs completed on the server, by method and gRPC code",
            handled.clone(),
        );
        registry.register(
            "grpc_server_handling_seconds",
            "Time to handle an RPC, by method and gRPC code",
            handling_seconds.clone(),
        );
        let aws_request_seconds =
            Family::<AwsLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                latency_histogram,
            );
        registry.register(
            "cluster_autoscaler_aws_request_duration_seconds",
            "Time taken by AWS API calls, by operation and outcome",
            aws_request_seconds.clone(),
        );
        let state_age_seconds = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "ferroscale_cloud_state_age_seconds",
            "Seconds since the cloud state served to clients was last read from the cloud",
            state_age_seconds.clone(),
        );
        let price_age_seconds = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "ferroscale_price_age_seconds",
            "Seconds since the on-demand and spot prices in use were last read from AWS",
            price_age_seconds.clone(),
        );
        let groups = GroupGauges::register(&mut registry);
        Metrics {
            registry,
            groups,
            price_age_seconds,
            handled,
            handling_seconds,
            aws_request_seconds,
            state_age_seconds,
            autoscaler: None,
        }
    }
}

impl Metrics {
    /// The metrics of `ferroscale run`: the cloud's and the loop's.
    pub fn for_run() -> Self {
        let mut m = Metrics::default();
        m.autoscaler = Some(LoopMetrics::register(&mut m.registry));
        m
    }

    /// Records one finished RPC.
    pub fn observe_rpc(&self, labels: RpcLabels, elapsed: Duration) {
        self.handled.get_or_create(&labels).inc();
        self.handling_seconds
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
    }

    /// Records one AWS API call.
    pub fn observe_aws(&self, labels: AwsLabels, elapsed: Duration) {
        self.aws_request_seconds
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
    }

    /// Sets the age of the cloud state being served.
    pub fn set_state_age(&self, age: Duration) {
        self.state_age_seconds.set(age.as_secs_f64());
    }

    /// Sets the age of the prices being served.
    pub fn set_price_age(&self, age: Duration) {
        self.price_age_seconds.set(age.as_secs_f64());
    }

    /// Sets the per-group gauges and the cluster's cost from the groups being served (groups no longer
    /// there disappear).
    pub fn set_groups(&self, snapshot: &crate::model::Snapshot) {
        self.groups.set(snapshot);
    }

    /// The registry in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let _groups = self.groups.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// The node groups' sizes (upstream CA's `--emit-per-nodegroup-metrics` gauges) and prices, and what
/// the cluster's instances cost per hour.
struct GroupGauges {
    target: Family<GroupLabel, Gauge>,
    min: Family<GroupLabel, Gauge>,
    max: Family<GroupLabel, Gauge>,
    price: Family<GroupLabel, Gauge<f64, AtomicU64>>,
    cost: Gauge<f64, AtomicU64>,
    /// Held while the families are rebuilt and while they are encoded, so a scrape never sees them half set.
    lock: Mutex<()>,
}

impl GroupGauges {
    fn register(registry: &mut Registry) -> Self {
        let g = GroupGauges {
            target: Family::default(),
            min: Family::default(),
            max: Family::default(),
            price: Family::default(),
            cost: Gauge::default(),
            lock: Mutex::new(()),
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
            "What the groups' instances cost per hour in USD: instances times the group's price (groups with a known price)",
            g.cost.clone(),
        );
        g
    }

    fn set(&self, snapshot: &crate::model::Snapshot) {
        let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
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
                cost += price * g.instances.len() as f64;
            }
        }
        self.cost.set(cost);
    }
}
