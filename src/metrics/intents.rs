//! `ferroscale_intents_reconciled_total`: what a new leader (or a restarted process) did with each
//! intent it found on the nodes before its first loop.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// Labels of `ferroscale_intents_reconciled_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IntentLabels {
    /// `scale-down`, `replacement`, `consolidation`, `notice`, `descheduled`, `surge`, or `unknown`
    /// for an annotation that could not be read.
    pub action: &'static str,
    /// `resumed`, `rolled_back` or `finished`.
    pub outcome: &'static str,
}

/// Registered with the loop's metrics.
#[derive(Clone)]
pub struct IntentMetrics {
    reconciled: Family<IntentLabels, Counter>,
}

impl IntentMetrics {
    pub(super) fn register(registry: &mut Registry) -> Self {
        let m = IntentMetrics {
            reconciled: Family::default(),
        };
        registry.register(
            "ferroscale_intents_reconciled",
            "Intents found on nodes at start, by action and what became of them",
            m.reconciled.clone(),
        );
        m
    }

    /// One intent was reconciled.
    pub fn reconciled(&self, action: &'static str, outcome: &'static str) {
        self.reconciled
            .get_or_create(&IntentLabels { action, outcome })
            .inc();
    }
}
