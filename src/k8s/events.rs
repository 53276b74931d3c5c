//! Events on pods and nodes (events.k8s.io/v1 through kube's Recorder), queued for a background
//! writer so the loop never waits on the API for them.

use k8s_openapi::api::core::v1::ObjectReference;

use crate::actuator::{EventKind, Evictee, Regarding};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::Client;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// The controller name on events, as upstream's.
pub const EVENT_SOURCE: &str = "cluster-autoscaler";

/// Events waiting to be written; beyond this the loop drops them rather than wait.
const EVENT_QUEUE: usize = 10_000;

/// One event to publish.
#[doc(hidden)]
pub struct Note {
    regarding: ObjectReference,
    type_: EventType,
    reason: &'static str,
    action: &'static str,
    note: String,
}

/// Queues events for a background writer, so the loop never waits on the API for them; counts those
/// queued and not yet written, for a process about to end ([`Events::flushed`]).
#[derive(Clone)]
pub struct Events(Option<mpsc::Sender<Note>>, Arc<AtomicUsize>);

impl Events {
    /// Writes nothing (`--dry-run`).
    pub fn none() -> Self {
        Events(None, Arc::default())
    }

    /// Starts the background writer, reporting as `instance`.
    pub fn start(client: &Client, instance: &str) -> Self {
        let (tx, mut rx) = mpsc::channel::<Note>(EVENT_QUEUE);
        let pending = Arc::new(AtomicUsize::new(0));
        let written = pending.clone();
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
                    action: n.action.into(),
                    secondary: None,
                };
                if let Err(e) = recorder.publish(&ev, &n.regarding).await {
                    tracing::debug!(error = %e, reason = n.reason, "event not written");
                }
                written.fetch_sub(1, Ordering::Relaxed);
            }
        });
        Events(Some(tx), pending)
    }

    /// Queues one event; dropped when the queue is full.
    pub fn send(
        &self,
        regarding: ObjectReference,
        type_: EventType,
        reason: &'static str,
        note: String,
    ) {
        self.send_action(regarding, type_, reason, reason, note);
    }

    /// Queues one event whose action differs from its reason. The recorder folds an event into the
    /// series of the last one with the same regarding object, reason and action (keeping that one's
    /// note), so events whose notes must each be seen take distinct actions.
    pub fn send_action(
        &self,
        regarding: ObjectReference,
        type_: EventType,
        reason: &'static str,
        action: &'static str,
        note: String,
    ) {
        if let Some(tx) = &self.0 {
            self.1.fetch_add(1, Ordering::Relaxed);
            let queued = tx.try_send(Note {
                regarding,
                type_,
                reason,
                action,
                note,
            });
            if queued.is_err() {
                self.1.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Waits until every event queued so far is written (or failed), at most `bound`; whether they all
    /// were. For a process about to end (`ferroscale deschedule` with one cycle).
    pub async fn flushed(&self, bound: std::time::Duration) -> bool {
        let deadline = tokio::time::Instant::now() + bound;
        while self.1.load(Ordering::Relaxed) > 0 {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        true
    }
}

/// The reference of an event about a pod.
pub fn pod_ref(p: &Evictee) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(p.name.clone()),
        namespace: Some(p.namespace.clone()),
        uid: p.uid.clone(),
        ..Default::default()
    }
}

/// The reference of an event about a node.
pub fn node_ref(name: &str, uid: Option<String>) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: Some(name.into()),
        uid,
        ..Default::default()
    }
}

/// The reference of an event about what the actuator names.
pub fn reference(regarding: &Regarding) -> ObjectReference {
    match regarding {
        Regarding::Pod(p) => pod_ref(p),
        Regarding::Node { name, uid } => node_ref(name, uid.clone()),
    }
}

/// Kubernetes' event type of the actuator's.
pub fn event_type(kind: EventKind) -> EventType {
    match kind {
        EventKind::Normal => EventType::Normal,
        EventKind::Warning => EventType::Warning,
    }
}
