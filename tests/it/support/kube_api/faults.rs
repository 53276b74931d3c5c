//! What tests make the API server do wrong: hang or refuse requests, fail watches; and when requests
//! were received, for tests that reason about time on the same monotonic clock.

use super::KubeApi;

impl KubeApi {
    /// Requests starting with `prefix` (e.g. `PUT /apis/coordination.k8s.io/v1/leases`) hang until
    /// [`KubeApi::release`]: an API server that stopped answering.
    pub fn hold(&self, prefix: &str) {
        self.store.lock().unwrap().hold = Some(prefix.into());
    }

    /// Answers the held requests and stops holding.
    pub fn release(&self) {
        self.store.lock().unwrap().hold = None;
    }

    /// While `failing`, lists and watches of `collection` answer 500 and its open watches end.
    pub fn fail_watches(&self, collection: &str, failing: bool) {
        let mut s = self.store.lock().unwrap();
        if failing {
            s.failing.insert(collection.into());
            let _ = self.kills.send(collection.into());
        } else {
            s.failing.remove(collection);
        }
    }

    /// When the latest request starting with `prefix` received before `before` was received.
    pub fn last_received(
        &self,
        prefix: &str,
        before: std::time::Instant,
    ) -> Option<std::time::Instant> {
        let s = self.store.lock().unwrap();
        s.requests
            .iter()
            .zip(&s.received)
            .filter(|(r, at)| r.starts_with(prefix) && **at < before)
            .map(|(_, at)| *at)
            .max()
    }

    /// While `prefix` is Some, requests starting with it are answered 500 at once (an API server
    /// failing them, as opposed to [`KubeApi::hold`]'s hanging).
    pub fn refuse(&self, prefix: Option<&str>) {
        self.store.lock().unwrap().refuse = prefix.map(String::from);
    }
}
