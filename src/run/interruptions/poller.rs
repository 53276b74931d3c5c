//! The tasks between the queue and the loop: the poller receives (while a loop takes its messages and
//! the inbox has room), decodes, verifies the envelope, and checks that each instance named is a
//! managed group's as AWS says now (a fresh read of the cloud, one per received batch); the deleter
//! deletes what the loop is done with, [`BATCH`] receipts per call, off the loop's path.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};

use super::{Inbox, IntakeSettings};
use crate::backoff::Exponential;
use crate::cloud::aws::interruption::events::{decode, verify, Notice, Undecodable};
use crate::cloud::aws::interruption::{InterruptionQueue, Message, BATCH};
use crate::cloud::Cloud;
use crate::metrics::LifecycleMetrics;
use crate::model::lifecycle::NoticeKind;

/// Pauses after failed receives: 1 s, doubled per failure in a row, up to a minute.
const BACKOFF: Exponential = Exponential::new(Duration::from_secs(1), Duration::from_secs(60));

/// How long one receive waits for messages.
const WAIT: Duration = Duration::from_secs(20);

/// How long the poller pauses at most while no loop takes its messages or the inbox is full.
const IDLE: Duration = Duration::from_millis(500);

/// A message for the loop.
pub(super) struct Received {
    pub id: String,
    pub receipt: String,
    /// The notices about instances of managed groups; empty when `again`.
    pub notices: Vec<Notice>,
    /// A message the loop already holds (or finished), received again: only its receipt is new.
    pub again: bool,
}

/// Messages received and not yet done with (sent to the loop, or held by it): the poller counts up,
/// the loop down.
pub(super) type Holding = Arc<AtomicUsize>;

/// The task receiving from the queue.
pub(super) struct Poller {
    pub queue: InterruptionQueue,
    pub cloud: Arc<dyn Cloud>,
    pub to_loop: mpsc::UnboundedSender<Received>,
    pub taken: watch::Receiver<Option<Instant>>,
    pub inbox: Inbox,
    pub settings: IntakeSettings,
    pub holding: Holding,
    /// Ids of the messages sent to the loop and not yet forgotten by it: received again, they are not
    /// checked again (their time may pass the age limit while their node drains).
    pub known: HashSet<String>,
    /// Ids the loop has forgotten.
    pub forget: mpsc::UnboundedReceiver<String>,
    pub metrics: LifecycleMetrics,
}

impl Poller {
    /// Whether a loop took the messages lately (this replica leads).
    fn wanted(&self) -> bool {
        self.taken
            .borrow()
            .is_some_and(|t| t.elapsed() < self.inbox.idle)
    }

    /// Receives until the loop's side is gone, never more than the inbox has room for (the rest stay
    /// in the queue); a failed receive backs off and marks the queue failing until one succeeds.
    pub async fn poll(mut self) {
        let mut retries = BACKOFF.retries();
        while !self.to_loop.is_closed() {
            let room = self
                .settings
                .inbox_cap
                .saturating_sub(self.holding.load(Ordering::SeqCst));
            if !self.wanted() || room == 0 {
                // No loop takes what would be received (this replica does not lead, or has not
                // started), or the loop holds as many messages as it may: until a loop takes.
                let _ = tokio::time::timeout(IDLE, self.taken.changed()).await;
                continue;
            }
            match self.queue.receive(WAIT, room.min(BATCH)).await {
                Ok(messages) => {
                    retries.reset();
                    self.inbox.report.send_replace(None);
                    self.metrics.queue_up(true);
                    self.take(messages).await;
                }
                Err(e) => {
                    let backoff = retries.next_pause();
                    tracing::warn!(error = %e, retry_in = ?backoff, "receiving from the interruption queue failed");
                    self.inbox.report.send_replace(Some(e.to_string()));
                    self.metrics.queue_up(false);
                    tokio::time::sleep(backoff).await;
                }
            }
        }
    }

