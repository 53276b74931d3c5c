//! Removing a node's workload the way upstream does before a scale-down: the node gets the
//! `ToBeDeletedByClusterAutoscaler:NoSchedule` taint so nothing new lands on it, its pods go through the
//! Eviction API (which honours PodDisruptionBudgets, answering 429 while one allows no disruption) with
//! retries up to `--max-pod-eviction-time`, and the autoscaler waits for them to terminate, at most
//! `--max-graceful-termination-sec`. On failure the taint is taken off again.

use crate::labels;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use k8s_openapi::api::policy::v1::Eviction;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, ObjectMeta, Preconditions};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::Client;
use serde_json::json;

use super::status_code;
use crate::error::{Error, Result};
use crate::leadership::Fence;
use crate::model::workload::DAEMON_SET;

/// Time the API server may take to delete a pod after its grace period.
const TERMINATION_HEADROOM: Duration = Duration::from_secs(30);

/// Attempts at a taint patch when other writers change the node meanwhile.
const PATCH_ATTEMPTS: usize = 5;

pub use crate::actuator::{Attempt, DrainSettings, Evictee, Mark};

/// Adds (`on`) or removes one of the autoscaler's taints, keeping every other taint. The patch carries
/// the resourceVersion it was computed from, so a concurrent change of the node (the kubelet, another
/// controller) is never overwritten: on a conflict the node is read again.
pub async fn set_taint(
    nodes: &Api<Node>,
    name: &str,
    which: Mark,
    on: bool,
    now: i64,
) -> Result<()> {
    let context = || {
        format!(
            "{} node {name} ({})",
            if on { "tainting" } else { "untainting" },
            which.key()
        )
    };
    for _ in 0..PATCH_ATTEMPTS {
        let node = nodes
            .get(name)
            .await
            .map_err(|e| Error::kube(context(), e))?;
        let mut taints = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default();
        let has = taints.iter().any(|t| t.key == which.key());
        if has == on {
            return Ok(());
        }
        if on {
            taints.push(Taint {
                key: which.key().into(),
                value: Some(now.to_string()),
                effect: which.effect().to_string(),
                time_added: None,
            });
        } else {
            taints.retain(|t| t.key != which.key());
        }
        let patch = json!({
            "metadata": { "resourceVersion": node.metadata.resource_version },
            "spec": { "taints": taints },
        });
        match nodes
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return Ok(()),
            Err(e) if status_code(&e) == Some(409) => continue,
            Err(e) => return Err(Error::kube(context(), e)),
        }
    }
    Err(Error::Conflict {
        context: context(),
        attempts: PATCH_ATTEMPTS,
    })
}

/// The grace period an eviction of `pod` asks for: its own, capped by `--max-graceful-termination-sec`.
pub fn grace_of(pod: &Evictee, settings: &DrainSettings) -> i64 {
    pod.grace_period
        .unwrap_or(30)
        .min(crate::model::duration::secs(
            settings.max_graceful_termination,
        ))
        .max(0)
}

/// One request to the eviction API for `pod`, with its UID as a precondition: a pod replaced under the
/// same name since it was listed (a StatefulSet's next incarnation) is not this eviction's to take; the
/// API answers 409 and that counts as [`Attempt::Gone`]. The body is k8s-openapi's Eviction: kube's
/// `Api::evict` writes `delete_options`, a field the API server ignores, which would drop the
/// precondition and the grace period alike.
pub async fn evict_once(client: &Client, pod: &Evictee, grace: i64) -> Attempt {
    let (namespace, name) = (pod.namespace.as_str(), pod.name.as_str());
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let eviction = Eviction {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            ..Default::default()
        },
        delete_options: Some(DeleteOptions {
            grace_period_seconds: Some(grace),
            preconditions: pod.uid.clone().map(|uid| Preconditions {
                uid: Some(uid),
                resource_version: None,
            }),
            ..Default::default()
        }),
    };
    let post = PostParams::default();
    match pods
        .create_subresource::<_, serde_json::Value>("eviction", name, &post, &eviction)
        .await
    {
        Ok(_) => Attempt::Evicted,
        Err(e) if status_code(&e) == Some(404) => Attempt::Gone,
        Err(e) if status_code(&e) == Some(409) && replaced(&pods, pod).await => Attempt::Gone,
        Err(e) if status_code(&e) == Some(429) => {
            Attempt::Refused(format!("a disruption budget forbids it: {e}"))
        }
        Err(e) => Attempt::Failed(e.to_string()),
    }
}

