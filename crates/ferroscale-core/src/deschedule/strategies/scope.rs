//! The pod filter most strategies share: their `namespaces` and `labelSelector` arguments.

use crate::deschedule::args::{Namespaces, Selector};
use crate::model::workload::{LabelSelector, Pod};

/// Which pods a strategy looks at.
pub struct Scope<'a> {
    namespaces: &'a Option<Namespaces>,
    selector: Option<LabelSelector>,
}

impl<'a> Scope<'a> {
    /// A selector with an unknown operator selects nothing (the policy refuses it before this).
    pub fn new(namespaces: &'a Option<Namespaces>, selector: &Option<Selector>) -> Self {
        let selector = selector
            .as_ref()
            .map(|s| s.to_selector().unwrap_or_else(|_| LabelSelector::nothing()));
        Scope {
            namespaces,
            selector,
        }
    }

    /// Whether the pod is in the strategy's namespaces and its selector (when set) matches it.
    pub fn admits(&self, pod: &Pod) -> bool {
        Namespaces::admits(self.namespaces, &pod.namespace)
            && self
                .selector
                .as_ref()
                .is_none_or(|s| s.matches(&pod.labels))
    }
}
