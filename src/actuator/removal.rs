//! The one removal procedure: taint the node (and cordon it for an interruption), evict its pods
//! through their budgets, check nothing else landed on it, delete its instance. Scale-down, drift and
//! expiry (which end as scale-downs) and interruption notices all take a node out this way; they differ
//! only in their [`Pace`]. On failure the taint (and a cordon it set) comes off again; the outcome goes
//! back to the loop as a [`Finished`] message. A removal still draining may be superseded by a faster
//! one of the same node (a notice for a node already leaving): it then stops without a word, and never
//! deletes.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::cluster::{Cluster, DrainSettings, EventKind, Evictee, Mark, Regarding};
use crate::cloud::Cloud;
use crate::engine::intents::Intent;
use crate::engine::reasons;
use crate::error::{Error, Result};
use crate::metrics::LoopMetrics;
use crate::model::lifecycle::DisruptionReason;

/// Most a pod of an interrupted node is given to terminate, and most its eviction is retried: together
/// with the API's own time they end inside the two minutes a spot warning gives.
pub const INTERRUPTION_GRACE: Duration = Duration::from_secs(45);

/// Most a DaemonSet pod's best-effort eviction waits: they are few and small, and the node goes anyway.
pub const DAEMON_SET_GRACE: Duration = Duration::from_secs(10);

/// Why a node is being taken out.
#[derive(Debug, Clone, PartialEq)]
pub enum Why {
    /// The engine's scale-down (underutilized, empty, unready, or a drifted/expired node whose
    /// replacement joined).
    ScaleDown(reasons::Removal),
    /// Its instance is going away (an interruption notice).
    Notice(DisruptionReason),
}

impl Why {
    /// Whether a failure counts as a failed scale-down (`--scale-down-delay-after-failure`).
    pub fn is_scale_down(&self) -> bool {
        matches!(self, Why::ScaleDown(_))
    }
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::ScaleDown(r) => r.fmt(f),
            Why::Notice(r) => r.fmt(f),
        }
    }
}

/// How fast and how firmly a node goes, slowest first: a removal is restarted at a faster pace, never a
/// slower one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pace {
    /// Upstream's drain: `--max-pod-eviction-time`, `--max-graceful-termination-sec`; any eviction that
    /// fails keeps the node.
    Drain,
    /// The instance is going away: the node is cordoned too, evictions are capped at
    /// [`INTERRUPTION_GRACE`]; an `involuntary` one (the cloud takes the instance anyway) is deleted even
    /// when evictions fail.
    Interruption { involuntary: bool },
}

/// A removal in flight, as the loop keeps it until its [`Finished`] message comes.
#[derive(Debug, Clone, PartialEq)]
pub struct Removing {
    /// Whether it had pods to evict (counted against `--max-drain-parallelism`).
    pub drained: bool,
    pub reason: Why,
    /// When it started (the loop's time).
    pub since: i64,
    pub pace: Pace,
}

/// How far a removal has come, as its task and the loop both see it: the loop may supersede it only
/// while it drains, and once superseded it never deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Stage {
    Draining,
    /// Its instance is being (or was) deleted.
    Deleting,
    /// Ended; its [`Finished`] message is on its way.
    Done,
    /// Replaced by a faster removal of the same node.
    Superseded,
}

/// A removal's [`Stage`], moved on by one compare-and-swap at a time, so the task and the loop never
/// both win: either the task starts deleting or the loop supersedes it, never both (no lock is held).
#[derive(Debug, Clone)]
pub struct SharedStage(Arc<std::sync::atomic::AtomicU8>);

impl Default for SharedStage {
    fn default() -> Self {
        SharedStage(Arc::new(std::sync::atomic::AtomicU8::new(
            Stage::Draining as u8,
        )))
    }
}

impl SharedStage {
    /// Moves the stage from `from` to `to`; false (and unchanged) when it was not at `from`.
    pub fn advance(&self, from: Stage, to: Stage) -> bool {
        use std::sync::atomic::Ordering::AcqRel;
        self.0
            .compare_exchange(
                from as u8,
                to as u8,
                AcqRel,
                std::sync::atomic::Ordering::Acquire,
            )
            .is_ok()
    }

    /// Whether a faster removal took over.
    pub fn superseded(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Acquire) == Stage::Superseded as u8
    }
}

