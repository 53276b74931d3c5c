//! The live cluster as `ferroscale run` sees it, kept current by list+watch with resourceVersions and
//! reconnecting with backoff, so a loop reads memory and never waits on the API server.
//!
//! The big kinds (pods, nodes) and the ones the engine reads converted (PodDisruptionBudgets, DaemonSets)
//! are [`feed`]s: each event is converted to the model when it arrives and only that is kept, for the
//! loop's index (`k8s::index`). Pods and nodes are read straight into the model through the dump
//! reader's lean types ([`converting`]), never into whole Kubernetes objects. The small kinds read raw (PersistentVolumeClaims, PersistentVolumes,
//! StorageClasses, CSINodes, and ReplicaSets / ReplicationControllers for `--min-replica-count`) are
//! reflector stores without the fields nothing reads, each with a count of its changes so the index
//! resolves claims and owners again only when they changed.

pub mod converting;
pub mod feed;
mod tee;

use crate::labels;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, ReplicationController};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use std::time::Duration;
use tokio_stream::StreamExt;

use self::feed::Feed;
use crate::backoff::Exponential;
use crate::engine::reasons::Doubt;
use crate::error::{Error, Result};
use crate::k8s::converted::{self, NodeExtra, PodExtra};
use crate::model::workload::{Node as ModelNode, Pdb, Pod as ModelPod};

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

    fn synced(&self) {
        self.synced.store(true, Ordering::Relaxed);
    }

    /// Marks the watch healthy again; true if it was failing.
    fn recovered(&self) -> bool {
        self.failing.swap(false, Ordering::Relaxed)
    }

    /// Marks the watch failing; true if it was not already.
    fn failed(&self) -> bool {
        !self.failing.swap(true, Ordering::Relaxed)
    }
}

/// A reflector store of a small kind with the number of changes it has seen.
#[derive(Clone)]
pub struct Counted<K: Resource<DynamicType = ()> + 'static> {
    pub store: Store<K>,
    changes: Arc<AtomicU64>,
}

impl<K: Resource<DynamicType = ()> + Clone + 'static> Counted<K> {
    /// Changes applied so far (lists included): equal counts mean nothing changed in between.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Relaxed)
    }

    /// The objects now.
    pub fn state(&self) -> Vec<Arc<K>> {
        self.store.state()
    }
}

