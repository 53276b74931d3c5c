//! A counter exported under its exact name, without the `_total` suffix OpenMetrics adds to counters.
//!
//! Upstream cluster-autoscaler serves the Prometheus text format, in which two of its counters keep
//! names without `_total` (`cluster_autoscaler_old_unregistered_nodes_removed_count`,
//! `cluster_autoscaler_skipped_scale_events_count`); dashboards query those names. OpenMetrics would
//! require the suffix on a counter, so these are exported with the `unknown` type, whose samples carry
//! the name as it is, and PromQL's `rate` and `increase` work on them as before. prometheus-client has
//! no such metric, hence this small one.

use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::{MetricType, TypedMetric};

/// A monotonic count exported as an `unknown`-typed sample named exactly as registered.
#[derive(Clone, Debug, Default)]
pub struct UntypedCounter(Counter);

impl UntypedCounter {
    pub fn inc_by(&self, v: u64) {
        self.0.inc_by(v);
    }
}

impl TypedMetric for UntypedCounter {
    const TYPE: MetricType = MetricType::Unknown;
}

impl EncodeMetric for UntypedCounter {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_gauge(&self.0.get())
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}
