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
/// The elector publishes [`Term`]s; [`Fence`] is named here too for the loops that hold one.
pub use crate::leadership::{Fence, Term};

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

/// client-go's margin between the renew deadline and the retry period (`JitterFactor`).
pub const JITTER_FACTOR: f64 = 1.2;

impl LeaseSettings {
    /// client-go's rules for the times (`NewLeaderElector`), each error naming the flag at fault: the
    /// lease outlasts the renew deadline (as the Lease records it, in whole seconds), so a follower
    /// takes over only after the leader's term ended; the renew deadline leaves room for more than one
    /// attempt, retries jittered by [`JITTER_FACTOR`].
    pub fn check(&self) -> Result<()> {
        let recorded = Duration::from_secs(self.lease_duration.as_secs());
        if self.retry_period.is_zero() {
            return Err(Error::config(
                "--leader-elect-retry-period: must be above 0",
            ));
        }
        if recorded <= self.renew_deadline {
            return Err(Error::config(format!(
                "--leader-elect-lease-duration: {:?} (as the Lease records it, in whole seconds) must be greater than --leader-elect-renew-deadline ({:?})",
                recorded, self.renew_deadline
            )));
        }
        if self.renew_deadline <= self.retry_period.mul_f64(JITTER_FACTOR) {
            return Err(Error::config(format!(
                "--leader-elect-renew-deadline: {:?} must be greater than {JITTER_FACTOR} × --leader-elect-retry-period ({:?})",
                self.renew_deadline, self.retry_period
            )));
        }
        Ok(())
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
            lease_duration_seconds: Some(
                i32::try_from(s.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX),
            ),
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
                .map(|d| Duration::from_secs(u64::from(d.max(0).unsigned_abs())))
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

    /// Campaigns, then renews every retry period while leading, publishing each term. Returns an error
    /// once leadership is lost (another replica took the lease, or the term ended unrenewed): as
    /// upstream, the process then exits and restarts as a follower, so two replicas never act at once.
    pub async fn lead(&self, term: watch::Sender<Term>) -> Result<()> {
        let s = &self.settings;
        loop {
            let end = match *term.borrow() {
                Term::Until(end) => Some(end),
                _ => None,
            };
            if end.is_some_and(|end| Instant::now() >= end) {
                term.send_replace(Term::Over);
                return Err(Error::LeadershipLost {
                    reason: format!(
                        "Lease {}/{} not renewed within {:?}",
                        s.namespace, s.name, s.renew_deadline
                    ),
                });
            }
            // Followers measure the lease from when they see a renewal, which is after it started: a
            // term counted from the start never outlasts what they grant.
            let started = Instant::now();
            // A renewal that hangs must not outlive the term: while leading each attempt gets the
            // time left; a campaign attempt gets the renew deadline.
            let bound = end.map_or(s.renew_deadline, |end| {
                end.saturating_duration_since(started)
            });
            let attempt = tokio::time::timeout(bound, self.try_acquire_or_renew())
                .await
                .unwrap_or_else(|_| {
                    Err(Error::KubernetesTimeout {
                        call: format!("the renewal of Lease {} (within {bound:?})", s.name),
                    })
                });
            match attempt {
                Ok(true) => {
                    if end.is_none() {
                        tracing::info!(identity = %s.identity, lease = %s.name, "became the leader");
                    }
                    term.send_replace(Term::Until(started + s.renew_deadline));
                }
                Ok(false) if end.is_some() => {
                    term.send_replace(Term::Over);
                    return Err(Error::LeadershipLost {
                        reason: format!("another replica holds Lease {}/{}", s.namespace, s.name),
                    });
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "Lease renewal failed"),
            }
            // The next attempt a retry period on, or when the term ends if that is sooner.
            let mut next = Instant::now() + s.retry_period;
            if let Term::Until(end) = *term.borrow() {
                next = next.min(end);
            }
            tokio::time::sleep_until(next.into()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(lease: u64, renew: u64, retry: u64) -> Result<()> {
        LeaseSettings {
            namespace: "kube-system".into(),
            name: "cluster-autoscaler".into(),
            identity: "a".into(),
            lease_duration: Duration::from_millis(lease),
            renew_deadline: Duration::from_millis(renew),
            retry_period: Duration::from_millis(retry),
        }
        .check()
    }

    #[test]
    fn lease_times_follow_client_go_and_name_the_flag_at_fault() {
        assert!(times(15_000, 10_000, 2_000).is_ok(), "upstream's defaults");
        assert!(times(15_000, 14_000, 5_000).is_ok(), "client-go accepts it");
        let cases = [
            ((15_000, 15_000, 2_000), "--leader-elect-lease-duration"),
            ((1_500, 1_200, 200), "--leader-elect-lease-duration: 1s"),
            ((15_000, 12_000, 10_000), "--leader-elect-renew-deadline"),
            ((15_000, 2_400, 2_000), "--leader-elect-renew-deadline"),
            ((15_000, 10_000, 0), "--leader-elect-retry-period"),
        ];
        for ((lease, renew, retry), flag) in cases {
            let e = times(lease, renew, retry).unwrap_err();
            assert!(e.is_config(), "{e}");
            assert!(e.to_string().starts_with(flag), "{flag}: {e}");
        }
    }
}
