//! The autoscaler's marks on nodes besides a removal's own: upstream's soft taints, and the durable
//! intents (`engine::intents`) brought to what the loop's decisions say holds, before anything they
//! announce is done.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use super::cluster::{Cluster, Lookup, Mark};
use super::removal::Removing;
use crate::engine::intents::Intent;
use crate::engine::Decisions;

/// Upstream's soft taints: takes `DeletionCandidateOfClusterAutoscaler` off the nodes needed again,
/// then puts it on the unneeded ones, until the loop's time for them is spent. A failure is logged
/// and tried again by a later loop, which decides the same.
pub(super) async fn soft_taints<C: Cluster>(
    cluster: &C,
    d: &Decisions,
    budget: Duration,
    now: i64,
) {
    if (d.soft_taint.is_empty() && d.soft_untaint.is_empty())
        || cluster.may_act("soft-tainting").is_err()
    {
        return;
    }
    let t = Instant::now();
    let marks = d
        .soft_untaint
        .iter()
        .map(|n| (n, false))
        .chain(d.soft_taint.iter().map(|n| (n, true)));
    for (node, on) in marks {
        if t.elapsed() >= budget {
            tracing::info!("soft-taint time spent; the rest waits for a later loop");
            break;
        }
        match cluster
            .set_taint(node, Mark::DeletionCandidate, on, now)
            .await
        {
            Ok(()) => tracing::debug!(node = %node, on, "soft taint"),
            Err(e) => tracing::warn!(node = %node, on, error = %e, "soft taint not changed"),
        }
    }
}

/// Brings the nodes' intents to `wanted`: written where they differ, cleared where no action is under
/// way any more. A node a removal works on (`removing`) is left to it: it marks its intent draining
/// itself. A failed write is logged and tried again by the next loop.
pub(super) async fn write_intents<C: Cluster>(
    cluster: &C,
    removing: &HashMap<String, Removing>,
    wanted: &BTreeMap<String, Intent>,
    view: &dyn Lookup,
) {
    if cluster.may_act("writing intents").is_err() {
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
        if removing.contains_key(node) {
            continue;
        }
        match cluster.set_intent(node, intent).await {
            Ok(()) => {
                tracing::debug!(node, action = ?intent.map(|i| i.action), "intent written")
            }
            Err(e) => {
                tracing::warn!(node, error = %e, "intent not written; the next loop tries again")
            }
        }
    }
}
