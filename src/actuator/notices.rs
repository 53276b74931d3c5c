//! The actuator's side of interruption notices: a node whose instance is going away is taken out at the
//! interruption's pace, and a removal of it already under way at a slower pace is superseded.

use super::cluster::{Cluster, EventKind, Lookup, Regarding};
use super::removal::{Pace, Removal, SharedStage, Stage, Why};
use super::Actuator;
use std::collections::BTreeMap;

use crate::engine::intents::{Action, Intent};
use crate::engine::{Disruption, NoticeDrain};
use crate::model::lifecycle::DisruptionReason;

impl<C: Cluster> Actuator<C> {
    /// Nodes whose instance is going away: out of service at once, at the interruption's pace; a node
    /// already on its way out goes on unless the notice asks for a faster pace (its removal is then
    /// restarted). Drifted and expired nodes only get their event: they go as scale-downs once their
    /// replacement joined.
    pub(super) async fn disrupt(
        &mut self,
        disruptions: &[Disruption],
        intents: Option<&BTreeMap<String, Intent>>,
        view: &dyn Lookup,
        now: i64,
    ) {
        for d in disruptions {
            let (Some(group), Some(node)) = (&d.group, view.node(&d.node)) else {
                continue;
            };
            let regarding = Regarding::Node {
                name: d.node.clone(),
                uid: node.uid.clone(),
            };
            let Some(notice) = &d.notice else {
                let kind = match d.reason {
                    DisruptionReason::Drift => "Drifted",
                    DisruptionReason::Consolidation => "Consolidated",
                    DisruptionReason::Descheduled => "Descheduled",
                    _ => "Expired",
                };
                let note = match d.reason {
                    DisruptionReason::Descheduled => {
                        "emptied by the descheduler (HighNodeUtilization); draining".to_string()
                    }
                    // A deletion has no replacement: its pods fit on the other nodes.
                    DisruptionReason::Consolidation => {
                        "consolidated (see its ConsolidationPlanned event): draining".to_string()
                    }
                    _ => format!(
                        "replaced ({}): its replacement has joined; draining",
                        d.reason
                    ),
                };
                self.cluster()
                    .event(regarding, EventKind::Normal, kind, note);
                continue;
            };
            let pace = Pace::Interruption {
                involuntary: *notice == NoticeDrain::Involuntary,
            };
            // A node already leaving goes on as it is unless this notice asks for a faster pace; then
            // the removal still draining is superseded (one that is deleting is left to finish).
            if let Some(running) = self.removing.get(&d.node).cloned() {
                if running.pace >= pace || !self.supersede(&d.node) {
                    continue;
                }
                tracing::warn!(node = %d.node, from = %running.reason, to = %d.reason, "notice for a node already leaving: restarting its removal at the interruption's pace");
                self.removing.remove(&d.node);
            }
            let (pods, left) = match notice {
                NoticeDrain::Involuntary => (view.pods_to_evict(&d.node), Vec::new()),
                NoticeDrain::Voluntary { evict, left } => {
                    (self.bound_to(&d.node, evict, view), left.clone())
                }
            };
            // Counted once per node, however often its removal is restarted or tried again.
            if self.notified.insert(d.node.clone()) {
                self.remover
                    .record
                    .lifecycle
                    .disrupted(d.reason.as_str(), group);
            }
            let note = format!(
                "instance going away ({}): cordoned, {} pods evicted now, replacement asked for",
                d.reason,
                pods.len()
            );
            self.cluster()
                .event(regarding, EventKind::Warning, "InterruptionNotice", note);
            let removal = Removal {
                node: d.node.clone(),
                uid: node.uid,
                group: group.clone(),
                provider_id: node.provider_id,
                pods,
                left,
                daemon_sets: Vec::new(),
                reason: Why::Notice(d.reason),
                pace,
                stage: SharedStage::default(),
                intent: intents
                    .and_then(|i| i.get(&d.node))
                    .filter(|i| i.action == Action::Notice)
                    .cloned()
                    .unwrap_or_else(|| Intent::notice(&d.node, d.reason, now)),
            };
            self.start(removal, now, true).await;
        }
    }

    /// Stops the removal of `node` if it is still draining (its task aborted, and told never to delete
    /// should it run on); false when it already deletes or ended.
    fn supersede(&mut self, node: &str) -> bool {
        let Some((stage, task)) = self.stages.get(node) else {
            return false;
        };
        if !stage.advance(Stage::Draining, Stage::Superseded) {
            return false;
        }
        if let Some(task) = task {
            task.abort();
        }
        self.stages.remove(node);
        true
    }
}
