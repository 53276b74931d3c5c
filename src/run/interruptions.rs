//! `--interruption-queue`: notices that an instance is going away, from an SQS queue EventBridge fills.
//! A task (`poller`) long-polls the queue into a bounded inbox, checking each message's envelope, that
//! its instance is a managed group's as AWS says now (a fresh read of the cloud) and that the cloud
//! does not contradict it (EC2's spot request, state, scheduled events); each loop takes the inbox,
//! marks the nodes named (the engine then places their pods again at once), and keeps every message
//! until each node it names is gone: only then is it deleted (DeleteMessageBatch, by a task off the
//! loop's path). A message whose nodes are marked leaves the inbox's cap (it is held by its
//! instances); another message repeating a notice held is deleted, whatever its age. A crash or a lost
//! leadership leaves the message in the queue, to come back. Foreign, ignored, malformed, unverified,
//! contradicted and repeated messages are counted and deleted; unverifiable ones (a fresh read or
//! check failed) are counted and left. A queue that fails is retried with backoff and shows in
//! `/readyz` and `ferroscale_interruption_queue_up`.

mod poller;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};

use crate::cloud::aws::interruption::events::Notice;
use crate::cloud::aws::interruption::InterruptionQueue;
use crate::cloud::Cloud;
use crate::k8s::index::Index;
use crate::metrics::LifecycleMetrics;
use crate::model::instance_id;
use crate::model::lifecycle::{DisruptionReason, NoticeKind, Noticed};

use poller::{HeldNotices, Holding, Poller, Received};

/// How long a finished message's id is remembered: received again (its delete lost, or racing a new
/// receive), it is deleted again rather than taken anew.
const FINISHED_FOR: Duration = Duration::from_secs(15 * 60);

/// How notices are taken in: `ferroscale run`'s interruption flags.
#[derive(Debug, Clone)]
pub struct IntakeSettings {
    /// `--handle-rebalance-recommendations`.
    pub handle_rebalance: bool,
    /// `--interruption-max-age`: an event older than this is not acted on (deleted as unverified).
    pub max_age: Duration,
    /// Messages received and not yet settled (a notice's node not marked yet), at most; beyond it the
    /// rest stay in the queue. Messages whose nodes are marked are held outside it.
    pub inbox_cap: usize,
    /// How long a notice about a managed group's instance (per a fresh read) waits for its node to
    /// show up in the cluster and the snapshot before it is given up (`expired`).
    pub pending_for: Duration,
}

