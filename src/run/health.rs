//! `/health-check` with upstream's semantics.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

/// `/health-check` with upstream's semantics: healthy until this replica starts acting (a follower is
/// healthy), then unhealthy when no loop started within `--max-inactivity` or none succeeded within
/// `--max-failing-time`.
pub struct Health {
    monitoring: AtomicBool,
    last_activity: AtomicI64,
    last_success: AtomicI64,
    max_inactivity: i64,
    max_failing: i64,
}

impl Health {
    pub fn new(max_inactivity: Duration, max_failing: Duration) -> Self {
        Health {
            monitoring: AtomicBool::new(false),
            last_activity: AtomicI64::new(0),
            last_success: AtomicI64::new(0),
            max_inactivity: crate::model::duration::secs(max_inactivity),
            max_failing: crate::model::duration::secs(max_failing),
        }
    }

    /// Starts the checks (this replica acts from now on).
    pub fn start(&self, now: i64) {
        self.last_activity.store(now, Ordering::Relaxed);
        self.last_success.store(now, Ordering::Relaxed);
        self.monitoring.store(true, Ordering::Relaxed);
    }

    /// A loop started.
    pub fn activity(&self, now: i64) {
        self.last_activity.store(now, Ordering::Relaxed);
    }

    /// A loop finished without error.
    pub fn success(&self, now: i64) {
        self.last_activity.store(now, Ordering::Relaxed);
        self.last_success.store(now, Ordering::Relaxed);
    }

    /// Ok, or why the process is unhealthy.
    pub fn check(&self, now: i64) -> std::result::Result<(), String> {
        if !self.monitoring.load(Ordering::Relaxed) {
            return Ok(());
        }
        let activity = self.last_activity.load(Ordering::Relaxed);
        if now - activity > self.max_inactivity {
            return Err(format!(
                "last activity {}s ago, more than --max-inactivity {}s",
                now - activity,
                self.max_inactivity
            ));
        }
        let success = self.last_success.load(Ordering::Relaxed);
        if now - success > self.max_failing {
            return Err(format!(
                "last successful loop {}s ago, more than --max-failing-time {}s",
                now - success,
                self.max_failing
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_check_follows_upstream() {
        let h = Health::new(Duration::from_secs(600), Duration::from_secs(900));
        // A follower (not yet acting) is healthy however long it waits.
        assert!(h.check(1_000_000).is_ok());
        h.start(0);
        assert!(h.check(600).is_ok());
        let err = h.check(601).unwrap_err();
        assert!(err.contains("--max-inactivity"), "{err}");
        // Loops keep starting but fail: unhealthy once none succeeded for --max-failing-time.
        for t in (0..=1000).step_by(10) {
            h.activity(t);
        }
        let err = h.check(1000).unwrap_err();
        assert!(err.contains("--max-failing-time"), "{err}");
        h.success(1000);
        assert!(h.check(1000).is_ok());
    }
}
