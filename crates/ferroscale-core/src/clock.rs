//! Time as the engine is given it: the loop's wall time is an argument (`now`, Unix seconds), and time
//! budgets are measured on a [`Clock`] the caller passes, so the engine never reads a clock itself and a
//! test can spend a budget without waiting.

use std::time::Duration;

/// A monotonic clock: time elapsed since a fixed point of the caller's choosing.
pub trait Clock: Sync {
    fn elapsed(&self) -> Duration;
}

/// A budget that runs out `limit` after it was started on a clock.
#[derive(Clone, Copy)]
pub struct Deadline<'a> {
    clock: &'a dyn Clock,
    at: Duration,
}

impl<'a> Deadline<'a> {
    /// A deadline `limit` from now on `clock`.
    pub fn after(clock: &'a dyn Clock, limit: Duration) -> Self {
        Deadline {
            clock,
            at: clock.elapsed().saturating_add(limit),
        }
    }

    /// Whether the budget is spent.
    pub fn passed(&self) -> bool {
        self.clock.elapsed() >= self.at
    }
}

/// A clock that stands still unless told to move: for tests and for callers that want no budget.
#[derive(Debug, Default)]
pub struct FixedClock(parking_lot::Mutex<Duration>);

impl FixedClock {
    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        *self.0.lock() += by;
    }
}

impl Clock for FixedClock {
    fn elapsed(&self) -> Duration {
        *self.0.lock()
    }
}
