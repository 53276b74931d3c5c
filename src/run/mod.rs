//! `ferroscale run`: the live autoscaling loop. Every `--scan-interval` it refreshes the cloud, reads the
//! cluster from its watches, lets the pure engine decide, and carries the decisions out: IncreaseSize and
//! DeleteNodes through the `Cloud`, taints and evictions through the Kubernetes API, events on pods and
//! nodes, the status ConfigMap, metrics and `/health-check`. With `--leader-elect` only the replica
//! holding the Lease acts; with `--dry-run` nothing is changed anywhere.
//! Rooms: `health` (`/health-check`), `events`, `removal` (one node's drain), `act` (decisions to API
//! calls), `report` (logs and metrics).

mod act;
mod disrupt;
mod events;
mod health;
pub mod interruptions;
mod removal;
mod report;

pub use events::EVENT_SOURCE;
pub use health::Health;
pub use interruptions::Interruptions;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use kube::Client;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::cloud::Cloud;
use crate::engine::expander::Priorities;
use crate::engine::reasons::{Doubt, Pending};
use crate::engine::status::ClusterAutoscalerStatus;
use crate::engine::{run_once, Decisions, Memory, Settings, World};
use crate::error::{Error, Result};
use crate::k8s::drain::DrainSettings;
use crate::k8s::index::{Index, Updated};
use crate::k8s::lease::{Elector, Fence, LeaseSettings};
use crate::k8s::priorities::PriorityWatch;
use crate::k8s::status;
use crate::k8s::watch::Watches;
use crate::metrics::{LoopMetrics, Metrics};

use events::Events;

/// A pod's NotTriggerScaleUp event is repeated at most this often while its reason stays the same
/// (upstream relies on client-go's event spam filter for the same effect).
const NOT_TRIGGERED_REPEAT: i64 = 300;

/// Flags of `ferroscale run` beyond the engine's.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// `--scan-interval`.
    pub scan_interval: Duration,
    /// `--dry-run`: decide and report, change nothing.
    pub dry_run: bool,
    /// `--namespace`: where the status ConfigMap and the Lease live.
    pub namespace: String,
    /// `--status-config-map-name`, or None with `--write-status-configmap=false`.
    pub status_config_map: Option<String>,
    /// The Lease, or None with `--leader-elect=false`.
    pub lease: Option<LeaseSettings>,
    pub drain: DrainSettings,
    /// `--max-inactivity`.
    pub max_inactivity: Duration,
    /// `--max-failing-time`.
    pub max_failing_time: Duration,
    /// This replica's name on events (the pod name in a cluster).
    pub instance: String,
}

/// The live loop's state.
pub struct Runner {
    cloud: Arc<dyn Cloud>,
    client: Client,
    watches: Watches,
    /// The cluster as the watches delivered it, converted (brought up to date at each loop's start).
    index: Index,
    /// What the last loop's index update did.
    last_update: Updated,
    settings: Settings,
    run: RunSettings,
    memory: Memory,
    status: Option<ClusterAutoscalerStatus>,
    events: Events,
    /// The loop's metrics.
    record: LoopMetrics,
    health: Arc<Health>,
    drains: JoinSet<Result<()>>,
    /// Nodes being removed in the background, with whether they are drained (had pods).
    in_flight: Arc<Mutex<HashMap<String, bool>>>,
    outcomes: Arc<Mutex<Vec<bool>>>,
    /// Whether this replica may still act (open without a Lease).
    fence: Fence,
    /// Nodes whose deletion taint a failed removal could not remove.
    untaint: Arc<Mutex<HashSet<String>>>,
    /// Pod → (reason, when) of its last NotTriggerScaleUp event.
    not_triggered: HashMap<String, (Pending, i64)>,
    /// The priority expander's tiers as the priority file or ConfigMap says now (re-read while running).
    priorities: Option<Arc<RwLock<Priorities>>>,
    /// The priority ConfigMap's watch, whose problems the loop reports.
    priority_config_map: Option<PriorityWatch>,
    /// `--interruption-queue`, when set.
    interruptions: Option<Interruptions>,
}

impl Runner {
    pub fn new(
        cloud: Arc<dyn Cloud>,
        client: Client,
        watches: Watches,
        settings: Settings,
        run: RunSettings,
        metrics: Arc<Metrics>,
        health: Arc<Health>,
    ) -> Self {
        let events = if run.dry_run {
            Events(None)
        } else {
            Events::start(&client, &run.instance)
        };
        Runner {
            cloud,
            client,
            watches,
            index: Index::default(),
            last_update: Updated::default(),
            settings,
            run,
            memory: Memory::default(),
            status: None,
            events,
            record: metrics
                .autoscaler
                .clone()
                .unwrap_or_else(LoopMetrics::unregistered),
            health,
            drains: JoinSet::new(),
            in_flight: Arc::default(),
            outcomes: Arc::default(),
            fence: Fence::open(),
            untaint: Arc::default(),
            not_triggered: HashMap::new(),
            priorities: None,
            priority_config_map: None,
            interruptions: None,
        }
    }

