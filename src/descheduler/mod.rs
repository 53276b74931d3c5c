//! The descheduler on the live cluster, shared by `run --deschedule-policy` and `ferroscale deschedule`:
//! one cycle ([`Descheduler::cycle`]) reads the watch-fed index (nodes, live pods, failed pods still
//! bound, PodDisruptionBudgets) and the nodes being removed, has the core plan it
//! (`ferroscale_core::deschedule::plan`), logs and reports (`declined`) each declined proposal with why,
//! and evicts what the plan keeps through the eviction API (`k8s::drain::evict_once`: the pod's UID as a
//! precondition, one request per pod and cycle: a 429 from a PodDisruptionBudget leaves the pod for a
//! later cycle). Each eviction gets an Event naming the strategy and the node the simulation placed the
//! pod on, and the descheduler's metrics (`metrics::DeschedulerMetrics`). The moves made are remembered
//! ([`History`]) for the cooldown.
//! In `run` ([`Descheduler::hand_emptied_to_scale_down`]) the nodes `HighNodeUtilization` empties are not
//! evicted pod by pod: they are handed to scale-down ([`Cycle::emptying`]), which taints, drains and
//! deletes them; `ferroscale deschedule` evicts them and leaves the empty node to cluster-autoscaler.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::runtime::events::EventType;
use kube::{Api, Client};

use crate::actuator::Evictee;
use crate::deschedule::view::removing_nodes;
use crate::deschedule::{plan, Cluster, Declined, Eviction, History, Plan, Policy, Settings, Why};
use crate::error::{Error, Result};
use crate::k8s::drain::{evict_once, Attempt};
use crate::k8s::events::{pod_ref, Events};
use crate::k8s::index::Index;
use crate::k8s::lease::Fence;
use crate::metrics::{DeschedulerMetrics, EvictedLabels, StrategyLabels};
use crate::model::workload::Pod;

pub mod declined;
pub mod standalone;

/// Longest wait for one eviction request.
const EVICTION_TIMEOUT: Duration = Duration::from_secs(10);

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

/// What one cycle did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cycle {
    /// Pods the eviction API accepted (in dry-run: that would have been asked for).
    pub evicted: Vec<String>,
    /// Pods a PodDisruptionBudget kept (429): left for a later cycle.
    pub refused: Vec<String>,
    /// Pods whose eviction failed otherwise.
    pub failed: Vec<String>,
    /// Pods gone before their eviction.
    pub gone: Vec<String>,
    /// Proposals the plan declined.
    pub declined: usize,
    /// Nodes the plan empties, handed to scale-down instead of evicted (`run` only).
    pub emptying: Vec<String>,
}

/// The descheduler between cycles: its settings, the moves it made, where it reports.
pub struct Descheduler {
    pub settings: DeschedulerSettings,
    history: History,
    client: Client,
    events: Events,
    metrics: DeschedulerMetrics,
    fence: Fence,
    /// When the last cycle ran, on the loop's clock.
    last: Option<i64>,
    /// The values of the PriorityClasses the policy's `priorityThreshold.name`s name (a class's value
    /// never changes), read once each.
    priority_classes: BTreeMap<String, i32>,
    /// The declined proposals last reported (their Events are not repeated while nothing changes).
    declined: declined::Reported,
    /// Whether the nodes the plan empties are left to scale-down's removal (`run`).
    hands_over_emptied: bool,
}

impl Descheduler {
    pub fn new(
        settings: DeschedulerSettings,
        client: Client,
        events: Events,
        metrics: DeschedulerMetrics,
    ) -> Self {
        Descheduler {
            settings,
            history: History::default(),
            client,
            events,
            metrics,
            fence: Fence::open(),
            last: None,
            priority_classes: BTreeMap::new(),
            declined: declined::Reported::default(),
            hands_over_emptied: false,
        }
    }

    /// Leaves the nodes a plan empties to the engine's scale-down (`run`: `Memory::emptying`) rather
    /// than evicting their pods: the drain evicts them once the node is tainted, so none lands back.
    pub fn hand_emptied_to_scale_down(&mut self) {
        self.hands_over_emptied = true;
    }

    /// Evicts only while the Lease's term runs.
    pub fn set_fence(&mut self, fence: Fence) {
        self.fence = fence;
    }

    /// Whether a cycle is due at `now` (the first one is due at once).
    pub fn due(&self, now: i64) -> bool {
        self.last
            .is_none_or(|l| now - l >= self.settings.interval.as_secs() as i64)
    }

    /// One cycle at `now` on the index as it is: plan, then evict what the plan keeps (nothing in
    /// dry-run). `removing`: the nodes being emptied by scale-down, on which nothing is planned.
    pub async fn cycle(&mut self, index: &Index, removing: &HashSet<String>, now: i64) -> Cycle {
        let started = Instant::now();
        self.last = Some(now);
        // With the nodes another autoscaler (upstream cluster-autoscaler beside `ferroscale deschedule`)
        // removes.
        let removing = removing_nodes(index.nodes.items(), removing);
        self.history.settle(index.nodes.items(), now);
        self.read_priority_classes().await;
        let priority_classes = &self.priority_classes;
        let cluster = Cluster {
            nodes: index.nodes.items(),
            pods: index.pods.items(),
            failed: index.failed.items(),
            pdbs: index.pdbs.items(),
            removing: &removing,
            priority_classes,
            now,
        };
        let mut planned = plan(
            &self.settings.policy,
            &cluster,
            &self.history,
            &self.settings.plan,
            &crate::time::MONOTONIC,
        );
        for r in &planned.durations {
            self.metrics.strategy_done(
                StrategyLabels {
                    strategy: r.strategy.name(),
                    profile: r.profile.clone(),
                },
                r.seconds,
            );
        }
        let mut emptying = Vec::new();
        if self.hands_over_emptied {
            let handed = planned.hand_over_emptied();
            if !planned.emptied.is_empty() {
                tracing::info!(nodes = ?planned.emptied, pods = handed.len(), "emptied nodes handed to scale-down: tainted, drained and deleted when the rules allow");
            }
            self.history.hand_over(handed);
            emptying = planned.emptied.clone();
        }
        let mut out = self.carry_out(index, &planned, now).await;
        out.emptying = emptying;
        self.metrics.cycle_done(started.elapsed());
        tracing::info!(
            evicted = out.evicted.len(),
            refused = out.refused.len(),
            failed = out.failed.len(),
            declined = out.declined,
            dry_run = self.settings.dry_run,
            took_ms = started.elapsed().as_secs_f64() * 1e3,
            "descheduling cycle done"
        );
        out
    }

