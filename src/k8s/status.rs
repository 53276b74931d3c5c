//! The status ConfigMap (`--status-config-map-name`, default `cluster-autoscaler-status`) in upstream's
//! schema (`clusterstate/api` `ClusterAutoscalerStatus`, YAML under `data.status`), so the dashboards,
//! scripts and `kubectl describe` habits of cluster-autoscaler users keep working. The engine computes
//! the status ([`ClusterAutoscalerStatus`]); this module only writes it in that schema and reads it back.

use crate::labels;
use std::collections::BTreeMap;
use std::fmt::Display;
use std::str::FromStr;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Client;
use serde::{Deserialize, Serialize};

use crate::engine::status::{self as typed, ClusterAutoscalerStatus, ClusterWideStatus};
use crate::engine::Disruption;
use crate::error::{Error, Result};
use crate::model::lifecycle::DisruptionReason;

pub use crate::engine::status::{NodeCount, RegisteredCount, UnreadyCount};
pub use consolidation::{ConsolidationStatus, DeclinedStatus, NewNodesStatus, PlanStatus};

mod consolidation;

/// A condition as stored: its status with its probe and transition times (RFC 3339), and the fields of
/// whichever condition it is (upstream's health, scale-up and scale-down conditions share this shape).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_counts: Option<NodeCount>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_provider_target: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_size: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_info: Option<BackoffInfo>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub candidates: usize,
    pub last_probe_time: String,
    pub last_transition_time: String,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Upstream's `BackoffInfo`: the error code, and until when as the message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackoffInfo {
    pub error_code: String,
    pub error_message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Conditions {
    pub health: Condition,
    pub scale_up: Condition,
    pub scale_down: Condition,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeGroupStatus {
    pub name: String,
    #[serde(flatten)]
    pub conditions: Conditions,
}

/// Upstream's `ClusterAutoscalerStatus` as stored under `data.status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub time: String,
    pub autoscaler_status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    pub cluster_wide: Conditions,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_groups: Vec<NodeGroupStatus>,
    /// ferroscale's own: nodes taken out of service other than by scale-down this loop (interruptions,
    /// drift, expiry); upstream's readers ignore the field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disruptions: Vec<DisruptionStatus>,
    /// ferroscale's own: the last consolidation plan and the nodes the last loop declined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consolidation: Option<ConsolidationStatus>,
}

/// One node taken out of service, with why (`spot-interruption`, `drift`, ...).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DisruptionStatus {
    pub node: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node_group: String,
    pub reason: String,
}

/// ferroscale writes the status from its loop only, so always as running (upstream's other value,
/// `Initializing`, is never written).
const RUNNING: &str = "Running";

/// How Go's `time.String()` prints a UTC time, as upstream writes `time` and the last-updated
/// annotation: `2026-11-23 18:30:00 +0000 UTC`; and how it is read back.
const GO_TIME: &str = "%Y-%m-%d %H:%M:%S +0000 UTC";
const GO_TIME_READ: &str = "%Y-%m-%d %H:%M:%S %z UTC";

/// What `errorMessage` says before the end of the backoff.
const BACKED_OFF_UNTIL: &str = "backed off until ";

fn go_time(t: i64) -> String {
    Timestamp::from_second(t)
        .map(|t| t.strftime(GO_TIME).to_string())
        .unwrap_or_default()
}