    /// Acts on the notices of an interruption queue.
    pub fn set_interruptions(&mut self, interruptions: Interruptions) {
        self.interruptions = Some(interruptions);
    }

    /// Takes the priority tiers from `tiers` before every loop (the priority file, re-read as it
    /// changes).
    pub fn with_priorities(mut self, tiers: Arc<RwLock<Priorities>>) -> Self {
        self.priorities = Some(tiers);
        self
    }

    /// Takes the priority tiers from the priority expander's ConfigMap before every loop, and reports
    /// a ConfigMap that cannot be used with a Warning event on it (upstream's `PriorityConfigMapInvalid`).
    pub fn with_priority_config_map(mut self, watch: PriorityWatch) -> Self {
        self.priorities = Some(watch.tiers());
        self.priority_config_map = Some(watch);
        self
    }

    fn observe(&self, function: &'static str, since: Instant) {
        self.record.observe(function, since.elapsed());
    }

    /// Nodes and pods in the index (pods that finished are not).
    pub fn indexed(&self) -> (usize, usize) {
        (
            self.index.nodes.items().len(),
            self.index.pods.items().len(),
        )
    }

    /// What the last loop's index update did: watch events applied, claims resolved.
    pub fn last_update(&self) -> Updated {
        self.last_update
    }

    /// The last status written (or computed, in dry-run).
    pub fn status(&self) -> Option<&ClusterAutoscalerStatus> {
        self.status.as_ref()
    }

    /// Waits for the scale-downs running in the background to finish; their results in order of
    /// completion.
    pub async fn settle(&mut self) -> Vec<Result<()>> {
        let mut out = Vec::new();
        while let Some(r) = self.drains.join_next().await {
            out.push(r.unwrap_or_else(|e| Err(Error::Unavailable(e.to_string()))));
        }
        out
    }

    /// One loop at `now` (Unix seconds): decide, then act unless in dry-run.
    pub async fn run_once(&mut self, now: i64) -> Result<Decisions> {
        let started = Instant::now();
        self.health.activity(now);
        self.record.activity("main", now);
        // Drains that finished are reaped (their outcome was recorded by the drain itself).
        while self.drains.try_join_next().is_some() {}
        self.retry_untaint().await;
        // Removals that finished since the last loop start the scale-down delays.
        for removed in std::mem::take(&mut *self.outcomes.lock().unwrap_or_else(|p| p.into_inner()))
        {
            if removed {
                self.memory.last_scale_down_delete = Some(now);
            } else {
                self.memory.last_scale_down_failure = Some(now);
            }
        }
        let t = Instant::now();
        if let Err(e) = self.cloud.refresh().await {
            self.record
                .error(crate::engine::upstream::CLOUD_PROVIDER_ERROR);
            // The status says so rather than go stale while the cloud cannot be read.
            let status = ClusterAutoscalerStatus::failed(
                self.status.as_ref(),
                now,
                &format!("cloud refresh failed: {e}"),
            );
            self.write_status(&status).await;
            self.status = Some(status);
            return Err(e);
        }
        self.observe("cloudProviderRefresh", t);

        let t = Instant::now();
        let mut index = std::mem::take(&mut self.index);
        let updated = index.update(&self.watches);
        self.last_update = updated;
        self.observe("updateClusterState", t);
        let result = self.decide_and_act(&index, now).await;
        self.index = index;
        tracing::debug!(
            took_ms = started.elapsed().as_secs_f64() * 1e3,
            changes = updated.changes,
            claims_resolved = updated.claims_resolved,
            "loop done"
        );
        self.observe("main", started);
        let decisions = result?;
        self.health.success(now);
        self.record.activity("autoscaling", now);
        Ok(decisions)
    }

