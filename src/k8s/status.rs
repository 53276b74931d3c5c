//! The status ConfigMap (`--status-config-map-name`, default `cluster-autoscaler-status`) in upstream's
//! schema (`clusterstate/api` `ClusterAutoscalerStatus`, YAML under `data.status`), so the dashboards,
//! scripts and `kubectl describe` habits of cluster-autoscaler users keep working.

use crate::labels;
use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Client;
use serde::{Deserialize, Serialize};

use crate::engine::health::Readiness;
use crate::engine::{Decisions, Memory, Settings, World};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnreadyCount {
    pub total: usize,
    pub resource_unready: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisteredCount {
    pub total: usize,
    pub ready: usize,
    pub not_started: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub being_deleted: usize,
    pub unready: UnreadyCount,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeCount {
    pub registered: RegisteredCount,
    pub long_unregistered: usize,
    pub unregistered: usize,
}

/// A condition's status with its probe and transition times (RFC 3339).
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

/// Upstream's `ClusterAutoscalerStatus`.
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

/// A time as Go's `time.String()` prints it, as upstream writes `time` and the last-updated annotation:
/// `2026-11-23 18:30:00 +0000 UTC`.
fn go_time(t: i64) -> String {
    Timestamp::from_second(t)
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%S +0000 UTC").to_string())
        .unwrap_or_default()
}

fn rfc3339(t: i64) -> String {
    Timestamp::from_second(t)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// A condition; its transition time is carried over from `previous` while the status is unchanged.
fn condition(status: &str, now: i64, previous: Option<&Condition>) -> Condition {
    let transition = previous
        .filter(|p| p.status == status)
        .map(|p| p.last_transition_time.clone())
        .unwrap_or_else(|| rfc3339(now));
    Condition {
        status: status.into(),
        last_probe_time: rfc3339(now),
        last_transition_time: transition,
        ..Default::default()
    }
}

/// `CandidatesPresent` with the count, or `NoCandidates`.
fn scale_down_condition(candidates: usize, now: i64, previous: Option<&Condition>) -> Condition {
    let status = if candidates > 0 {
        "CandidatesPresent"
    } else {
        "NoCandidates"
    };
    Condition {
        candidates,
        ..condition(status, now, previous)
    }
}

impl Status {
    /// The status after one loop. Upstream counts: registered nodes that are ready, not started (unready
    /// and younger than maxNodeStartupTime) or unready; instances without a node (unregistered, and
    /// long-unregistered past maxNodeProvisionTime); scale-up `InProgress` while a group's target
    /// exceeds its registered nodes, `Backoff` after failures; scale-down candidates are nodes unneeded
    /// now.
    pub fn build(
        world: &World,
        decisions: &Decisions,
        memory: &Memory,
        settings: &Settings,
        now: i64,
        previous: Option<&Status>,
    ) -> Status {
        let provider_of: HashMap<&str, &str> = world
            .nodes
            .iter()
            .map(|n| (n.provider_id.as_str(), n.name.as_str()))
            .collect();
        let prev_group =
            |name: &str| previous.and_then(|p| p.node_groups.iter().find(|g| g.name == name));
        let mut total = NodeCount::default();
        let mut groups = Vec::new();
        let mut any_in_progress = false;
        let mut candidates_total = 0;
        for g in world.groups {
            let opts = settings.options_of(g);
            let mut counts = NodeCount::default();
            for n in world
                .nodes
                .iter()
                .filter(|n| world.node_groups.get(&n.name) == Some(&g.id))
            {
                counts.registered.total += 1;
                if n.ready {
                    counts.registered.ready += 1;
                } else if now - n.created < opts.max_node_startup_time.as_secs() as i64 {
                    counts.registered.not_started += 1;
                } else {
                    counts.registered.unready.total += 1;
                }
            }
            for i in g
                .instances
                .iter()
                .filter(|i| !provider_of.contains_key(i.id.as_str()))
            {
                counts.unregistered += 1;
                let since = memory.unregistered_since.get(&i.id).copied().unwrap_or(now);
                if now - since >= opts.max_node_provision_time.as_secs() as i64 {
                    counts.long_unregistered += 1;
                }
            }
            let prev = prev_group(&g.id).map(|p| &p.conditions);
            let readiness = Readiness {
                ready: counts.registered.ready,
                unready: counts.registered.unready.total,
                not_started: counts.registered.not_started,
                provisioning: counts.unregistered - counts.long_unregistered,
            };
            let healthy = if readiness.healthy(g.target_size, settings) {
                "Healthy"
            } else {
                "Unhealthy"
            };
            let mut health = condition(healthy, now, prev.map(|p| &p.health));
            health.node_counts = Some(counts.clone());
            health.cloud_provider_target = Some(g.target_size);
            health.min_size = Some(g.min_size);
            health.max_size = Some(g.max_size);
            let backoff = memory.backoff_of(&g.id, now);
            let up_status = if backoff.is_some() {
                "Backoff"
            } else if g.target_size as usize > counts.registered.total {
                any_in_progress = true;
                "InProgress"
            } else {
                "NoActivity"
            };
            let mut scale_up = condition(up_status, now, prev.map(|p| &p.scale_up));
            if let Some(b) = backoff {
                scale_up.backoff_info = Some(BackoffInfo {
                    error_code: b.reason.clone(),
                    error_message: format!("backed off until {}", rfc3339(b.until)),
                });
            }
            let candidates = memory
                .unneeded_since
                .keys()
                .filter(|n| world.node_groups.get(*n) == Some(&g.id))
                .count();
            candidates_total += candidates;
            let scale_down = scale_down_condition(candidates, now, prev.map(|p| &p.scale_down));
            total.registered.total += counts.registered.total;
            total.registered.ready += counts.registered.ready;
            total.registered.not_started += counts.registered.not_started;
            total.registered.unready.total += counts.registered.unready.total;
            total.unregistered += counts.unregistered;
            total.long_unregistered += counts.long_unregistered;
            groups.push(NodeGroupStatus {
                name: g.id.clone(),
                conditions: Conditions {
                    health,
                    scale_up,
                    scale_down,
                },
            });
        }
        // Nodes of no group count in the cluster's totals too.
        for n in world
            .nodes
            .iter()
            .filter(|n| !world.node_groups.contains_key(&n.name))
        {
            total.registered.total += 1;
            if n.ready {
                total.registered.ready += 1;
            } else {
                total.registered.unready.total += 1;
            }
        }
        let prev = previous.map(|p| &p.cluster_wide);
        let healthy = if decisions.unhealthy.is_some() {
            "Unhealthy"
        } else {
            "Healthy"
        };
        let mut health = condition(healthy, now, prev.map(|p| &p.health));
        health.node_counts = Some(total);
        let message = match (&decisions.unhealthy, decisions.held_back.as_slice()) {
            (Some(u), _) => u.to_string(),
            (None, []) => String::new(),
            (None, doubts) => format!(
                "scale-down held back: {}",
                doubts
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        };
        let up = if any_in_progress || !decisions.scale_up.is_empty() {
            "InProgress"
        } else if decisions.unschedulable().next().is_none() {
            "NoActivity"
        } else {
            "Needed"
        };
        let scale_down = scale_down_condition(candidates_total, now, prev.map(|p| &p.scale_down));
        Status {
            time: go_time(now),
            autoscaler_status: "Running".into(),
            message,
            cluster_wide: Conditions {
                health,
                scale_up: condition(up, now, prev.map(|p| &p.scale_up)),
                scale_down,
            },
            node_groups: groups,
            disruptions: decisions
                .disruptions
                .iter()
                .map(|x| DisruptionStatus {
                    node: x.node.clone(),
                    node_group: x.group.clone().unwrap_or_default(),
                    reason: x.reason.to_string(),
                })
                .collect(),
        }
    }

    /// The status after a loop that could not read the cloud: the last one with the error as its
    /// message (the groups as last seen), written so the status never goes silently stale.
    pub fn failed(previous: Option<&Status>, now: i64, error: &str) -> Status {
        let mut s = previous.cloned().unwrap_or_default();
        s.time = go_time(now);
        s.autoscaler_status = "Running".into();
        s.message = error.to_string();
        s
    }

    /// The YAML stored under `data.status`.
    pub fn to_yaml(&self) -> String {
        serde_norway::to_string(self).unwrap_or_default()
    }
}

/// Writes the status ConfigMap: a merge patch of `data.status` and the annotation, or a create when it
/// does not exist yet. Other keys and labels users put on it are kept.
pub async fn write(client: &Client, namespace: &str, name: &str, status: &Status) -> Result<()> {
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
