//! Taking one node down in the background: taint it, evict its pods through their budgets, then delete
//! its instance; on any failure the taint comes off again and the node gets a ScaleDownFailed event.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Node as KubeNode;
use kube::api::Api;
use kube::runtime::events::EventType;
use kube::Client;
use tokio::task::JoinSet;

use super::events::{node_ref, pod_ref, Events};
use crate::cloud::Cloud;
use crate::error::{Error, Result};
use crate::k8s::drain::{self, DrainSettings};
use crate::k8s::lease::Fence;
use crate::metrics::LoopMetrics;

/// What drains running in the background share with the loop.
#[derive(Clone)]
pub(super) struct DrainContext {
    pub(super) client: Client,
    pub(super) cloud: Arc<dyn Cloud>,
    pub(super) events: Events,
    pub(super) record: LoopMetrics,
    pub(super) settings: DrainSettings,
    /// Nodes being drained or deleted: not candidates again until done.
    pub(super) in_flight: Arc<Mutex<HashMap<String, bool>>>,
    /// Whether this replica may still act; checked before every mutation.
    pub(super) fence: Fence,
    /// Nodes whose deletion taint could not be removed: the loop tries again.
    pub(super) untaint: Arc<Mutex<HashSet<String>>>,
    /// Removals finished since the loop last looked: true for removed, false for failed.
    pub(super) outcomes: Arc<Mutex<Vec<bool>>>,
}

/// A node to take down: its group, provider id, and the pods to evict first.
pub(super) struct Removal {
    pub(super) node: String,
    pub(super) uid: Option<String>,
    pub(super) group: String,
    pub(super) provider_id: String,
    pub(super) pods: Vec<drain::Evictee>,
    /// Pods (`namespace/name`) that go down with the node unevicted: expendable ones and those
    /// terminating past their grace period.
    pub(super) left: Vec<String>,
    pub(super) reason: crate::engine::reasons::Removal,
}

impl DrainContext {
    /// Evicts `pods` in parallel under `settings`, each announced by a `reason` event with `note`;
    /// records each outcome and returns the first failure.
    pub(super) async fn evict_all(
        &self,
        pods: &[drain::Evictee],
        settings: &DrainSettings,
        reason: &'static str,
        note: impl Fn(&drain::Evictee) -> String,
    ) -> Option<Error> {
        let mut evictions = JoinSet::new();
        for p in pods {
            self.events
                .send(pod_ref(p), EventType::Normal, reason, note(p));
            let (client, pod, settings, fence) = (
                self.client.clone(),
                p.clone(),
                settings.clone(),
                self.fence.clone(),
            );
            evictions.spawn(async move { drain::evict(&client, &pod, &settings, &fence).await });
        }
        let mut failure = None;
        while let Some(done) = evictions.join_next().await {
            let outcome = done.unwrap_or_else(|e| Err(Error::Unavailable(e.to_string())));
            self.record.evicted(outcome.is_ok());
            if let Err(e) = outcome {
                failure.get_or_insert(e);
            }
        }
        failure
    }

    /// Taints, evicts, checks nothing else landed on the node, deletes; on any failure the taint is
    /// removed and ScaleDownFailed says why, unless leadership was lost (the next leader cleans up).
    pub(super) async fn remove(self, r: Removal, now: i64) -> Result<()> {
        let nodes: Api<KubeNode> = Api::all(self.client.clone());
        let result = async {
            self.fence.check(&format!("tainting node {}", r.node))?;
            drain::set_deletion_taint(&nodes, &r.node, true, now).await?;
            self.events.send(
                node_ref(&r.node, r.uid.clone()),
                EventType::Normal,
                "ScaleDown",
                format!("marked the node as toBeDeleted/unschedulable: {}", r.reason),
            );
            let failure = self
                .evict_all(&r.pods, &self.settings, "ScaleDown", |_| {
                    format!("deleting pod for node scale down (node {})", r.node)
                })
                .await;
            if let Some(e) = failure {
                return Err(e);
            }
            // A pod bound to the node after the decision (before the taint took) would be killed
            // without eviction: read the node's pods again, and stop if one is left.
            let evicted: HashSet<Option<&str>> =
                r.pods.iter().map(|p| p.uid.as_deref()).collect();
            let left: Vec<String> = drain::pods_on(&self.client, &r.node)
                .await?
                .iter()
                .filter(|p| !drain::goes_with_node(p) && !evicted.contains(&p.metadata.uid.as_deref()))
                .map(|p| {
                    crate::model::workload::pod_key(
                        p.metadata.namespace.as_deref().unwrap_or("default"),
                        p.metadata.name.as_deref().unwrap_or_default(),
                    )
                })
                .filter(|k| !r.left.contains(k))
                .collect();
            if !left.is_empty() {
                return Err(Error::Unavailable(format!(
                    "pods {left:?} were scheduled onto the node after it was chosen; not deleting it"
                )));
            }
            self.fence.check(&format!("deleting node {}", r.node))?;
            self.cloud
                .delete_nodes(&r.group, std::slice::from_ref(&r.provider_id))
                .await
        }
        .await;
        match &result {
            Ok(()) => {
                tracing::info!(node = %r.node, group = %r.group, reason = %r.reason, "node removed");
                match r.reason.disruption {
                    Some(why) => self.record.lifecycle.disrupted(why.as_str(), &r.group),
                    None => self.record.scaled_down(r.reason.upstream_reason()),
                }
            }
            Err(e) if self.fence.check("untainting").is_err() => {
                tracing::warn!(node = %r.node, error = %e, "scale-down stopped: leadership lost; the next leader removes the taint");
            }
            Err(e) => {
                tracing::warn!(node = %r.node, error = %e, "scale-down failed; untainting");
                if let Err(u) = drain::set_deletion_taint(&nodes, &r.node, false, now).await {
                    tracing::warn!(node = %r.node, error = %u, "could not remove the deletion taint; will retry");
                    self.untaint
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(r.node.clone());
                }
                self.events.send(
                    node_ref(&r.node, r.uid.clone()),
                    EventType::Warning,
                    "ScaleDownFailed",
                    format!("failed to remove the node: {e}"),
                );
            }
        }
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&r.node);
        self.outcomes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(result.is_ok());
        result
    }
}
