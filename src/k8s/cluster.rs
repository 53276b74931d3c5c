//! The live cluster as the actuator's [`Cluster`]: taints, cordons and evictions through the Kubernetes
//! API, events through the background writer, every change behind the Lease's [`Fence`]; and the
//! watch-fed [`Index`] as the loop's [`Lookup`].

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Node as KubeNode;
use kube::api::{Api, Patch, PatchParams};
use kube::Client;

use super::drain;
use super::events::{event_type, reference, Events};
use super::index::Index;
use crate::actuator::{
    Attempt, Cluster, DrainSettings, EventKind, Evictee, Lookup, Mark, NodeRef, Regarding,
};
use crate::engine::intents::Intent;
use crate::error::{Error, Result};
use crate::guard::WriteGuard;
use crate::leadership::Fence;

/// Longest wait for one descheduling eviction request.
const EVICTION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The cluster behind the Kubernetes API.
#[derive(Clone)]
pub struct LiveCluster {
    client: Client,
    events: Events,
    fence: Fence,
}

impl LiveCluster {
    /// Acts through `client`, publishes with `events`, and only while `fence` allows.
    pub fn new(client: Client, events: Events, fence: Fence) -> Self {
        LiveCluster {
            client,
            events,
            fence,
        }
    }

    /// The events writer (for the loop's own events).
    pub fn events(&self) -> &Events {
        &self.events
    }

    /// Whether this replica may act (leading, or without a Lease).
    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// The API's client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Follows another leadership (the loop's, once it campaigns).
    pub fn set_fence(&mut self, fence: Fence) {
        self.fence = fence;
    }
}

#[async_trait]
impl Cluster for LiveCluster {
    fn may_act(&self, what: &str) -> Result<()> {
        self.fence.check(what)
    }

    fn write_guard(&self) -> WriteGuard {
        WriteGuard::fenced(self.fence.clone())
    }

    async fn set_taint(&self, node: &str, mark: Mark, on: bool, now: i64) -> Result<()> {
        let nodes: Api<KubeNode> = Api::all(self.client.clone());
        drain::set_taint(&nodes, node, mark, on, now).await
    }

    async fn set_intent(&self, node: &str, intent: Option<&Intent>) -> Result<()> {
        let nodes: Api<KubeNode> = Api::all(self.client.clone());
        // A merge patch touches this one annotation only: no read, no conflict with other writers.
        let value = intent.map(Intent::encode);
        let patch =
            serde_json::json!({"metadata": {"annotations": {crate::labels::INTENT: value}}});
        nodes
            .patch(node, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map(|_| ())
            .map_err(|e| Error::kube(format!("writing the intent of node {node}"), e))
    }

    async fn cordon(&self, node: &str, on: bool) -> Result<bool> {
        let nodes: Api<KubeNode> = Api::all(self.client.clone());
        let what = if on { "cordoning" } else { "uncordoning" };
        let current = nodes
            .get(node)
            .await
            .map_err(|e| Error::kube(format!("{what} node {node}"), e))?;
        let was = current
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false);
        if was == on {
            return Ok(false);
        }
        let patch = serde_json::json!({"spec": {"unschedulable": on}});
        nodes
            .patch(node, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map(|_| true)
            .map_err(|e| Error::kube(format!("{what} node {node}"), e))
    }

    async fn evict(&self, pod: &Evictee, settings: &DrainSettings) -> Result<()> {
        drain::evict(&self.client, pod, settings, &self.fence).await
    }

    async fn evict_once(&self, pod: &Evictee, grace: i64, _to: &str) -> Attempt {
        if let Err(e) = self.fence.check("a descheduling eviction") {
            return Attempt::Failed(e.to_string());
        }
        tokio::time::timeout(
            EVICTION_TIMEOUT,
            drain::evict_once(&self.client, pod, grace),
        )
        .await
        .unwrap_or_else(|_| Attempt::Failed(format!("no answer within {EVICTION_TIMEOUT:?}")))
    }

    async fn pods_on(&self, node: &str) -> Result<Vec<Evictee>> {
        Ok(drain::pods_on(&self.client, node)
            .await?
            .iter()
            .filter(|p| !drain::goes_with_node(p))
            .map(|p| Evictee {
                namespace: p
                    .metadata
                    .namespace
                    .clone()
                    .unwrap_or_else(|| "default".into()),
                name: p.metadata.name.clone().unwrap_or_default(),
                uid: p.metadata.uid.clone(),
                grace_period: p
                    .spec
                    .as_ref()
                    .and_then(|s| s.termination_grace_period_seconds),
                node: p.spec.as_ref().and_then(|s| s.node_name.clone()),
            })
            .collect())
    }

    fn event(&self, regarding: Regarding, kind: EventKind, reason: &'static str, note: String) {
        self.events
            .send(reference(&regarding), event_type(kind), reason, note);
    }

    fn event_action(
        &self,
        regarding: Regarding,
        kind: EventKind,
        reason: &'static str,
        action: &'static str,
        note: String,
    ) {
        self.events.send_action(
            reference(&regarding),
            event_type(kind),
            reason,
            action,
            note,
        );
    }
}

impl Lookup for Index {
    fn pod(&self, key: &str) -> Option<Evictee> {
        self.pods.get(key).map(|(p, x)| Evictee {
            namespace: p.namespace.to_string(),
            name: p.name.clone(),
            uid: x.uid.clone(),
            grace_period: p.meta.grace_period,
            node: p.node_name.clone(),
        })
    }

    fn node(&self, name: &str) -> Option<NodeRef> {
        self.nodes.get(name).map(|(n, x)| NodeRef {
            uid: x.uid.clone(),
            provider_id: n.provider_id.clone(),
        })
    }

    fn intents(&self) -> Vec<(String, String)> {
        let (nodes, extras) = (self.nodes.items(), self.nodes.extras());
        nodes
            .iter()
            .zip(extras)
            .filter_map(|(n, x)| Some((n.name.clone(), x.intent.clone()?)))
            .collect()
    }

    fn disrupted(&self) -> Vec<String> {
        self.nodes
            .items()
            .iter()
            .filter(|n| n.taints.iter().any(|t| t.key == crate::labels::DISRUPTED))
            .map(|n| n.name.clone())
            .collect()
    }

    fn pods_to_evict(&self, node: &str) -> Vec<Evictee> {
        self.pods
            .items()
            .iter()
            .filter(|p| p.node_name.as_deref() == Some(node))
            .filter(|p| !p.node_bound())
            .filter_map(|p| Lookup::pod(self, &p.key()))
            .collect()
    }
}
