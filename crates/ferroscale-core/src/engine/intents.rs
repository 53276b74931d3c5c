//! Durable intents: what a multi-step action under way is doing, written on its nodes (the
//! `ferroscale.io/intent` annotation, [`labels::INTENT`]) before each step, so a new leader or a
//! restarted process picks up where the last one stopped instead of forgetting it (Karpenter keeps its
//! intent in NodeClaims and taints; cluster-autoscaler cleans its taints up at start).
//!
//! The annotations mirror the engine's memory of actions under way (replacements, consolidations,
//! nodes the descheduler emptied, notices, the surge nodes already claimed): each loop's decisions say
//! which intents hold ([`desired`]), and the actuator writes the differences before it asks for any
//! surge, and marks an intent `draining` before it taints a node. At start, [`reconcile`] reads them
//! back and for each either hands the action back to the engine (its memory restored: the engine then
//! finishes it under today's rules, or gives it up as it would have) or rolls it back (the drain's taint
//! and cordon undone, the annotation cleared) — never both, never silently.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::memory::Memory;
use crate::bounds::Bounds;
use crate::model::lifecycle::DisruptionReason;

/// The most an intent's annotation may hold: a consolidation names its nodes, a few hundred at most.
pub const BOUNDS: Bounds = Bounds {
    input: "ferroscale.io/intent annotation",
    max_bytes: 64 << 10,
    max_depth: 4,
};

/// How long an involuntary notice (a spot interruption, the instance stopping) holds after it was
/// first acted on: its instance goes within two minutes; one still running ten minutes later was not
/// taken, and its node is given back.
pub const INVOLUNTARY_LAPSES: i64 = 10 * 60;

/// Which action an intent belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// A scale-down (or a consolidation's deletion) draining the node.
    ScaleDown,
    /// The node is replaced (drift, expiry): a surge node was asked for it.
    Replacement,
    /// The node is consolidated into new nodes asked for it.
    Consolidation,
    /// The node's instance is going away (an interruption notice).
    Notice,
    /// The descheduler emptied the node; scale-down removes it.
    Descheduled,
    /// A new node that already let an old node go (each surge node frees one plan only).
    Surge,
}

impl Action {
    /// The `action` label of `ferroscale_intents_reconciled_total`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::ScaleDown => "scale-down",
            Action::Replacement => "replacement",
            Action::Consolidation => "consolidation",
            Action::Notice => "notice",
            Action::Descheduled => "descheduled",
            Action::Surge => "surge",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// New nodes asked for a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Surge {
    pub group: String,
    pub count: i32,
}

/// One node's intent, as its annotation holds it (JSON). Unknown fields are ignored, so an intent a
/// newer version wrote is still read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Intent {
    pub action: Action,
    /// Names the plan the node belongs to (the nodes of one consolidation share it).
    pub plan: String,
    /// When the action started (RFC 3339 in the annotation).
    #[serde(with = "rfc3339")]
    pub since: i64,
    /// Why (a disruption reason: `drift`, `spot-interruption`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<DisruptionReason>,
    /// The new nodes asked for the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surge: Option<Surge>,
    /// A consolidation's old nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    /// A surge node: the old node whose plan claimed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// A removal started: the node is (being) tainted `ToBeDeletedByClusterAutoscaler` and drained.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub draining: bool,
    /// The removal cordoned the node (an interruption's drain): undone with it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cordoned: bool,
}

/// Why an annotation is not an intent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ferroscale.io/intent annotation: {0}")]
pub struct Unreadable(pub String);

impl Intent {
    /// The annotation's text read back: bounded before it is parsed; never panics.
    pub fn decode(text: &str) -> Result<Intent, Unreadable> {
        BOUNDS
            .check_json(text)
            .map_err(|e| Unreadable(e.to_string()))?;
        serde_json::from_str(text).map_err(|e| Unreadable(e.to_string()))
    }

