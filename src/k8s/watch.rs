//! The live cluster as `ferroscale run` sees it: one reflector per kind (pods, nodes,
//! PodDisruptionBudgets, DaemonSets, PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes), fed by list+watch with resourceVersions and reconnecting with
//! backoff, so a loop reads memory and never waits on the API server.

use crate::labels;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, ReplicaSet};
use k8s_openapi::api::core::v1::{
    Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use std::time::Duration;
use tokio_stream::StreamExt;

use crate::engine::reasons::Doubt;
use crate::error::{Error, Result};

/// How one watch is doing: whether it has listed everything since it last failed.
#[derive(Default)]
pub struct WatchHealth {
    synced: AtomicBool,
    failing: AtomicBool,
}

impl WatchHealth {
    /// Why the cache of `kind` cannot be trusted now, if it cannot.
    fn doubt(&self, kind: &str) -> Option<Doubt> {
        if self.failing.load(Ordering::Relaxed) {
            Some(Doubt::WatchFailing { kind: kind.into() })
        } else if !self.synced.load(Ordering::Relaxed) {
            Some(Doubt::NotSynced { kind: kind.into() })
        } else {
            None
        }
    }
}

/// Read-only caches of the objects the loop needs, kept current by watches, with each watch's health.
#[derive(Clone)]
pub struct Watches {
    pub pods: Store<Pod>,
    pub nodes: Store<Node>,
    pub pdbs: Store<PodDisruptionBudget>,
    pub daemonsets: Store<DaemonSet>,
    pub claims: Store<PersistentVolumeClaim>,
    pub volumes: Store<PersistentVolume>,
    pub classes: Store<StorageClass>,
    pub csinodes: Store<CSINode>,
    /// ReplicaSets and ReplicationControllers, watched only for `--min-replica-count`.
    pub owners: Option<(Store<ReplicaSet>, Store<ReplicationController>)>,
    health: Vec<(&'static str, Arc<WatchHealth>)>,
}

/// The kinds watched, as their resources are named.
const KINDS: [&str; 8] = [
    "pods",
    "nodes",
    "poddisruptionbudgets",
    "daemonsets",
    "persistentvolumeclaims",
    "persistentvolumes",
    "storageclasses",
    "csinodes",
];

/// The kinds watched for `--min-replica-count`.
const OWNER_KINDS: [&str; 2] = ["replicasets", "replicationcontrollers"];

/// First pause before a watch that failed starts over; doubled up to [`WATCH_RETRY_MAX`].
const WATCH_RETRY_MIN: Duration = Duration::from_millis(500);
/// Longest pause before a failed watch starts over.
const WATCH_RETRY_MAX: Duration = Duration::from_secs(30);

/// Starts one watch; the returned store fills once the first list arrives. After any failure the watch
/// starts over with a full list (with backoff), as client-go's reflector does, and the store is replaced
/// when that list is complete: `health` is doubtful from the failure until then, so a loop never trusts
/// a cache that may have missed events.
fn start<K>(api: Api<K>, kind: &'static str, health: Arc<WatchHealth>) -> Store<K>
where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let (reader, mut writer) = reflector::store();
    tokio::spawn(async move {
        let mut pause = WATCH_RETRY_MIN;
        loop {
            // resourceVersion=0 lists come from the API server's watch cache, as client-go informers do.
            let config = watcher::Config::default().any_semantic();
            let stream = watcher(api.clone(), config)
                // Managed fields and last-applied copies are never read; dropping them halves the cache.
                .modify(|o: &mut K| {
                    o.managed_fields_mut().clear();
                    o.annotations_mut().remove(labels::LAST_APPLIED);
                });
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                match event {
                    Ok(event) => {
                        writer.apply_watcher_event(&event);
                        if matches!(event, watcher::Event::InitDone) {
                            health.synced.store(true, Ordering::Relaxed);
                            pause = WATCH_RETRY_MIN;
                            if health.failing.swap(false, Ordering::Relaxed) {
                                tracing::info!(kind, "watch recovered: listed everything again");
                            }
                        }
                    }
                    Err(e) => {
                        if !health.failing.swap(true, Ordering::Relaxed) {
                            tracing::warn!(kind, error = %e, "watch failed; no scale-down until it has listed everything again");
                        }
                        break;
                    }
                }
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(WATCH_RETRY_MAX);
        }
    });
    reader
}

impl Watches {
    /// Starts the watches (cluster-wide); `owners` adds ReplicaSets and ReplicationControllers.
    pub fn start(client: &Client, owners: bool) -> Self {
        let health: Vec<(&'static str, Arc<WatchHealth>)> = KINDS
            .iter()
            .chain(owners.then_some(&OWNER_KINDS).into_iter().flatten())
            .map(|k| (*k, Arc::<WatchHealth>::default()))
            .collect();
        let h = |i: usize| health[i].1.clone();
        let c = || client.clone();
        Watches {
            pods: start(Api::all(c()), KINDS[0], h(0)),
            nodes: start(Api::all(c()), KINDS[1], h(1)),
            pdbs: start(Api::all(c()), KINDS[2], h(2)),
            daemonsets: start(Api::all(c()), KINDS[3], h(3)),
            claims: start(Api::all(c()), KINDS[4], h(4)),
            volumes: start(Api::all(c()), KINDS[5], h(5)),
            classes: start(Api::all(c()), KINDS[6], h(6)),
            csinodes: start(Api::all(c()), KINDS[7], h(7)),
            owners: owners.then(|| {
                (
                    start(Api::all(c()), OWNER_KINDS[0], h(8)),
                    start(Api::all(c()), OWNER_KINDS[1], h(9)),
                )
            }),
            health: health.clone(),
        }
    }

    /// Why the caches cannot be trusted now: watches not synced or failing.
    pub fn doubts(&self) -> Vec<Doubt> {
        self.health
            .iter()
            .filter_map(|(kind, h)| h.doubt(kind))
            .collect()
    }

    /// Waits until every store has had its first list, or `timeout` fails first.
    pub async fn ready(&self, timeout: impl Future<Output = ()>) -> Result<()> {
        let all = async {
            let _ = self.pods.wait_until_ready().await;
            let _ = self.nodes.wait_until_ready().await;
            let _ = self.pdbs.wait_until_ready().await;
            let _ = self.daemonsets.wait_until_ready().await;
            let _ = self.claims.wait_until_ready().await;
            let _ = self.volumes.wait_until_ready().await;
            let _ = self.classes.wait_until_ready().await;
            let _ = self.csinodes.wait_until_ready().await;
            if let Some((rs, rc)) = &self.owners {
                let _ = rs.wait_until_ready().await;
                let _ = rc.wait_until_ready().await;
            }
        };
        tokio::select! {
            _ = all => Ok(()),
            _ = timeout => Err(Error::Unavailable(
                format!("the Kubernetes API did not answer the first list of all of {}", KINDS.join(", ")),
            )),
        }
    }
}
