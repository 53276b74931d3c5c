//! Translation between protobuf messages (both protocol generations) and the domain model.

use crate::labels;
use std::collections::BTreeMap;
use std::time::Duration;

use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use prost::Message;

use crate::error::{Error, Result};
use crate::model::{
    Instance, InstanceState, NodeGroup, OptionValues, Resources, Taint, TaintEffect, TemplateNode,
};
use crate::proto::externalgrpc as pb;

fn quantities(r: &Resources) -> BTreeMap<String, Quantity> {
    r.to_quantities()
        .into_iter()
        .map(|(k, v)| (k, Quantity { string: Some(v) }))
        .collect()
}

/// The complete `v1.Node` a new node of the group would register as.
pub fn template_node(t: &TemplateNode) -> core::Node {
    let label = |k: &str| t.labels.get(k).cloned();
    core::Node {
        metadata: Some(meta::ObjectMeta {
            name: Some(t.name.clone()),
            labels: t.labels.clone(),
            ..Default::default()
        }),
        spec: Some(core::NodeSpec {
            taints: t
                .taints
                .iter()
                .map(|x| core::Taint {
                    key: Some(x.key.clone()),
                    value: Some(x.value.clone()),
                    effect: Some(x.effect.as_str().to_string()),
                    time_added: None,
                })
                .collect(),
            ..Default::default()
        }),
        status: Some(core::NodeStatus {
            capacity: quantities(&t.capacity),
            allocatable: quantities(&t.allocatable),
            phase: Some("Running".into()),
            conditions: vec![core::NodeCondition {
                r#type: Some("Ready".into()),
                status: Some("True".into()),
                reason: Some("KubeletReady".into()),
                message: Some("template node".into()),
                ..Default::default()
            }],
            node_info: Some(core::NodeSystemInfo {
                operating_system: label(labels::OS),
                architecture: label(labels::ARCH),
                ..Default::default()
            }),
            ..Default::default()
        }),
    }
}

/// A template node as CA sends it (in the expander's node map) back into the model; `field` names it in
/// errors.
pub fn template_from_node(node: &core::Node, field: &str) -> Result<TemplateNode> {
    let meta = node.metadata.clone().unwrap_or_default();
    let spec = node.spec.clone().unwrap_or_default();
    let status = node.status.clone().unwrap_or_default();
    let taints = spec
        .taints
        .iter()
        .filter_map(|t| {
            let effect: TaintEffect = t.effect.as_deref()?.parse().ok()?;
            Some(Taint {
                key: t.key.clone()?,
                value: t.value.clone().unwrap_or_default(),
                effect,
            })
        })
        .collect();
    let capacity = resources_of(Some(&status.capacity), &format!("{field}.status.capacity"))?;
    let allocatable = if status.allocatable.is_empty() {
        capacity.clone()
    } else {
        resources_of(
            Some(&status.allocatable),
            &format!("{field}.status.allocatable"),
        )?
    };
    Ok(TemplateNode {
        name: meta.name.unwrap_or_default(),
        labels: meta.labels,
        taints,
        capacity,
        allocatable,
        // Known only from a real node's CSINode.
        volume_limits: Default::default(),
    })
}

/// The protobuf bytes of a node, as Go's `Node.Marshal()` writes them.
pub fn node_bytes(node: &core::Node) -> Vec<u8> {
    node.encode_to_vec()
}

/// A node group as CA sees it.
pub fn node_group(g: &NodeGroup) -> pb::NodeGroup {
    pb::NodeGroup {
        id: g.id.clone(),
        min_size: g.min_size,
        max_size: g.max_size,
        debug: g.debug(),
    }
}

/// An instance with its state and launch error.
pub fn instance(i: &Instance) -> pb::Instance {
    use pb::instance_status::InstanceState as S;
    let state = match i.state {
        InstanceState::Running => S::InstanceRunning,
        InstanceState::Creating => S::InstanceCreating,
        InstanceState::Deleting => S::InstanceDeleting,
    };
    pb::Instance {
        id: i.id.clone(),
        status: Some(pb::InstanceStatus {
            instance_state: state as i32,
            error_info: i.error.as_ref().map(|e| pb::InstanceErrorInfo {
                error_code: e.code.clone(),
                error_message: e.message.clone(),
                instance_error_class: e.class.code(),
            }),
        }),
    }
}

fn duration_of(
    new: Option<&prost_types::Duration>,
    old: Option<&meta::Duration>,
    fallback: Duration,
) -> Duration {
    // A protobuf Duration reaches i64::MAX seconds; CA's come from Go durations, so one past Go's
    // range (or negative) was not written by CA and counts as not sent.
    let from_new = new
        .and_then(|d| Duration::try_from(*d).ok())
        .filter(|d| *d <= crate::model::duration::GO_MAX);
    let from_old = old
        .and_then(|d| d.duration)
        .and_then(|n| u64::try_from(n).ok())
        .map(Duration::from_nanos);
    from_new.or(from_old).unwrap_or(fallback)
}