impl Default for IntakeSettings {
    fn default() -> Self {
        IntakeSettings {
            handle_rebalance: false,
            max_age: Duration::from_secs(5 * 60),
            inbox_cap: 1000,
            pending_for: Duration::from_secs(10 * 60),
        }
    }
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

/// One notice of a held message, and what became of it.
struct Tracked {
    notice: Notice,
    /// The node marked for it, once its instance had one.
    node: Option<String>,
    done: bool,
}

/// A message the loop holds until every node it names is gone.
struct Held {
    id: String,
    /// The newest receipt: only it deletes the message.
    receipt: String,
    notices: Vec<Tracked>,
    since: Instant,
    /// Whether it counts against the inbox cap: until each of its notices has its node marked (or is
    /// done).
    counted: bool,
}

/// The loop's side of the queue.
pub struct Interruptions {
    /// Messages the poller checked, in the order received (at most the inbox cap, with `held`).
    received: mpsc::UnboundedReceiver<Received>,
    /// When a loop last took the messages: the poller receives only while loops take what it
    /// receives, so a replica that does not lead leaves the messages to the one that does.
    taken: watch::Sender<Option<Instant>>,
    holding: Holding,
    /// To the poller: ids of finished messages no longer remembered.
    forget: mpsc::UnboundedSender<String>,
    /// To the poller: the notices held with their nodes marked, by instance.
    held_notices: watch::Sender<HeldNotices>,
    /// Notices a restart read back from the nodes' intents, by instance, until their node is gone:
    /// held as if their message had been (a message repeating one is not judged by its age).
    restored: HeldNotices,
    settings: IntakeSettings,
    metrics: LifecycleMetrics,
    /// Nodes with a notice, by name, until they are gone: each with its strongest notice due.
    disrupted: Noticed,
    /// Messages taken and not yet done with.
    held: Vec<Held>,
    /// Ids of messages done with lately, oldest first, with when.
    finished: VecDeque<(String, Instant)>,
    /// Receipts of the messages done with this loop, deleted once the loop has acted.
    done: Vec<String>,
    /// To the task deleting messages.
    deleter: mpsc::UnboundedSender<Vec<String>>,
}

impl Interruptions {
    /// Starts the poller on `queue` into `inbox`, checking instances against `cloud`, and the task
    /// deleting what the loop is done with.
    pub fn start(
        queue: InterruptionQueue,
        cloud: Arc<dyn Cloud>,
        inbox: Inbox,
        settings: IntakeSettings,
        metrics: LifecycleMetrics,
    ) -> Self {
        let (to_loop, received) = mpsc::unbounded_channel();
        let (taken, taken_seen) = watch::channel(None);
        let (deleter, to_delete) = mpsc::unbounded_channel();
        let (forget, forgotten) = mpsc::unbounded_channel();
        let (held_notices, held_seen) = watch::channel(HeldNotices::new());
        let holding = Holding::default();
        let poller = Poller {
            queue: queue.clone(),
            cloud,
            to_loop,
            taken: taken_seen,
            inbox,
            settings: settings.clone(),
            holding: holding.clone(),
            known: Default::default(),
            forget: forgotten,
            held: held_seen,
            metrics: metrics.clone(),
        };
        tokio::spawn(poller.poll());
        tokio::spawn(poller::delete(queue, to_delete));
        Interruptions {
            received,
            taken,
            holding,
            forget,
            held_notices,
            restored: HeldNotices::new(),
            settings,
            metrics,
            disrupted: Noticed::default(),
            held: Vec::new(),
            finished: VecDeque::new(),
            done: Vec::new(),
            deleter,
        }
    }

    /// Takes what the poller sent: new messages are held; one received again refreshes the receipt
    /// of the message held (or is deleted again when it was finished).
    fn take(&mut self) {
        while let Ok(r) = self.received.try_recv() {
            if let Some(h) = self.held.iter_mut().find(|h| h.id == r.id) {
                self.holding.fetch_sub(1, Ordering::SeqCst);
                h.receipt = r.receipt;
            } else if r.again {
                self.holding.fetch_sub(1, Ordering::SeqCst);
                self.done.push(r.receipt);
            } else {
                self.held.push(Held {
                    id: r.id,
                    receipt: r.receipt,
                    notices: r
                        .notices
                        .into_iter()
                        .map(|notice| Tracked {
                            notice,
                            node: None,
                            done: false,
                        })
                        .collect(),
                    since: Instant::now(),
                    counted: true,
                });
            }
        }
    }

