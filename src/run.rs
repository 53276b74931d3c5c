//! `ferroscale run`: the live autoscaling loop. Every `--scan-interval` it refreshes the cloud, reads the
//! cluster from its watches, lets the pure engine decide, and carries the decisions out: IncreaseSize and
//! DeleteNodes through the `Cloud`, taints and evictions through the Kubernetes API, events on pods and
//! nodes, the status ConfigMap, metrics and `/health-check`. With `--leader-elect` only the replica
//! holding the Lease acts; with `--dry-run` nothing is changed anywhere.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node as KubeNode, ObjectReference, Pod as KubePod};
use kube::api::Api;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::Client;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::cloud::Cloud;
use crate::engine::reasons::Pending;
use crate::engine::{run_once, Decisions, Memory, Settings, World};
use crate::error::{Error, Result};
use crate::k8s::drain::{self, DrainSettings};
use crate::k8s::lease::{Elector, LeaseSettings};
use crate::k8s::objects::Inputs;
use crate::k8s::status::{self, Status};
use crate::k8s::watch::Watches;
use crate::metrics::{EvictionLabel, LoopMetrics, Metrics, ReasonLabel, StateLabel};

/// The controller name on events, as upstream's.
pub const EVENT_SOURCE: &str = "cluster-autoscaler";

/// Events waiting to be written; beyond this the loop drops them rather than wait.
const EVENT_QUEUE: usize = 10_000;

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

/// `/health-check` with upstream's semantics: healthy until this replica starts acting (a follower is
/// healthy), then unhealthy when no loop started within `--max-inactivity` or none succeeded within
/// `--max-failing-time`.
pub struct Health {
    monitoring: AtomicBool,
    last_activity: AtomicI64,
    last_success: AtomicI64,
    max_inactivity: i64,
    max_failing: i64,
}

impl Health {
    pub fn new(max_inactivity: Duration, max_failing: Duration) -> Self {
        Health {
            monitoring: AtomicBool::new(false),
            last_activity: AtomicI64::new(0),
            last_success: AtomicI64::new(0),
            max_inactivity: max_inactivity.as_secs() as i64,
            max_failing: max_failing.as_secs() as i64,
        }
    }

    /// Starts the checks (this replica acts from now on).
    pub fn start(&self, now: i64) {
        self.last_activity.store(now, Ordering::Relaxed);
        self.last_success.store(now, Ordering::Relaxed);
        self.monitoring.store(true, Ordering::Relaxed);
    }

    /// A loop started.
    pub fn activity(&self, now: i64) {
        self.last_activity.store(now, Ordering::Relaxed);
    }

    /// A loop finished without error.
    pub fn success(&self, now: i64) {
        self.last_activity.store(now, Ordering::Relaxed);
        self.last_success.store(now, Ordering::Relaxed);
    }

    /// Ok, or why the process is unhealthy.
    pub fn check(&self, now: i64) -> std::result::Result<(), String> {
        if !self.monitoring.load(Ordering::Relaxed) {
            return Ok(());
        }
        let activity = self.last_activity.load(Ordering::Relaxed);
        if now - activity > self.max_inactivity {
            return Err(format!(
                "last activity {}s ago, more than --max-inactivity {}s",
                now - activity,
                self.max_inactivity
            ));
        }
        let success = self.last_success.load(Ordering::Relaxed);
        if now - success > self.max_failing {
            return Err(format!(
                "last successful loop {}s ago, more than --max-failing-time {}s",
                now - success,
                self.max_failing
            ));
        }
        Ok(())
    }
}

/// One event to publish.
struct Note {
    regarding: ObjectReference,
    type_: EventType,
    reason: &'static str,
    note: String,
}

/// Queues events for a background writer, so the loop never waits on the API for them.
#[derive(Clone)]
struct Events(Option<mpsc::Sender<Note>>);

