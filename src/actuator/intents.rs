//! The actuator's side of durable intents (`engine::intents`): the nodes' annotations brought to what
//! the loop's decisions say holds, before anything they announce is done.

use std::collections::{BTreeMap, HashMap};

use super::cluster::{Cluster, Lookup};
use super::Actuator;
use crate::engine::intents::Intent;
use crate::engine::Decisions;

impl<C: Cluster> Actuator<C> {
    /// Brings the nodes' intents to what the decisions say holds: written where they differ, cleared
    /// where no action is under way any more. A node a removal works on is left to it (it marks its
    /// intent draining itself). A failed write is logged and tried again by the next loop.
    pub(super) async fn write_intents(&self, d: &Decisions, view: &dyn Lookup) {
        if let Some(wanted) = &d.intents {
            self.write_these(wanted, view).await;
        }
    }

    /// Brings the nodes' intents to `wanted` (see [`Actuator::write_intents`]): also right after a
    /// descheduling cycle, whose emptied nodes would otherwise wait for the next loop's.
    pub async fn write_these(&self, wanted: &BTreeMap<String, Intent>, view: &dyn Lookup) {
        if self.cluster().may_act("writing intents").is_err() {
            return;
        }
        let found: HashMap<String, String> = view.intents().into_iter().collect();
        let mut changes: Vec<(&str, Option<&Intent>)> = Vec::new();
        for (node, intent) in wanted {
            let current = found.get(node).and_then(|t| Intent::decode(t).ok());
            if current.as_ref() != Some(intent) && view.node(node).is_some() {
                changes.push((node, Some(intent)));
            }
        }
        for node in found.keys().filter(|n| !wanted.contains_key(*n)) {
            changes.push((node, None));
        }
        for (node, intent) in changes {
            if self.removing.contains_key(node) {
                continue;
            }
            match self.cluster().set_intent(node, intent).await {
                Ok(()) => {
                    tracing::debug!(node, action = ?intent.map(|i| i.action), "intent written")
                }
                Err(e) => {
                    tracing::warn!(node, error = %e, "intent not written; the next loop tries again")
                }
            }
        }
    }
}
