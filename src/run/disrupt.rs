//! Taking a node whose instance is going away out of service: cordon and taint it, evict its pods at
//! once with grace periods capped so they finish inside a spot instance's two-minute warning, then
//! delete the instance so its group shrinks (the replacement was asked for when the notice came).

use k8s_openapi::api::core::v1::Node as KubeNode;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::EventType;
use std::time::Duration;

use super::events::node_ref;
use super::removal::DrainContext;
use super::Runner;
use crate::engine::Disruption;
use crate::error::{Error, Result};
use crate::k8s::drain::{self, DrainSettings, Evictee};
use crate::k8s::index::Index;
use crate::model::lifecycle::DisruptionReason;

/// Most a pod of an interrupted node is given to terminate, and most its eviction is retried: together
/// with the API's own time they end inside the two minutes a spot warning gives.
const INTERRUPTION_GRACE: Duration = Duration::from_secs(45);
const INTERRUPTION_EVICTION: Duration = Duration::from_secs(45);

impl Runner {
    /// Starts taking each disrupted node out of service, unless it already is on its way out.
    pub(super) fn disrupt(&mut self, disruptions: &[Disruption], index: &Index, now: i64) {
        let ctx = self.drain_context();
        for d in disruptions {
            let Some(group) = d.group.clone() else {
                continue;
            };
            let Some((node, extra)) = index.nodes.get(&d.node) else {
                continue;
            };
            if !d.reason.from_notice() {
                // Drifted and expired nodes go through the scale-down path once their replacement joined.
                let kind = match d.reason {
                    DisruptionReason::Drift => "Drifted",
                    _ => "Expired",
                };
                self.events.send(
                    node_ref(&d.node, extra.uid.clone()),
                    EventType::Normal,
                    kind,
                    format!(
                        "replaced ({}): its replacement has joined; draining",
                        d.reason
                    ),
                );
                continue;
            }
            {
                let mut in_flight = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
                if in_flight.contains_key(&d.node) {
                    continue;
                }
                in_flight.insert(d.node.clone(), true);
            }
            let pods: Vec<Evictee> = index
                .pods
                .items()
                .iter()
                .filter(|p| p.node_name.as_deref() == Some(d.node.as_str()))
                .filter(|p| !p.meta.mirror && p.meta.controller.as_deref() != Some("DaemonSet"))
                .filter_map(|p| {
                    let (_, x) = index.pods.get(&p.key())?;
                    Some(Evictee {
                        namespace: p.namespace.clone(),
                        name: p.name.clone(),
                        uid: x.uid.clone(),
                        grace_period: p.meta.grace_period,
                    })
                })
                .collect();
            self.record.lifecycle.disrupted(d.reason.as_str(), &group);
            self.events.send(
                node_ref(&d.node, extra.uid.clone()),
                EventType::Warning,
                "InterruptionNotice",
                format!(
                    "instance going away ({}): cordoned, {} pods evicted now, replacement asked for",
                    d.reason,
                    pods.len()
                ),
            );
            let out = Interrupted {
                node: d.node.clone(),
                group,
                provider_id: node.provider_id.clone(),
                pods,
                involuntary: d.reason.involuntary(),
            };
            self.drains.spawn(ctx.clone().interrupt(out, now));
        }
    }
}

/// A node to take out of service.
pub(super) struct Interrupted {
    node: String,
    group: String,
    provider_id: String,
    pods: Vec<Evictee>,
    /// The cloud takes the instance anyway: it is deleted even when evictions fail.
    involuntary: bool,
}

impl DrainContext {
    /// Cordons and taints the node, evicts its pods with capped grace, and deletes the instance.
    pub(super) async fn interrupt(self, n: Interrupted, now: i64) -> Result<()> {
        let nodes: Api<KubeNode> = Api::all(self.client.clone());
        let settings = DrainSettings {
            max_pod_eviction_time: self
                .settings
                .max_pod_eviction_time
                .min(INTERRUPTION_EVICTION),
            max_graceful_termination: self
                .settings
                .max_graceful_termination
                .min(INTERRUPTION_GRACE),
        };
        let result = async {
            self.fence.check(&format!("cordoning node {}", n.node))?;
            drain::set_deletion_taint(&nodes, &n.node, true, now).await?;
            nodes
                .patch(
                    &n.node,
                    &PatchParams::default(),
                    &Patch::Merge(serde_json::json!({"spec": {"unschedulable": true}})),
                )
                .await
                .map_err(|e| Error::kube(format!("cordoning node {}", n.node), e))?;
            let failure = self
                .evict_all(&n.pods, &settings, "InterruptionNotice", |_| {
                    format!("evicting pod: its node {} is going away", n.node)
                })
                .await;
            match failure {
                Some(e) if !n.involuntary => return Err(e),
                Some(e) => {
                    tracing::warn!(node = %n.node, error = %e, "not every pod left before the instance goes; deleting it anyway")
                }
                None => {}
            }
            self.fence.check(&format!("deleting node {}", n.node))?;
            self.cloud
                .delete_nodes(&n.group, std::slice::from_ref(&n.provider_id))
                .await
        }
        .await;
        match &result {
            Ok(()) => tracing::info!(node = %n.node, group = %n.group, "interrupted node removed"),
            Err(e) => {
                tracing::warn!(node = %n.node, error = %e, "taking the interrupted node out failed")
            }
        }
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&n.node);
        result
    }
}
