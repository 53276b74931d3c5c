//! A cloud that stops `run` at a chosen step, for the kill matrix: a scale-up that never returns
//! (the process dies after writing its intents and before the surge is asked), or a delete that is
//! carried out and then never returns (the process dies right after asking). Everything else goes to
//! the cloud inside.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use ferroscale::cloud::{Cloud, Readiness, WriteGuard};
use ferroscale::error::Result;
use ferroscale::model::Snapshot;

/// The wrapper; cheap to share.
pub struct Gated {
    inner: Arc<dyn Cloud>,
    /// Scale-ups hang before reaching the cloud while set.
    pub hold_increase: AtomicBool,
    /// Deletes hang after the cloud carried them out while set.
    pub hold_after_delete: AtomicBool,
    /// Calls that reached a hold.
    pub held: AtomicU32,
    /// Scale-ups carried out (nodes asked for).
    pub asked: AtomicU32,
}

impl Gated {
    pub fn new(inner: Arc<dyn Cloud>) -> Arc<Gated> {
        Arc::new(Gated {
            inner,
            hold_increase: AtomicBool::new(false),
            hold_after_delete: AtomicBool::new(false),
            held: AtomicU32::new(0),
            asked: AtomicU32::new(0),
        })
    }

    /// Waits (up to 10 s) until a call reached a hold.
    pub async fn reached(&self) {
        for _ in 0..400 {
            if self.held.load(Ordering::SeqCst) > 0 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("no call reached the hold");
    }

    /// Lets calls through again.
    pub fn open(&self) {
        self.hold_increase.store(false, Ordering::SeqCst);
        self.hold_after_delete.store(false, Ordering::SeqCst);
        self.held.store(0, Ordering::SeqCst);
    }
}

#[async_trait]
impl Cloud for Gated {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        self.inner.snapshot()
    }

    async fn refresh(&self) -> Result<()> {
        self.inner.refresh().await
    }

    async fn increase_size(&self, group: &str, delta: i32, guard: &WriteGuard) -> Result<()> {
        if self.hold_increase.load(Ordering::SeqCst) {
            self.held.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<()>().await;
        }
        self.inner.increase_size(group, delta, guard).await?;
        self.asked.fetch_add(delta as u32, Ordering::SeqCst);
        Ok(())
    }

    async fn delete_nodes(
        &self,
        group: &str,
        provider_ids: &[String],
        guard: &WriteGuard,
    ) -> Result<()> {
        self.inner.delete_nodes(group, provider_ids, guard).await?;
        if self.hold_after_delete.load(Ordering::SeqCst) {
            self.held.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<()>().await;
        }
        Ok(())
    }

    async fn decrease_target_size(
        &self,
        group: &str,
        delta: i32,
        guard: &WriteGuard,
    ) -> Result<()> {
        self.inner.decrease_target_size(group, delta, guard).await
    }

    async fn owners(&self, instance_ids: &[String]) -> Result<HashMap<String, String>> {
        self.inner.owners(instance_ids).await
    }

    fn readiness(&self) -> Readiness {
        self.inner.readiness()
    }
}