impl Events {
    fn start(client: &Client, instance: &str) -> Self {
        let (tx, mut rx) = mpsc::channel::<Note>(EVENT_QUEUE);
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: EVENT_SOURCE.into(),
                instance: Some(instance.into()),
            },
        );
        tokio::spawn(async move {
            while let Some(n) = rx.recv().await {
                let ev = Event {
                    type_: n.type_,
                    reason: n.reason.into(),
                    note: Some(n.note),
                    action: n.reason.into(),
                    secondary: None,
                };
                if let Err(e) = recorder.publish(&ev, &n.regarding).await {
                    tracing::debug!(error = %e, reason = n.reason, "event not written");
                }
            }
        });
        Events(Some(tx))
    }

    fn send(
        &self,
        regarding: ObjectReference,
        type_: EventType,
        reason: &'static str,
        note: String,
    ) {
        if let Some(tx) = &self.0 {
            let _ = tx.try_send(Note {
                regarding,
                type_,
                reason,
                note,
            });
        }
    }
}

fn pod_ref(p: &KubePod) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: p.metadata.name.clone(),
        namespace: p.metadata.namespace.clone(),
        uid: p.metadata.uid.clone(),
        ..Default::default()
    }
}

fn node_ref(name: &str, uid: Option<String>) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: Some(name.into()),
        uid,
        ..Default::default()
    }
}

/// What drains running in the background share with the loop.
#[derive(Clone)]
struct DrainContext {
    client: Client,
    cloud: Arc<dyn Cloud>,
    events: Events,
    metrics: Option<LoopMetrics>,
    settings: DrainSettings,
    /// Nodes being drained or deleted: not candidates again until done.
    in_flight: Arc<Mutex<HashSet<String>>>,
    /// Removals finished since the loop last looked: true for removed, false for failed.
    outcomes: Arc<Mutex<Vec<bool>>>,
}

/// A node to take down: its group, provider id, and the pods to evict first.
struct Removal {
    node: String,
    uid: Option<String>,
    group: String,
    provider_id: String,
    pods: Vec<Arc<KubePod>>,
    reason: crate::engine::reasons::Removal,
}

impl DrainContext {
    fn count_eviction(&self, ok: bool) {
        if let Some(m) = &self.metrics {
            m.evicted_pods
                .get_or_create(&EvictionLabel {
                    eviction_result: if ok { "succeeded" } else { "failed" },
                })
                .inc();
        }
    }

