//! Reading intents back at start (see the module above): each resumed, rolled back or finished.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use super::{Action, Intent, Unreadable, INVOLUNTARY_LAPSES};
use crate::engine::memory::{Consolidating, Memory, Replacing};
use crate::model::lifecycle::DisruptionReason;

/// A node as reconciliation needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFacts {
    pub name: String,
    /// Its group, when it has one.
    pub group: Option<String>,
    /// `metadata.creationTimestamp` (seconds).
    pub created: i64,
    /// Its instance is being deleted (a delete was asked): the node goes.
    pub terminating: bool,
    /// Its intent's annotation, when it has one.
    pub intent: Option<Result<Intent, Unreadable>>,
}

/// A group as reconciliation needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupFacts {
    pub target_size: i32,
}

/// What became of one intent at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Handed back to the engine (its memory restored): it finishes the action under today's rules,
    /// or gives it up as it would have without the restart.
    Resumed,
    /// Undone: the annotation cleared, and the drain's taint and cordon taken off.
    RolledBack(RollBack),
    /// Nothing left to do: the node's instance is going (its delete was asked).
    Finished,
}

impl Outcome {
    /// The `outcome` label of `ferroscale_intents_reconciled_total`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Resumed => "resumed",
            Outcome::RolledBack(_) => "rolled_back",
            Outcome::Finished => "finished",
        }
    }
}

/// Why an intent was rolled back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RollBack {
    /// A scale-down stopped mid-drain: the node is given back; the engine decides again.
    Interrupted,
    /// The surge was never asked for (the process stopped between writing the intent and asking).
    NoSurge { group: String },
    /// The node or the surge's group is no longer a managed group's.
    GroupGone,
    /// An involuntary notice whose instance is still running long after it should have gone.
    NoticeLapsed,
    /// The annotation could not be read.
    Unreadable(String),
}

impl fmt::Display for RollBack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RollBack::Interrupted => f.write_str("its removal stopped mid-drain; the node is given back and the engine decides again"),
            RollBack::NoSurge { group } => write!(f, "its surge was never asked of group {group}; the engine decides again"),
            RollBack::GroupGone => f.write_str("its group is no longer managed"),
            RollBack::NoticeLapsed => f.write_str("its instance was not taken within ten minutes of the notice; the node is given back"),
            RollBack::Unreadable(why) => write!(f, "its annotation cannot be read ({why})"),
        }
    }
}

/// One intent reconciled: what to do on the cluster and to tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconciled {
    pub node: String,
    /// None for an annotation that could not be read.
    pub action: Option<Action>,
    pub outcome: Outcome,
    /// Take the deletion taint off (a drain stopped midway).
    pub untaint: bool,
    /// Uncordon (the drain cordoned it).
    pub uncordon: bool,
    /// Clear the annotation (rolled back; a resumed intent is rewritten by the next loop).
    pub clear: bool,
}

/// Reads every intent back at start: restores what is resumed into `memory`, and says per node what
/// to undo. Surge claims are restored silently (bookkeeping, not an action), and cleared when the
/// replacement that claimed them is itself resumed (it claims a new node again).
pub fn reconcile(
    nodes: &[NodeFacts],
    groups: &HashMap<String, GroupFacts>,
    memory: &mut Memory,
    now: i64,
) -> Vec<Reconciled> {
    let mut out = Vec::new();
    let mut consolidations: BTreeMap<(String, i64, String, i32), Vec<String>> = BTreeMap::new();
    let mut claims = Vec::new();
    for n in nodes {
        let Some(found) = &n.intent else { continue };
        let intent = match found {
            Ok(i) => i,
            Err(e) => {
                out.push(Reconciled {
                    node: n.name.clone(),
                    action: None,
                    outcome: Outcome::RolledBack(RollBack::Unreadable(e.0.clone())),
                    untaint: !n.terminating,
                    uncordon: false,
                    clear: true,
                });
                continue;
            }
        };
        if intent.action == Action::Surge {
            claims.push((n, intent));
            continue;
        }
        let outcome = if n.terminating {
            Outcome::Finished
        } else {
            judge(n, intent, nodes, groups, now)
        };
        if outcome == Outcome::Resumed {
            restore(n, intent, memory, &mut consolidations);
        }
        let undo = intent.draining && outcome != Outcome::Finished;
        out.push(Reconciled {
            node: n.name.clone(),
            action: Some(intent.action),
            clear: matches!(outcome, Outcome::RolledBack(_)),
            outcome,
            untaint: undo,
            uncordon: undo && intent.cordoned,
        });
    }
    for ((group, since, _, count), nodes) in consolidations {
        memory.consolidating.push(Consolidating {
            nodes,
            group,
            count,
            since,
        });
    }
    for (n, intent) in claims {
        let old = intent.replaces.clone().unwrap_or_default();
        if memory.replacing.contains_key(&old) {
            out.push(Reconciled {
                node: n.name.clone(),
                action: Some(Action::Surge),
                outcome: Outcome::RolledBack(RollBack::Interrupted),
                untaint: false,
                uncordon: false,
                clear: true,
            });
        } else {
            memory.surge_claimed.insert(n.name.clone(), old);
        }
    }
    out
}

