//! `ferroscale run`: the live autoscaling loop. Every `--scan-interval` it refreshes the cloud, reads the
//! cluster from its watches, lets the pure engine decide, and carries the decisions out: IncreaseSize and
//! DeleteNodes through the `Cloud`, taints and evictions through the Kubernetes API, events on pods and
//! nodes, the status ConfigMap, metrics and `/health-check`. With `--leader-elect` only the replica
//! holding the Lease acts; with `--dry-run` nothing is changed anywhere.
//! Rooms: `health` (`/health-check`), `events`, `removal` (one node's drain), `act` (decisions to API
//! calls), `report` (logs and metrics).

mod act;
mod events;
mod health;
mod removal;
mod report;

pub use events::EVENT_SOURCE;
pub use health::Health;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use kube::Client;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::cloud::Cloud;
use crate::engine::expander::Priorities;
use crate::engine::reasons::{Doubt, Pending};
use crate::engine::{run_once, Decisions, Memory, Settings, World};
use crate::error::{Error, Result};
use crate::k8s::drain::DrainSettings;
use crate::k8s::lease::{Elector, Fence, LeaseSettings};
use crate::k8s::objects::Inputs;
use crate::k8s::priorities::PriorityWatch;
use crate::k8s::status::{self, Status};
use crate::k8s::volumes::Storage;
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
    settings: Settings,
    run: RunSettings,
    memory: Memory,
    status: Option<Status>,
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
        }
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

    /// The last status written (or computed, in dry-run).
    pub fn status(&self) -> Option<&Status> {
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
            self.record.error("cloudProviderError");
            // The status says so rather than go stale while the cloud cannot be read.
            let status = Status::failed(
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
        let snapshot = self.cloud.snapshot();
        let groups: Vec<_> = snapshot.groups().cloned().collect();
        let (nodes, pods) = (self.watches.nodes.state(), self.watches.pods.state());
        let (pdbs, daemonsets) = (self.watches.pdbs.state(), self.watches.daemonsets.state());
        let (claims, volumes) = (self.watches.claims.state(), self.watches.volumes.state());
        let (classes, csinodes) = (self.watches.classes.state(), self.watches.csinodes.state());
        let storage = Storage::new(
            claims.iter().map(AsRef::as_ref),
            volumes.iter().map(AsRef::as_ref),
            classes.iter().map(AsRef::as_ref),
            csinodes.iter().map(AsRef::as_ref),
        );
        // An object that cannot be read is left out, and nothing is removed this loop: a pod left out
        // makes its node look emptier, a node left out makes its instance look unregistered.
        let mut unreadable: (usize, String) = (0, String::new());
        let mut inputs = Inputs::convert(
            nodes.iter().map(AsRef::as_ref),
            pods.iter().map(AsRef::as_ref),
            pdbs.iter().map(AsRef::as_ref),
            daemonsets.iter().map(AsRef::as_ref),
            &storage,
            |e| {
                tracing::warn!(error = %e, "object left out of the loop; no scale-down");
                if unreadable.0 == 0 {
                    unreadable.1 = e.to_string();
                }
                unreadable.0 += 1;
                Ok(())
            },
        )?;
        if let Some((rs, rc)) = &self.watches.owners {
            let (rs, rc) = (rs.state(), rc.state());
            crate::k8s::owners::set_owner_replicas(
                &mut inputs.pods,
                rs.iter().map(AsRef::as_ref),
                rc.iter().map(AsRef::as_ref),
            );
        }
        let mut doubts = self.watches.doubts();
        if unreadable.0 > 0 {
            doubts.push(Doubt::Unreadable {
                count: unreadable.0,
                first: unreadable.1,
            });
        }
        let removing = self
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let node_groups: HashMap<String, String> = inputs
            .nodes
            .iter()
            .filter_map(|n| {
                snapshot
                    .group_for_provider_id(&n.provider_id)
                    .map(|g| (n.name.clone(), g.id.clone()))
            })
            .collect();
        let world = World {
            nodes: &inputs.nodes,
            node_groups: &node_groups,
            pods: &inputs.pods,
            pdbs: &inputs.pdbs,
            daemon_pods: &inputs.daemon_pods,
            groups: &groups,
            removing: &removing,
            doubts: &doubts,
        };
        self.observe("updateClusterState", t);

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
        let result = if self.run.dry_run {
            Ok(())
        } else {
            self.act(&decisions, &pods, &nodes, now).await
        };
        // The status shows the groups as the loop left them.
        let groups: Vec<_> = self.cloud.snapshot().groups().cloned().collect();
        let world = World {
            groups: &groups,
            ..world
        };
        let status = Status::build(
            &world,
            &decisions,
            &self.memory,
            &self.settings,
            now,
            self.status.as_ref(),
        );
        self.report(&decisions, &status, groups.len());
        self.write_status(&status).await;
        self.status = Some(status);
        self.observe("main", started);
        result?;
        self.health.success(now);
        self.record.activity("autoscaling", now);
        Ok(decisions)
    }

    /// Writes the status ConfigMap (not in dry-run, not after leadership was lost); a failure is logged.
    async fn write_status(&self, status: &Status) {
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
