//! ferroscale: a node autoscaler for Kubernetes on AWS. See the README for the three jobs of the binary;
//! the folders are its seams: `model` (pure types), `cloud` (where groups live), `grpc` (thin protocol
//! services), `metrics`/`http` (operations), `cli` (the commands).

pub mod cli;
pub mod cloud;
pub mod engine;
pub mod error;
pub mod grpc;
pub mod http;
pub mod kube;
pub mod metrics;
pub mod model;
pub mod pricing;
pub mod run;
pub mod server;
pub mod simulate;
pub mod tls;

pub use error::{Error, Result};

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
