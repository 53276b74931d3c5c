//! The process's clocks, read here and handed to the core, which never reads one itself: the wall clock
//! in Unix seconds (the loop's `now`, `/health-check`) and a monotonic clock for time budgets.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::clock::Clock;

/// The process's monotonic clock.
pub struct Monotonic;

/// The one instance.
pub static MONOTONIC: Monotonic = Monotonic;

impl Clock for Monotonic {
    fn elapsed(&self) -> Duration {
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed()
    }
}

/// The wall clock in Unix seconds, as the engine and `/health-check` count time.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
