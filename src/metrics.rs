//! Prometheus metrics served on `/metrics`: per-RPC counters and latency histograms with the label names
//! of go-grpc-prometheus (`grpc_service`, `grpc_method`, `grpc_code`), which dashboards for Go gRPC
//! servers such as cluster-autoscaler's already use.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Labels of one RPC outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RpcLabels {
    pub grpc_service: &'static str,
    pub grpc_method: &'static str,
    pub grpc_code: &'static str,
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
        Metrics {
            registry,
            handled,
            handling_seconds,
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

    /// The registry in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