/// A node to take out.
#[derive(Debug, Clone)]
pub struct Removal {
    pub node: String,
    pub uid: Option<String>,
    pub group: String,
    pub provider_id: String,
    pub pods: Vec<Evictee>,
    /// Pods (`namespace/name`) that go down with the node unevicted: expendable ones and those
    /// terminating past their grace period.
    pub left: Vec<String>,
    /// DaemonSet pods evicted after `pods`, best effort (`--daemonset-eviction-for-*`).
    pub daemon_sets: Vec<Evictee>,
    pub reason: Why,
    pub pace: Pace,
    /// Where the removal stands, as the loop sees it too.
    pub stage: SharedStage,
    /// What the node's intent says once the removal starts (marked draining before the taint).
    pub intent: Intent,
}

/// A removal's outcome, sent back to the loop.
#[derive(Debug)]
pub struct Finished {
    pub node: String,
    pub reason: Why,
    pub result: Result<()>,
    /// The deletion taint could not be taken off after a failure: the loop tries again.
    pub still_tainted: bool,
}

/// What a removal running on its own needs.
#[derive(Clone)]
pub(super) struct Remover<C: Cluster> {
    pub(super) cloud: Arc<dyn Cloud>,
    pub(super) cluster: C,
    pub(super) record: LoopMetrics,
    pub(super) drain: DrainSettings,
    pub(super) finished: mpsc::UnboundedSender<Finished>,
}

impl<C: Cluster> Remover<C> {
    /// Evicts `pods` in parallel under `settings`, each announced by a `reason` event with `note`;
    /// records each outcome and returns the first failure.
    async fn evict_all(
        &self,
        pods: &[Evictee],
        settings: &DrainSettings,
        reason: &'static str,
        note: &str,
    ) -> Option<Error> {
        let evictions = pods.iter().map(|p| {
            self.cluster.event(
                Regarding::Pod(p.clone()),
                EventKind::Normal,
                reason,
                note.to_string(),
            );
            self.cluster.evict(p, settings)
        });
        let mut failure = None;
        for outcome in futures::future::join_all(evictions).await {
            self.record.evicted(outcome.is_ok());
            if let Err(e) = outcome {
                failure.get_or_insert(e);
            }
        }
        failure
    }

    /// Takes the node out; the outcome is sent to the loop and returned.
    pub(super) async fn remove(self, r: Removal, now: i64) {
        let mut cordoned = false;
        let result = self.steps(&r, now, &mut cordoned).await;
        // Draining (failed) or deleting: done now, unless a faster removal of the node has taken over,
        // taint and all.
        if r.stage.superseded()
            || !(r.stage.advance(Stage::Draining, Stage::Done)
                || r.stage.advance(Stage::Deleting, Stage::Done))
        {
            return;
        }
        let mut still_tainted = false;
        match &result {
            Ok(()) => {
                tracing::info!(node = %r.node, group = %r.group, reason = %r.reason, "node removed");
                if let Why::ScaleDown(why) = &r.reason {
                    match why.disruption {
                        Some(d) => self.record.lifecycle.disrupted(d.as_str(), &r.group),
                        None => self.record.scaled_down(why.upstream_reason()),
                    }
                }
            }
            Err(e) if self.cluster.may_act("untainting").is_err() => {
                tracing::warn!(node = %r.node, error = %e, "removal stopped: leadership lost; the next leader removes the taint");
            }
            Err(e) => {
                tracing::warn!(node = %r.node, reason = %r.reason, error = %e, "removal failed; untainting");
                if let Err(u) = self
                    .cluster
                    .set_taint(&r.node, Mark::ToBeDeleted, false, now)
                    .await
                {
                    tracing::warn!(node = %r.node, error = %u, "could not remove the deletion taint; will retry");
                    still_tainted = true;
                }
                if cordoned {
                    if let Err(u) = self.cluster.cordon(&r.node, false).await {
                        tracing::warn!(node = %r.node, error = %u, "could not uncordon the node after a failed drain");
                    }
                }
                // Undone: the plan's intent, if it still holds, is written again by the next loop.
                if let Err(u) = self.cluster.set_intent(&r.node, None).await {
                    tracing::warn!(node = %r.node, error = %u, "could not clear the node's intent; the next loop or leader does");
                }
                if r.reason.is_scale_down() {
                    self.cluster.event(
                        Regarding::Node {
                            name: r.node.clone(),
                            uid: r.uid.clone(),
                        },
                        EventKind::Warning,
                        "ScaleDownFailed",
                        format!("failed to remove the node: {e}"),
                    );
                }
            }
        }
        // The loop may have ended (shutdown): nobody is left to tell.
        let _ = self.finished.send(Finished {
            node: r.node,
            reason: r.reason,
            result,
            still_tainted,
        });
    }

