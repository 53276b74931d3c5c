//! The loop's first stage: everything it reads, in one [`Observed`] value. The cloud is refreshed,
//! the watch-fed index brought up to date, the watches' health turned into doubts, the priority tiers
//! read, and the interruption queue's notices taken.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;
use std::time::Instant;

use crate::cloud::Cloud;
use crate::engine::expander::Priorities;
use crate::engine::intents::{GroupFacts, Intent, NodeFacts};
use crate::engine::reasons::Doubt;
use crate::engine::World;
use crate::error::Result;
use crate::k8s::index::{Index, Updated};
use crate::k8s::priorities::{PriorityWatch, Problem};
use crate::k8s::watch::Watches;
use crate::metrics::LoopMetrics;
use crate::model::lifecycle::DisruptionReason;
use crate::model::{InstanceState, NodeGroup};

use super::interruptions::Notices;

/// What the loop reads.
pub struct Observer {
    cloud: Arc<dyn Cloud>,
    watches: Watches,
    /// The cluster as the watches delivered it, converted.
    pub(super) index: Index,
    /// What the last update of the index did.
    pub(super) last_update: Updated,
    /// The priority expander's tiers as the priority file or ConfigMap says now (re-read while running).
    pub(super) priorities: Option<Arc<RwLock<Priorities>>>,
    /// The priority ConfigMap's watch, whose problems the loop reports.
    pub(super) priority_config_map: Option<PriorityWatch>,
    /// `--interruption-queue`, when set.
    pub(super) interruptions: Option<Box<dyn Notices>>,
    /// Notices read back from the nodes' intents at start, with since when they were acted on: taken
    /// as notices until their node is gone (an involuntary one for at most
    /// [`INVOLUNTARY_LAPSES`](crate::engine::intents::INVOLUNTARY_LAPSES)).
    pub(super) restored: HashMap<String, (DisruptionReason, i64)>,
    record: LoopMetrics,
}

/// One loop's reading of the world, beside the index it was taken from.
pub struct Observed {
    /// The groups as the cloud holds them, refreshed.
    pub groups: Vec<Arc<NodeGroup>>,
    /// Node name → its group's id.
    pub node_groups: HashMap<String, String>,
    /// Why what was read cannot be trusted: nothing is removed while any.
    pub doubts: Vec<Doubt>,
    /// Nodes whose instance is going away, with why.
    pub interrupted: HashMap<String, DisruptionReason>,
    /// The priority tiers now, when the priority expander reads them while running.
    pub priorities: Option<Priorities>,
    /// Problems with the priority ConfigMap, to publish.
    pub priority_problems: Vec<Problem>,
}

impl Observed {
    /// The engine's world: this reading with the index's objects and the removals in flight.
    pub fn world<'a>(&'a self, index: &'a Index, removing: &'a HashMap<String, bool>) -> World<'a> {
        World {
            nodes: index.nodes.items(),
            node_groups: &self.node_groups,
            pods: index.pods.items(),
            pdbs: index.pdbs.items(),
            daemon_pods: index.daemon_pods.items(),
            groups: &self.groups,
            removing,
            doubts: &self.doubts,
            interrupted: &self.interrupted,
        }
    }
}

impl Observer {
    pub fn new(cloud: Arc<dyn Cloud>, watches: Watches, record: LoopMetrics) -> Self {
        Observer {
            cloud,
            watches,
            index: Index::default(),
            last_update: Updated::default(),
            priorities: None,
            priority_config_map: None,
            interruptions: None,
            restored: HashMap::new(),
            record,
        }
    }

    /// Brings the index up to date with what the watches delivered (also before the loops start); `now`
    /// (the loop's clock) stamps nodes seen for the first time.
    pub fn update_index(&mut self, now: i64) -> Updated {
        let t = Instant::now();
        self.last_update = self.index.update(&self.watches, now);
        self.record.observe("updateClusterState", t.elapsed());
        self.last_update
    }

    /// Reads the world: the cloud refreshed (its failure ends the loop), the index, doubts, priorities
    /// and notices.
    pub async fn observe(&mut self, now: i64) -> Result<Observed> {
        let t = Instant::now();
        self.cloud.refresh().await?;
        self.record.observe("cloudProviderRefresh", t.elapsed());
        self.update_index(now);
        let index = &self.index;
        let snapshot = self.cloud.snapshot();
        // An object that cannot be read is left out, and nothing is removed this loop: a pod left out
        // makes its node look emptier, a node left out makes its instance look unregistered.
        let mut doubts = self.watches.doubts();
        if let (count @ 1.., first) = index.unreadable() {
            doubts.push(Doubt::Unreadable {
                count,
                first: first.unwrap_or_default().to_string(),
            });
        }
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
        let mut interrupted = match &mut self.interruptions {
            Some(i) => i.interrupted(index, &node_groups),
            None => HashMap::new(),
        };
        self.restored.retain(|node, (reason, since)| {
            index.nodes.get(node).is_some()
                && !(reason.involuntary()
                    && now - *since > crate::engine::intents::INVOLUNTARY_LAPSES)
        });
        for (node, (reason, _)) in &self.restored {
            let r = interrupted.entry(node.clone()).or_insert(*reason);
            *r = r.escalate(*reason);
        }
        Ok(Observed {
            groups: snapshot.groups().cloned().collect(),
            node_groups,
            doubts,
            interrupted,
            priorities: self.priorities.as_ref().map(|t| t.read().clone()),
            priority_problems: self
                .priority_config_map
                .iter()
                .flat_map(PriorityWatch::take_problems)
                .collect(),
        })
    }

    /// Every node with its intent and what reconciling it needs, and the groups' target sizes, as the
    /// cloud says after a refresh (a failed refresh leaves the last snapshot to judge by).
    pub async fn intent_facts(&mut self) -> (Vec<NodeFacts>, HashMap<String, GroupFacts>) {
        if let Err(e) = self.cloud.refresh().await {
            tracing::warn!(error = %e, "cloud not refreshed before reconciling intents");
        }
        let snapshot = self.cloud.snapshot();
        let (nodes, extras) = (self.index.nodes.items(), self.index.nodes.extras());
        let facts = nodes
            .iter()
            .zip(extras)
            .map(|(n, x)| {
                let group = snapshot.group_for_provider_id(&n.provider_id);
                NodeFacts {
                    name: n.name.clone(),
                    group: group.map(|g| g.id.clone()),
                    created: n.created,
                    terminating: group
                        .and_then(|g| g.instances.iter().find(|i| i.id == n.provider_id))
                        .is_some_and(|i| i.state == InstanceState::Deleting),
                    intent: x.intent.as_deref().map(Intent::decode),
                }
            })
            .collect();
        let groups = snapshot
            .groups()
            .map(|g| {
                let facts = GroupFacts {
                    target_size: g.target_size,
                };
                (g.id.clone(), facts)
            })
            .collect();
        (facts, groups)
    }

    /// The groups as the cloud holds them now (after the loop acted).
    pub fn groups(&self) -> Vec<Arc<NodeGroup>> {
        self.cloud.snapshot().groups().cloned().collect()
    }

    /// Deletes the interruption messages the loop acted on; in dry-run forgets them, left in the queue
    /// for a replica that acts.
    pub async fn acknowledge(&mut self, dry_run: bool) {
        if let Some(i) = &mut self.interruptions {
            i.acknowledge(dry_run).await;
        }
    }
}