    /// Taints, evicts, deletes; on any failure the taint is removed and ScaleDownFailed says why.
    async fn remove(self, r: Removal, now: i64) -> Result<()> {
        let nodes: Api<KubeNode> = Api::all(self.client.clone());
        let result = async {
            drain::set_deletion_taint(&nodes, &r.node, true, now).await?;
            self.events.send(
                node_ref(&r.node, r.uid.clone()),
                EventType::Normal,
                "ScaleDown",
                format!("marked the node as toBeDeleted/unschedulable: {}", r.reason),
            );
            let mut evictions = JoinSet::new();
            for p in &r.pods {
                self.events.send(
                    pod_ref(p),
                    EventType::Normal,
                    "ScaleDown",
                    format!("deleting pod for node scale down (node {})", r.node),
                );
                let (client, pod, settings) =
                    (self.client.clone(), p.clone(), self.settings.clone());
                evictions.spawn(async move { drain::evict(&client, &pod, &settings).await });
            }
            let mut failure = None;
            while let Some(done) = evictions.join_next().await {
                let outcome = done.unwrap_or_else(|e| Err(Error::Unavailable(e.to_string())));
                self.count_eviction(outcome.is_ok());
                if let Err(e) = outcome {
                    failure.get_or_insert(e);
                }
            }
            if let Some(e) = failure {
                return Err(e);
            }
            self.cloud
                .delete_nodes(&r.group, std::slice::from_ref(&r.provider_id))
                .await
        }
        .await;
        match &result {
            Ok(()) => {
                tracing::info!(node = %r.node, group = %r.group, reason = %r.reason, "node removed");
                if let Some(m) = &self.metrics {
                    let reason = if r.pods.is_empty() {
                        "empty"
                    } else {
                        "underutilized"
                    };
                    m.scaled_down_nodes
                        .get_or_create(&ReasonLabel { reason })
                        .inc();
                }
            }
            Err(e) => {
                tracing::warn!(node = %r.node, error = %e, "scale-down failed; untainting");
                if let Err(u) = drain::set_deletion_taint(&nodes, &r.node, false, now).await {
                    tracing::warn!(node = %r.node, error = %u, "could not remove the deletion taint");
                }
                self.events.send(
                    node_ref(&r.node, r.uid.clone()),
                    EventType::Warning,
                    "ScaleDownFailed",
                    format!("failed to remove the node: {e}"),
                );
            }
        }
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&r.node);
        self.outcomes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(result.is_ok());
        result
    }
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
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    drains: JoinSet<Result<()>>,
    in_flight: Arc<Mutex<HashSet<String>>>,
    outcomes: Arc<Mutex<Vec<bool>>>,
    /// Pod → (reason, when) of its last NotTriggerScaleUp event.
    not_triggered: HashMap<String, (Pending, i64)>,
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
            metrics,
            health,
            drains: JoinSet::new(),
            in_flight: Arc::default(),
            outcomes: Arc::default(),
            not_triggered: HashMap::new(),
        }
    }

    fn loop_metrics(&self) -> Option<&LoopMetrics> {
        self.metrics.autoscaler.as_ref()
    }

    fn observe(&self, function: &'static str, since: Instant) {
        if let Some(m) = self.loop_metrics() {
            m.observe(function, since.elapsed());
        }
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
        if let Some(m) = self.loop_metrics() {
            m.activity("main", now);
        }
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
        self.cloud.refresh().await.inspect_err(|_| {
            if let Some(m) = self.loop_metrics() {
                m.errors
                    .get_or_create(&ReasonLabel {
                        reason: "cloudProviderError",
                    })
                    .inc();
            }
        })?;
        self.observe("cloudProviderRefresh", t);

        let t = Instant::now();
        let snapshot = self.cloud.snapshot();
        let groups: Vec<_> = snapshot.groups().cloned().collect();
        let (nodes, pods) = (self.watches.nodes.state(), self.watches.pods.state());
        let (pdbs, daemonsets) = (self.watches.pdbs.state(), self.watches.daemonsets.state());
        let mut inputs = Inputs::convert(
            nodes.iter().map(AsRef::as_ref),
            pods.iter().map(AsRef::as_ref),
            pdbs.iter().map(AsRef::as_ref),
            daemonsets.iter().map(AsRef::as_ref),
            |e| {
                tracing::warn!(error = %e, "object left out of the loop");
                Ok(())
            },
        )?;
        let in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for n in inputs
            .nodes
            .iter_mut()
            .filter(|n| in_flight.contains(&n.name))
        {
            n.scale_down_disabled = true;
        }
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
        };
        self.observe("updateClusterState", t);

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
        if let (false, Some(name)) = (self.run.dry_run, &self.run.status_config_map) {
            if let Err(e) = status::write(&self.client, &self.run.namespace, name, &status).await {
                tracing::warn!(error = %e, "status ConfigMap not written");
            }
        }
        self.status = Some(status);
        self.observe("main", started);
        result?;
        self.health.success(now);
        if let Some(m) = self.loop_metrics() {
            m.activity("autoscaling", now);
        }
        Ok(decisions)
    }

    /// Logs the decisions and sets the gauges.
    fn report(&self, d: &Decisions, status: &Status, groups: usize) {
        let verb = if self.run.dry_run { "would" } else { "will" };
        for s in &d.scale_up {
            tracing::info!(group = %s.group, delta = s.delta, pods = s.pods.len(), "{verb} scale up");
        }
        for s in &d.scale_down {
            tracing::info!(node = %s.node, group = %s.group, reason = %s.reason, "{verb} remove node");
        }
        for i in &d.delete_instances {
            tracing::info!(instance = %i.instance, group = %i.group, reason = %i.reason, "{verb} delete instance");
        }
        for line in &d.expander {
            tracing::debug!("{line}");
        }
        let Some(m) = self.loop_metrics() else {
            return;
        };
        m.unschedulable_pods.set(d.unschedulable().count() as i64);
        m.unneeded_nodes
            .set(self.memory.unneeded_since.len() as i64);
        m.node_groups.set(groups as i64);
        if let Some(c) = &status.cluster_wide.health.node_counts {
            for (state, n) in [
                ("ready", c.registered.ready),
                ("unready", c.registered.unready.total),
                ("notStarted", c.registered.not_started),
                ("unregistered", c.unregistered),
                ("longUnregistered", c.long_unregistered),
            ] {
                m.nodes.get_or_create(&StateLabel { state }).set(n as i64);
            }
        }
    }

    /// Carries the decisions out. Failures are logged, recorded and returned after everything else was
    /// tried, so one bad group does not stop the others.
    async fn act(
        &mut self,
        d: &Decisions,
        pods: &[Arc<KubePod>],
        nodes: &[Arc<KubeNode>],
        now: i64,
    ) -> Result<()> {
        let mut first_error = None;
        let pod_by_key: HashMap<String, &Arc<KubePod>> = pods
            .iter()
            .map(|p| {
                (
                    crate::model::workload::pod_key(
                        p.metadata.namespace.as_deref().unwrap_or("default"),
                        p.metadata.name.as_deref().unwrap_or_default(),
                    ),
                    p,
                )
            })
            .collect();

        // Instances that failed or never registered.
        let mut by_group: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for i in &d.delete_instances {
            by_group
                .entry(&i.group)
                .or_default()
                .push(i.instance.clone());
        }
        for (group, ids) in by_group {
            if let Err(e) = self.cloud.delete_nodes(group, &ids).await {
                tracing::warn!(group, error = %e, "deleting unregistered instances failed");
                first_error.get_or_insert(e);
            }
        }

        // Scale-ups.
        let t = Instant::now();
        for s in &d.scale_up {
            let before = self
                .cloud
                .snapshot()
                .group(&s.group)
                .map(|g| (g.target_size, g.max_size));
            match self.cloud.increase_size(&s.group, s.delta).await {
                Ok(()) => {
                    if let Some(m) = self.loop_metrics() {
                        m.scaled_up_nodes.inc_by(s.delta as u64);
                        m.activity("scaleUp", now);
                    }
                    let (from, max) = before.unwrap_or((0, 0));
                    let note = format!(
                        "pod triggered scale-up: [{{{} {}->{} (max: {})}}]",
                        s.group,
                        from,
                        from + s.delta,
                        max
                    );
                    for p in s.pods.iter().filter_map(|k| pod_by_key.get(k)) {
                        self.events.send(
                            pod_ref(p),
                            EventType::Normal,
                            "TriggeredScaleUp",
                            note.clone(),
                        );
                    }
                }
                Err(e) => {
                    tracing::warn!(group = %s.group, delta = s.delta, error = %e, "scale-up failed; backing the group off");
                    self.memory.scale_up_failed(&s.group, now);
                    if let Some(m) = self.loop_metrics() {
                        m.failed_scale_ups
                            .get_or_create(&ReasonLabel {
                                reason: "cloudProviderError",
                            })
                            .inc();
                    }
                    first_error.get_or_insert(e);
                }
            }
        }
        if !d.scale_up.is_empty() {
            self.observe("scaleUp", t);
        }

        // Pods no scale-up helps.
        let mut seen = HashSet::new();
        for (key, reason) in d.not_triggered() {
            seen.insert(key.clone());
            let repeat = match self.not_triggered.get(key) {
                Some((r, at)) => r != reason || now - at >= NOT_TRIGGERED_REPEAT,
                None => true,
            };
            if let (true, Some(p)) = (repeat, pod_by_key.get(key)) {
                self.events.send(
                    pod_ref(p),
                    EventType::Normal,
                    "NotTriggerScaleUp",
                    format!("pod didn't trigger scale-up: {reason}"),
                );
                self.not_triggered
                    .insert(key.clone(), (reason.clone(), now));
            }
        }
        self.not_triggered.retain(|k, _| seen.contains(k));

        // Scale-downs: empty nodes now, the others drained in the background.
        let t = Instant::now();
        let ctx = DrainContext {
            client: self.client.clone(),
            cloud: self.cloud.clone(),
            events: self.events.clone(),
            metrics: self.loop_metrics().cloned(),
            settings: self.run.drain.clone(),
            in_flight: self.in_flight.clone(),
            outcomes: self.outcomes.clone(),
        };
        for s in &d.scale_down {
            let node = nodes
                .iter()
                .find(|n| n.metadata.name.as_deref() == Some(s.node.as_str()));
            let Some(node) = node else { continue };
            let provider_id = node
                .spec
                .as_ref()
                .and_then(|s| s.provider_id.clone())
                .unwrap_or_default();
            let removal = Removal {
                node: s.node.clone(),
                uid: node.metadata.uid.clone(),
                group: s.group.clone(),
                provider_id,
                pods: s
                    .evict
                    .iter()
                    .filter_map(|k| pod_by_key.get(k).map(|p| Arc::clone(p)))
                    .collect(),
                reason: s.reason.clone(),
            };
            self.in_flight
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(s.node.clone());
            if let Some(m) = self.loop_metrics() {
                m.activity("scaleDown", now);
            }
            if removal.pods.is_empty() {
                if let Err(e) = ctx.clone().remove(removal, now).await {
                    first_error.get_or_insert(e);
                }
            } else {
                self.drains.spawn(ctx.clone().remove(removal, now));
            }
        }
        if !d.scale_down.is_empty() {
            self.observe("scaleDown", t);
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Takes the deletion taint off every node that has it: left by a replica that stopped mid-drain (or
    /// by a leader before this one), as upstream cleans up when it starts acting. Not in dry-run.
    pub async fn clean_stale_taints(&self) {
        if self.run.dry_run {
            return;
        }
        let api: Api<KubeNode> = Api::all(self.client.clone());
        let in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for n in self.watches.nodes.state() {
            let tainted = n
                .spec
                .as_ref()
                .and_then(|s| s.taints.as_ref())
                .is_some_and(|ts| ts.iter().any(|t| t.key == crate::labels::TO_BE_DELETED));
            let name = n.metadata.name.clone().unwrap_or_default();
            if tainted && !in_flight.contains(&name) {
                match drain::set_deletion_taint(&api, &name, false, 0).await {
                    Ok(()) => tracing::info!(node = %name, "removed a stale deletion taint"),
                    Err(e) => tracing::warn!(node = %name, error = %e, "stale deletion taint kept"),
                }
            }
        }
    }

    /// Runs loops every `--scan-interval` until `shutdown` completes. With a Lease, loops run only while
    /// this replica leads; losing the lease ends the run with an error (the process restarts as a
    /// follower, as upstream's does).
    pub async fn run(mut self, shutdown: impl std::future::Future<Output = ()>) -> Result<()> {
        let (leading_tx, mut leading) = watch::channel(self.run.lease.is_none());
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
                _ = leading.changed() => {}
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
        if let Some(e) = elector {
            e.release().await;
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_check_follows_upstream() {
        let h = Health::new(Duration::from_secs(600), Duration::from_secs(900));
        // A follower (not yet acting) is healthy however long it waits.
        assert!(h.check(1_000_000).is_ok());
        h.start(0);
        assert!(h.check(600).is_ok());
        let err = h.check(601).unwrap_err();
        assert!(err.contains("--max-inactivity"), "{err}");
        // Loops keep starting but fail: unhealthy once none succeeded for --max-failing-time.
        for t in (0..=1000).step_by(10) {
            h.activity(t);
        }
        let err = h.check(1000).unwrap_err();
        assert!(err.contains("--max-failing-time"), "{err}");
        h.success(1000);
        assert!(h.check(1000).is_ok());
    }
}