    /// Taint (and cordon: `cordoned` says whether this removal did), evict, check, delete.
    async fn steps(&self, r: &Removal, now: i64, cordoned: &mut bool) -> Result<()> {
        let (settings, event, note, involuntary) = match r.pace {
            Pace::Drain => (
                self.drain.clone(),
                "ScaleDown",
                format!("deleting pod for node scale down (node {})", r.node),
                false,
            ),
            Pace::Interruption { involuntary } => (
                self.drain.capped(INTERRUPTION_GRACE),
                "InterruptionNotice",
                format!("evicting pod: its node {} is going away", r.node),
                involuntary,
            ),
        };
        self.cluster.may_act(&format!("tainting node {}", r.node))?;
        // The intent first: a process stopped at any later step leaves what the next one undoes or
        // finishes. An interruption's drain says it cordons before it does.
        let interruption = r.pace != Pace::Drain;
        let intent = r.intent.clone().draining(interruption);
        self.cluster.set_intent(&r.node, Some(&intent)).await?;
        self.cluster
            .set_taint(&r.node, Mark::ToBeDeleted, true, now)
            .await?;
        match r.pace {
            Pace::Drain => self.cluster.event(
                Regarding::Node {
                    name: r.node.clone(),
                    uid: r.uid.clone(),
                },
                EventKind::Normal,
                "ScaleDown",
                format!("marked the node as toBeDeleted/unschedulable: {}", r.reason),
            ),
            Pace::Interruption { .. } => {
                *cordoned = self.cluster.cordon(&r.node, true).await?;
                if !*cordoned {
                    // Someone else cordoned it: not ours to undo.
                    let intent = r.intent.clone().draining(false);
                    self.cluster.set_intent(&r.node, Some(&intent)).await?;
                }
            }
        }
        match self.evict_all(&r.pods, &settings, event, &note).await {
            Some(e) if !involuntary => return Err(e),
            Some(e) => {
                tracing::warn!(node = %r.node, error = %e, "not every pod left before the instance goes; deleting it anyway")
            }
            None => {}
        }
        if !r.daemon_sets.is_empty() {
            // Last, so what they serve (networking, storage, logs) outlives the other pods; best
            // effort, as upstream: a DaemonSet pod that stays dies with the node.
            let settings = settings.capped(DAEMON_SET_GRACE);
            if let Some(e) = self
                .evict_all(&r.daemon_sets, &settings, event, &note)
                .await
            {
                tracing::info!(node = %r.node, error = %e, "a DaemonSet pod was not evicted; it stops with the node");
            }
        }
        if !involuntary {
            // A pod bound to the node after the decision (before the taint took) would be killed
            // without eviction: read the node's pods again, and stop if one is left.
            let evicted: HashSet<(String, Option<&str>)> =
                r.pods.iter().map(|p| (p.key(), p.uid.as_deref())).collect();
            let landed: Vec<String> = self
                .cluster
                .pods_on(&r.node)
                .await?
                .iter()
                .filter(|p| !evicted.contains(&(p.key(), p.uid.as_deref())))
                .map(Evictee::key)
                .filter(|k| !r.left.contains(k))
                .collect();
            if !landed.is_empty() {
                return Err(Error::PodsLanded {
                    node: r.node.clone(),
                    pods: landed,
                });
            }
        }
        self.cluster.may_act(&format!("deleting node {}", r.node))?;
        if !r.stage.advance(Stage::Draining, Stage::Deleting) {
            return Err(Error::Superseded(r.node.clone()));
        }
        let guard = self.cluster.write_guard();
        self.cloud
            .delete_nodes(&r.group, std::slice::from_ref(&r.provider_id), &guard)
            .await
    }
}
