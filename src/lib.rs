//! ferroscale: a node autoscaler for Kubernetes on AWS. See the README for the three jobs of the binary
//! and CONTRIBUTING.md for the layers. The pure core (model, engine, price arithmetic) is the
//! `ferroscale-core` crate, re-exported here; this crate holds what talks to the world: `cloud` (where
//! groups live), `grpc` (thin protocol services), `k8s` (the Kubernetes API), `metrics`/`http`
//! (operations) and the commands (`cli`, `run`, `simulate`, `server`).

pub mod actuator;
pub mod cli;
pub mod cloud;
pub mod descheduler;
pub mod error;
pub mod grpc;
pub mod guard;
pub mod http;
pub mod https;
pub mod input;
pub mod k8s;
pub mod leadership;
pub mod metrics;
pub mod report;
pub mod run;
pub mod server;
pub mod simulate;
pub mod time;
pub mod tls;
pub mod trace;

pub use error::{Error, Result};
pub use ferroscale_core::{backoff, bounds, clock, deschedule, engine, labels, model, pricing};

/// Code generated from `proto/` by `build.rs`.
pub mod proto {
    /// cluster-autoscaler's `externalgrpc` CloudProvider protocol.
    pub mod externalgrpc {
        #![allow(missing_docs, clippy::doc_lazy_continuation)]
        tonic::include_proto!("clusterautoscaler.cloudprovider.v1.externalgrpc");
    }
    /// cluster-autoscaler's `grpc` expander protocol.
    pub mod expander {
        #![allow(missing_docs, clippy::doc_lazy_continuation)]
        tonic::include_proto!("grpcplugin");
    }
}
