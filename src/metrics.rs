//! Prometheus metrics served on `/metrics`: per-RPC counters and latency histograms with the label names
//! of go-grpc-prometheus (`grpc_service`, `grpc_method`, `grpc_code`), which dashboards for Go gRPC
//! servers such as cluster-autoscaler's already use.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

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
    /// `success` or `error`.
    pub status: &'static str,
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
    handled: Family<RpcLabels, Counter>,
    handling_seconds: Family<RpcLabels, Histogram, fn() -> Histogram>,
    aws_request_seconds: Family<AwsLabels, Histogram, fn() -> Histogram>,
    state_age_seconds: Gauge<f64, AtomicU64>,
    price_age_seconds: Gauge<f64, AtomicU64>,
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
        Metrics {
            registry,
            price_age_seconds,
            handled,
            handling_seconds,
            aws_request_seconds,
            state_age_seconds,
        }
    }
}

impl Metrics {
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

    /// The registry in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
