//! Why the ledger declines a removal, and what each method makes of it.

use std::fmt;

use crate::engine::reasons::{Blocker, Unremovable};

/// Why the ledger declined a removal.
#[derive(Debug, Clone, PartialEq)]
pub enum Declined {
    /// The group's disruption window is closed.
    Window { group: String },
    /// The group would go below its min size.
    MinSize { group: String },
    /// The group has `allowed` nodes out of service already.
    Budget { group: String, allowed: usize },
    /// `--max-scale-down-parallelism` or `--max-drain-parallelism` is reached; `earlier`: by removals
    /// still in flight from earlier loops, else by this loop's.
    Parallelism { earlier: bool },
    /// `--max-evictions-per-loop` would be passed.
    EvictionLimit { max: usize },
    /// A PodDisruptionBudget covering one of the pods allows no more disruption this loop.
    Pdb(Blocker),
}

impl fmt::Display for Declined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Declined::Window { group } => write!(f, "group {group}'s disruption window is closed"),
            Declined::MinSize { group } => write!(f, "group {group} at min size"),
            Declined::Budget { group, allowed } => write!(
                f,
                "group {group} has its disruption budget ({allowed}) of nodes out"
            ),
            Declined::Parallelism { .. } => f.write_str(
                "--max-scale-down-parallelism or --max-drain-parallelism removals under way",
            ),
            Declined::EvictionLimit { max } => {
                write!(f, "--max-evictions-per-loop ({max}) reached this loop")
            }
            Declined::Pdb(b) => write!(f, "{b}"),
        }
    }
}

impl From<Declined> for Unremovable {
    fn from(d: Declined) -> Self {
        use Unremovable as U;
        match d {
            Declined::Window { group } => U::OutsideDisruptionWindow { group },
            Declined::MinSize { group } => U::AtMinSize { group },
            Declined::Budget { group, allowed } => U::DisruptionBudget { group, allowed },
            Declined::Parallelism { earlier: true } => U::ParallelismReached,
            Declined::Parallelism { earlier: false } => U::WaitsForNextLoop,
            Declined::EvictionLimit { max } => U::EvictionLimit { max },
            Declined::Pdb(b) => U::Blocked(b),
        }
    }
}
