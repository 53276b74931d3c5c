//! Strategies that do not run in a cycle, and why: a `LowNodeUtilization` reading actual usage
//! (`metricsUtilization`) without the metrics of every node it looks at does nothing that cycle, as
//! the descheduler's plugin fails its `Balance`; the plan reports it ([`Skipped`]).

use thiserror::Error;

use crate::deschedule::args::Strategy;
use crate::deschedule::policy::Policy;
use crate::deschedule::strategies::PluginArgs;
use crate::deschedule::view::View;

/// Why a strategy did not run this cycle.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Unavailable {
    /// It reads actual usage and none has been collected.
    #[error("metricsUtilization: no metrics collected (metrics.k8s.io)")]
    NoMetrics,
    /// It reads actual usage and this node is not in the collected metrics.
    #[error("metricsUtilization: node {0} is not in the collected metrics (metrics.k8s.io)")]
    NodeMissing(String),
}

/// A strategy that did not run this cycle, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub profile: String,
    pub strategy: Strategy,
    pub why: Unavailable,
}

/// Whether a configured strategy has what it reads: one that reads actual usage needs every node
/// it looks at in the collected metrics, or it does nothing this cycle (as the descheduler's
/// plugin fails its `Balance`).
pub fn check(args: &PluginArgs, view: &View) -> Result<(), Unavailable> {
    let PluginArgs::LowNodeUtilization(a) = args else {
        return Ok(());
    };
    if !a.reads_metrics() {
        return Ok(());
    }
    let usage = view.cluster.usage.ok_or(Unavailable::NoMetrics)?;
    match view.nodes().iter().find(|n| usage.node(&n.name).is_none()) {
        Some(n) => Err(Unavailable::NodeMissing(n.name.clone())),
        None => Ok(()),
    }
}

/// Whether a profile of the policy has a strategy reading actual usage: `run` and `deschedule`
/// collect the metrics only then.
pub fn reads_metrics(policy: &Policy) -> bool {
    policy.profiles.iter().any(|p| {
        p.strategies.iter().any(|s| match s {
            PluginArgs::LowNodeUtilization(a) => a.reads_metrics(),
            _ => false,
        })
    })
}