/// What the loop needs, kept current by watches, with each watch's health.
#[derive(Clone)]
pub struct Watches {
    pub pods: Arc<Feed<(Arc<ModelPod>, PodExtra)>>,
    pub nodes: Arc<Feed<(ModelNode, NodeExtra)>>,
    pub pdbs: Arc<Feed<(Pdb, ())>>,
    /// The pods DaemonSets would start on a new node.
    pub daemonsets: Arc<Feed<(ModelPod, ())>>,
    pub claims: Counted<PersistentVolumeClaim>,
    pub volumes: Counted<PersistentVolume>,
    pub classes: Counted<StorageClass>,
    pub csinodes: Counted<CSINode>,
    /// ReplicaSets and ReplicationControllers, watched only for `--min-replica-count`.
    pub owners: Option<(Counted<ReplicaSet>, Counted<ReplicationController>)>,
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

/// Pause before a watch that failed starts over: half a second, doubled per failure in a row up to 30
/// seconds (every watch of the API: kinds here, the priority ConfigMap).
pub(crate) const WATCH_RETRY: Exponential =
    Exponential::new(Duration::from_millis(500), Duration::from_secs(30));

/// What a watched kind is: a Kubernetes object kube's watcher can list, decode and hand across tasks.
pub trait Watched:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static
{
}

impl<K> Watched for K where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// Runs the watch of one kind for ever, handing each event to `on_event`. Lists come in pages of 500
/// (the watcher's default), so neither the API server nor this process holds a whole list of a big kind
/// at once. After any failure the watch starts over with a full list after a pause ([`WATCH_RETRY`]), as
/// client-go's reflector does; `health` is doubtful
/// from the failure until that list is complete, so a loop never trusts a cache that may have missed
/// events.
fn spawn_watch<K: Watched>(
    api: Api<K>,
    kind: &'static str,
    health: Arc<WatchHealth>,
    mut on_event: impl FnMut(watcher::Event<K>) + Send + 'static,
) {
    tokio::spawn(async move {
        let mut retries = WATCH_RETRY.retries();
        loop {
            let mut stream = std::pin::pin!(watcher(api.clone(), watcher::Config::default()));
            while let Some(event) = stream.next().await {
                match event {
                    Ok(event) => {
                        let listed = matches!(event, watcher::Event::InitDone);
                        on_event(event);
                        if listed {
                            health.synced();
                            retries.reset();
                            if health.recovered() {
                                tracing::info!(kind, "watch recovered: listed everything again");
                            }
                        }
                    }
                    Err(e) => {
                        if health.failed() {
                            tracing::warn!(kind, error = %e, "watch failed; no scale-down until it has listed everything again");
                        }
                        break;
                    }
                }
            }
            tokio::time::sleep(retries.next_pause()).await;
        }
    });
}

/// Starts one reflector store of a small kind; `strip` drops the fields nothing reads. The store is
/// replaced when a relist completes ([`spawn_watch`]).
fn start<K: Watched>(
    api: Api<K>,
    kind: &'static str,
    health: Arc<WatchHealth>,
    strip: fn(&mut K),
) -> Counted<K> {
    let (reader, mut writer) = reflector::store();
    let changes = Arc::new(AtomicU64::new(0));
    let counter = changes.clone();
    spawn_watch(api, kind, health, move |event| {
        // Managed fields and last-applied copies are never read.
        let event = event.modify(|o| {
            o.managed_fields_mut().clear();
            o.annotations_mut().remove(labels::LAST_APPLIED);
            strip(o);
        });
        writer.apply_watcher_event(&event);
        counter.fetch_add(1, Ordering::Relaxed);
    });
    Counted {
        store: reader,
        changes,
    }
}

fn keep_all<K>(_: &mut K) {}

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
            pods: feed::start(Api::all(c()), KINDS[0], h(0), |p: converting::Pod| {
                p.converted
            }),
            nodes: feed::start(Api::all(c()), KINDS[1], h(1), |n: converting::Node| {
                n.converted
            }),
            pdbs: feed::start(Api::all(c()), KINDS[2], h(2), |p| {
                converted::convert_pdb(&p)
            }),
            daemonsets: feed::start(Api::all(c()), KINDS[3], h(3), |d| {
                converted::convert_daemonset(&d)
            }),
            claims: start(Api::all(c()), KINDS[4], h(4), keep_all),
            volumes: start(Api::all(c()), KINDS[5], h(5), keep_all),
            classes: start(Api::all(c()), KINDS[6], h(6), keep_all),
            csinodes: start(Api::all(c()), KINDS[7], h(7), keep_all),
            owners: owners.then(|| {
                // Only `spec.replicas` is read: the pod template goes.
                (
                    start(Api::all(c()), OWNER_KINDS[0], h(8), |r: &mut ReplicaSet| {
                        r.spec.template = None;
                    }),
                    start(
                        Api::all(c()),
                        OWNER_KINDS[1],
                        h(9),
                        |r: &mut ReplicationController| {
                            if let Some(s) = r.spec.as_mut() {
                                s.template = None;
                            }
                        },
                    ),
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

    /// Changes seen so far by the storage kinds' stores.
    pub fn storage_changes(&self) -> u64 {
        self.claims.changes()
            + self.volumes.changes()
            + self.classes.changes()
            + self.csinodes.changes()
    }

    /// Changes seen so far by the owners' stores (0 when they are not watched).
    pub fn owner_changes(&self) -> u64 {
        self.owners
            .as_ref()
            .map_or(0, |(rs, rc)| rs.changes() + rc.changes())
    }

    /// Waits until every watch has had its first list, or `timeout` fails first.
    pub async fn ready(&self, timeout: impl Future<Output = ()>) -> Result<()> {
        let all = async {
            while self
                .health
                .iter()
                .any(|(_, h)| !h.synced.load(Ordering::Relaxed))
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::select! {
            _ = all => Ok(()),
            _ = timeout => Err(Error::KubernetesTimeout {
                call: format!("the first list of all of {}", KINDS.join(", ")),
            }),
        }
    }
}
