//! The descheduler, one for `run --deschedule-policy`, `ferroscale deschedule` and `simulate
//! --deschedule-policy`: one cycle ([`Descheduler::deschedule`]) reads what it is shown ([`Seen`]: nodes,
//! live pods, failed pods still bound, the PodDisruptionBudgets it may spend, the nodes nothing is planned
//! onto), has the core plan it (`ferroscale_core::deschedule::plan`), logs and reports (`declined`) each
//! declined proposal with why, and evicts what the plan keeps through the actuator's [`Cluster`]
//! ([`Cluster::evict_once`]: the live eviction API, the pod's UID as a precondition, or the simulated
//! cluster, which answers as the API does): one request per pod and cycle, a 429 from a
//! PodDisruptionBudget leaves the pod for a later cycle. At most [`EVICTIONS_PER_CYCLE`] evictions are
//! asked for per cycle (the rest wait for a later cycle's plan). Each eviction gets an Event naming the
//! strategy and the node the simulation placed the pod on, and the descheduler's metrics
//! (`metrics::DeschedulerMetrics`). The moves made are remembered ([`History`]) for the cooldown, and so
//! are the pods the actuator's removals evict ([`Descheduler::remember_moved`]): no workload any method
//! moved is moved again within `--deschedule-cooldown`.
//!
//! In `run` ([`Descheduler::in_background`]) a cycle's evictions are background work, off the loop's
//! path: one task per cycle, its outcomes booked when the next cycle starts ([`Descheduler::book`]); no
//! cycle starts while the last one's evictions run. `ferroscale deschedule` and `simulate` carry them out
//! within the cycle. In `run` and `simulate` ([`Descheduler::hand_emptied_to_scale_down`]) the nodes
//! `HighNodeUtilization` empties are not evicted pod by pod: they are handed to scale-down
//! ([`Cycle::emptying`]), which taints, drains and deletes them; `ferroscale deschedule` evicts them and
//! leaves the empty node to cluster-autoscaler. The live parts (the Kubernetes API's client, the
//! watch-fed index) are in [`live`].

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::actuator::{Attempt, Cluster, EventKind, Evictee, Regarding};
use crate::deschedule::view::removing_nodes;
use crate::deschedule::Cluster as Objects;
use crate::deschedule::{
    owner_key, plan, Declined, Eviction, History, Plan, Policy, Settings, Why,
};
use crate::error::{Error, Result};
use crate::k8s::cluster::LiveCluster;
use crate::metrics::{DeschedulerMetrics, EvictedLabels, StrategyLabels};
use crate::model::workload::{Node, Pdb, Pod};

pub mod declined;
mod known;
pub mod live;
pub mod standalone;
mod usage;

/// Most evictions one cycle asks for; the plan's others wait for a later cycle.
pub const EVICTIONS_PER_CYCLE: usize = 100;

/// What the descheduler runs with: the policy read at start, how often, and the planner's settings.
#[derive(Debug, Clone)]
pub struct DeschedulerSettings {
    pub policy: Arc<Policy>,
    /// Time between cycles.
    pub interval: Duration,
    /// The planner's settings (`--deschedule-cooldown`).
    pub plan: Settings,
    /// Plan and report, evict nothing.
    pub dry_run: bool,
}

/// Reads a policy file; an error names the flag, the file and, through the parser, the field. What
/// the policy sets that has no effect is logged as a warning.
pub fn read_policy(path: &Path, flag: &str) -> Result<Policy> {
    let at = |e: &dyn std::fmt::Display| Error::config(format!("{flag} {}: {e}", path.display()));
    let text = crate::input::read_file(path, &crate::bounds::POLICY, flag)?;
    let (policy, warnings) = Policy::parse(&text).map_err(|e| at(&e))?;
    for w in &warnings {
        tracing::warn!(warning = %w, file = %path.display(), "{flag}: has no effect");
    }
    Ok(policy)
}

/// Who a planned pod is, to the cluster that evicts it: its UID (the eviction's precondition), grace
/// period and node. The live index knows the UIDs; the simulated cluster its incarnations.
pub trait Identify: Sync {
    fn evictee(&self, pod: &Pod) -> Evictee;
}

/// What one cycle reads.
pub struct Seen<'a> {
    pub nodes: &'a [Node],
    /// Every live pod, bound or pending.
    pub pods: &'a [Arc<Pod>],
    /// Pods in phase `Failed` still bound to their node.
    pub failed: &'a [Arc<Pod>],
    /// The PodDisruptionBudgets the plan counts down: in `run` and `simulate` the loop's
    /// `Decisions::pdbs_left` (what its other methods left), else the cluster's.
    pub pdbs: &'a [Pdb],
    /// Nodes nothing is planned onto: the removals in flight, the nodes whose instance is going away or
    /// that scale-down empties, the loop's `Decisions::not_destinations` (besides the nodes carrying a
    /// deletion taint, which the plan finds itself).
    pub removing: &'a HashSet<String>,
    pub ids: &'a dyn Identify,
}

