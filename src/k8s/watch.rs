//! The live cluster as `ferroscale run` sees it: one reflector per kind (pods, nodes,
//! PodDisruptionBudgets, DaemonSets), fed by list+watch with resourceVersions and reconnecting with
//! backoff, so a loop reads memory and never waits on the API server.

use crate::labels;
use std::future::Future;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio_stream::StreamExt;

use crate::error::{Error, Result};

/// Read-only caches of the objects the loop needs, kept current by watches.
#[derive(Clone)]
pub struct Watches {
    pub pods: Store<Pod>,
    pub nodes: Store<Node>,
    pub pdbs: Store<PodDisruptionBudget>,
    pub daemonsets: Store<DaemonSet>,
}

/// Starts one watch; the returned store fills once the first list arrives.
fn start<K>(api: Api<K>, kind: &'static str) -> Store<K>
where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let (reader, writer) = reflector::store();
    // resourceVersion=0 lists come from the API server's watch cache, as client-go informers do.
    let config = watcher::Config::default().any_semantic();
    let stream = watcher(api, config)
        .default_backoff()
        // Managed fields and last-applied copies are never read; dropping them halves the cache.
        .modify(|o: &mut K| {
            o.managed_fields_mut().clear();
            o.annotations_mut().remove(labels::LAST_APPLIED);
        })
        .reflect(writer);
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            if let Err(e) = event {
                tracing::warn!(kind, error = %e, "watch failed; retrying with backoff");
            }
        }
    });
    reader
}

impl Watches {
    /// Starts the four watches (cluster-wide).
    pub fn start(client: &Client) -> Self {
        Watches {
            pods: start(Api::all(client.clone()), "pods"),
            nodes: start(Api::all(client.clone()), "nodes"),
            pdbs: start(Api::all(client.clone()), "poddisruptionbudgets"),
            daemonsets: start(Api::all(client.clone()), "daemonsets"),
        }
    }

    /// Waits until every store has had its first list, or `timeout` fails first.
    pub async fn ready(&self, timeout: impl Future<Output = ()>) -> Result<()> {
        let all = async {
            let _ = self.pods.wait_until_ready().await;
            let _ = self.nodes.wait_until_ready().await;
            let _ = self.pdbs.wait_until_ready().await;
            let _ = self.daemonsets.wait_until_ready().await;
        };
        tokio::select! {
            _ = all => Ok(()),
            _ = timeout => Err(Error::Unavailable(
                "the Kubernetes API did not answer the first list of pods, nodes, poddisruptionbudgets and daemonsets".into(),
            )),
        }
    }
}