    /// One received batch: messages that do not hold up are counted and deleted; those about managed
    /// instances go to the loop; those a failed fresh read could not settle stay in the queue.
    async fn take(&mut self, messages: Vec<Message>) {
        while let Ok(id) = self.forget.try_recv() {
            self.known.remove(&id);
        }
        let origin = self.queue.origin();
        let (now, max_age) = (
            crate::time::unix_now(),
            crate::model::duration::secs(self.settings.max_age),
        );
        let mut rejected: Vec<String> = Vec::new();
        let mut accepted: Vec<(Message, Vec<Notice>)> = Vec::new();
        for m in messages {
            if self.known.contains(&m.id) {
                self.send(m, Vec::new(), true);
                continue;
            }
            let checked = decode(&m.body).and_then(|notices| {
                verify(&m.body, &notices, &origin, now, max_age).map(|()| notices)
            });
            let notices = match checked {
                Ok(notices) => notices,
                Err(why) => {
                    let result = match why {
                        Undecodable::Malformed(_) => "malformed",
                        Undecodable::Ignored(_) => "ignored",
                        Undecodable::Unverified(_) => "unverified",
                    };
                    tracing::info!(%why, "interruption message not acted on; deleting it");
                    self.metrics.message("unknown", result);
                    rejected.push(m.receipt);
                    continue;
                }
            };
            let (ignored, notices): (Vec<Notice>, Vec<Notice>) = notices
                .into_iter()
                .partition(|n| n.kind == NoticeKind::Rebalance && !self.settings.handle_rebalance);
            for n in &ignored {
                self.metrics.message(n.kind.label(), "ignored");
            }
            if notices.is_empty() {
                rejected.push(m.receipt);
            } else {
                accepted.push((m, notices));
            }
        }
        self.sort(accepted, &mut rejected).await;
        if !rejected.is_empty() {
            self.queue.delete(&rejected).await;
        }
        self.metrics.inbox(self.holding.load(Ordering::SeqCst));
    }

    /// Which accepted messages name instances of managed groups, as AWS says *now* (one read for the
    /// whole batch): the snapshot may be a refresh old, and a notice is acted on only on a word that
    /// is current. A message whose instances the read places in no managed group is foreign
    /// (deleted); one the read could not settle is unverifiable (left in the queue, to come back
    /// after its visibility timeout), whatever the snapshot says.
    async fn sort(&mut self, accepted: Vec<(Message, Vec<Notice>)>, rejected: &mut Vec<String>) {
        if accepted.is_empty() {
            return;
        }
        let mut ids: Vec<String> = accepted
            .iter()
            .flat_map(|(_, ns)| ns.iter().map(|n| n.instance_id.clone()))
            .collect();
        ids.sort();
        ids.dedup();
        let (owners, unsettled) = match self.cloud.owners(&ids).await {
            Ok(fresh) => (fresh, false),
            Err(e) => {
                tracing::warn!(error = %e, instances = ?ids, "cannot tell which group the instances of interruption notices belong to; leaving them in the queue");
                (HashMap::new(), true)
            }
        };
        for (m, notices) in accepted {
            if unsettled && notices.iter().any(|n| !owners.contains_key(&n.instance_id)) {
                for n in &notices {
                    self.metrics.message(n.kind.label(), "unverifiable");
                }
                continue;
            }
            let (mine, foreign): (Vec<Notice>, Vec<Notice>) = notices
                .into_iter()
                .partition(|n| owners.contains_key(&n.instance_id));
            for n in &foreign {
                tracing::info!(instance = %n.instance_id, kind = n.kind.label(), "notice for an instance of no managed group");
                self.metrics.message(n.kind.label(), "foreign");
            }
            if mine.is_empty() {
                rejected.push(m.receipt);
            } else {
                self.known.insert(m.id.clone());
                self.send(m, mine, false);
            }
        }
    }

    fn send(&self, m: Message, notices: Vec<Notice>, again: bool) {
        self.holding.fetch_add(1, Ordering::SeqCst);
        let _ = self.to_loop.send(Received {
            id: m.id,
            receipt: m.receipt,
            notices,
            again,
        });
    }
}

/// Deletes the receipts the loop sends, what has gathered at once in [`BATCH`]es, until the loop's
/// side is gone. A receipt that fails to go comes back after its visibility timeout; the loop deletes
/// it again if it still knows it as done.
pub(super) async fn delete(
    queue: InterruptionQueue,
    mut done: mpsc::UnboundedReceiver<Vec<String>>,
) {
    while let Some(mut receipts) = done.recv().await {
        while let Ok(more) = done.try_recv() {
            receipts.extend(more);
        }
        queue.delete(&receipts).await;
    }
}