    /// The annotation's text.
    pub fn encode(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The same intent as a removal under way writes it.
    pub fn draining(mut self, cordoned: bool) -> Intent {
        self.draining = true;
        self.cordoned = cordoned;
        self
    }

    /// The intent of a plain scale-down of `node` started at `now`.
    pub fn scale_down(node: &str, now: i64) -> Intent {
        Intent::new(Action::ScaleDown, format!("scale-down/{node}"), now)
    }

    /// The intent of a notice's drain of `node` started at `now`.
    pub fn notice(node: &str, reason: DisruptionReason, now: i64) -> Intent {
        let mut i = Intent::new(Action::Notice, format!("notice/{node}"), now);
        i.reason = Some(reason);
        i
    }

    /// Whether this intent belongs to a plan a scale-down carries on (a replacement, a
    /// consolidation, a node the descheduler emptied): a removal keeps it, marked draining.
    pub fn is_plan(&self) -> bool {
        matches!(
            self.action,
            Action::Replacement | Action::Consolidation | Action::Descheduled
        )
    }

    fn new(action: Action, plan: String, since: i64) -> Intent {
        Intent {
            action,
            plan,
            since,
            reason: None,
            surge: None,
            nodes: Vec::new(),
            replaces: None,
            draining: false,
            cordoned: false,
        }
    }
}

/// `since` as RFC 3339 (what an operator reads), seconds inside.
mod rfc3339 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(secs: &i64, s: S) -> Result<S::Ok, S::Error> {
        match jiff::Timestamp::from_second(*secs) {
            Ok(t) => s.serialize_str(&t.to_string()),
            Err(e) => Err(serde::ser::Error::custom(e)),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        let text = String::deserialize(d)?;
        text.parse::<jiff::Timestamp>()
            .map(|t| t.as_second())
            .map_err(serde::de::Error::custom)
    }
}

/// The intents the engine's memory holds after a loop, by node: what the nodes' annotations should say
/// (a removal in flight adds `draining` itself).
pub fn desired(memory: &Memory) -> BTreeMap<String, Intent> {
    let mut out = BTreeMap::new();
    for (node, r) in &memory.replacing {
        let mut i = Intent::new(Action::Replacement, format!("replace/{node}"), r.since);
        i.reason = Some(r.reason);
        i.surge = Some(Surge {
            group: r.group.clone(),
            count: 1,
        });
        out.insert(node.clone(), i);
    }
    for c in &memory.consolidating {
        let mut nodes = c.nodes.clone();
        nodes.sort();
        let first = nodes.first().cloned().unwrap_or_default();
        for node in &nodes {
            let mut i = Intent::new(
                Action::Consolidation,
                format!("consolidate/{first}/{}", c.since),
                c.since,
            );
            i.reason = Some(DisruptionReason::Consolidation);
            i.surge = Some(Surge {
                group: c.group.clone(),
                count: c.count,
            });
            i.nodes = nodes.clone();
            out.insert(node.clone(), i);
        }
    }
    for (node, since) in &memory.emptying {
        let mut i = Intent::new(Action::Descheduled, format!("descheduled/{node}"), *since);
        i.reason = Some(DisruptionReason::Descheduled);
        out.entry(node.clone()).or_insert(i);
    }
    for (node, (reason, since)) in &memory.noticed {
        let i = Intent::notice(node, *reason, *since);
        // A notice outranks a plan: the node goes for it.
        out.insert(node.clone(), i);
    }
    for (new, old) in &memory.surge_claimed {
        let mut i = Intent::new(Action::Surge, format!("surge/{old}"), 0);
        i.replaces = Some(old.clone());
        out.entry(new.clone()).or_insert(i);
    }
    out
}

mod reconcile;

pub use reconcile::{reconcile, GroupFacts, NodeFacts, Outcome, Reconciled, RollBack};

#[cfg(test)]
mod tests;
