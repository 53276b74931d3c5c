//! `ferroscale run`: the live autoscaling loop. Every `--scan-interval` it runs four stages:
//! *observe* (`observe`: the cloud refreshed, the watch-fed index, doubts, priorities, interruption
//! notices), *decide* (`decide`: the pure engine, its settings and memory), *act* (the [`Actuator`] shared with `simulate`, here on the
//! live Kubernetes API) and *publish* (`publish`, `report`: the status ConfigMap, events, metrics,
//! logs). With `--leader-elect` only the replica holding the Lease acts; with `--dry-run` nothing is
//! changed anywhere. Also here: `health` (`/health-check`) and `interruptions` (the SQS poller).

mod decide;
mod health;
mod intents;
pub mod interruptions;
mod observe;
mod publish;
mod report;

pub use crate::k8s::events::EVENT_SOURCE;
pub use health::Health;
pub use interruptions::{Interruptions, Notices};
pub use observe::Observed;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Client;
use parking_lot::RwLock;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::actuator::Actuator;
use crate::cloud::Cloud;
use crate::descheduler::{Descheduler, DeschedulerSettings};
use crate::engine::expander::Priorities;
use crate::engine::status::ClusterAutoscalerStatus;
use crate::engine::{Decisions, Memory, Settings};
use crate::error::{Error, Result};
use crate::k8s::cluster::LiveCluster;
use crate::k8s::drain::DrainSettings;
use crate::k8s::events::Events;
use crate::k8s::index::Updated;
use crate::k8s::lease::{Elector, Fence, LeaseSettings, Term};
use crate::k8s::priorities::PriorityWatch;
use crate::k8s::watch::Watches;
use crate::metrics::{DeschedulerMetrics, LoopMetrics, Metrics};

use decide::Decider;
use observe::Observer;
use publish::Publisher;

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
    /// `--deschedule-policy` and its settings, when given.
    pub deschedule: Option<DeschedulerSettings>,
}

