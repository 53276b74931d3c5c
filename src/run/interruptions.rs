//! `--interruption-queue`: notices that an instance is going away, from an SQS queue EventBridge fills.
//! A task long-polls the queue into an inbox; each loop takes the inbox, marks the nodes of managed
//! groups whose instance a notice names (the engine then places their pods again at once), starts their
//! drains, and only then deletes the messages. Foreign, ignored and malformed messages are counted and
//! deleted; a queue that fails is retried with backoff and shows in `/readyz` and
//! `ferroscale_interruption_queue_up`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};

use crate::backoff::Exponential;
use crate::cloud::aws::interruption::events::{decode, verify, Notice, Undecodable};
use crate::cloud::aws::interruption::InterruptionQueue;
use crate::k8s::index::Index;
use crate::metrics::LifecycleMetrics;
use crate::model::instance_id;
use crate::model::lifecycle::{DisruptionReason, NoticeKind, Noticed};

/// Pauses after failed receives: 1 s, doubled per failure in a row, up to a minute.
const BACKOFF: Exponential = Exponential::new(Duration::from_secs(1), Duration::from_secs(60));

/// How long one receive waits for messages.
const WAIT: Duration = Duration::from_secs(20);

/// A decoded message waiting for the loop.
struct Received {
    id: String,
    notices: Vec<Notice>,
    receipt: String,
}

/// The queue's health as `/readyz` sees it, and how long the poller keeps receiving after a loop last
/// took its messages. Cloned freely; the poller reports through it.
#[derive(Clone)]
pub struct Inbox {
    failing: watch::Receiver<Option<String>>,
    report: Arc<watch::Sender<Option<String>>>,
    /// How long after the last take the poller keeps receiving.
    idle: Duration,
}

impl Default for Inbox {
    /// Receiving while a loop took the inbox within the last 30 s.
    fn default() -> Self {
        Inbox::new(Duration::from_secs(30))
    }
}

impl Inbox {
    /// An inbox whose poller receives while a loop took it within `idle`.
    pub fn new(idle: Duration) -> Self {
        let (report, failing) = watch::channel(None);
        Inbox {
            failing,
            report: Arc::new(report),
            idle,
        }
    }

    /// Ok while the queue answers, else why not (for `/readyz`).
    pub fn ready(&self) -> std::result::Result<(), String> {
        match &*self.failing.borrow() {
            None => Ok(()),
            Some(why) => Err(format!("interruption queue failing: {why}")),
        }
    }
}

/// The loop's side of the queue.
pub struct Interruptions {
    queue: InterruptionQueue,
    /// Messages the poller decoded, in the order received.
    received: mpsc::UnboundedReceiver<Received>,
    /// When a loop last took the messages: the poller receives only while loops take what it
    /// receives, so a replica that does not lead leaves the messages to the one that does.
    taken: watch::Sender<Option<Instant>>,
    handle_rebalance: bool,
    metrics: LifecycleMetrics,
    /// Nodes with a notice, by name, until they are gone: each with its strongest notice due.
    disrupted: Noticed,
    /// Messages handled this loop, deleted once the loop has acted.
    handled: Vec<String>,
}

impl Interruptions {
    /// Starts the poller on `queue` into `inbox`; `handle_rebalance` is
    /// `--handle-rebalance-recommendations`.
    pub fn start(
        queue: InterruptionQueue,
        inbox: Inbox,
        handle_rebalance: bool,
        metrics: LifecycleMetrics,
    ) -> Self {
        let (to_loop, received) = mpsc::unbounded_channel();
        let (taken, taken_seen) = watch::channel(None);
        let poller = Poller {
            queue: queue.clone(),
            to_loop,
            taken: taken_seen,
            inbox,
            metrics: metrics.clone(),
        };
        tokio::spawn(poller.poll());
        Interruptions {
            queue,
            received,
            taken,
            handle_rebalance,
            metrics,
            disrupted: Noticed::default(),
            handled: Vec::new(),
        }
    }
}

/// The nodes of managed groups (`node_groups`) by the instance id their provider id ends with: how a
/// notice, which names an instance, finds its node.
pub fn nodes_by_instance<'a>(
    index: &'a Index,
    node_groups: &HashMap<String, String>,
) -> HashMap<&'a str, &'a str> {
    index
        .nodes
        .items()
        .iter()
        .filter(|n| node_groups.contains_key(&n.name) && !n.provider_id.is_empty())
        .map(|n| (instance_id(&n.provider_id), n.name.as_str()))
        .collect()
}

/// Where the loop learns that instances are going away: the SQS queue ([`Interruptions`]), or a script
/// in tests. Read in the observe stage, acknowledged once the loop acted.
#[async_trait::async_trait]
pub trait Notices: Send {
    /// The nodes (of managed groups, still in the cluster) whose instance is going away, with why.
    fn interrupted(
        &mut self,
        index: &Index,
        node_groups: &HashMap<String, String>,
    ) -> HashMap<String, DisruptionReason>;

