//! Exponential backoff, one rule for every retry: the pause doubles after each failure in a row, from a
//! first pause up to a cap. The engine's backoff of a group after failed scale-ups and the binary's
//! retry loops (watches, queues) all take their pauses from here, so they cannot drift apart.

use std::time::Duration;

/// A pause that doubles per failure in a row, from `first` up to `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exponential {
    pub first: Duration,
    pub max: Duration,
}

impl Exponential {
    /// Pauses from `first` up to `max`.
    pub const fn new(first: Duration, max: Duration) -> Self {
        Exponential { first, max }
    }

    /// The pause after one more failure: `first` when there was none before (`last` is None), else twice
    /// `last`, at most `max`.
    pub fn after(&self, last: Option<Duration>) -> Duration {
        match last {
            None => self.first,
            Some(last) => last.saturating_mul(2).min(self.max),
        }
    }

    /// The pauses of a retry loop that starts now.
    pub fn retries(self) -> Retries {
        Retries {
            policy: self,
            last: None,
        }
    }
}

/// Where a retry loop is in its pauses: each failure takes the next, a success starts over.
#[derive(Debug, Clone)]
pub struct Retries {
    policy: Exponential,
    last: Option<Duration>,
}

impl Retries {
    /// The pause before the next attempt: the first one, then doubled per call up to the cap.
    pub fn next_pause(&mut self) -> Duration {
        let pause = self.policy.after(self.last);
        self.last = Some(pause);
        pause
    }

    /// An attempt succeeded: the next failure waits the first pause again.
    pub fn reset(&mut self) {
        self.last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: Exponential =
        Exponential::new(Duration::from_secs(300), Duration::from_secs(1800));

    #[test]
    fn pauses_double_up_to_the_cap() {
        let secs = |d: Duration| d.as_secs();
        assert_eq!(secs(POLICY.after(None)), 300);
        assert_eq!(secs(POLICY.after(Some(Duration::from_secs(300)))), 600);
        assert_eq!(secs(POLICY.after(Some(Duration::from_secs(1200)))), 1800);
        assert_eq!(secs(POLICY.after(Some(Duration::MAX))), 1800, "no overflow");
    }

    #[test]
    fn a_retry_loop_starts_over_after_a_success() {
        let mut r = Exponential::new(Duration::from_millis(500), Duration::from_secs(2)).retries();
        let pauses: Vec<u128> = (0..5).map(|_| r.next_pause().as_millis()).collect();
        assert_eq!(pauses, [500, 1000, 2000, 2000, 2000]);
        r.reset();
        assert_eq!(r.next_pause(), Duration::from_millis(500));
    }
}
