//! `LowNodeUtilization` on actual usage (`metricsUtilization`, `deschedule::actual`): a node's
//! measured cpu and memory in place of its pods' requests, and what ferroscale refuses of the
//! setting.

use super::usage::{Amounts, CPU, MEMORY, PODS};
use crate::deschedule::actual::Usage;
use crate::deschedule::args::{Problems, Thresholds};

/// A node's usage of `names` with its measured cpu and memory in place of its pods' requests
/// (`pods` stays the count of its pods); false when the node was not collected.
pub fn measured_amounts(usage: &Usage, node: &str, amounts: &mut Amounts) -> bool {
    let Some(m) = usage.node(node) else {
        return false;
    };
    for (name, v) in amounts.iter_mut() {
        match name.as_str() {
            CPU => *v = m.cpu_milli,
            MEMORY => *v = m.memory,
            _ => {}
        }
    }
    true
}

/// The checks of `metricsUtilization` (its `source` and `metricsServer`) beyond the descheduler's
/// own (`MetricsUtilization::validate`): what ferroscale cannot honour is refused by name. Prometheus is not read; a source must be
/// named (the descheduler's plugin fails every cycle without one); metrics-server measures cpu
/// and memory only, so thresholds on other resources (which make the descheduler's plugin fail
/// every cycle) are refused.
pub fn refusals(source: &str, metrics_server: bool, thresholds: &Thresholds, out: &mut Problems) {
    match (source, metrics_server) {
        ("Prometheus", _) => out.add(
            "metricsUtilization.source",
            "Prometheus is not supported: ferroscale reads actual usage from metrics-server \
             (source: KubernetesMetrics)",
        ),
        ("", false) => out.add(
            "metricsUtilization",
            "no source: set source: KubernetesMetrics (or metricsServer: true)",
        ),
        _ => {}
    }
    for name in thresholds.keys() {
        if ![CPU, MEMORY, PODS].contains(&name.as_str()) {
            out.add(
                format!("thresholds.{name}"),
                "metricsUtilization measures cpu and memory (and counts pods) only",
            );
        }
    }
}
