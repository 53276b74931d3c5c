//! Pods and nodes read with only the fields the model is made of ([`crate::k8s::objects::pod`] and
//! [`crate::k8s::objects::node`] read nothing else): everything else in the text (environment, probes,
//! mounts, managed fields, images of nodes…) is skipped unparsed, not allocated. Each is then turned into
//! the sparse Kubernetes object those converters take, by moving its fields, so the model is the one the
//! full object gives, by construction.
//!
//! As in `k8s-openapi`, every field may be absent or null (a required one then reads as its default); the
//! small parts that are rare or read whole (affinity, tolerations, spreads, taints, resources, container
//! states) keep their `k8s-openapi` types.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use serde::Deserialize;

type Strings = BTreeMap<String, String>;
type Quantities = BTreeMap<String, Quantity>;

/// What the converters read of an object's metadata.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Meta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    labels: Option<Strings>,
    annotations: Option<Strings>,
    owner_references: Option<Vec<OwnerReference>>,
    creation_timestamp: Option<meta::Time>,
    deletion_timestamp: Option<meta::Time>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OwnerReference {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    controller: Option<bool>,
    #[serde(default)]
    uid: Option<String>,
}

impl Meta {
    fn into_core(self) -> meta::ObjectMeta {
        meta::ObjectMeta {
            name: self.name,
            namespace: self.namespace,
            uid: self.uid,
            labels: self.labels,
            annotations: self.annotations,
            owner_references: self.owner_references.map(|refs| {
                refs.into_iter()
                    .map(|o| meta::OwnerReference {
                        kind: o.kind.unwrap_or_default(),
                        name: o.name.unwrap_or_default(),
                        controller: o.controller,
                        uid: o.uid.unwrap_or_default(),
                        ..Default::default()
                    })
                    .collect()
            }),
            creation_timestamp: self.creation_timestamp,
            deletion_timestamp: self.deletion_timestamp,
            ..Default::default()
        }
    }
}

