//! The `Cloud` abstraction: where node groups live and how they change size. Reads go through an
//! immutable [`Snapshot`] that a cloud republishes after every change, so the services that answer
//! cluster-autoscaler never wait on a cloud API; writes are validated by the model's `plan_*` checks.

pub mod aws;
pub mod memory;

pub use crate::guard::WriteGuard;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::RwLock;

use crate::error::Result;
use crate::model::lifecycle::NoticeKind;
use crate::model::Snapshot;

/// The published snapshot of a cloud: readers take an `Arc` and never wait on a writer for longer than
/// the pointer swap.
#[derive(Default)]
pub struct SnapshotCell(RwLock<Arc<Snapshot>>);

impl SnapshotCell {
    pub fn new(s: Snapshot) -> Self {
        SnapshotCell(RwLock::new(Arc::new(s)))
    }

    /// The current snapshot.
    pub fn load(&self) -> Arc<Snapshot> {
        self.0.read().clone()
    }

    /// Publishes a new snapshot.
    pub fn store(&self, s: Snapshot) {
        *self.0.write() = Arc::new(s);
    }
}

/// Whether a cloud has loaded its state, with a line for `/readyz`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    pub ready: bool,
    pub detail: String,
}

/// The group of each of `instance_ids` that `snapshot` holds an instance of.
pub fn snapshot_owners(snapshot: &Snapshot, instance_ids: &[String]) -> HashMap<String, String> {
    let wanted: HashSet<&str> = instance_ids.iter().map(String::as_str).collect();
    snapshot
        .groups()
        .flat_map(|g| g.instances.iter().map(move |i| (i, g)))
        .map(|(i, g)| (crate::model::instance_id(&i.id), g))
        .filter(|(id, _)| wanted.contains(id))
        .map(|(id, g)| (id.to_string(), g.id.clone()))
        .collect()
}

/// What the cloud says now of a notice about one of its instances (an interruption message's word).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The cloud agrees, or has nothing to say about it: the notice is acted on.
    Stands,
    /// The cloud says otherwise (why): the notice moves nothing.
    Contradicted(String),
    /// The cloud could not be asked (why): the notice is left for later, as unverifiable.
    Unchecked(String),
}

/// A source of node groups that can be resized.
#[async_trait]
pub trait Cloud: Send + Sync + 'static {
    /// Short name for logs and `/readyz` ("memory", "aws").
    fn name(&self) -> &'static str;

    /// The current state; cheap (an `Arc` clone) and never blocked by cloud calls.
    fn snapshot(&self) -> Arc<Snapshot>;

    /// Brings the snapshot up to date; CA calls this before every loop.
    async fn refresh(&self) -> Result<()>;

    /// Raises a group's target size by `delta` (> 0), never above max, atomically per group. Every
    /// write starts only while `guard` allows, checked inside the group's lock right before the call.
    async fn increase_size(&self, group: &str, delta: i32, guard: &WriteGuard) -> Result<()>;

    /// Deletes the named instances (by provider id) and lowers the target by as many; all or nothing,
    /// except that no call is started once `guard` refuses ([`crate::error::Error::NotStarted`] then
    /// names what was and was not deleted).
    async fn delete_nodes(
        &self,
        group: &str,
        provider_ids: &[String],
        guard: &WriteGuard,
    ) -> Result<()>;

    /// Lowers the target by `-delta` (delta < 0), cancelling only capacity not yet fulfilled; only
    /// while `guard` allows.
    async fn decrease_target_size(&self, group: &str, delta: i32, guard: &WriteGuard)
        -> Result<()>;

    /// The managed group of each of `instance_ids` (instance ids, as a provider id ends) as the cloud
    /// says *now*, not as the snapshot last saw it; an id of no managed group is left out. An
    /// interruption notice about an instance the snapshot does not know is checked this way before it
    /// is acted on. The default reads the snapshot, for a cloud whose snapshot is always current.
    async fn owners(&self, instance_ids: &[String]) -> Result<HashMap<String, String>> {
        Ok(snapshot_owners(&self.snapshot(), instance_ids))
    }

    /// Checks each notice (instance id, what it says) against what the cloud says of the instance now,
    /// in as few calls as it can; one verdict per notice, in order. The default has nothing to say (a
    /// cloud without such a word, like the memory cloud): every notice stands.
    async fn check_notices(&self, notices: &[(String, NoticeKind)]) -> Vec<Verdict> {
        vec![Verdict::Stands; notices.len()]
    }

    /// Releases resources before shutdown.
    async fn cleanup(&self) -> Result<()> {
        Ok(())
    }

    /// Whether the state is loaded, for `/readyz`.
    fn readiness(&self) -> Readiness;

    /// Time since the served prices were last read from their source (None: never, or static prices).
    fn price_age(&self) -> Option<Duration> {
        None
    }

    /// Time since the served state was last read from the cloud (None: never, or always current).
    fn state_age(&self) -> Option<Duration> {
        None
    }
}
