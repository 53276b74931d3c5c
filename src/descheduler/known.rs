//! What a cycle reads beside the index: the values of the PriorityClasses the evictors'
//! `priorityThreshold.name` names and the labels of the Namespaces their `namespaceLabelSelector`
//! matches. `run` and `deschedule` read them from the API (`live`); `simulate` from its dump.

use std::collections::BTreeMap;

use super::Descheduler;
use crate::actuator::Cluster;

/// The PriorityClasses and Namespaces known to the descheduler.
#[derive(Debug, Default)]
pub(super) struct Known {
    /// PriorityClass name → value.
    pub priority_classes: BTreeMap<String, i32>,
    /// Namespace name → labels, when a profile's evictor has a `namespaceLabelSelector` (None: each
    /// pod's own namespace labels, as a dump sets them).
    pub namespaces: Option<BTreeMap<String, BTreeMap<String, String>>>,
}

impl<C: Cluster> Descheduler<C> {
    /// The PriorityClasses a dump holds (`simulate`): `run` reads those the policy names from the API.
    pub fn know_priority_classes(&mut self, classes: BTreeMap<String, i32>) {
        self.known.priority_classes = classes;
    }

    /// Whether a profile's evictor selects namespaces by their labels.
    pub(super) fn reads_namespaces(&self) -> bool {
        self.settings
            .policy
            .profiles
            .iter()
            .any(|p| p.evictor.namespace_label_selector.is_some())
    }
}
