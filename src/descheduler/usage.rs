//! metrics-server's usage for `run` and `ferroscale deschedule`, when a strategy's
//! `metricsUtilization` asks, collected as the descheduler's metrics collector does: the nodes'
//! `NodeMetrics` every five seconds, each collection smoothed into the last
//! (`deschedule::actual::Usage::collect`), the first one before the first cycle; the pods'
//! `PodMetrics` as they are when a cycle starts.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::deschedule::actual::{Usage, COLLECT_EVERY_SECS};
use crate::k8s::metrics_server;

/// The nodes' usage collected in the background.
#[derive(Debug)]
pub(super) struct Collector {
    nodes: Arc<Mutex<Usage>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Collector {
    /// Collects once now (the descheduler waits for a first collection), then every
    /// [`COLLECT_EVERY_SECS`] in the background. A failed collection is logged; the nodes keep
    /// the values they had.
    pub async fn start(client: kube::Client) -> Collector {
        let mut first = Usage::default();
        if let Err(e) = metrics_server::collect_nodes(&client, &mut first).await {
            tracing::warn!(error = %e, "collecting NodeMetrics (metrics.k8s.io) failed; tried again in the background");
        }
        let nodes = Arc::new(Mutex::new(first));
        let shared = nodes.clone();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(COLLECT_EVERY_SECS));
            tick.tick().await;
            loop {
                tick.tick().await;
                let mut u = shared.lock().clone();
                match metrics_server::collect_nodes(&client, &mut u).await {
                    Ok(()) => *shared.lock() = u,
                    Err(e) => tracing::warn!(error = %e, "collecting NodeMetrics failed"),
                }
            }
        });
        Collector { nodes, task }
    }

    /// The usage for a cycle: the nodes' as collected, the pods' listed now. None when nothing
    /// was collected yet or the pods' list fails (the strategy then does not run this cycle).
    pub async fn now(&self, client: &kube::Client) -> Option<Usage> {
        let mut u = self.nodes.lock().clone();
        if u.nodes.is_empty() {
            return None;
        }
        match metrics_server::refresh_pods(client, &mut u).await {
            Ok(()) => Some(u),
            Err(e) => {
                tracing::warn!(error = %e, "listing PodMetrics (metrics.k8s.io) failed");
                None
            }
        }
    }
}