/// What one cycle did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cycle {
    /// Pods the eviction API accepted (in dry-run: that would have been asked for).
    pub evicted: Vec<String>,
    /// Pods a PodDisruptionBudget kept (429): left for a later cycle.
    pub refused: Vec<String>,
    /// Pods whose eviction failed otherwise.
    pub failed: Vec<String>,
    /// Pods gone before their eviction (or replaced by another incarnation).
    pub gone: Vec<String>,
    /// Pods whose eviction was started in the background (`run`): their outcome is in the next
    /// cycle's lists.
    pub started: Vec<String>,
    /// Evictions the plan kept past [`EVICTIONS_PER_CYCLE`], left for a later cycle.
    pub deferred: usize,
    /// Proposals the plan declined.
    pub declined: usize,
    /// Nodes the plan empties, handed to scale-down instead of evicted (`run`, `simulate`).
    pub emptying: Vec<String>,
}

/// How one eviction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Evicted,
    /// Dry-run: it would have been asked for.
    Would,
    Gone,
    Refused,
    Failed,
}

/// One eviction's outcome, sent back by the batch that asked for it.
struct Done {
    eviction: Eviction,
    key: String,
    outcome: Outcome,
    /// When its cycle ran.
    at: i64,
}

/// The descheduler between cycles: its settings, the moves remembered, the cluster it evicts through,
/// where it reports.
pub struct Descheduler<C: Cluster = LiveCluster> {
    pub settings: DeschedulerSettings,
    history: History,
    cluster: C,
    metrics: DeschedulerMetrics,
    /// When the last cycle ran, on the loop's clock.
    last: Option<i64>,
    /// The PriorityClasses and Namespaces the policy's evictors read (`live`, `known`).
    known: known::Known,
    /// The declined proposals last reported (their Events are not repeated while nothing changes).
    declined: declined::Reported,
    /// Whether the nodes the plan empties are left to scale-down's removal (`run`, `simulate`).
    hands_over_emptied: bool,
    /// Each cycle's evictions as a task (`run`); None: carried out within the cycle.
    background: Option<JoinSet<()>>,
    outcomes: mpsc::UnboundedSender<Done>,
    received: mpsc::UnboundedReceiver<Done>,
}

impl<C: Cluster> Descheduler<C> {
    /// A descheduler evicting through `cluster`.
    pub fn with_cluster(
        settings: DeschedulerSettings,
        cluster: C,
        metrics: DeschedulerMetrics,
    ) -> Self {
        let (outcomes, received) = mpsc::unbounded_channel();
        Descheduler {
            settings,
            history: History::default(),
            cluster,
            metrics,
            last: None,
            known: known::Known::default(),
            declined: declined::Reported::default(),
            hands_over_emptied: false,
            background: None,
            outcomes,
            received,
        }
    }

    /// Leaves the nodes a plan empties to the engine's scale-down (`Memory::emptying`) rather than
    /// evicting their pods: the drain evicts them once the node is tainted, so none lands back.
    pub fn hand_emptied_to_scale_down(&mut self) {
        self.hands_over_emptied = true;
    }

    /// Runs each cycle's evictions as a task (a tokio runtime needed), booked by the next cycle.
    pub fn in_background(&mut self) {
        self.background = Some(JoinSet::new());
    }

    /// The cluster it evicts through.
    pub fn cluster(&self) -> &C {
        &self.cluster
    }

    /// Whether a cycle is due at `now` (the first one is due at once).
    pub fn due(&self, now: i64) -> bool {
        let interval = crate::model::secs(self.settings.interval);
        self.last.is_none_or(|l| now - l >= interval)
    }

    /// Whether the last cycle's evictions still run in the background.
    pub fn busy(&mut self) -> bool {
        self.background.as_mut().is_some_and(|tasks| {
            while tasks.try_join_next().is_some() {}
            !tasks.is_empty()
        })
    }

    /// Waits for the evictions running in the background (booked by the next cycle).
    pub async fn settle(&mut self) {
        if let Some(tasks) = &mut self.background {
            while tasks.join_next().await.is_some() {}
        }
    }

    /// Stops the evictions running in the background (leadership lost, shutdown).
    pub fn abort(&mut self) {
        if let Some(tasks) = &mut self.background {
            tasks.abort_all();
        }
    }

