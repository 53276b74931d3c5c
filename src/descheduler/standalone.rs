//! `ferroscale deschedule`'s loop: run's watch-fed index brought up to date before every cycle, one
//! cycle per `--descheduling-interval` (one cycle in all with 0, as the descheduler), while this replica
//! holds the Lease when leader election is on.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::{Cycle, Descheduler, DeschedulerSettings};
use crate::error::{Error, Result};
use crate::k8s::events::Events;
use crate::k8s::index::Index;
use crate::k8s::lease::{Elector, Fence, LeaseSettings, Term};
use crate::k8s::watch::Watches;
use crate::metrics::{DeschedulerMetrics, Metrics};

/// How long a single cycle's process waits for its events to be written.
const EVENTS_FLUSH: Duration = Duration::from_secs(10);

/// One cycle on the index brought up to date at `now`; none while a watch cannot be trusted (the
/// index may have missed pods or nodes).
async fn once(d: &mut Descheduler, index: &mut Index, watches: &Watches, now: i64) -> Cycle {
    index.update(watches, now);
    let doubts = watches.doubts();
    if let Some(doubt) = doubts.first() {
        tracing::warn!(%doubt, "no descheduling while the cluster's state cannot be trusted");
        return Cycle::default();
    }
    d.cycle(index, &HashSet::new(), now).await
}

/// Runs the descheduler until `shutdown` completes (or after one cycle with a zero interval). With a
/// Lease, cycles run only while this replica leads; losing it ends the run with an error (the process
/// restarts as a follower).
pub async fn serve(
    settings: DeschedulerSettings,
    client: Client,
    watches: Watches,
    lease: Option<LeaseSettings>,
    instance: &str,
    metrics: Arc<Metrics>,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<()> {
    let events = if settings.dry_run {
        Events::none()
    } else {
        Events::start(&client, instance)
    };
    let record = metrics
        .descheduler
        .clone()
        .unwrap_or_else(DeschedulerMetrics::unregistered);
    let interval = settings.interval;
    let mut d = Descheduler::new(settings, client.clone(), events.clone(), record);
    let mut index = Index::default();
    if interval.is_zero() {
        once(&mut d, &mut index, &watches, crate::time::loop_now()).await;
        // Events are written in the background: the process waits for them before it ends.
        if !events.flushed(EVENTS_FLUSH).await {
            tracing::warn!("some events were not written before the end");
        }
        return Ok(());
    }
    let first = if lease.is_none() {
        Term::Unbounded
    } else {
        Term::Over
    };
    let (leading_tx, leading) = watch::channel(first);
    let elector = lease.clone().map(|s| Arc::new(Elector::new(client, s)));
    let mut campaign = JoinSet::new();
    if let Some(e) = elector.clone() {
        d.set_fence(Fence::following(leading.clone()));
        campaign.spawn(async move { e.lead(leading_tx).await });
    }
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut shutdown = std::pin::pin!(shutdown);
    let outcome = loop {
        tokio::select! {
            _ = &mut shutdown => break Ok(()),
            Some(done) = campaign.join_next() => {
                break done.unwrap_or_else(|e| Err(Error::task("the leader election", e)));
            }
            _ = tick.tick() => {
                if leading.borrow().leads() {
                    once(&mut d, &mut index, &watches, crate::time::loop_now()).await;
                }
            }
        }
    };
    campaign.abort_all();
    if let (Some(e), true) = (elector, outcome.is_ok() && leading.borrow().leads()) {
        let bound = lease.map_or(Duration::from_secs(1), |l| l.renew_deadline);
        if tokio::time::timeout(bound, e.release()).await.is_err() {
            tracing::warn!("the Lease was not released in time; it expires by itself");
        }
    }
    outcome
}
