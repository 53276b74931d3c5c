//! What became of a node due for replacement (drift, expiry): replaced, or kept and why, so `simulate`
//! says which nodes would be replaced and why, and which have drifted while nothing replaces them.

use std::fmt;

use crate::model::lifecycle::DisruptionReason;

/// A drifted or expired node, this loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Due {
    /// Its surge was asked for this loop: it goes once the new node has joined.
    Replacing(DisruptionReason),
    /// Drifted, but its group does not replace drifted nodes (`--drift`, the tag `ferroscale.io/drift`
    /// or the memory cloud's `drift` are `Never`, the default).
    DriftNotEnabled { group: String },
    /// Drifted or expired, but the node is annotated `karpenter.sh/do-not-disrupt` or
    /// `ferroscale.io/do-not-disrupt`.
    DoNotDisrupt(DisruptionReason),
}

impl Due {
    /// The reason's stable name, without its figures (what a report folds nodes by).
    pub fn label(&self) -> &'static str {
        match self {
            Due::Replacing(_) => "replacing",
            Due::DriftNotEnabled { .. } => "drift_not_enabled",
            Due::DoNotDisrupt(_) => "do_not_disrupt",
        }
    }
}

impl fmt::Display for Due {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Due::Replacing(DisruptionReason::Expired) => {
                f.write_str("expired: older than its group's node lifetime; a new node is asked for first")
            }
            Due::Replacing(r) => write!(
                f,
                "{r}: launched from another revision than its group's; a new node is asked for first"
            ),
            Due::DriftNotEnabled { group } => write!(
                f,
                "drifted, but group {group} does not replace drifted nodes (--drift Replace, or the group's ferroscale.io/drift tag, turns it on)"
            ),
            Due::DoNotDisrupt(r) => write!(f, "{r} due, but the node is annotated do-not-disrupt"),
        }
    }
}