    /// One cycle at `now` on what `seen` shows: plan, then evict what the plan keeps (nothing in
    /// dry-run). Returns what it did and the plan (without the evictions handed to scale-down).
    pub async fn deschedule(&mut self, seen: &Seen<'_>, now: i64) -> (Cycle, Plan) {
        let started = Instant::now();
        self.last = Some(now);
        let booked = self.book(now);
        let planned = self.plan(seen, now);
        let mut out = self.carry_out(seen.ids, &planned, now).await;
        out.evicted.splice(0..0, booked.evicted);
        out.refused.splice(0..0, booked.refused);
        out.failed.splice(0..0, booked.failed);
        out.gone.splice(0..0, booked.gone);
        if self.hands_over_emptied {
            out.emptying = planned.emptied.clone();
        }
        self.metrics.cycle_done(started.elapsed());
        tracing::info!(
            evicted = out.evicted.len(),
            refused = out.refused.len(),
            failed = out.failed.len(),
            started = out.started.len(),
            deferred = out.deferred,
            declined = out.declined,
            dry_run = self.settings.dry_run,
            took_ms = started.elapsed().as_secs_f64() * 1e3,
            "descheduling cycle done"
        );
        (out, planned)
    }

    /// Plans one cycle at `now`; the evictions of the nodes it empties are handed to scale-down when
    /// it takes them (and left out of the plan returned).
    pub fn plan(&mut self, seen: &Seen<'_>, now: i64) -> Plan {
        // With the nodes another autoscaler (upstream cluster-autoscaler beside `ferroscale
        // deschedule`) removes: they carry its deletion taint.
        let removing = removing_nodes(seen.nodes, seen.removing);
        self.history.settle(seen.nodes, now);
        let cluster = Objects {
            nodes: seen.nodes,
            pods: seen.pods,
            failed: seen.failed,
            pdbs: seen.pdbs,
            removing: &removing,
            priority_classes: &self.known.priority_classes,
            namespaces: self.known.namespaces.as_ref(),
            usage: self.known.usage.as_ref(),
            now,
        };
        let mut planned = plan(
            &self.settings.policy,
            &cluster,
            &self.history,
            &self.settings.plan,
            &crate::time::MONOTONIC,
        );
        declined::log_skipped(&planned);
        for r in &planned.durations {
            self.metrics.strategy_done(
                StrategyLabels {
                    strategy: r.strategy.name(),
                    profile: r.profile.clone(),
                },
                r.seconds,
            );
        }
        if self.hands_over_emptied {
            let handed = planned.hand_over_emptied();
            if !planned.emptied.is_empty() {
                tracing::info!(nodes = ?planned.emptied, pods = handed.len(), "emptied nodes handed to scale-down: tainted, drained and deleted when the rules allow");
            }
            self.history.hand_over(handed);
        }
        planned
    }

    /// Carries out a plan made at `now`: each declined proposal logged with why and reported
    /// (`declined`), each eviction (the first [`EVICTIONS_PER_CYCLE`]) asked of the cluster once
    /// (nothing in dry-run), with its Event and metric. Within the cycle, the moves made are remembered
    /// for the cooldown at once; in the background, when the next cycle books them.
    pub async fn carry_out(&mut self, ids: &dyn Identify, planned: &Plan, now: i64) -> Cycle {
        for d in &planned.declined {
            log_declined(d);
        }
        self.declined
            .report(&planned.declined, ids, &self.cluster, &self.metrics);
        let batch: Vec<(Eviction, Evictee)> = planned
            .evictions
            .iter()
            .take(EVICTIONS_PER_CYCLE)
            .map(|e| (e.clone(), ids.evictee(&e.pod)))
            .collect();
        let deferred = planned.evictions.len() - batch.len();
        if deferred > 0 {
            tracing::info!(
                deferred,
                "more evictions planned than one cycle asks for; the rest wait for a later cycle"
            );
        }
        let keys: Vec<String> = batch.iter().map(|(_, p)| p.key()).collect();
        let job = evict_batch(
            self.cluster.clone(),
            self.metrics.clone(),
            self.settings.dry_run,
            self.settings.policy.grace_period_seconds,
            batch,
            now,
            self.outcomes.clone(),
        );
        let mut out = match &mut self.background {
            Some(_) if keys.is_empty() => Cycle::default(),
            Some(tasks) => {
                tasks.spawn(job);
                Cycle {
                    started: keys,
                    ..Cycle::default()
                }
            }
            None => {
                job.await;
                self.book(now)
            }
        };
        out.deferred = deferred;
        out.declined = planned.declined.len();
        out
    }

