//! Why a pending pod gets no new node this loop (`Pending`), and its words.

use std::fmt;

use super::Refusal;
use crate::model::volumes::Wait;

/// Why a pending pod gets no new node this loop.
#[derive(Debug, Clone, PartialEq)]
pub enum Pending {
    /// Its priority is below `--expendable-pods-priority-cutoff`.
    Expendable,
    /// Younger than `--new-pod-scale-up-delay`.
    TooNew,
    /// It fits on an existing node: no scale-up needed.
    FitsOnNode(String),
    /// It fits on a node its group is already launching: no scale-up needed.
    FitsOnUpcoming { group: String },
    /// The scheduler nominated a node for it (`status.nominatedNodeName`) and preempts pods there:
    /// it waits for them, placed on that node; no scale-up needed.
    Nominated(String),
    /// A claim it mounts must be bound (or created) before any node can take it; no new node helps.
    WaitsForVolume { claim: String, wait: Wait },
    /// There is no node group at all.
    NoNodeGroup,
    /// Every group refused it: each reason with how many groups gave it, most frequent first.
    NoGroupFits(Vec<(Refusal, usize)>),
}

impl Pending {
    /// Whether no existing or upcoming node will take the pod (upstream's unschedulable pods).
    pub fn unschedulable(&self) -> bool {
        !matches!(
            self,
            Pending::FitsOnNode(_) | Pending::FitsOnUpcoming { .. } | Pending::Nominated(_)
        )
    }

    /// Whether the pod could have triggered a scale-up and did not (upstream's NotTriggerScaleUp):
    /// unschedulable and not merely too new to count yet.
    pub fn not_triggered(&self) -> bool {
        self.unschedulable() && *self != Pending::TooNew
    }

    /// The groups' refusals, summarized: most frequent first, then by text.
    pub fn no_group_fits(refusals: impl IntoIterator<Item = (Refusal, usize)>) -> Pending {
        let mut v: Vec<(Refusal, usize)> = refusals.into_iter().collect();
        v.sort_by_cached_key(|(r, n)| (std::cmp::Reverse(*n), r.to_string()));
        Pending::NoGroupFits(v)
    }
}

const NO_SCALE_UP_NEEDED: &str = "no scale-up needed";

impl fmt::Display for Pending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pending::Expendable => {
                write!(
                    f,
                    "expendable: priority below --expendable-pods-priority-cutoff"
                )
            }
            Pending::TooNew => write!(f, "younger than --new-pod-scale-up-delay"),
            Pending::FitsOnNode(n) => write!(f, "fits on node {n}; {NO_SCALE_UP_NEEDED}"),
            Pending::FitsOnUpcoming { group } => {
                write!(
                    f,
                    "fits on an upcoming node of {group}; {NO_SCALE_UP_NEEDED}"
                )
            }
            Pending::Nominated(n) => write!(
                f,
                "nominated for node {n}, waits for its preemption there; {NO_SCALE_UP_NEEDED}"
            ),
            Pending::WaitsForVolume { claim, wait } => write!(
                f,
                "waits for pvc {claim}: {}; no node can take the pod before that",
                wait.as_str()
            ),
            Pending::NoNodeGroup => write!(f, "no node group"),
            Pending::NoGroupFits(refusals) => {
                write!(f, "no group fits: ")?;
                for (k, (r, n)) in refusals.iter().enumerate() {
                    if k > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{n} {r}")?;
                }
                Ok(())
            }
        }
    }
}