    /// The notices the loop acted on are done with; in dry-run they are left for a replica that acts.
    async fn acknowledge(&mut self, dry_run: bool);
}

#[async_trait::async_trait]
impl Notices for Interruptions {
    /// Takes the inbox: each notice about a node of a managed group (`node_groups`) marks it; the rest
    /// are counted as foreign or ignored. Returns every marked node still in the cluster.
    fn interrupted(
        &mut self,
        index: &Index,
        node_groups: &HashMap<String, String>,
    ) -> HashMap<String, DisruptionReason> {
        self.taken.send_replace(Some(Instant::now()));
        let mut received: Vec<Received> = Vec::new();
        while let Ok(m) = self.received.try_recv() {
            // A message received again (its visibility timeout passed while no loop took it) replaces
            // itself: its newest receipt deletes it.
            received.retain(|r| r.id != m.id || m.id.is_empty());
            received.push(m);
        }
        // Nodes of managed groups by instance id, when there is a notice to look them up for.
        let by_instance: HashMap<&str, &str> = if received.is_empty() {
            HashMap::new()
        } else {
            nodes_by_instance(index, node_groups)
        };
        for r in received {
            for n in &r.notices {
                let result = match by_instance.get(n.instance_id.as_str()) {
                    _ if n.kind == NoticeKind::Rebalance && !self.handle_rebalance => "ignored",
                    Some(node) => {
                        let reason = n.kind.reason();
                        if self.disrupted.note(node, &n.kind) {
                            tracing::warn!(node, instance = %n.instance_id, %reason, "instance going away; moving its pods when due");
                            "handled"
                        } else {
                            tracing::info!(node, instance = %n.instance_id, ?n.kind, "reboot-only maintenance: nothing to drain");
                            "ignored"
                        }
                    }
                    None => {
                        tracing::info!(instance = %n.instance_id, kind = n.kind.label(), "notice for an instance of no managed group");
                        "foreign"
                    }
                };
                self.metrics.message(n.kind.label(), result);
            }
            self.handled.push(r.receipt);
        }
        self.disrupted.due(crate::time::unix_now(), |node| {
            index.nodes.get(node).is_some()
        })
    }

    /// Deletes the messages handled this loop (in dry-run forgets them, left in the queue); one that
    /// fails to go is received again later, which does no harm (its node is already marked).
    async fn acknowledge(&mut self, dry_run: bool) {
        for receipt in std::mem::take(&mut self.handled) {
            if dry_run {
                continue;
            }
            if let Err(e) = self.queue.delete(&receipt).await {
                tracing::warn!(error = %e, "could not delete a handled interruption message");
            }
        }
    }
}

/// The task receiving from the queue.
struct Poller {
    queue: InterruptionQueue,
    to_loop: mpsc::UnboundedSender<Received>,
    taken: watch::Receiver<Option<Instant>>,
    inbox: Inbox,
    metrics: LifecycleMetrics,
}

impl Poller {
    /// Whether a loop took the messages lately (this replica leads).
    fn wanted(&self) -> bool {
        self.taken
            .borrow()
            .is_some_and(|t| t.elapsed() < self.inbox.idle)
    }

    /// Receives until the loop's side is gone: decoded messages go to the loop; others are logged,
    /// counted and deleted at once; a failed receive backs off and marks the queue failing until one
    /// succeeds.
    async fn poll(self) {
        let mut retries = BACKOFF.retries();
        while !self.to_loop.is_closed() {
            if !self.wanted() {
                // No loop takes what would be received (this replica does not lead, or has not started).
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            let messages = match self.queue.receive(WAIT).await {
                Ok(m) => {
                    retries.reset();
                    self.inbox.report.send_replace(None);
                    self.metrics.queue_up(true);
                    m
                }
                Err(e) => {
                    let backoff = retries.next_pause();
                    tracing::warn!(error = %e, retry_in = ?backoff, "receiving from the interruption queue failed");
                    self.inbox.report.send_replace(Some(e.to_string()));
                    self.metrics.queue_up(false);
                    tokio::time::sleep(backoff).await;
                    continue;
                }
            };
            let origin = self.queue.origin();
            for m in messages {
                let checked = decode(&m.body).and_then(|notices| {
                    verify(&m.body, &notices, &origin, crate::time::unix_now()).map(|()| notices)
                });
                match checked {
                    Ok(notices) => {
                        let _ = self.to_loop.send(Received {
                            id: m.id,
                            notices,
                            receipt: m.receipt,
                        });
                    }
                    Err(why) => {
                        let result = match why {
                            Undecodable::Malformed(_) => "malformed",
                            Undecodable::Ignored(_) => "ignored",
                            Undecodable::Unverified(_) => "unverified",
                        };
                        tracing::info!(%why, "interruption message not acted on; deleting it");
                        self.metrics.message("unknown", result);
                        if let Err(e) = self.queue.delete(&m.receipt).await {
                            tracing::warn!(error = %e, "could not delete an interruption message");
                        }
                    }
                }
            }
        }
    }
}
