//! What a cycle reads beside the index: the values of the PriorityClasses the evictors'
//! `priorityThreshold.name` names and the labels of the Namespaces their `namespaceLabelSelector`
//! matches. `run` and `deschedule` read them from the API (`live`); `simulate` from its dump.

use std::collections::BTreeMap;

/// The PriorityClasses and Namespaces known to the descheduler.
#[derive(Debug, Default)]
pub(super) struct Known {
    /// PriorityClass name → value.
    pub priority_classes: BTreeMap<String, i32>,
    /// Namespace name → labels, when a profile's evictor has a `namespaceLabelSelector` (None: each
    /// pod's own namespace labels, as a dump sets them).
    pub namespaces: Option<BTreeMap<String, BTreeMap<String, String>>>,
    /// What metrics-server says nodes and pods use, when a strategy's `metricsUtilization` asks
    /// (`live` polls it; `simulate` moves its dump's with the pods).
    pub usage: Option<crate::deschedule::actual::Usage>,
    /// Collects the nodes' usage in the background (`live`), once a cycle needed it.
    pub collector: Option<super::usage::Collector>,
}