    /// Moves the messages every notice of which is done to `done`, and forgets finished ids past
    /// [`FINISHED_FOR`] (or beyond the inbox cap).
    fn finish(&mut self) {
        let now = Instant::now();
        let (finished, held): (Vec<Held>, Vec<Held>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|h| h.notices.iter().all(|t| t.done));
        self.held = held;
        for h in finished {
            if h.counted {
                self.holding.fetch_sub(1, Ordering::SeqCst);
            }
            self.done.push(h.receipt);
            self.finished.push_back((h.id, now));
        }
        while let Some((id, at)) = self.finished.front() {
            if now.duration_since(*at) < FINISHED_FOR
                && self.finished.len() <= self.settings.inbox_cap
            {
                break;
            }
            let _ = self.forget.send(id.clone());
            self.finished.pop_front();
        }
        // Messages whose nodes are all marked leave the inbox's cap, held by their instances.
        let mut held = self.restored.clone();
        for h in &mut self.held {
            if h.counted && h.notices.iter().all(|t| t.done || t.node.is_some()) {
                h.counted = false;
                self.holding.fetch_sub(1, Ordering::SeqCst);
            }
            for t in h.notices.iter().filter(|t| !t.done && t.node.is_some()) {
                held.entry(t.notice.instance_id.clone())
                    .or_default()
                    .push(t.notice.kind.clone());
            }
        }
        self.held_notices.send_if_modified(|was| {
            let changed = *was != held;
            if changed {
                *was = held;
            }
            changed
        });
        self.metrics.inbox(self.holding.load(Ordering::SeqCst));
        self.metrics
            .held(self.held.iter().filter(|h| !h.counted).count());
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

    /// The notices the loop is done with are deleted; in dry-run they are left for a replica that acts.
    async fn acknowledge(&mut self, dry_run: bool);

    /// Notices a restart read back from the nodes' intents (instance id, why): already acted on, so
    /// a message repeating one is taken as held, not judged anew. Sources that keep nothing ignore it.
    fn restore(&mut self, notices: Vec<(String, DisruptionReason)>) {
        let _ = notices;
    }
}

#[async_trait::async_trait]
impl Notices for Interruptions {
    /// Takes the inbox: each held notice whose instance has a node of a managed group (`node_groups`)
    /// marks it; one whose marked node is gone (out of the cluster, or its instance out of its group)
    /// is done; one whose node has not shown up waits, up to `pending_for`. Returns every marked node
    /// still in the cluster.
    fn interrupted(
        &mut self,
        index: &Index,
        node_groups: &HashMap<String, String>,
    ) -> HashMap<String, DisruptionReason> {
        self.taken.send_replace(Some(Instant::now()));
        self.take();
        if !self.restored.is_empty() {
            // Held until their node is gone.
            let present = nodes_by_instance(index, node_groups);
            self.restored
                .retain(|i, _| present.contains_key(i.as_str()));
        }
        // Nodes of managed groups by instance id, when there is a notice to look them up for.
        let by_instance: HashMap<&str, &str> = if self.held.is_empty() {
            HashMap::new()
        } else {
            nodes_by_instance(index, node_groups)
        };
        let pending_for = self.settings.pending_for;
        for h in &mut self.held {
            for t in h.notices.iter_mut().filter(|t| !t.done) {
                let n = &t.notice;
                match (by_instance.get(n.instance_id.as_str()), &t.node) {
                    (Some(node), None) => {
                        let reason = n.kind.reason();
                        if self.disrupted.note(node, &n.kind) {
                            tracing::warn!(node, instance = %n.instance_id, %reason, "instance going away; moving its pods when due");
                            self.metrics.message(n.kind.label(), "handled");
                            t.node = Some(node.to_string());
                        } else {
                            tracing::info!(node, instance = %n.instance_id, ?n.kind, "reboot-only maintenance: nothing to drain");
                            self.metrics.message(n.kind.label(), "ignored");
                            t.done = true;
                        }
                    }
                    (Some(_), Some(_)) => {}
                    (None, Some(node)) => {
                        tracing::info!(node, instance = %n.instance_id, "interrupted node gone; its notice is done");
                        t.done = true;
                    }
                    (None, None) if h.since.elapsed() >= pending_for => {
                        tracing::warn!(instance = %n.instance_id, kind = n.kind.label(), waited = ?pending_for, "no node of a managed group showed up for the instance of a notice; giving it up");
                        self.metrics.message(n.kind.label(), "expired");
                        t.done = true;
                    }
                    (None, None) => {
                        tracing::debug!(instance = %n.instance_id, "notice waits for its instance's node");
                    }
                }
            }
        }
        self.finish();
        // Scheduled changes fall due by their AWS start time: the wall clock, not the loop's.
        self.disrupted.due(crate::time::unix_now(), |node| {
            index.nodes.get(node).is_some()
        })
    }

    /// Hands the messages done with to the deleting task (in dry-run forgets them, left in the queue);
    /// never waits on SQS.
    fn restore(&mut self, notices: Vec<(String, DisruptionReason)>) {
        for (instance, reason) in notices {
            let kind = match reason {
                DisruptionReason::SpotInterruption => NoticeKind::SpotInterruption,
                DisruptionReason::Rebalance => NoticeKind::Rebalance,
                DisruptionReason::InstanceStopping => NoticeKind::StateChange("stopping".into()),
                // Due since it was acted on.
                _ => NoticeKind::ScheduledChange(Default::default()),
            };
            self.restored.entry(instance).or_default().push(kind);
        }
    }

    async fn acknowledge(&mut self, dry_run: bool) {
        let done = std::mem::take(&mut self.done);
        if !dry_run && !done.is_empty() {
            let _ = self.deleter.send(done);
        }
    }
}