    /// Carries out a plan made at `now` on `index`: each declined proposal logged with why and reported
    /// (`declined`), each eviction asked of the API once (nothing in dry-run), with its Event and
    /// metric; the moves made are remembered for the cooldown.
    pub async fn carry_out(&mut self, index: &Index, planned: &Plan, now: i64) -> Cycle {
        let mut out = Cycle {
            declined: planned.declined.len(),
            ..Default::default()
        };
        for d in &planned.declined {
            log_declined(d);
        }
        self.declined
            .report(&planned.declined, index, &self.events, &self.metrics);
        let mut done = Vec::new();
        for e in &planned.evictions {
            let key = crate::model::workload::pod_key(&e.pod.namespace, &e.pod.name);
            if !self.settings.dry_run && self.fence.check("a descheduling eviction").is_err() {
                tracing::info!("not the leader any more: the cycle's other evictions are left");
                break;
            }
            let profile = e.profile.clone();
            let labels = EvictedLabels {
                result: "",
                strategy: e.strategy.name(),
                profile,
                namespace: e.pod.namespace.to_string(),
                node: e.node.clone(),
            };
            if self.settings.dry_run {
                tracing::info!(
                    pod = key,
                    node = e.node,
                    strategy = e.strategy.name(),
                    to = e.to,
                    "would evict (dry-run)"
                );
                self.metrics.eviction(true, labels);
                out.evicted.push(key);
                continue;
            }
            let evictee = evictee(index, &e.pod);
            let grace = e.pod.meta.grace_period.unwrap_or(30).max(0);
            let attempt =
                tokio::time::timeout(EVICTION_TIMEOUT, evict_once(&self.client, &evictee, grace))
                    .await
                    .unwrap_or_else(|_| {
                        Attempt::Failed(format!("no answer within {EVICTION_TIMEOUT:?}"))
                    });
            match attempt {
                Attempt::Evicted => {
                    tracing::info!(
                        pod = key,
                        node = e.node,
                        strategy = e.strategy.name(),
                        to = e.to,
                        "evicted"
                    );
                    self.metrics.eviction(true, labels);
                    self.events.send(
                        pod_ref(&evictee),
                        EventType::Normal,
                        e.strategy.name(),
                        note(e),
                    );
                    done.push(e.clone());
                    out.evicted.push(key);
                }
                Attempt::Gone => {
                    tracing::debug!(pod = key, "gone before its eviction");
                    out.gone.push(key);
                }
                Attempt::Refused(why) => {
                    tracing::info!(
                        pod = key,
                        strategy = e.strategy.name(),
                        reason = why,
                        "not evicted this cycle"
                    );
                    self.metrics.eviction(false, labels);
                    out.refused.push(key);
                }
                Attempt::Failed(why) => {
                    tracing::warn!(
                        pod = key,
                        strategy = e.strategy.name(),
                        error = why,
                        "eviction failed"
                    );
                    self.metrics.eviction(false, labels);
                    out.failed.push(key);
                }
            }
        }
        self.history.record(
            &Plan {
                evictions: done,
                ..Default::default()
            },
            now,
        );
        self.history
            .forget_before(now, self.settings.plan.cooldown_secs.max(0));
        out
    }

    /// The moves remembered for the cooldown.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Reads the PriorityClasses the policy names and this replica has not read yet; one that cannot be
    /// read is logged and tried again next cycle (the evictor meanwhile does not know its value).
    async fn read_priority_classes(&mut self) {
        let names: HashSet<String> = self
            .settings
            .policy
            .profiles
            .iter()
            .filter_map(|p| p.evictor.priority_threshold.as_ref())
            .map(|t| t.name.clone())
            .filter(|n| !n.is_empty() && !self.priority_classes.contains_key(n))
            .collect();
        let api: Api<PriorityClass> = Api::all(self.client.clone());
        for name in names {
            match api.get_opt(&name).await {
                Ok(Some(class)) => {
                    self.priority_classes.insert(name, class.value.unwrap_or(0));
                }
                Ok(None) => {
                    tracing::warn!(
                        priority_class = name,
                        "priorityThreshold names a PriorityClass that does not exist"
                    )
                }
                Err(e) => {
                    tracing::warn!(priority_class = name, error = %e, "reading a PriorityClass failed; tried again next cycle")
                }
            }
        }
    }
}

/// The pod as the eviction API is asked for it, with the UID the index holds.
fn evictee(index: &Index, pod: &Pod) -> Evictee {
    let key = crate::model::workload::pod_key(&pod.namespace, &pod.name);
    let uid = index
        .pods
        .get(&key)
        .or_else(|| index.failed.get(&key))
        .and_then(|(_, x)| x.uid.clone());
    Evictee {
        namespace: pod.namespace.to_string(),
        name: pod.name.clone(),
        uid,
        grace_period: pod.meta.grace_period,
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
