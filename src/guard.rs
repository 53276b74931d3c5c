//! The right to start a write on the cloud. Every write is handed its caller's [`WriteGuard`], and the
//! cloud checks it inside the group's write lock immediately before each call that changes the cloud
//! (SetDesiredCapacity, TerminateInstanceInAutoScalingGroup): a write queued behind another is never
//! started for a caller that gave up (its gRPC deadline passed, it cancelled) nor for a replica whose
//! term as leader ended while it waited. A call already sent completes and is recorded: stopping it
//! halfway would leave what AWS did unknown. Below both `cloud` (which checks it) and `k8s` (whose live
//! cluster hands the actuator one fenced by the Lease).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{Mutex, MutexGuard};

use crate::error::Revoked;
use crate::leadership::Fence;

/// What a caller's right to start writes depends on; [`WriteGuard::always`] has no condition.
#[derive(Clone, Default)]
pub struct WriteGuard {
    /// No write starts at or after this instant.
    deadline: Option<Instant>,
    /// Set when the caller went away.
    gone: Option<Arc<AtomicBool>>,
    /// The Lease's fence: no write starts once the term as leader ended.
    fence: Option<Fence>,
}

/// The caller's side of a [`WriteGuard::for_caller`]: held while the caller waits for the write, and
/// dropped when it stops waiting (a cancelled RPC's handler is dropped), which revokes the guard.
pub struct Caller(Arc<AtomicBool>);

impl Drop for Caller {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl WriteGuard {
    /// No condition: every write may start (`simulate`, a replica without a Lease, tests).
    pub fn always() -> Self {
        WriteGuard::default()
    }

    /// Writes start only before `deadline` (if any) and while the returned [`Caller`] is held.
    pub fn for_caller(deadline: Option<Instant>) -> (Self, Caller) {
        let gone = Arc::new(AtomicBool::new(false));
        let guard = WriteGuard {
            deadline,
            gone: Some(gone.clone()),
            fence: None,
        };
        (guard, Caller(gone))
    }

    /// Writes start only while `fence` allows (this replica's term as leader has not ended).
    pub fn fenced(fence: Fence) -> Self {
        WriteGuard {
            fence: Some(fence),
            ..WriteGuard::default()
        }
    }

    /// Ok when a write may start now; why not otherwise. Called immediately before each cloud write.
    pub fn check(&self) -> Result<(), Revoked> {
        if self.gone.as_ref().is_some_and(|g| g.load(Ordering::SeqCst)) {
            return Err(Revoked::Cancelled);
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(Revoked::Deadline);
        }
        if self.fence.as_ref().is_some_and(|f| !f.leads()) {
            return Err(Revoked::Leadership);
        }
        Ok(())
    }

    /// Waits for a group's write lock, but not past the deadline: a write queued behind a slow one
    /// gives up when its caller's time is spent, and the guard is checked once the lock is held.
    pub async fn lock<'a>(&self, lock: &'a Mutex<()>) -> Result<MutexGuard<'a, ()>, Revoked> {
        let held = match self.deadline {
            Some(d) => tokio::time::timeout_at(d.into(), lock.lock())
                .await
                .map_err(|_| Revoked::Deadline)?,
            None => lock.lock().await,
        };
        self.check()?;
        Ok(held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_caller_that_went_away_or_ran_out_of_time_starts_nothing() {
        assert_eq!(WriteGuard::always().check(), Ok(()));
        let (guard, caller) = WriteGuard::for_caller(None);
        assert_eq!(guard.check(), Ok(()));
        drop(caller);
        assert_eq!(guard.check(), Err(Revoked::Cancelled));
        let (late, _caller) = WriteGuard::for_caller(Some(Instant::now()));
        assert_eq!(late.check(), Err(Revoked::Deadline));
    }

    #[tokio::test]
    async fn a_write_queued_behind_the_lock_gives_up_at_its_deadline() {
        let lock = Mutex::new(());
        let _first = lock.lock().await;
        let deadline = Instant::now() + Duration::from_millis(20);
        let (guard, _caller) = WriteGuard::for_caller(Some(deadline));
        assert_eq!(guard.lock(&lock).await.err(), Some(Revoked::Deadline));
    }
}
