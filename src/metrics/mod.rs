//! Prometheus metrics served on `/metrics`, under the names and labels of what operators already
//! watch: go-grpc-prometheus's gRPC server metrics (`grpc`), upstream cluster-autoscaler's loop, cluster
//! and per-group metrics (`run`, `totals`, `groups`), its AWS request histogram, and ferroscale's own
//! cost and freshness gauges, consolidation's (`consolidation`), and the descheduler's metrics under its names (`deschedule`).

mod consolidation;
mod deschedule;
mod groups;
mod grpc;
mod intents;
mod lifecycle;
mod run;
mod totals;
mod untyped;

pub use consolidation::{ActionLabels, ConsolidationMetrics, DeclinedLabel};
pub use deschedule::{DeclinedLabels, DeschedulerMetrics, EvictedLabels, StrategyLabels};
pub use groups::{GroupState, GroupStates};
pub use intents::IntentMetrics;
pub use lifecycle::LifecycleMetrics;
pub use run::{Cluster, LoopMetrics};
pub use totals::ClusterTotals;

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use groups::GroupGauges;
use grpc::RpcMetrics;

/// Labels named as upstream names them where the name is a Rust keyword (`type`): (name, value) pairs.
pub type Labels = Vec<(&'static str, &'static str)>;

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

/// The process's metrics registry and the handles the services record into.
pub struct Metrics {
    registry: Registry,
    rpc: RpcMetrics,
    aws_request_seconds: Family<AwsLabels, Histogram, fn() -> Histogram>,
    state_age_seconds: Gauge<f64, AtomicU64>,
    price_age_seconds: Gauge<f64, AtomicU64>,
    groups: GroupGauges,
    /// The loop's metrics, registered by [`Metrics::for_run`] only.
    pub autoscaler: Option<LoopMetrics>,
    /// The descheduler's metrics, registered by [`Metrics::with_descheduler`] only.
    pub descheduler: Option<DeschedulerMetrics>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let rpc = RpcMetrics::register(&mut registry);
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
            rpc,
            aws_request_seconds,
            state_age_seconds,
            autoscaler: None,
            descheduler: None,
        }
    }
}

impl Metrics {
    /// The metrics of `ferroscale run`: the cloud's and the loop's.
    pub fn for_run() -> Self {
        let mut m = Metrics::default();
        let lock = m.groups.lock.clone();
        m.autoscaler = Some(LoopMetrics::register(&mut m.registry, lock));
        m
    }

    /// These metrics with the descheduler's (`run --deschedule-policy`, `ferroscale deschedule`).
    pub fn with_descheduler(mut self) -> Self {
        self.descheduler = Some(DeschedulerMetrics::register(&mut self.registry));
        self
    }

    /// A unary RPC of `service` started.
    pub fn rpc_started(&self, service: &'static str, method: &'static str) {
        self.rpc.started(service, method);
    }

    /// A unary RPC finished with `code` (go-grpc-prometheus's code names) after `elapsed`.
    pub fn rpc_handled(
        &self,
        service: &'static str,
        method: &'static str,
        code: &'static str,
        elapsed: Duration,
    ) {
        self.rpc.handled(service, method, code, elapsed);
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
        let _groups = self.groups.lock.lock();
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
