//! `ferroscale record`'s reads of the cluster: every kind a timeline holds listed once (the start,
//! written at one time), then watched until the recording ends. Only lists and watches: read-only RBAC
//! is enough. A watch that fails starts over with a full list, which the [`Recorder`] compares with what
//! it wrote, so the timeline has no gap and no duplicate.

mod keep;
mod recorder;

pub use keep::keep;
pub use recorder::{Recorder, Seen};

use std::future::Future;
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::apps::v1::{DaemonSet, ReplicaSet};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::jiff::Timestamp;
use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};

use crate::error::{Error, Result};
use crate::trace::Kind;

/// How often `ferroscale record` pushes what was written to the file, at least.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// The API resource of `kind`, from its typed object.
fn resource(kind: Kind) -> ApiResource {
    match kind {
        Kind::Node => ApiResource::erase::<core::Node>(&()),
        Kind::Pod => ApiResource::erase::<core::Pod>(&()),
        Kind::PodDisruptionBudget => ApiResource::erase::<PodDisruptionBudget>(&()),
        Kind::DaemonSet => ApiResource::erase::<DaemonSet>(&()),
        Kind::ReplicaSet => ApiResource::erase::<ReplicaSet>(&()),
        Kind::ReplicationController => ApiResource::erase::<core::ReplicationController>(&()),
        Kind::PersistentVolumeClaim => ApiResource::erase::<core::PersistentVolumeClaim>(&()),
        Kind::PersistentVolume => ApiResource::erase::<core::PersistentVolume>(&()),
        Kind::StorageClass => ApiResource::erase::<StorageClass>(&()),
        Kind::CSINode => ApiResource::erase::<CSINode>(&()),
        Kind::Namespace => ApiResource::erase::<core::Namespace>(&()),
        Kind::PriorityClass => ApiResource::erase::<PriorityClass>(&()),
    }
}

fn api(client: &Client, kind: Kind) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &resource(kind))
}

fn value(object: &DynamicObject) -> serde_json::Value {
    serde_json::to_value(object).unwrap_or_default()
}

/// The time `now` (Unix seconds) says, as a timeline writes it.
fn at(now: &impl Fn() -> i64) -> Timestamp {
    Timestamp::from_second(now()).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// What a recording wrote.
#[derive(Debug, Clone, Copy)]
pub struct Recorded {
    pub lines: u64,
    /// Objects not of their kind's shape, left out.
    pub unreadable: u64,
}

/// Lists every kind into `recorder` at one time (the start), in pages of 500; a kind that cannot be
/// listed (no permission, not served) is the error, named.
async fn list_all(client: &Client, recorder: &mut Recorder, now: &impl Fn() -> i64) -> Result<()> {
    let start = at(now);
    for kind in Kind::ALL {
        recorder.see(kind, Seen::Init, start)?;
        let api = api(client, kind);
        let mut params = ListParams::default().limit(500);
        loop {
            let page = api
                .list(&params)
                .await
                .map_err(|e| Error::config(format!("cannot list {}s: {e}", kind.name())))?;
            for object in &page.items {
                recorder.see(kind, Seen::Listed(value(object)), start)?;
            }
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => break,
            }
        }
        recorder.see(kind, Seen::InitDone, start)?;
    }
    Ok(())
}

/// Every kind's watch, as one stream of (kind, what was seen); each watch starts over after a failure
/// (after kube's default backoff), with a full list.
fn watch_all(client: &Client) -> impl Stream<Item = (Kind, Seen)> + Send {
    let watches = Kind::ALL.map(|kind| {
        watcher(api(client, kind), watcher::Config::default())
            .default_backoff()
            .filter_map(move |event| async move {
                match event {
                    Ok(watcher::Event::Init) => Some((kind, Seen::Init)),
                    Ok(watcher::Event::InitApply(o)) => Some((kind, Seen::Listed(value(&o)))),
                    Ok(watcher::Event::InitDone) => Some((kind, Seen::InitDone)),
                    Ok(watcher::Event::Apply(o)) => Some((kind, Seen::Applied(value(&o)))),
                    Ok(watcher::Event::Delete(o)) => Some((kind, Seen::Deleted(value(&o)))),
                    Err(e) => {
                        tracing::warn!(kind = kind.name(), error = %e, "watch failed; it lists everything again");
                        None
                    }
                }
            })
            .boxed()
    });
    futures::stream::select_all(watches)
}

/// Records the cluster `client` reads into `recorder` until `stop` resolves, each change at the time
/// `now` says when it is seen (Unix seconds: `ferroscale record` passes the wall clock,
/// `time::unix_now`; a test its virtual clock), what was written pushed to the file every
/// `flush_every` ([`FLUSH_EVERY`]).
pub async fn record(
    client: &Client,
    mut recorder: Recorder,
    stop: impl Future<Output = ()>,
    now: impl Fn() -> i64,
    flush_every: Duration,
) -> Result<Recorded> {
    list_all(client, &mut recorder, &now).await?;
    recorder.flush()?;
    tracing::info!(lines = recorder.lines(), "listed the cluster; watching");
    let mut watches = std::pin::pin!(watch_all(client));
    let mut stop = std::pin::pin!(stop);
    let mut flush = tokio::time::interval(flush_every);
    loop {
        tokio::select! {
            () = &mut stop => break,
            _ = flush.tick() => recorder.flush()?,
            seen = watches.next() => match seen {
                Some((kind, seen)) => recorder.see(kind, seen, at(&now))?,
                None => break,
            },
        }
    }
    let recorded = Recorded {
        lines: recorder.lines(),
        unreadable: recorder.unreadable,
    };
    recorder.finish()?;
    Ok(recorded)
}
