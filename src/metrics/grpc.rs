//! The gRPC server metrics of go-grpc-prometheus, which cluster-autoscaler and most Go gRPC servers
//! export and dashboards are written for: started, handled (with the code), messages received and
//! sent, and the handling-time histogram, each with `grpc_type`, `grpc_service` and `grpc_method`.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::latency_histogram;

/// Every ferroscale RPC is unary: one request message, one answer.
const UNARY: &str = "unary";

/// Labels of one RPC, as go-grpc-prometheus names them.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RpcLabels {
    pub grpc_type: &'static str,
    pub grpc_service: &'static str,
    pub grpc_method: &'static str,
}

/// Labels of one finished RPC: those of [`RpcLabels`] and its code.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HandledLabels {
    pub grpc_type: &'static str,
    pub grpc_service: &'static str,
    pub grpc_method: &'static str,
    pub grpc_code: &'static str,
}

/// `grpc_server_started_total`, `_handled_total`, `_msg_received_total`, `_msg_sent_total` and
/// `_handling_seconds`.
pub(super) struct RpcMetrics {
    started: Family<RpcLabels, Counter>,
    handled: Family<HandledLabels, Counter>,
    received: Family<RpcLabels, Counter>,
    sent: Family<RpcLabels, Counter>,
    handling_seconds: Family<RpcLabels, Histogram, fn() -> Histogram>,
}

impl RpcMetrics {
    pub(super) fn register(registry: &mut Registry) -> Self {
        let m = RpcMetrics {
            started: Family::default(),
            handled: Family::default(),
            received: Family::default(),
            sent: Family::default(),
            handling_seconds: Family::new_with_constructor(latency_histogram),
        };
        registry.register(
            "grpc_server_started",
            "RPCs started on the server",
            m.started.clone(),
        );
        registry.register(
            "grpc_server_handled",
            "RPCs completed on the server, whatever their outcome, by gRPC code",
            m.handled.clone(),
        );
        registry.register(
            "grpc_server_msg_received",
            "RPC request messages received on the server",
            m.received.clone(),
        );
        registry.register(
            "grpc_server_msg_sent",
            "RPC answer messages sent by the server",
            m.sent.clone(),
        );
        registry.register(
            "grpc_server_handling_seconds",
            "Time to handle an RPC, until the server has its answer",
            m.handling_seconds.clone(),
        );
        m
    }

    /// A unary RPC arrived with its request.
    pub(super) fn started(&self, service: &'static str, method: &'static str) {
        let labels = unary(service, method);
        self.started.get_or_create(&labels).inc();
        self.received.get_or_create(&labels).inc();
    }

    /// A unary RPC finished with `code` (`OK` answers with a message) after `elapsed`.
    pub(super) fn handled(
        &self,
        service: &'static str,
        method: &'static str,
        code: &'static str,
        elapsed: Duration,
    ) {
        let labels = unary(service, method);
        self.handled
            .get_or_create(&HandledLabels {
                grpc_type: UNARY,
                grpc_service: service,
                grpc_method: method,
                grpc_code: code,
            })
            .inc();
        if code == "OK" {
            self.sent.get_or_create(&labels).inc();
        }
        self.handling_seconds
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
    }
}

fn unary(service: &'static str, method: &'static str) -> RpcLabels {
    RpcLabels {
        grpc_type: UNARY,
        grpc_service: service,
        grpc_method: method,
    }
}