/// The live loop: its four stages and the engine's settings and memory between them.
pub struct Runner {
    observer: Observer,
    decider: Decider,
    actuator: Actuator<LiveCluster>,
    publisher: Publisher,
    run: RunSettings,
    client: Client,
    health: Arc<Health>,
    /// The descheduler, with `--deschedule-policy`.
    descheduler: Option<Descheduler>,
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
            Events::none()
        } else {
            Events::start(&client, &run.instance)
        };
        let record = metrics
            .autoscaler
            .clone()
            .unwrap_or_else(LoopMetrics::unregistered);
        let cluster = LiveCluster::new(client.clone(), events.clone(), Fence::open());
        let descheduler = run.deschedule.clone().map(|s| {
            let record = metrics
                .descheduler
                .clone()
                .unwrap_or_else(DeschedulerMetrics::unregistered);
            // The actuator's cluster side: the same client, Events and (once set) Lease fence.
            let mut d = Descheduler::with_cluster(s, cluster.clone(), record);
            d.hand_emptied_to_scale_down();
            d.in_background();
            d
        });
        Runner {
            descheduler,
            observer: Observer::new(cloud.clone(), watches, record.clone()),
            decider: Decider::new(settings, record.clone()),
            actuator: Actuator::new(cloud, cluster, record.clone(), run.drain.clone(), true),
            publisher: Publisher::new(client.clone(), events, record, &run),
            run,
            client,
            health,
        }
    }

    /// Acts on the notices of an interruption queue (or any other source of notices).
    pub fn set_interruptions(&mut self, notices: impl Notices + 'static) {
        self.observer.interruptions = Some(Box::new(notices));
    }

    /// Takes the priority tiers from `tiers` before every loop (the priority file, re-read as it
    /// changes).
    pub fn with_priorities(mut self, tiers: Arc<RwLock<Priorities>>) -> Self {
        self.observer.priorities = Some(tiers);
        self
    }

    /// Takes the priority tiers from the priority expander's ConfigMap before every loop, and reports
    /// a ConfigMap that cannot be used with a Warning event on it (upstream's `PriorityConfigMapInvalid`).
    pub fn with_priority_config_map(mut self, watch: PriorityWatch) -> Self {
        self.observer.priorities = Some(watch.tiers());
        self.observer.priority_config_map = Some(watch);
        self
    }

    /// Nodes and pods in the index (pods that finished are not).
    pub fn indexed(&self) -> (usize, usize) {
        let index = &self.observer.index;
        (index.nodes.items().len(), index.pods.items().len())
    }

    /// What the last loop's index update did: watch events applied, claims resolved.
    pub fn last_update(&self) -> Updated {
        self.observer.last_update
    }

    /// The last status written (or computed, in dry-run).
    pub fn status(&self) -> Option<&ClusterAutoscalerStatus> {
        self.publisher.status.as_ref()
    }

    /// What the engine remembers between loops.
    pub fn memory(&self) -> &Memory {
        &self.decider.memory
    }

    /// Waits for the removals and descheduling evictions running in the background to finish; the
    /// removals' results in order of completion (all booked by the next loop).
    pub async fn settle(&mut self) -> Vec<std::result::Result<(), String>> {
        if let Some(d) = self.descheduler.as_mut() {
            d.settle().await;
        }
        self.actuator.settle().await
    }

    /// One loop at `now` (Unix seconds on the loop's clock, `time::loop_now`, which never steps: every
    /// delay is a difference of these): observe, decide, act (unless in dry-run), publish.
    pub async fn run_once(&mut self, now: i64) -> Result<Decisions> {
        let started = Instant::now();
        self.health.activity(now);
        self.publisher.record.activity("main", now);
        self.actuator.book(&mut self.decider.memory, now);
        self.actuator.retry_untaint().await;
        let result = self.stages(now).await;
        tracing::debug!(
            took_ms = started.elapsed().as_secs_f64() * 1e3,
            changes = self.observer.last_update.changes,
            claims_resolved = self.observer.last_update.claims_resolved,
            "loop done"
        );
        self.publisher.record.observe("main", started.elapsed());
        let decisions = result?;
        self.health.success(now);
        self.publisher.record.activity("autoscaling", now);
        Ok(decisions)
    }

    /// The four stages.
    async fn stages(&mut self, now: i64) -> Result<Decisions> {
        let mut observed = match self.observer.observe(now).await {
            Ok(o) => o,
            Err(e) => {
                self.publisher.refresh_failed(&e, now).await;
                return Err(e);
            }
        };
        let removing = self.actuator.in_flight();
        if let Some(desched) = &self.descheduler {
            self.decider.memory.descheduled = desched.recently_moved(now);
        }
        let index = &self.observer.index;
        let decisions = self.decider.decide(&observed, index, &removing, now);
        let failed = self.act(&decisions, now).await;
        self.publish(&mut observed, &removing, &decisions, now)
            .await;
        self.deschedule(&observed, &decisions, now).await;
        failed.map_or(Ok(decisions), Err)
    }

    /// A descheduling cycle when one is due, after the loop acted: not while what was read cannot be
    /// trusted, nor while the last cycle's evictions still run (they are background work: the cycle
    /// waits for a later loop). Nothing is planned onto the nodes being removed (those this loop started
    /// included), being emptied, whose instance is going away, or that the decisions name as no
    /// destination (`not_destinations`); the plan spends only what the loop's other methods left of the
    /// budgets (`pdbs_left`; the index's budgets when the engine left none, as it lists every budget
    /// once it counts them). The nodes the plan empties go to scale-down.
    async fn deschedule(&mut self, observed: &Observed, d: &Decisions, now: i64) {
        let Some(desched) = self.descheduler.as_mut().filter(|x| x.due(now)) else {
            return;
        };
        if let Some(doubt) = observed.doubts.first() {
            tracing::info!(%doubt, "no descheduling while the cluster's state cannot be trusted");
            return;
        }
        if desched.busy() {
            tracing::info!("the last descheduling cycle's evictions still run: the next cycle waits for a later loop");
            return;
        }
        let removing: HashSet<String> = self
            .actuator
            .in_flight()
            .into_keys()
            .chain(observed.interrupted.keys().cloned())
            .chain(self.decider.memory.emptying.keys().cloned())
            .chain(d.not_destinations.iter().cloned())
            .collect();
        let index = &self.observer.index;
        let pdbs = if d.pdbs_left.is_empty() {
            index.pdbs.items()
        } else {
            &d.pdbs_left
        };
        let cycle = desched.cycle_counting(index, &removing, pdbs, now).await;
        self.decider.memory.set_emptying(&cycle.emptying, now);
        if !cycle.emptying.is_empty() && !self.run.dry_run {
            // The emptied nodes' intents now: a restart before the next loop keeps them.
            let wanted = crate::engine::intents::desired(&self.decider.memory);
            self.actuator.write_these(&wanted, index).await;
        }
    }

    /// The decisions carried out (not in dry-run), and the notices acted on acknowledged; the first
    /// failed scale-up.
    async fn act(&mut self, d: &Decisions, now: i64) -> Option<Error> {
        if self.run.dry_run {
            self.observer.acknowledge(true).await;
            return None;
        }
        let index = &self.observer.index;
        self.actuator
            .set_soft_taint_time(self.decider.settings.max_bulk_soft_taint_time);
        let memory = &mut self.decider.memory;
        let acted = self.actuator.act(d, index, memory, now).await;
        // The pods the removals evict are moved: the descheduler leaves their workloads alone for
        // its cooldown.
        if let Some(desched) = self.descheduler.as_mut() {
            let moved = acted
                .evicting
                .iter()
                .filter_map(|e| Some((&**index.pods.get(&e.key())?.0, e.node.as_deref()?)));
            desched.remember_moved(moved, now);
        }
        self.observer.acknowledge(false).await;
        acted.error
    }

    /// Status, events, metrics and logs, with the groups as the loop left them.
    async fn publish(
        &mut self,
        observed: &mut Observed,
        removing: &HashMap<String, bool>,
        d: &Decisions,
        now: i64,
    ) {
        let problems = std::mem::take(&mut observed.priority_problems);
        let groups = self.observer.groups();
        let index = &self.observer.index;
        let world = crate::engine::World {
            groups: &groups,
            ..observed.world(index, removing)
        };
        let (memory, settings) = (&self.decider.memory, &self.decider.settings);
        self.publisher
            .publish(problems, &world, index, d, memory, settings, now)
            .await;
    }

    /// Runs loops every `--scan-interval` until `shutdown` completes. With a Lease, loops run only while
    /// this replica leads; losing the lease ends the run with an error (the process restarts as a
    /// follower, as upstream's does).
    pub async fn run(mut self, shutdown: impl std::future::Future<Output = ()>) -> Result<()> {
        let first = if self.run.lease.is_none() {
            Term::Unbounded
        } else {
            Term::Over
        };
        let (leading_tx, mut leading) = watch::channel(first);
        if self.run.lease.is_some() {
            let fence = Fence::following(leading.clone());
            self.actuator.cluster_mut().set_fence(fence.clone());
            if let Some(d) = self.descheduler.as_mut() {
                d.set_fence(fence.clone());
            }
            self.publisher.fence = fence;
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
            self.health.start(crate::time::loop_now());
            self.start_acting(crate::time::loop_now()).await;
        }
        let mut tick = tokio::time::interval(self.run.scan_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut shutdown = std::pin::pin!(shutdown);
        let mut was_leading = leading.borrow().leads();
        let outcome = loop {
            tokio::select! {
                _ = &mut shutdown => break Ok(()),
                Some(done) = campaign.join_next() => {
                    break done.unwrap_or_else(|e| Err(Error::task("the leader election", e)));
                }
                _ = leading.changed() => {
                    if !leading.borrow().leads() {
                        // Lost: drains and evictions stop now (each also checks before its next call).
                        self.actuator.abort();
                        if let Some(d) = self.descheduler.as_mut() {
                            d.abort();
                        }
                    }
                }
                _ = tick.tick() => {
                    let is_leading = leading.borrow().leads();
                    if is_leading && !was_leading {
                        self.health.start(crate::time::loop_now());
                        self.start_acting(crate::time::loop_now()).await;
                    }
                    was_leading = is_leading;
                    if !is_leading {
                        continue;
                    }
                    if let Err(e) = self.run_once(crate::time::loop_now()).await {
                        tracing::warn!(error = %e, "loop failed");
                    }
                }
            }
        };
        campaign.abort_all();
        self.actuator.abort();
        if let Some(d) = self.descheduler.as_mut() {
            d.abort();
        }
        // Leaving while leading gives the Lease up at once; a replica that lost it writes nothing more.
        if let (Some(e), true) = (elector, outcome.is_ok() && leading.borrow().leads()) {
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