    /// The loop from the index on: the engine's decisions, carried out unless in dry-run, then the
    /// status and the report.
    async fn decide_and_act(&mut self, index: &Index, now: i64) -> Result<Decisions> {
        let snapshot = self.cloud.snapshot();
        let groups: Vec<_> = snapshot.groups().cloned().collect();
        // An object that cannot be read is left out, and nothing is removed this loop: a pod left out
        // makes its node look emptier, a node left out makes its instance look unregistered.
        let mut doubts = self.watches.doubts();
        if let (count @ 1.., first) = index.unreadable() {
            doubts.push(Doubt::Unreadable {
                count,
                first: first.unwrap_or_default().to_string(),
            });
        }
        let removing = self
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let node_groups: HashMap<String, String> = index
            .nodes
            .items()
            .iter()
            .filter_map(|n| {
                snapshot
                    .group_for_provider_id(&n.provider_id)
                    .map(|g| (n.name.clone(), g.id.clone()))
            })
            .collect();
        let interrupted = match &mut self.interruptions {
            Some(i) => i.interrupted(index, &node_groups),
            None => HashMap::new(),
        };
        let world = World {
            nodes: index.nodes.items(),
            node_groups: &node_groups,
            pods: index.pods.items(),
            pdbs: index.pdbs.items(),
            daemon_pods: index.daemon_pods.items(),
            groups: &groups,
            removing: &removing,
            doubts: &doubts,
            interrupted: &interrupted,
        };

        if let Some(tiers) = &self.priorities {
            self.settings.priorities = tiers.read().unwrap_or_else(|p| p.into_inner()).clone();
        }
        for p in self
            .priority_config_map
            .iter()
            .flat_map(PriorityWatch::take_problems)
        {
            let kind = kube::runtime::events::EventType::Warning;
            self.events
                .send(p.regarding, kind, "PriorityConfigMapInvalid", p.message);
        }
        let t = Instant::now();
        let decisions = run_once(
            &world,
            &self.settings,
            &mut self.memory,
            now,
            &crate::time::MONOTONIC,
        );
        self.observe("engine", t);
        let engine_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let result = if self.run.dry_run {
            Ok(())
        } else {
            self.act(&decisions, index, now).await
        };
        if let Some(i) = &mut self.interruptions {
            if self.run.dry_run {
                // Left in the queue for a replica that acts.
                i.forget_handled();
            } else {
                i.acknowledge().await;
            }
        }
        // The status shows the groups as the loop left them.
        let groups: Vec<_> = self.cloud.snapshot().groups().cloned().collect();
        let world = World {
            groups: &groups,
            ..world
        };
        let status = ClusterAutoscalerStatus::compute(
            &world,
            &decisions,
            &self.memory,
            &self.settings,
            now,
            self.status.as_ref(),
        );
        self.report(&decisions, &status, &world, now);
        let status_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        self.write_status(&status).await;
        self.status = Some(status);
        tracing::debug!(
            engine_ms,
            act_and_status_ms = status_ms,
            write_status_ms = t.elapsed().as_secs_f64() * 1e3,
            "loop phases"
        );
        result.map(|()| decisions)
    }

    /// Writes the status ConfigMap (not in dry-run, not after leadership was lost); a failure is logged.
    async fn write_status(&self, status: &ClusterAutoscalerStatus) {
        let (false, Some(name)) = (self.run.dry_run, &self.run.status_config_map) else {
            return;
        };
        let written = match self.fence.check("writing the status") {
            Ok(()) => status::write(&self.client, &self.run.namespace, name, status).await,
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, "status ConfigMap not written");
        }
    }

    /// Runs loops every `--scan-interval` until `shutdown` completes. With a Lease, loops run only while
    /// this replica leads; losing the lease ends the run with an error (the process restarts as a
    /// follower, as upstream's does).
    pub async fn run(mut self, shutdown: impl std::future::Future<Output = ()>) -> Result<()> {
        let (leading_tx, mut leading) = watch::channel(self.run.lease.is_none());
        if self.run.lease.is_some() {
            self.fence = Fence::following(leading.clone());
        }
        let elector = self
            .run
            .lease
            .clone()
            .map(|s| Arc::new(Elector::new(self.client.clone(), s)));
        let mut campaign = JoinSet::new();
        if let Some(e) = elector.clone() {
            campaign.spawn(async move { e.lead(leading_tx).await });
        } else {
            self.health.start(crate::time::unix_now());
            self.clean_stale_taints().await;
        }
        let mut tick = tokio::time::interval(self.run.scan_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut shutdown = std::pin::pin!(shutdown);
        let mut was_leading = *leading.borrow();
        let outcome = loop {
            tokio::select! {
                _ = &mut shutdown => break Ok(()),
                Some(done) = campaign.join_next() => {
                    break done.unwrap_or_else(|e| Err(Error::Unavailable(e.to_string())));
                }
                _ = leading.changed() => {
                    if !*leading.borrow() {
                        // Lost: drains stop now (each also checks before its next call).
                        self.drains.abort_all();
                    }
                }
                _ = tick.tick() => {
                    let is_leading = *leading.borrow();
                    if is_leading && !was_leading {
                        self.health.start(crate::time::unix_now());
                        self.clean_stale_taints().await;
                    }
                    was_leading = is_leading;
                    if !is_leading {
                        continue;
                    }
                    if let Err(e) = self.run_once(crate::time::unix_now()).await {
                        tracing::warn!(error = %e, "loop failed");
                    }
                }
            }
        };
        campaign.abort_all();
        self.drains.abort_all();
        // Leaving while leading gives the Lease up at once; a replica that lost it writes nothing more.
        if let (Some(e), true) = (elector, outcome.is_ok() && *leading.borrow()) {
            let bound = self
                .run
                .lease
                .as_ref()
                .map_or(Duration::from_secs(1), |l| l.renew_deadline);
            if tokio::time::timeout(bound, e.release()).await.is_err() {
                tracing::warn!("the Lease was not released in time; it expires by itself");
            }
        }
        outcome
    }
}
