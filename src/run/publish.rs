//! The loop's last stage: what it decided and did, made visible. The status ConfigMap (upstream's
//! schema, with consolidation's part), events on pods (NotTriggerScaleUp), on the priority ConfigMap
//! and on the nodes of a consolidation plan (ConsolidationPlanned), metrics and logs (`report`).

use std::collections::{HashMap, HashSet};

use kube::runtime::events::EventType;
use kube::Client;

use crate::engine::reasons::Pending;
use crate::engine::status::ClusterAutoscalerStatus;
use crate::engine::{Decisions, Memory, Settings, World};
use crate::error::Error;
use crate::k8s::events::{node_ref, pod_ref, Events};
use crate::k8s::index::Index;
use crate::k8s::lease::Fence;
use crate::k8s::priorities::Problem;
use crate::k8s::status::{self, ConsolidationStatus};
use crate::metrics::LoopMetrics;

/// A pod's NotTriggerScaleUp event is repeated at most this often while its reason stays the same
/// (upstream relies on client-go's event spam filter for the same effect).
const NOT_TRIGGERED_REPEAT: i64 = 300;

/// What the loop publishes with, and what it remembers of what it published.
pub struct Publisher {
    client: Client,
    pub(super) events: Events,
    pub(super) record: LoopMetrics,
    pub(super) fence: Fence,
    /// `--dry-run`: nothing is written.
    pub(super) dry_run: bool,
    namespace: String,
    /// `--status-config-map-name`, or None with `--write-status-configmap=false`.
    config_map: Option<String>,
    /// The last status written (or computed, in dry-run).
    pub(super) status: Option<ClusterAutoscalerStatus>,
    /// Consolidation's part of the status: the last plan, the last loop's declined nodes.
    pub(super) consolidation: Option<ConsolidationStatus>,
    /// Pod → (reason, when) of its last NotTriggerScaleUp event.
    not_triggered: HashMap<String, (Pending, i64)>,
}

impl Publisher {
    pub fn new(
        client: Client,
        events: Events,
        record: LoopMetrics,
        run: &super::RunSettings,
    ) -> Self {
        Publisher {
            client,
            events,
            record,
            fence: Fence::open(),
            dry_run: run.dry_run,
            namespace: run.namespace.clone(),
            config_map: run.status_config_map.clone(),
            status: None,
            consolidation: None,
            not_triggered: HashMap::new(),
        }
    }

    /// The loop's outcome: events, status, logs and metrics.
    #[allow(clippy::too_many_arguments)]
    pub async fn publish(
        &mut self,
        priority_problems: Vec<Problem>,
        world: &World<'_>,
        index: &Index,
        d: &Decisions,
        memory: &Memory,
        settings: &Settings,
        now: i64,
    ) {
        for p in priority_problems {
            self.events.send(
                p.regarding,
                EventType::Warning,
                "PriorityConfigMapInvalid",
                p.message,
            );
        }
        self.not_triggered(d, index, now);
        self.consolidation_planned(d, index);
        self.consolidation = ConsolidationStatus::next(self.consolidation.as_ref(), d, now);
        let status =
            ClusterAutoscalerStatus::compute(world, d, memory, settings, now, self.status.as_ref());
        self.report(d, &status, world, memory, settings, now);
        self.write_status(&status).await;
        self.status = Some(status);
    }

    /// The cloud could not be read: the status says so rather than go stale.
    pub async fn refresh_failed(&mut self, e: &Error, now: i64) {
        self.record
            .error(crate::engine::upstream::CLOUD_PROVIDER_ERROR);
        let status = ClusterAutoscalerStatus::failed(
            self.status.as_ref(),
            now,
            &format!("cloud refresh failed: {e}"),
        );
        self.write_status(&status).await;
        self.status = Some(status);
    }

    /// NotTriggerScaleUp on each pod no scale-up helps, again when its reason changes or
    /// [`NOT_TRIGGERED_REPEAT`] passed.
    fn not_triggered(&mut self, d: &Decisions, index: &Index, now: i64) {
        use crate::actuator::Lookup;
        let mut seen = HashSet::new();
        for (key, reason) in d.not_triggered() {
            seen.insert(key.clone());
            let repeat = match self.not_triggered.get(key) {
                Some((r, at)) => r != reason || now - at >= NOT_TRIGGERED_REPEAT,
                None => true,
            };
            if let (true, Some(p)) = (repeat, index.pod(key)) {
                self.events.send(
                    pod_ref(&p),
                    EventType::Normal,
                    "NotTriggerScaleUp",
                    format!("pod didn't trigger scale-up: {reason}"),
                );
                self.not_triggered
                    .insert(key.clone(), (reason.clone(), now));
            }
        }
        self.not_triggered.retain(|k, _| seen.contains(k));
    }

    /// ConsolidationPlanned on each node of each plan: what replaces it and what the plan saves.
    fn consolidation_planned(&self, d: &Decisions, index: &Index) {
        use crate::actuator::Lookup;
        use crate::engine::ConsolidationAction;
        for plan in &d.consolidations {
            let what = match plan.action {
                ConsolidationAction::Delete => {
                    "deleted: its pods fit on the other nodes".to_string()
                }
                ConsolidationAction::Replace => {
                    let into: Vec<String> = plan
                        .into
                        .iter()
                        .map(|n| format!("{} node(s) of group {}", n.count, n.group))
                        .collect();
                    format!(
                        "to be replaced by {}; drained once they are ready",
                        into.join(" and ")
                    )
                }
            };
            let note = format!(
                "consolidation: {what} (plan of {} node(s): {}), saving ${:.4}/h of ${:.4}/h, {} pod(s) evicted",
                plan.nodes.len(),
                plan.nodes.join(", "),
                plan.savings_per_hour,
                plan.price_per_hour,
                plan.pods_evicted.len()
            );
            for name in &plan.nodes {
                let uid = index.node(name).and_then(|n| n.uid);
                self.events.send(
                    node_ref(name, uid),
                    EventType::Normal,
                    "ConsolidationPlanned",
                    note.clone(),
                );
            }
        }
    }

    /// Writes the status ConfigMap (not in dry-run, not after leadership was lost); a failure is logged.
    async fn write_status(&self, status: &ClusterAutoscalerStatus) {
        let (false, Some(name)) = (self.dry_run, &self.config_map) else {
            return;
        };
        let written = match self.fence.check("writing the status") {
            Ok(()) => {
                status::write(
                    &self.client,
                    &self.namespace,
                    name,
                    status,
                    self.consolidation.as_ref(),
                )
                .await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, "status ConfigMap not written");
        }
    }
}
