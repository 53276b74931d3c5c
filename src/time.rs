//! The process's clocks, read here and handed to the core, which never reads one itself: the wall clock
//! in Unix seconds (what is compared with other machines' timestamps), the loop's clock (the `now` of
//! `ferroscale run`'s loops and `/health-check`, which never steps) and a monotonic clock for time
//! budgets.

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

/// Test-only: a file holding seconds added to the wall clock, re-read at every reading, so a test can
/// step the wall clock of a `ferroscale run` it started. Never set it in production.
pub const WALL_STEP_FILE_ENV: &str = "FERROSCALE_TEST_WALL_STEP_FILE";

/// The wall clock in Unix seconds: for comparing with timestamps other machines wrote (an interruption
/// notice's `time`, AWS activities). Delays between two readings of this process use [`LoopClock`].
pub fn unix_now() -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(crate::model::duration::secs)
        .unwrap_or(0);
    now + wall_step()
}

/// The seconds [`WALL_STEP_FILE_ENV`]'s file says, 0 without one.
fn wall_step() -> i64 {
    static FILE: OnceLock<Option<std::ffi::OsString>> = OnceLock::new();
    FILE.get_or_init(|| std::env::var_os(WALL_STEP_FILE_ENV))
        .as_ref()
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Unix seconds that move with monotonic time only: the wall clock read once, when the clock starts,
/// plus the monotonic time since.
///
/// Why: the engine's delays (unneeded, unregistered, provision, start-up, back-off, every timer in its
/// memory) are differences of its `now`s. Read from the wall clock, a step of it (NTP correcting a
/// paused VM, an operator's `date -s`) would pass them all at once: a forward step of 15 minutes
/// terminates booting instances as unregistered and ends every wait. Counted from one reading, the
/// values stay near Unix time (status times, node lifetimes against creation timestamps) but never
/// step; they drift from the wall clock only by its steps since the start.
#[derive(Debug, Clone, Copy)]
pub struct LoopClock {
    wall_at_start: i64,
    start: Instant,
}

impl LoopClock {
    /// Started now, on the wall clock.
    pub fn start() -> Self {
        LoopClock::starting_at(unix_now())
    }

    /// Started now, reading `unix` for the wall clock.
    pub fn starting_at(unix: i64) -> Self {
        LoopClock {
            wall_at_start: unix,
            start: Instant::now(),
        }
    }

    /// Unix seconds now, on this clock.
    pub fn now(&self) -> i64 {
        self.wall_at_start
            .saturating_add(crate::model::duration::secs(self.start.elapsed()))
    }
}

/// The process's loop clock (started at its first reading): the `now` of `run`'s loops and of
/// `/health-check`, which must agree.
pub fn loop_now() -> i64 {
    static CLOCK: OnceLock<LoopClock> = OnceLock::new();
    CLOCK.get_or_init(LoopClock::start).now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loop_clock_counts_monotonic_time_from_one_wall_reading() {
        let wall = unix_now();
        assert!((wall..=wall + 1).contains(&LoopClock::starting_at(wall).now()));
        let started = Instant::now().checked_sub(Duration::from_secs(90)).unwrap();
        let clock = LoopClock {
            wall_at_start: 1_000,
            start: started,
        };
        assert!((1_090..=1_091).contains(&clock.now()), "{}", clock.now());
    }
}
