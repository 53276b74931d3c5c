//! Leader election on a `coordination.k8s.io/v1` Lease, by client-go's rules, so several replicas of
//! `ferroscale run` can run and only one acts: a lease is free when its holder has not renewed it for
//! `leaseDurationSeconds` as measured on this replica's clock (no trust in other clocks), and every write
//! carries the resourceVersion that was read, so of two replicas racing for a free lease one gets a
//! conflict and stays a follower.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use kube::Client;
use parking_lot::Mutex;
use tokio::sync::watch;

use super::status_code;
use crate::error::{Error, Result};

/// Upstream's `--leader-elect-*` flags.
#[derive(Debug, Clone)]
pub struct LeaseSettings {
    pub namespace: String,
    /// `--leader-elect-resource-name`.
    pub name: String,
    /// This replica's holder identity (host name plus a random suffix, as client-go).
    pub identity: String,
    /// `--leader-elect-lease-duration`: how long followers wait after the last renewal.
    pub lease_duration: Duration,
    /// `--leader-elect-renew-deadline`: how long the leader keeps acting while renewals fail.
    pub renew_deadline: Duration,
    /// `--leader-elect-retry-period`: time between attempts.
    pub retry_period: Duration,
}

/// Whether this replica may still change anything: checked right before every mutating call (resizes,
/// taints, evictions, deletions, the status) and false the moment a renewal fails past the renew
/// deadline or another replica takes the Lease, so no call is made on leadership already lost.
#[derive(Clone)]
pub struct Fence(Option<watch::Receiver<bool>>);

impl Fence {
    /// No Lease (`--leader-elect=false`): always allowed.
    pub fn open() -> Self {
        Fence(None)
    }

    /// Follows the leadership an elector publishes.
    pub fn following(leading: watch::Receiver<bool>) -> Self {
        Fence(Some(leading))
    }

    /// Ok while leading; an error naming `what` was not done otherwise.
    pub fn check(&self, what: &str) -> Result<()> {
        match &self.0 {
            Some(leading) if !*leading.borrow() => Err(Error::LeadershipLost {
                reason: format!("not the leader any more: {what} not done"),
            }),
            _ => Ok(()),
        }
    }
}

/// The holder and renew time last seen, and when this replica first saw them.
struct Observed {
    record: (Option<String>, Option<Timestamp>),
    at: Instant,
}

/// One replica's side of the election.
pub struct Elector {
    api: Api<Lease>,
    settings: LeaseSettings,
    observed: Mutex<Option<Observed>>,
}

impl Elector {
    pub fn new(client: Client, settings: LeaseSettings) -> Self {
        Elector {
            api: Api::namespaced(client, &settings.namespace),
            settings,
            observed: Mutex::new(None),
        }
    }

    /// The lease as the API server has it.
    pub async fn read(&self) -> Result<Option<Lease>> {
        self.api
            .get_opt(&self.settings.name)
            .await
            .map_err(|e| Error::kube(format!("reading Lease {}", self.settings.name), e))
    }

    /// One round: true when this replica holds the lease afterwards.
    pub async fn try_acquire_or_renew(&self) -> Result<bool> {
        let current = self.read().await?;
        self.write(current).await
    }