fn rfc3339(t: i64) -> String {
    Timestamp::from_second(t)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// A condition's stored form.
fn condition<S: Display>(c: &typed::Condition<S>) -> Condition {
    Condition {
        status: c.status.to_string(),
        last_probe_time: rfc3339(c.last_probe_time),
        last_transition_time: rfc3339(c.last_transition_time),
        ..Default::default()
    }
}

impl From<&ClusterWideStatus> for Conditions {
    fn from(c: &ClusterWideStatus) -> Conditions {
        Conditions {
            health: Condition {
                node_counts: Some(c.node_counts.clone()),
                ..condition(&c.health)
            },
            scale_up: condition(&c.scale_up),
            scale_down: Condition {
                candidates: c.candidates,
                ..condition(&c.scale_down)
            },
        }
    }
}

impl From<&typed::NodeGroupStatus> for NodeGroupStatus {
    fn from(g: &typed::NodeGroupStatus) -> NodeGroupStatus {
        let backoff_info = g.backoff.as_ref().map(|b| BackoffInfo {
            error_code: b.error_code.clone(),
            error_message: format!("{BACKED_OFF_UNTIL}{}", rfc3339(b.until)),
        });
        NodeGroupStatus {
            name: g.name.clone(),
            conditions: Conditions {
                health: Condition {
                    node_counts: Some(g.node_counts.clone()),
                    cloud_provider_target: Some(g.target_size),
                    min_size: Some(g.min_size),
                    max_size: Some(g.max_size),
                    ..condition(&g.health)
                },
                scale_up: Condition {
                    backoff_info,
                    ..condition(&g.scale_up)
                },
                scale_down: Condition {
                    candidates: g.candidates,
                    ..condition(&g.scale_down)
                },
            },
        }
    }
}

impl From<&ClusterAutoscalerStatus> for Status {
    /// The stored form; a status with no cluster-wide conditions yet (no loop has read the cloud) has
    /// them blank.
    fn from(s: &ClusterAutoscalerStatus) -> Status {
        Status {
            time: go_time(s.time),
            autoscaler_status: RUNNING.into(),
            message: s.message.clone(),
            cluster_wide: s
                .cluster_wide
                .as_ref()
                .map(Conditions::from)
                .unwrap_or_default(),
            node_groups: s.node_groups.iter().map(NodeGroupStatus::from).collect(),
            disruptions: s
                .disruptions
                .iter()
                .map(|x| DisruptionStatus {
                    node: x.node.clone(),
                    node_group: x.group.clone().unwrap_or_default(),
                    reason: x.reason.to_string(),
                })
                .collect(),
            consolidation: None,
        }
    }
}

/// Reads one stored field back; the error names the field.
fn parse<T: FromStr<Err: Display>>(field: &str, text: &str) -> Result<T> {
    text.parse()
        .map_err(|e: T::Err| Error::invalid(field, format!("{text:?}: {e}")))
}

fn parse_time(field: &str, text: &str) -> Result<i64> {
    Ok(parse::<Timestamp>(field, text)?.as_second())
}

fn typed_condition<S: FromStr<Err: Display>>(
    field: &str,
    c: &Condition,
) -> Result<typed::Condition<S>> {
    Ok(typed::Condition {
        status: parse(&format!("{field}.status"), &c.status)?,
        last_probe_time: parse_time(&format!("{field}.lastProbeTime"), &c.last_probe_time)?,
        last_transition_time: parse_time(
            &format!("{field}.lastTransitionTime"),
            &c.last_transition_time,
        )?,
    })
}

fn required<T: Clone>(field: &str, value: &Option<T>) -> Result<T> {
    value
        .clone()
        .ok_or_else(|| Error::invalid(field, "missing"))
}

impl TryFrom<&NodeGroupStatus> for typed::NodeGroupStatus {
    type Error = Error;
    fn try_from(g: &NodeGroupStatus) -> Result<typed::NodeGroupStatus> {
        let field = |f: &str| format!("nodeGroups[{}].{f}", g.name);
        let c = &g.conditions;
        let backoff = match &c.scale_up.backoff_info {
            None => None,
            Some(b) => {
                let until = b
                    .error_message
                    .strip_prefix(BACKED_OFF_UNTIL)
                    .unwrap_or(&b.error_message);
                Some(typed::BackoffInfo {
                    error_code: b.error_code.clone(),
                    until: parse_time(&field("scaleUp.backoffInfo.errorMessage"), until)?,
                })
            }
        };
        Ok(typed::NodeGroupStatus {
            name: g.name.clone(),
            health: typed_condition(&field("health"), &c.health)?,
            node_counts: required(&field("health.nodeCounts"), &c.health.node_counts)?,
            target_size: required(
                &field("health.cloudProviderTarget"),
                &c.health.cloud_provider_target,
            )?,
            min_size: required(&field("health.minSize"), &c.health.min_size)?,
            max_size: required(&field("health.maxSize"), &c.health.max_size)?,
            scale_up: typed_condition(&field("scaleUp"), &c.scale_up)?,
            backoff,
            scale_down: typed_condition(&field("scaleDown"), &c.scale_down)?,
            candidates: c.scale_down.candidates,
        })
    }
}

impl TryFrom<&Status> for ClusterAutoscalerStatus {
    type Error = Error;
    /// The typed status back from its stored form: blank cluster-wide conditions are none yet.
    fn try_from(s: &Status) -> Result<ClusterAutoscalerStatus> {
        let c = &s.cluster_wide;
        let cluster_wide = if c.health.status.is_empty() {
            None
        } else {
            Some(ClusterWideStatus {
                health: typed_condition("clusterWide.health", &c.health)?,
                node_counts: required("clusterWide.health.nodeCounts", &c.health.node_counts)?,
                scale_up: typed_condition("clusterWide.scaleUp", &c.scale_up)?,
                scale_down: typed_condition("clusterWide.scaleDown", &c.scale_down)?,
                candidates: c.scale_down.candidates,
            })
        };
        let time = Timestamp::strptime(GO_TIME_READ, &s.time)
            .map_err(|e| Error::invalid("time", format!("{:?}: {e}", s.time)))?;
        Ok(ClusterAutoscalerStatus {
            time: time.as_second(),
            message: s.message.clone(),
            cluster_wide,
            node_groups: s
                .node_groups
                .iter()
                .map(typed::NodeGroupStatus::try_from)
                .collect::<Result<_>>()?,
            disruptions: s
                .disruptions
                .iter()
                .map(|x| {
                    Ok(Disruption {
                        node: x.node.clone(),
                        group: Some(x.node_group.clone()).filter(|g| !g.is_empty()),
                        reason: parse::<DisruptionReason>("disruptions.reason", &x.reason)?,
                        notice: None,
                    })
                })
                .collect::<Result<_>>()?,
        })
    }
}

impl Status {
    /// The YAML stored under `data.status`.
    pub fn to_yaml(&self) -> String {
        serde_norway::to_string(self).unwrap_or_default()
    }

    /// The status stored as `yaml` (`data.status`), as the engine's type; within
    /// [`crate::input::STATUS`] before it is parsed.
    pub fn parse(yaml: &str) -> Result<ClusterAutoscalerStatus> {
        crate::input::STATUS
            .check_yaml(yaml)
            .map_err(|e| Error::invalid("data.status", e.to_string()))?;
        let stored: Status = serde_norway::from_str(yaml)
            .map_err(|e| Error::invalid("data.status", e.to_string()))?;
        ClusterAutoscalerStatus::try_from(&stored)
    }
}

/// Writes the status ConfigMap: a merge patch of `data.status` and the annotation, or a create when it
/// does not exist yet, with consolidation's part when there is one. Other keys and labels users put on
/// it are kept.
pub async fn write(
    client: &Client,
    namespace: &str,
    name: &str,
    status: &ClusterAutoscalerStatus,
    consolidation: Option<&ConsolidationStatus>,
) -> Result<()> {
    let status = Status {
        consolidation: consolidation.cloned(),
        ..Status::from(status)
    };
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let annotations = BTreeMap::from([(labels::LAST_UPDATED.to_string(), status.time.clone())]);
    let data = BTreeMap::from([("status".to_string(), status.to_yaml())]);
    let patch = serde_json::json!({
        "metadata": { "annotations": annotations },
        "data": data,
    });
    let context = || format!("writing ConfigMap {namespace}/{name}");
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if super::status_code(&e) == Some(404) => {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    namespace: Some(namespace.into()),
                    annotations: Some(annotations),
                    ..Default::default()
                },
                data: Some(data),
                ..Default::default()
            };
            api.create(&PostParams::default(), &cm)
                .await
                .map(|_| ())
                .map_err(|e| Error::kube(context(), e))
        }
        Err(e) => Err(Error::kube(context(), e)),
    }
}

#[cfg(test)]
mod tests;
