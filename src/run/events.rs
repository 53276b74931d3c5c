//! Events on pods and nodes (events.k8s.io/v1 through kube's Recorder), queued for a background
//! writer so the loop never waits on the API for them.

use k8s_openapi::api::core::v1::ObjectReference;

use crate::k8s::drain::Evictee;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::Client;
use tokio::sync::mpsc;

/// The controller name on events, as upstream's.
pub const EVENT_SOURCE: &str = "cluster-autoscaler";

/// Events waiting to be written; beyond this the loop drops them rather than wait.
const EVENT_QUEUE: usize = 10_000;

/// One event to publish.
pub(super) struct Note {
    regarding: ObjectReference,
    type_: EventType,
    reason: &'static str,
    note: String,
}

/// Queues events for a background writer, so the loop never waits on the API for them.
#[derive(Clone)]
pub(super) struct Events(pub(super) Option<mpsc::Sender<Note>>);

impl Events {
    pub(super) fn start(client: &Client, instance: &str) -> Self {
        let (tx, mut rx) = mpsc::channel::<Note>(EVENT_QUEUE);
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: EVENT_SOURCE.into(),
                instance: Some(instance.into()),
            },
        );
        tokio::spawn(async move {
            while let Some(n) = rx.recv().await {
                let ev = Event {
                    type_: n.type_,
                    reason: n.reason.into(),
                    note: Some(n.note),
                    action: n.reason.into(),
                    secondary: None,
                };
                if let Err(e) = recorder.publish(&ev, &n.regarding).await {
                    tracing::debug!(error = %e, reason = n.reason, "event not written");
                }
            }
        });
        Events(Some(tx))
    }

    pub(super) fn send(
        &self,
        regarding: ObjectReference,
        type_: EventType,
        reason: &'static str,
        note: String,
    ) {
        if let Some(tx) = &self.0 {
            let _ = tx.try_send(Note {
                regarding,
                type_,
                reason,
                note,
            });
        }
    }
}

pub(super) fn pod_ref(p: &Evictee) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(p.name.clone()),
        namespace: Some(p.namespace.clone()),
        uid: p.uid.clone(),
        ..Default::default()
    }
}

pub(super) fn node_ref(name: &str, uid: Option<String>) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: Some(name.into()),
        uid,
        ..Default::default()
    }
}