/// A pod, as [`crate::k8s::objects::pod`], its requests, states and volumes read it.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Pod {
    /// `v1`, as `k8s-openapi` checks it.
    #[serde(rename = "apiVersion")]
    pub(super) api_version: Option<String>,
    metadata: Option<Meta>,
    spec: Option<PodSpec>,
    status: Option<PodStatus>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct PodSpec {
    affinity: Option<core::Affinity>,
    tolerations: Option<Vec<core::Toleration>>,
    containers: Option<Vec<Container>>,
    init_containers: Option<Vec<Container>>,
    node_name: Option<String>,
    node_selector: Option<Strings>,
    topology_spread_constraints: Option<Vec<core::TopologySpreadConstraint>>,
    volumes: Option<Vec<Volume>>,
    priority: Option<i32>,
    scheduler_name: Option<String>,
    termination_grace_period_seconds: Option<i64>,
    resources: Option<core::ResourceRequirements>,
    overhead: Option<Quantities>,
    /// Read for its presence (`pod_facts`).
    resource_claims: Option<Vec<core::PodResourceClaim>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Container {
    name: Option<String>,
    image: Option<String>,
    resources: Option<core::ResourceRequirements>,
    ports: Option<Vec<core::ContainerPort>>,
    restart_policy: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Volume {
    name: Option<String>,
    host_path: Option<core::HostPathVolumeSource>,
    empty_dir: Option<core::EmptyDirVolumeSource>,
    aws_elastic_block_store: Option<core::AWSElasticBlockStoreVolumeSource>,
    persistent_volume_claim: Option<core::PersistentVolumeClaimVolumeSource>,
    ephemeral: Option<core::EphemeralVolumeSource>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct PodStatus {
    phase: Option<String>,
    reason: Option<String>,
    conditions: Option<Vec<Condition>>,
    container_statuses: Option<Vec<ContainerStatus>>,
    init_container_statuses: Option<Vec<ContainerStatus>>,
    ephemeral_container_statuses: Option<Vec<ContainerStatus>>,
    resources: Option<core::ResourceRequirements>,
    allocated_resources: Option<Quantities>,
    nominated_node_name: Option<String>,
    qos_class: Option<String>,
}

/// A pod's or a node's condition.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Condition {
    #[serde(rename = "type")]
    type_: Option<String>,
    status: Option<String>,
    reason: Option<String>,
    last_transition_time: Option<meta::Time>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ContainerStatus {
    name: Option<String>,
    restart_count: Option<i32>,
    state: Option<core::ContainerState>,
    resources: Option<core::ResourceRequirements>,
    allocated_resources: Option<Quantities>,
}

impl Container {
    fn into_core(self) -> core::Container {
        core::Container {
            name: self.name.unwrap_or_default(),
            image: self.image,
            resources: self.resources,
            ports: self.ports,
            restart_policy: self.restart_policy,
            ..Default::default()
        }
    }
}

impl ContainerStatus {
    fn into_core(self) -> core::ContainerStatus {
        core::ContainerStatus {
            name: self.name.unwrap_or_default(),
            restart_count: self.restart_count.unwrap_or_default(),
            state: self.state,
            resources: self.resources,
            allocated_resources: self.allocated_resources,
            ..Default::default()
        }
    }
}

fn each<T, U>(v: Option<Vec<T>>, f: impl Fn(T) -> U) -> Option<Vec<U>> {
    v.map(|v| v.into_iter().map(f).collect())
}

impl Pod {
    /// The Kubernetes pod holding what was read (every other field empty).
    pub(super) fn into_core(self) -> core::Pod {
        core::Pod {
            metadata: self.metadata.map(Meta::into_core).unwrap_or_default(),
            spec: self.spec.map(|s| core::PodSpec {
                affinity: s.affinity,
                tolerations: s.tolerations,
                containers: each(s.containers, Container::into_core).unwrap_or_default(),
                init_containers: each(s.init_containers, Container::into_core),
                node_name: s.node_name,
                node_selector: s.node_selector,
                topology_spread_constraints: s.topology_spread_constraints,
                volumes: each(s.volumes, |v| core::Volume {
                    name: v.name.unwrap_or_default(),
                    host_path: v.host_path,
                    empty_dir: v.empty_dir,
                    aws_elastic_block_store: v.aws_elastic_block_store,
                    persistent_volume_claim: v.persistent_volume_claim,
                    ephemeral: v.ephemeral,
                    ..Default::default()
                }),
                priority: s.priority,
                scheduler_name: s.scheduler_name,
                termination_grace_period_seconds: s.termination_grace_period_seconds,
                resources: s.resources,
                overhead: s.overhead,
                resource_claims: s.resource_claims,
                ..Default::default()
            }),
            status: self.status.map(|s| core::PodStatus {
                phase: s.phase,
                reason: s.reason,
                conditions: each(s.conditions, |c| core::PodCondition {
                    type_: c.type_.unwrap_or_default(),
                    status: c.status.unwrap_or_default(),
                    reason: c.reason,
                    last_transition_time: c.last_transition_time,
                    ..Default::default()
                }),
                container_statuses: each(s.container_statuses, ContainerStatus::into_core),
                init_container_statuses: each(
                    s.init_container_statuses,
                    ContainerStatus::into_core,
                ),
                ephemeral_container_statuses: each(
                    s.ephemeral_container_statuses,
                    ContainerStatus::into_core,
                ),
                resources: s.resources,
                allocated_resources: s.allocated_resources,
                nominated_node_name: s.nominated_node_name,
                qos_class: s.qos_class,
                ..Default::default()
            }),
        }
    }
}

/// A node, as [`crate::k8s::objects::node`] reads it.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Node {
    /// `v1`, as `k8s-openapi` checks it.
    #[serde(rename = "apiVersion")]
    pub(super) api_version: Option<String>,
    metadata: Option<Meta>,
    spec: Option<NodeSpec>,
    status: Option<NodeStatus>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct NodeSpec {
    taints: Option<Vec<core::Taint>>,
    unschedulable: Option<bool>,
    #[serde(rename = "providerID")]
    provider_id: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct NodeStatus {
    allocatable: Option<Quantities>,
    capacity: Option<Quantities>,
    conditions: Option<Vec<Condition>>,
}

impl Node {
    /// The Kubernetes node holding what was read (every other field empty).
    pub(super) fn into_core(self) -> core::Node {
        core::Node {
            metadata: self.metadata.map(Meta::into_core).unwrap_or_default(),
            spec: self.spec.map(|s| core::NodeSpec {
                taints: s.taints,
                unschedulable: s.unschedulable,
                provider_id: s.provider_id,
                ..Default::default()
            }),
            status: self.status.map(|s| core::NodeStatus {
                allocatable: s.allocatable,
                capacity: s.capacity,
                conditions: each(s.conditions, |c| core::NodeCondition {
                    type_: c.type_.unwrap_or_default(),
                    status: c.status.unwrap_or_default(),
                    reason: c.reason,
                    last_transition_time: c.last_transition_time,
                    ..Default::default()
                }),
                ..Default::default()
            }),
        }
    }
}