/// Reads CA's default options from either generation (new Duration fields win); durations CA did not
/// send fall back to upstream's flag defaults so an answer never carries a 0 it was not asked for.
#[allow(deprecated)]
pub fn option_values(o: Option<&pb::NodeGroupAutoscalingOptions>) -> OptionValues {
    let d = OptionValues::default();
    let Some(o) = o else { return d };
    OptionValues {
        scale_down_utilization_threshold: o.scale_down_utilization_threshold,
        scale_down_gpu_utilization_threshold: o.scale_down_gpu_utilization_threshold,
        scale_down_unneeded_time: duration_of(
            o.scale_down_unneeded_duration.as_ref(),
            o.scale_down_unneeded_time.as_ref(),
            d.scale_down_unneeded_time,
        ),
        scale_down_unready_time: duration_of(
            o.scale_down_unready_duration.as_ref(),
            o.scale_down_unready_time.as_ref(),
            d.scale_down_unready_time,
        ),
        max_node_provision_time: duration_of(
            o.max_node_provision_duration.as_ref(),
            o.max_node_provision_time.as_ref(),
            d.max_node_provision_time,
        ),
        max_node_startup_time: duration_of(
            o.max_node_startup_duration.as_ref(),
            None,
            d.max_node_startup_time,
        ),
        ignore_daemonsets_utilization: o.ignore_daemon_sets_utilization,
        zero_or_max_node_scaling: o.zero_or_max_node_scaling,
        allow_non_atomic_scale_up_to_max: o.allow_non_atomic_scale_up_to_max,
    }
}

fn new_duration(d: Duration) -> Option<prost_types::Duration> {
    prost_types::Duration::try_from(d).ok()
}

fn old_duration(d: Duration) -> Option<meta::Duration> {
    Some(meta::Duration {
        duration: Some(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)),
    })
}

/// Options in both generations' fields.
#[allow(deprecated)]
pub fn options(v: &OptionValues) -> pb::NodeGroupAutoscalingOptions {
    pb::NodeGroupAutoscalingOptions {
        scale_down_utilization_threshold: v.scale_down_utilization_threshold,
        scale_down_gpu_utilization_threshold: v.scale_down_gpu_utilization_threshold,
        scale_down_unneeded_time: old_duration(v.scale_down_unneeded_time),
        scale_down_unready_time: old_duration(v.scale_down_unready_time),
        max_node_provision_time: old_duration(v.max_node_provision_time),
        zero_or_max_node_scaling: v.zero_or_max_node_scaling,
        ignore_daemon_sets_utilization: v.ignore_daemonsets_utilization,
        scale_down_unneeded_duration: new_duration(v.scale_down_unneeded_time),
        scale_down_unready_duration: new_duration(v.scale_down_unready_time),
        max_node_provision_duration: new_duration(v.max_node_provision_time),
        max_node_startup_duration: new_duration(v.max_node_startup_time),
        allow_non_atomic_scale_up_to_max: v.allow_non_atomic_scale_up_to_max,
    }
}

/// Seconds since the epoch of either generation's time field (new wins); `field` names it in errors.
pub fn seconds(
    new: Option<&prost_types::Timestamp>,
    old: Option<&meta::Time>,
    field: &str,
) -> Result<f64> {
    if let Some(t) = new {
        return Ok(t.seconds as f64 + f64::from(t.nanos) / 1e9);
    }
    if let Some(t) = old {
        return Ok(t.seconds.unwrap_or(0) as f64 + f64::from(t.nanos.unwrap_or(0)) / 1e9);
    }
    Err(Error::invalid(field, "is required"))
}

/// Length of a pricing period in hours; the end must not be before the start.
pub fn period_hours(start: f64, end: f64) -> Result<f64> {
    if end < start {
        return Err(Error::invalid(
            "endTimestamp",
            format!("period ends {}s before it starts", start - end),
        ));
    }
    Ok((end - start) / 3600.0)
}

/// Decodes a pod from either generation (the bytes field wins when set).
pub fn pod(bytes: &[u8], embedded: Option<&core::Pod>, field: &str) -> Result<core::Pod> {
    if !bytes.is_empty() {
        return core::Pod::decode(bytes)
            .map_err(|e| Error::invalid(field, format!("not a Kubernetes protobuf v1.Pod: {e}")));
    }
    embedded
        .cloned()
        .ok_or_else(|| Error::invalid(field, "no pod in the request (pod_bytes or pod)"))
}

