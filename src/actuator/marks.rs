//! The autoscaler's marks on nodes besides a removal's own: upstream's soft taints, the durable
//! intents (`engine::intents`) brought to what the loop's decisions say holds, before anything they
//! announce is done, and the disruption taint on the old nodes of the plans those intents name.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use super::cluster::{Cluster, Lookup, Mark};
use super::removal::Removing;
use crate::engine::intents::{Action, Intent};
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

/// Whether `intent` names the old node of a plan under way whose new nodes come (or came) up: a
/// replacement's or a consolidation's.
fn disrupts(intent: &Intent) -> bool {
    matches!(intent.action, Action::Replacement | Action::Consolidation)
}

/// The disruption taint (`ferroscale.io/disrupted:NoSchedule`, Karpenter's `karpenter.sh/disrupted`)
/// on the old nodes of every plan under way, from the loop that starts it, so that nothing new is
/// scheduled where it would be evicted again; taken off the nodes whose plan was dropped (at start,
/// after the intents are reconciled: a stale one). A node a removal works on (`removing`) is left to
/// it. A failure is logged and tried again by the next loop.
pub async fn disruption_taints<C: Cluster>(
    cluster: &C,
    removing: impl Fn(&str) -> bool,
    wanted: &BTreeMap<String, Intent>,
    view: &dyn Lookup,
    now: i64,
) {
    if cluster.may_act("tainting disrupted nodes").is_err() {
        return;
    }
    let tainted: std::collections::HashSet<String> = view.disrupted().into_iter().collect();
    let on = wanted
        .iter()
        .filter(|(n, i)| disrupts(i) && !tainted.contains(*n) && view.node(n).is_some())
        .map(|(n, _)| (n.as_str(), true));
    let off = tainted
        .iter()
        .filter(|n| !wanted.get(*n).is_some_and(disrupts))
        .map(|n| (n.as_str(), false));
    let changes: Vec<(&str, bool)> = on.chain(off).collect();
    for (node, on) in changes {
        if removing(node) {
            continue;
        }
        match cluster.set_taint(node, Mark::Disrupted, on, now).await {
            Ok(()) => tracing::info!(node, on, "disruption taint"),
            Err(e) => {
                tracing::warn!(node, on, error = %e, "disruption taint not changed; the next loop tries again")
            }
        }
    }
}
