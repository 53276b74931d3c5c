//! The clock and pacing of a simulation: loops, the time between them, and how long new nodes take to
//! start, for the whole cluster or group by group.

use std::collections::BTreeMap;
use std::time::Duration;

/// How long a group's new nodes take to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartUp {
    /// From scale-up to the node joining (0: at the next loop).
    pub provision_delay: Duration,
    /// From a node joining (NotReady, tainted) to its being Ready (0: at once).
    pub node_ready_delay: Duration,
}

/// The clock and pacing of a simulation.
#[derive(Debug, Clone)]
pub struct Pacing {
    pub loops: u32,
    /// `--scan-interval`: virtual time between loops.
    pub scan_interval: Duration,
    /// `--provision-delay`: from scale-up to the node joining (0: at the next loop), for every group
    /// not in `by_group`.
    pub provision_delay: Duration,
    /// `--node-ready-delay`: from a node joining (NotReady, tainted) to its being Ready (0: at once),
    /// for every group not in `by_group`.
    pub node_ready_delay: Duration,
    /// Groups whose nodes start at their own speed (a replay's calibration, group by group).
    pub by_group: BTreeMap<String, StartUp>,
}

impl Pacing {
    /// How long `group`'s new nodes take to start: its own times, else the cluster's.
    pub fn start_up(&self, group: &str) -> StartUp {
        self.by_group.get(group).copied().unwrap_or(StartUp {
            provision_delay: self.provision_delay,
            node_ready_delay: self.node_ready_delay,
        })
    }
}