/// Decodes a node from either generation (the bytes field wins when set).
pub fn node(
    bytes: Option<&[u8]>,
    embedded: Option<&core::Node>,
    field: &str,
) -> Result<core::Node> {
    if let Some(b) = bytes.filter(|b| !b.is_empty()) {
        return core::Node::decode(b)
            .map_err(|e| Error::invalid(field, format!("not a Kubernetes protobuf v1.Node: {e}")));
    }
    embedded
        .cloned()
        .ok_or_else(|| Error::invalid(field, "no node given"))
}

/// Resource names and quantity texts of a map (absent: none; a quantity without text: zero).
fn quantity_texts(
    map: Option<&BTreeMap<String, Quantity>>,
) -> impl Iterator<Item = (&str, &str)> + '_ {
    map.into_iter()
        .flatten()
        .map(|(name, q)| (name.as_str(), q.string.as_deref().unwrap_or("0")))
}

fn resources_of(map: Option<&BTreeMap<String, Quantity>>, field: &str) -> Result<Resources> {
    Ok(Resources::from_quantities(field, quantity_texts(map))?)
}

fn requests_map(r: Option<&core::ResourceRequirements>) -> Option<&BTreeMap<String, Quantity>> {
    r.map(|r| &r.requests)
}

/// A pod's effective requests as the scheduler counts them ([`crate::model::pod_requests`]).
pub fn pod_requests(pod: &core::Pod) -> Result<Resources> {
    let default = core::PodSpec::default();
    let spec = pod.spec.as_ref().unwrap_or(&default);
    Ok(crate::model::pod_requests(
        &"",
        quantity_texts(requests_map(spec.resources.as_ref())),
        spec.containers
            .iter()
            .map(|c| quantity_texts(requests_map(c.resources.as_ref()))),
        spec.init_containers.iter().map(|c| {
            (
                quantity_texts(requests_map(c.resources.as_ref())),
                c.restart_policy.as_deref(),
            )
        }),
        quantity_texts(Some(&spec.overhead)),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(cpu: &str, mem: &str, restart: Option<&str>) -> core::Container {
        core::Container {
            resources: Some(core::ResourceRequirements {
                requests: [("cpu", cpu), ("memory", mem)]
                    .into_iter()
                    .map(|(k, v)| {
                        (
                            k.to_string(),
                            Quantity {
                                string: Some(v.into()),
                            },
                        )
                    })
                    .collect(),
                ..Default::default()
            }),
            restart_policy: restart.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn requests_count_init_containers_and_sidecars_like_the_scheduler() {
        let pod = core::Pod {
            spec: Some(core::PodSpec {
                containers: vec![
                    container("500m", "1Gi", None),
                    container("250m", "512Mi", None),
                ],
                init_containers: vec![
                    container("100m", "128Mi", Some("Always")),
                    container("2", "256Mi", None),
                ],
                overhead: [(
                    "cpu".to_string(),
                    Quantity {
                        string: Some("10m".into()),
                    },
                )]
                .into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let r = pod_requests(&pod).unwrap();
        // cpu: max(100+500+250, 100+2000) + 10; memory: max(128+1024+512, 128+256) MiB.
        assert_eq!(r.cpu_milli, 2110);
        assert_eq!(r.memory, 1664 << 20);
    }

    #[test]
    fn both_duration_generations_are_read() {
        #[allow(deprecated)]
        let old = pb::NodeGroupAutoscalingOptions {
            scale_down_unneeded_time: Some(meta::Duration {
                duration: Some(120_000_000_000),
            }),
            ..Default::default()
        };
        assert_eq!(
            option_values(Some(&old)).scale_down_unneeded_time,
            Duration::from_secs(120)
        );
        let both = pb::NodeGroupAutoscalingOptions {
            scale_down_unneeded_duration: Some(prost_types::Duration {
                seconds: 60,
                nanos: 0,
            }),
            ..old
        };
        assert_eq!(
            option_values(Some(&both)).scale_down_unneeded_time,
            Duration::from_secs(60)
        );
        assert_eq!(
            option_values(Some(&both)).scale_down_unready_time,
            Duration::from_secs(1200)
        );
        // Past Go's range: not a value CA writes, read as not sent (the older field, then the default).
        let huge = pb::NodeGroupAutoscalingOptions {
            scale_down_unneeded_duration: Some(prost_types::Duration {
                seconds: i64::MAX,
                nanos: 0,
            }),
            ..both
        };
        assert_eq!(
            option_values(Some(&huge)).scale_down_unneeded_time,
            Duration::from_secs(120)
        );
    }
}
