//! The tasks between the queue and the loop: the poller receives (while a loop takes its messages and
//! the inbox has room), decodes, deletes repeats of notices the loop holds, verifies the envelope,
//! checks that each instance named is a managed group's as AWS says now (a fresh read of the cloud,
//! one per received batch) and each notice against what the cloud says of its instance
//! ([`Cloud::check_notices`]); the deleter deletes what the loop is done with, [`BATCH`] receipts per
//! call, off the loop's path.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};

use super::{Inbox, IntakeSettings};
use crate::backoff::Exponential;
use crate::cloud::aws::interruption::events::{decode, verify, Notice, Undecodable};
use crate::cloud::aws::interruption::{InterruptionQueue, Message, BATCH};
use crate::cloud::{Cloud, Verdict};
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

/// Messages received and not yet settled (sent to the loop, or held by it before each of their notices
/// has its node marked): the poller counts up, the loop down. What it counts is what the inbox cap
/// bounds; a message whose nodes are marked is held outside it (one per node and notice at most, as a
/// repeat is deleted), so held scheduled changes never keep spot warnings out.
pub(super) type Holding = Arc<AtomicUsize>;

/// The notices the loop holds with their nodes marked, by instance id: a message that only repeats them
/// is not judged again by its age (its node's drain goes on under the notice held).
pub(super) type HeldNotices = HashMap<String, Vec<NoticeKind>>;

/// Whether a notice `held` (its node marked) already says all that `new` says about the same instance:
/// a stronger notice, or one as strong due as early.
pub(super) fn covers(held: &NoticeKind, new: &NoticeKind) -> bool {
    let (h, n) = (held.reason(), new.reason());
    h.strength() > n.strength()
        || (h == n
            && match (held.due_from(), new.due_from()) {
                (Some(a), Some(b)) => a <= b,
                (_, None) => true,
                (None, Some(_)) => false,
            })
}

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
    /// The notices the loop holds, by instance, as of its last loop.
    pub held: watch::Receiver<HeldNotices>,
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
            let decoded = decode(&m.body);
            // Another message about notices held: its envelope is checked, not its age (the notice
            // held may wait on a budget for longer than --interruption-max-age); the notice held goes
            // on, this one is deleted.
            if let Ok(notices) = &decoded {
                if self.repeats(notices) && verify(&m.body, notices, &origin, now, i64::MAX).is_ok()
                {
                    for n in notices {
                        tracing::info!(instance = %n.instance_id, kind = n.kind.label(), "a notice already held, received again; deleting the repeat");
                        self.metrics.message(n.kind.label(), "repeated");
                    }
                    rejected.push(m.receipt);
                    continue;
                }
            }
            let checked = decoded.and_then(|notices| {
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

    /// Whether every notice of a message is covered by one the loop holds for its instance.
    fn repeats(&self, notices: &[Notice]) -> bool {
        let held = self.held.borrow();
        !notices.is_empty()
            && notices.iter().all(|n| {
                held.get(&n.instance_id)
                    .is_some_and(|kinds| kinds.iter().any(|k| covers(k, &n.kind)))
            })
    }

    /// Which accepted messages name instances of managed groups, as AWS says *now* (one read for the
    /// whole batch): the snapshot may be a refresh old, and a notice is acted on only on a word that
    /// is current. A message whose instances the read places in no managed group is foreign
    /// (deleted); one the read could not settle is unverifiable (left in the queue, to come back
    /// after its visibility timeout), whatever the snapshot says. The rest are checked against EC2.
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
        let mut managed = Vec::new();
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
                managed.push((m, mine));
            }
        }
        self.confirm(managed, rejected).await;
    }

    /// Each notice about a managed instance against what the cloud says of the instance now (its
    /// spot request, state, scheduled events: one call per kind for the batch). A notice the cloud
    /// contradicts moves nothing (`contradicted`; a message left with no notice is deleted); a
    /// message with a notice that could not be checked stays in the queue (`unverifiable`); the
    /// rest go to the loop.
    async fn confirm(&mut self, messages: Vec<(Message, Vec<Notice>)>, rejected: &mut Vec<String>) {
        if messages.is_empty() {
            return;
        }
        let asked: Vec<(String, NoticeKind)> = messages
            .iter()
            .flat_map(|(_, ns)| ns.iter().map(|n| (n.instance_id.clone(), n.kind.clone())))
            .collect();
        let mut verdicts = self.cloud.check_notices(&asked).await.into_iter();
        for (m, notices) in messages {
            let verdicts: Vec<Verdict> = notices
                .iter()
                .map(|_| verdicts.next().unwrap_or(Verdict::Stands))
                .collect();
            let unchecked = verdicts.iter().find_map(|v| match v {
                Verdict::Unchecked(why) => Some(why),
                _ => None,
            });
            if let Some(why) = unchecked {
                tracing::warn!(error = %why, "cannot check an interruption message's notices against the cloud; leaving it in the queue");
                for n in &notices {
                    self.metrics.message(n.kind.label(), "unverifiable");
                }
                continue;
            }
            let mut standing = Vec::new();
            for (n, verdict) in notices.into_iter().zip(verdicts) {
                if let Verdict::Contradicted(why) = verdict {
                    tracing::warn!(instance = %n.instance_id, kind = n.kind.label(), %why, "the cloud contradicts an interruption notice; nothing moved");
                    self.metrics.message(n.kind.label(), "contradicted");
                } else {
                    standing.push(n);
                }
            }
            if standing.is_empty() {
                rejected.push(m.receipt);
            } else {
                self.known.insert(m.id.clone());
                self.send(m, standing, false);
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
