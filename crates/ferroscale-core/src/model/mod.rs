//! Pure domain types shared by every part of ferroscale: node groups, their instances and template nodes,
//! resources and autoscaling options. No protobuf, AWS or Kubernetes client types appear here, so the
//! engine, the clouds and the gRPC layer can all speak the same language.

pub mod consolidation;
pub mod drift;
pub mod duration;
mod group;
pub mod lifecycle;
mod options;
mod pod_meta;
pub mod provider_id;
pub mod quantity;
pub mod reserve;
mod resources;
mod selector;
pub mod shared;
mod snapshot;
pub mod volumes;
pub mod workload;

pub use duration::{parse_go_duration, secs};
pub use group::{DeletePlan, ErrorClass, Instance, InstanceError, InstanceState, NodeGroup};
pub use options::{AutoscalingOptions, OptionValues};
pub use provider_id::instance_id;
pub use resources::{
    pod_level_resource, pod_requests, Resources, Taint, TaintEffect, TemplateNode,
    UnknownTaintEffect,
};
pub use snapshot::Snapshot;
/// The short list type of the model's rarely set pod fields, for the adapters that build pods.
pub use thin_vec::{thin_vec, ThinVec};
