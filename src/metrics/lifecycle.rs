//! The node lifecycle's metrics (`ferroscale run`): nodes taken out of service other than by
//! scale-down, and the interruption queue's messages and health.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Labels of `ferroscale_nodes_disrupted_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DisruptedLabels {
    pub reason: &'static str,
    pub node_group: String,
}

/// Labels of `ferroscale_interruption_messages_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MessageLabels {
    /// `spot-interruption`, `rebalance`, `scheduled-change`, `state-change`, or `unknown` for a message
    /// that names no kind ferroscale knows.
    pub kind: &'static str,
    /// `handled` (its node marked), `foreign` (no managed group's instance, per the snapshot and a
    /// fresh read), `ignored` (a kind or state not acted on), `malformed`, `unverified` (its envelope
    /// does not hold up), `contradicted` (EC2 says otherwise of the instance: deleted), `repeated` (a
    /// notice already held, received again: deleted), `unverifiable` (the fresh read or EC2 check
    /// failed: left in the queue, retried), `expired` (a managed instance whose node never showed up in
    /// time).
    pub result: &'static str,
}

/// Registered by [`super::Metrics::for_run`].
#[derive(Clone)]
pub struct LifecycleMetrics {
    disrupted: Family<DisruptedLabels, Counter>,
    messages: Family<MessageLabels, Counter>,
    queue_up: Gauge,
    inbox: Gauge,
    held: Gauge,
}

impl LifecycleMetrics {
    pub(super) fn register(registry: &mut Registry) -> Self {
        let m = LifecycleMetrics {
            disrupted: Family::default(),
            messages: Family::default(),
            queue_up: Gauge::default(),
            inbox: Gauge::default(),
            held: Gauge::default(),
        };
        registry.register(
            "ferroscale_nodes_disrupted",
            "Nodes taken out of service other than by scale-down, by reason and group",
            m.disrupted.clone(),
        );
        registry.register(
            "ferroscale_interruption_messages",
            "Interruption queue messages, by kind and what became of them",
            m.messages.clone(),
        );
        registry.register(
            "ferroscale_interruption_queue_up",
            "1 while the interruption queue answers, 0 while receiving from it fails",
            m.queue_up.clone(),
        );
        registry.register(
            "ferroscale_interruption_inbox_messages",
            "Interruption messages received and not yet settled, a notice's node not marked yet (at most the inbox cap)",
            m.inbox.clone(),
        );
        registry.register(
            "ferroscale_interruption_held_messages",
            "Interruption messages whose nodes are marked, held until the nodes are gone (outside the inbox cap)",
            m.held.clone(),
        );
        m
    }

    /// A node was taken out of service.
    pub fn disrupted(&self, reason: &'static str, node_group: &str) {
        self.disrupted
            .get_or_create(&DisruptedLabels {
                reason,
                node_group: node_group.to_string(),
            })
            .inc();
    }

    /// A message (or one notice of it) was dealt with.
    pub fn message(&self, kind: &'static str, result: &'static str) {
        self.messages
            .get_or_create(&MessageLabels { kind, result })
            .inc();
    }

    /// Messages received and not yet settled.
    pub fn inbox(&self, held: usize) {
        self.inbox.set(i64::try_from(held).unwrap_or(i64::MAX));
    }

    /// Messages held by their marked nodes.
    pub fn held(&self, held: usize) {
        self.held.set(i64::try_from(held).unwrap_or(i64::MAX));
    }

    /// Whether the queue answers.
    pub fn queue_up(&self, up: bool) {
        self.queue_up.set(i64::from(up));
    }
}