/// Whether `intent` still holds.
fn judge(
    n: &NodeFacts,
    intent: &Intent,
    nodes: &[NodeFacts],
    groups: &HashMap<String, GroupFacts>,
    now: i64,
) -> Outcome {
    let rolled = Outcome::RolledBack;
    match intent.action {
        Action::ScaleDown | Action::Surge => rolled(RollBack::Interrupted),
        Action::Descheduled if n.group.is_none() => rolled(RollBack::GroupGone),
        Action::Descheduled => Outcome::Resumed,
        Action::Notice => {
            let involuntary = intent.reason.is_some_and(DisruptionReason::involuntary);
            if involuntary && now - intent.since > INVOLUNTARY_LAPSES {
                rolled(RollBack::NoticeLapsed)
            } else if intent.reason.is_none_or(|r| !r.from_notice()) {
                rolled(RollBack::Unreadable(
                    "a notice without a notice's reason".into(),
                ))
            } else {
                Outcome::Resumed
            }
        }
        Action::Replacement | Action::Consolidation => {
            let Some(surge) = &intent.surge else {
                return rolled(RollBack::Unreadable("a plan without its surge".into()));
            };
            let Some(g) = groups.get(&surge.group) else {
                return rolled(RollBack::GroupGone);
            };
            if n.group.is_none() {
                return rolled(RollBack::GroupGone);
            }
            if surge.count > 0 && !surge_asked(&surge.group, g, intent.since, nodes) {
                return rolled(RollBack::NoSurge {
                    group: surge.group.clone(),
                });
            }
            Outcome::Resumed
        }
    }
}

/// Whether `group` shows a surge asked at `since`: a node of it created since, or capacity asked for
/// and not registered yet.
fn surge_asked(group: &str, g: &GroupFacts, since: i64, nodes: &[NodeFacts]) -> bool {
    let mut registered = 0;
    for n in nodes.iter().filter(|n| n.group.as_deref() == Some(group)) {
        if n.created >= since {
            return true;
        }
        registered += 1;
    }
    g.target_size > registered
}

/// Puts a resumed intent back into the engine's memory.
fn restore(
    n: &NodeFacts,
    intent: &Intent,
    memory: &mut Memory,
    consolidations: &mut BTreeMap<(String, i64, String, i32), Vec<String>>,
) {
    let reason = intent.reason;
    match (intent.action, &intent.surge) {
        (Action::Replacement, Some(s)) => {
            memory.replacing.insert(
                n.name.clone(),
                Replacing {
                    group: s.group.clone(),
                    reason: reason.unwrap_or(DisruptionReason::Drift),
                    since: intent.since,
                },
            );
        }
        (Action::Consolidation, Some(s)) => consolidations
            .entry((s.group.clone(), intent.since, intent.plan.clone(), s.count))
            .or_default()
            .push(n.name.clone()),
        (Action::Descheduled, _) => {
            memory.emptying.insert(n.name.clone(), intent.since);
        }
        (Action::Notice, _) => {
            if let Some(r) = reason {
                memory.noticed.insert(n.name.clone(), (r, intent.since));
            }
        }
        _ => {}
    }
}