/// Evicts one pod, retrying while the API answers 429 (a PodDisruptionBudget allows no disruption now)
/// or fails, until `--max-pod-eviction-time`; then waits until the pod is gone. A pod already gone, or
/// replaced by a same-named pod (its UID is the eviction's precondition), counts as evicted.
/// `fence` is checked before every attempt: a replica that lost its Lease evicts nothing more.
pub async fn evict(
    client: &Client,
    pod: &Evictee,
    settings: &DrainSettings,
    fence: &Fence,
) -> Result<()> {
    let (namespace, name) = (pod.namespace.as_str(), pod.name.as_str());
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let grace = grace_of(pod, settings);
    let started = Instant::now();
    loop {
        fence.check(&format!("evicting pod {namespace}/{name}"))?;
        // A client that retries 429 itself (kube's default) could outlive the flag: bound each attempt.
        let left = settings
            .max_pod_eviction_time
            .saturating_sub(started.elapsed());
        let last = match tokio::time::timeout(left, evict_once(client, pod, grace)).await {
            Ok(Attempt::Evicted) => break,
            Ok(Attempt::Gone) => return Ok(()),
            Ok(Attempt::Refused(why) | Attempt::Failed(why)) => why,
            Err(_) => "still refused when the time ran out (a disruption budget forbids it, or the API is throttling)".into(),
        };
        if started.elapsed() + settings.retry() > settings.max_pod_eviction_time {
            return Err(Error::Eviction {
                pod: format!("{namespace}/{name}"),
                reason: format!("gave up after {:?}: {last}", settings.max_pod_eviction_time),
            });
        }
        tokio::time::sleep(settings.retry()).await;
    }
    // Evicted: wait for the pod (this incarnation of it) to be deleted.
    let uid = pod.uid.clone();
    let deadline = Duration::from_secs(grace.max(0).unsigned_abs()) + TERMINATION_HEADROOM;
    let waited = Instant::now();
    loop {
        match pods.get_opt(name).await {
            Ok(None) => return Ok(()),
            Ok(Some(p)) if p.metadata.uid != uid => return Ok(()),
            Ok(Some(_)) | Err(_) if waited.elapsed() >= deadline => {
                return Err(Error::Eviction {
                    pod: format!("{namespace}/{name}"),
                    reason: format!("still exists {deadline:?} after its eviction"),
                })
            }
            _ => tokio::time::sleep(settings.retry()).await,
        }
    }
}

/// Whether the incarnation of `pod` meant is gone (deleted, or replaced under its name by another UID).
/// A read that fails answers no: the eviction is retried.
async fn replaced(pods: &Api<Pod>, pod: &Evictee) -> bool {
    match pods.get_opt(&pod.name).await {
        Ok(None) => true,
        Ok(Some(p)) => pod.uid.is_some() && p.metadata.uid != pod.uid,
        Err(_) => false,
    }
}

/// The pods bound to a node, read from the API server now (not from a cache), so a pod scheduled onto
/// the node after the decision to remove it is seen before the node is deleted.
pub async fn pods_on(client: &Client, node: &str) -> Result<Vec<Pod>> {
    let pods: Api<Pod> = Api::all(client.clone());
    let params = ListParams::default().fields(&format!("spec.nodeName={node}"));
    Ok(pods
        .list(&params)
        .await
        .map_err(|e| Error::kube(format!("listing the pods of node {node}"), e))?
        .items)
}

/// Whether a pod left on a node being removed may go down with it: DaemonSet and static (mirror) pods,
/// and pods that have finished.
pub fn goes_with_node(pod: &Pod) -> bool {
    let daemon = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == DAEMON_SET);
    let mirror = pod
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(labels::MIRROR));
    let finished = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| p == "Succeeded" || p == "Failed");
    daemon || mirror || finished
}
