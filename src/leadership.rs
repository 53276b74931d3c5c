//! This replica's leadership as the rest of the program sees it: the [`Term`] the Lease's elector
//! (`k8s::lease`) publishes, and the [`Fence`] that every change checks right before it starts — cloud
//! writes (through `guard`'s write guard) and Kubernetes writes alike. Below both `cloud` and
//! `k8s`, so neither imports the other for it.

use std::time::Instant;

use tokio::sync::watch;

use crate::error::{Error, Result};

/// This replica's leadership as the elector publishes it. A term ends by itself at its end — the renew
/// deadline after the start of the last renewal that succeeded, on the monotonic clock — whatever the
/// elector's loop is doing (waiting on a renewal that hangs, sleeping between attempts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Term {
    /// No Lease (`--leader-elect=false`): leads for good.
    Unbounded,
    /// Leads until this instant, unless a renewal extends it.
    Until(Instant),
    /// Follows.
    Over,
}

impl Term {
    /// Whether this replica leads now.
    pub fn leads(&self) -> bool {
        match self {
            Term::Unbounded => true,
            Term::Until(end) => Instant::now() < *end,
            Term::Over => false,
        }
    }
}

/// Whether this replica may still change anything: checked right before every mutating call (resizes,
/// taints, evictions, deletions, the status; cloud writes inside their group's lock, through the write
/// guard of `guard`) and false from the instant the term ends, so no call is started on
/// leadership already lost.
#[derive(Clone)]
pub struct Fence(Option<watch::Receiver<Term>>);

impl Fence {
    /// No Lease (`--leader-elect=false`): always allowed.
    pub fn open() -> Self {
        Fence(None)
    }

    /// Follows the terms an elector publishes.
    pub fn following(term: watch::Receiver<Term>) -> Self {
        Fence(Some(term))
    }

    /// Whether this replica leads now.
    pub fn leads(&self) -> bool {
        self.0.as_ref().is_none_or(|t| t.borrow().leads())
    }

    /// Ok while leading; an error naming `what` was not done otherwise.
    pub fn check(&self, what: &str) -> Result<()> {
        if self.leads() {
            return Ok(());
        }
        Err(Error::LeadershipLost {
            reason: format!("not the leader any more: {what} not done"),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_term_ends_by_itself() {
        assert!(Term::Unbounded.leads());
        assert!(!Term::Over.leads());
        assert!(Term::Until(Instant::now() + Duration::from_secs(60)).leads());
        assert!(!Term::Until(Instant::now()).leads());
        let (tx, rx) = watch::channel(Term::Until(Instant::now() + Duration::from_secs(60)));
        let fence = Fence::following(rx);
        assert!(fence.check("resizing").is_ok());
        tx.send_replace(Term::Until(Instant::now()));
        let e = fence.check("resizing").unwrap_err();
        assert!(matches!(e, Error::LeadershipLost { .. }), "{e}");
    }
}