    /// Takes or renews the lease given as it was read; a write that conflicts with another replica's
    /// (the lease changed since `current` was read) leaves this one a follower.
    pub async fn write(&self, current: Option<Lease>) -> Result<bool> {
        let s = &self.settings;
        let now = MicroTime(Timestamp::now());
        let context = || format!("writing Lease {}", s.name);
        let spec = |acquired: MicroTime, transitions: i32| LeaseSpec {
            holder_identity: Some(s.identity.clone()),
            lease_duration_seconds: Some(s.lease_duration.as_secs().max(1) as i32),
            acquire_time: Some(acquired),
            renew_time: Some(now.clone()),
            lease_transitions: Some(transitions),
            ..Default::default()
        };
        let Some(lease) = current else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(s.name.clone()),
                    namespace: Some(s.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(spec(now.clone(), 0)),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(e) if status_code(&e) == Some(409) => Ok(false),
                Err(e) => Err(Error::kube(context(), e)),
            };
        };
        let old = lease.spec.clone().unwrap_or_default();
        let holder = old.holder_identity.clone().filter(|h| !h.is_empty());
        let mine = holder.as_deref() == Some(s.identity.as_str());
        if !mine && holder.is_some() {
            let record = (holder.clone(), old.renew_time.as_ref().map(|t| t.0));
            let mut observed = self.observed.lock();
            let seen = match observed.as_ref() {
                Some(o) if o.record == record => o.at,
                _ => {
                    *observed = Some(Observed {
                        record,
                        at: Instant::now(),
                    });
                    Instant::now()
                }
            };
            let duration = old
                .lease_duration_seconds
                .map(|d| Duration::from_secs(d.max(0) as u64))
                .unwrap_or(s.lease_duration);
            if seen.elapsed() < duration {
                return Ok(false);
            }
        }
        let new = if mine {
            spec(
                old.acquire_time.clone().unwrap_or(now.clone()),
                old.lease_transitions.unwrap_or(0),
            )
        } else {
            spec(now.clone(), old.lease_transitions.unwrap_or(0) + 1)
        };
        let mut updated = lease;
        updated.spec = Some(new);
        match self
            .api
            .replace(&s.name, &PostParams::default(), &updated)
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if status_code(&e) == Some(409) => Ok(false),
            Err(e) => Err(Error::kube(context(), e)),
        }
    }

    /// Gives the lease up (on shutdown) so a follower takes over without waiting for it to expire.
    pub async fn release(&self) {
        let Ok(Some(mut lease)) = self.read().await else {
            return;
        };
        let Some(spec) = lease.spec.as_mut() else {
            return;
        };
        if spec.holder_identity.as_deref() != Some(self.settings.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        if let Err(e) = self
            .api
            .replace(&self.settings.name, &PostParams::default(), &lease)
            .await
        {
            tracing::warn!(error = %e, "could not release the Lease");
        }
    }

    /// Campaigns, then renews every retry period while leading, publishing whether this replica leads.
    /// Returns an error once leadership is lost (another replica took the lease, or renewals failed
    /// for the renew deadline): as upstream, the process then exits and restarts as a follower, so two
    /// replicas never act at once.
    pub async fn lead(&self, leading: watch::Sender<bool>) -> Result<()> {
        let s = &self.settings;
        let mut last_renewal = Instant::now();
        loop {
            let led = *leading.borrow();
            // A renewal that hangs must not keep this replica leading past its deadline: while leading
            // each attempt gets only the time left; a campaign attempt gets the renew deadline.
            let bound = if led {
                s.renew_deadline.saturating_sub(last_renewal.elapsed())
            } else {
                s.renew_deadline
            };
            let attempt = tokio::time::timeout(bound, self.try_acquire_or_renew())
                .await
                .unwrap_or_else(|_| {
                    Err(Error::KubernetesTimeout {
                        call: format!("the renewal of Lease {} (within {bound:?})", s.name),
                    })
                });
            match attempt {
                Ok(true) => {
                    last_renewal = Instant::now();
                    if !led {
                        tracing::info!(identity = %s.identity, lease = %s.name, "became the leader");
                        leading.send_replace(true);
                    }
                }
                Ok(false) if led => {
                    leading.send_replace(false);
                    return Err(Error::LeadershipLost {
                        reason: format!("another replica holds Lease {}/{}", s.namespace, s.name),
                    });
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "Lease renewal failed");
                    if led && last_renewal.elapsed() >= s.renew_deadline {
                        leading.send_replace(false);
                        return Err(Error::LeadershipLost {
                            reason: format!(
                                "Lease {}/{} not renewed within {:?}: {e}",
                                s.namespace, s.name, s.renew_deadline
                            ),
                        });
                    }
                }
            }
            tokio::time::sleep(s.retry_period).await;
        }
    }
}