    /// Books the evictions that ended since the last call: the moves made are remembered for the
    /// cooldown (as of the cycle that planned them); moves older than the cooldown are forgotten.
    pub fn book(&mut self, now: i64) -> Cycle {
        let mut out = Cycle::default();
        while let Ok(d) = self.received.try_recv() {
            let list = match d.outcome {
                Outcome::Evicted => {
                    self.history.record(
                        &Plan {
                            evictions: vec![d.eviction],
                            ..Plan::default()
                        },
                        d.at,
                    );
                    &mut out.evicted
                }
                Outcome::Would => &mut out.evicted,
                Outcome::Gone => &mut out.gone,
                Outcome::Refused => &mut out.refused,
                Outcome::Failed => &mut out.failed,
            };
            list.push(d.key);
        }
        self.history
            .forget_before(now, self.settings.plan.cooldown_secs.max(0));
        out
    }

    /// Remembers the pods another method moved at `now` (the actuator's removals: scale-down,
    /// consolidation, replacement, notices), each with the node it left, so the cooldown keeps the
    /// descheduler from moving their workloads again.
    pub fn remember_moved<'a>(
        &mut self,
        moved: impl IntoIterator<Item = (&'a Pod, &'a str)>,
        now: i64,
    ) {
        for (pod, from) in moved {
            self.history.record_disruption(owner_key(pod), from, now);
        }
    }

    /// The moves remembered for the cooldown.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The workloads a strategy moved within `--deschedule-cooldown` before `now`: what the loop's
    /// other methods do not move again meanwhile (`Memory::descheduled`).
    pub fn recently_moved(&self, now: i64) -> std::collections::HashSet<String> {
        self.history
            .moved_within(now, self.settings.plan.cooldown_secs.max(0))
    }
}

/// Asks for a cycle's evictions one after the other, each once, while this replica may act; each
/// outcome logged, counted, announced by an Event when the pod was evicted, and sent back.
async fn evict_batch<C: Cluster>(
    cluster: C,
    metrics: DeschedulerMetrics,
    dry_run: bool,
    policy_grace: Option<u64>,
    batch: Vec<(Eviction, Evictee)>,
    at: i64,
    outcomes: mpsc::UnboundedSender<Done>,
) {
    for (e, pod) in batch {
        let key = pod.key();
        if !dry_run && cluster.may_act("a descheduling eviction").is_err() {
            tracing::info!("not the leader any more: the cycle's other evictions are left");
            break;
        }
        let labels = EvictedLabels {
            result: "",
            strategy: e.strategy.name(),
            profile: e.profile.clone(),
            namespace: e.pod.namespace.to_string(),
            node: e.node.clone(),
        };
        let (strategy, node, to) = (e.strategy.name(), e.node.as_str(), e.to.as_str());
        let outcome = if dry_run {
            tracing::info!(pod = key, node, strategy, to, "would evict (dry-run)");
            metrics.eviction(true, labels);
            Outcome::Would
        } else {
            let grace = crate::deschedule::policy::grace_period(policy_grace, &e.pod);
            match cluster.evict_once(&pod, grace, to).await {
                Attempt::Evicted => {
                    tracing::info!(pod = key, node, strategy, to, "evicted");
                    metrics.eviction(true, labels);
                    cluster.event(Regarding::Pod(pod), EventKind::Normal, strategy, note(&e));
                    Outcome::Evicted
                }
                Attempt::Gone => {
                    tracing::debug!(pod = key, "gone before its eviction");
                    Outcome::Gone
                }
                Attempt::Refused(why) => {
                    tracing::info!(pod = key, strategy, reason = why, "not evicted this cycle");
                    metrics.eviction(false, labels);
                    Outcome::Refused
                }
                Attempt::Failed(why) => {
                    tracing::warn!(pod = key, strategy, error = why, "eviction failed");
                    metrics.eviction(false, labels);
                    Outcome::Failed
                }
            }
        };
        // The descheduler may be gone (shutdown): nobody is left to tell.
        let _ = outcomes.send(Done {
            eviction: e,
            key,
            outcome,
            at,
        });
    }
}

/// The Event's message: the strategy and where the simulation places the pod.
fn note(e: &Eviction) -> String {
    if e.to.is_empty() {
        format!(
            "Descheduled by ferroscale ({}): evicted from node {}",
            e.strategy, e.node
        )
    } else {
        format!(
            "Descheduled by ferroscale ({}): evicted from node {}; the scheduling simulation places it on {}",
            e.strategy, e.node, e.to
        )
    }
}

/// A declined proposal in the log: at debug when the evictor keeps the pod (most pods, every cycle), at
/// info otherwise (the plan refused what a strategy wanted).
fn log_declined(d: &Declined) {
    let pod = crate::model::workload::pod_key(&d.pod.namespace, &d.pod.name);
    if matches!(d.why, Why::Kept(_)) {
        tracing::debug!(pod, node = d.node, strategy = d.strategy.name(), reason = %d.why, "not evicted");
    } else {
        tracing::info!(pod, node = d.node, strategy = d.strategy.name(), reason = %d.why, "not evicted");
    }
}
