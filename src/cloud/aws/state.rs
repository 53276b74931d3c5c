//! The AWS cloud's published snapshot and how refreshes and writes are merged into it.
//!
//! A refresh reads every group from AWS, which takes time; a write to one group may land in between.
//! Every write stamps its group with a sequence number, and a refresh publishes its result only for the
//! groups nobody wrote since it started: for the others the write's result (read from AWS after the
//! refresh began) is newer and stays. Every change to the snapshot is one read-modify-store under one
//! lock, so two writes to different groups never drop each other's update.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use crate::cloud::SnapshotCell;
use crate::model::{NodeGroup, Snapshot};

#[derive(Default)]
struct Sequence {
    /// Incremented by every write.
    last: u64,
    /// Sequence number of the last write of each group (only groups that were written: they exist).
    written: HashMap<String, u64>,
}

/// The snapshot served to readers, with the bookkeeping that keeps a slow refresh from undoing a write.
#[derive(Default)]
pub struct Published {
    cell: SnapshotCell,
    seq: Mutex<Sequence>,
    loaded_at: Mutex<Option<Instant>>,
}

/// Taken before a refresh reads AWS: where the write sequence stood.
#[derive(Debug, Clone, Copy)]
pub struct RefreshTicket(u64);

impl Published {
    /// The current snapshot.
    pub fn load(&self) -> Arc<Snapshot> {
        self.cell.load()
    }

    /// Marks the start of a refresh.
    pub fn begin_refresh(&self) -> RefreshTicket {
        RefreshTicket(self.lock().last)
    }

    /// Publishes a refresh's snapshot, keeping the current version of every group written since
    /// `ticket` (AWS answered that write after the refresh read the group).
    pub fn finish_refresh(&self, ticket: RefreshTicket, mut fresh: Snapshot) {
        let seq = self.lock();
        let current = self.cell.load();
        for (group, &at) in &seq.written {
            if at <= ticket.0 {
                continue;
            }
            // Kept only if the refresh still lists the group: one that AWS says is gone is gone.
            if let (Ok(written), Ok(_)) = (current.group(group), fresh.group(group)) {
                tracing::debug!(
                    group,
                    "a write landed during the refresh; its result is kept"
                );
                fresh.upsert(NodeGroup::clone(written));
            }
        }
        self.cell.store(fresh);
        *self.loaded_at.lock() = Some(Instant::now());
    }

    /// Publishes one group as a write left it (after AWS accepted the write, or read afresh for it).
    pub fn write(&self, group: NodeGroup) {
        let mut seq = self.lock();
        seq.last += 1;
        let n = seq.last;
        seq.written.insert(group.id.clone(), n);
        let mut next = Snapshot::clone(&self.cell.load());
        next.upsert(group);
        self.cell.store(next);
    }

    /// Drops a group AWS says no longer exists.
    pub fn remove(&self, group: &str) {
        let mut seq = self.lock();
        seq.last += 1;
        seq.written.remove(group);
        let mut next = Snapshot::clone(&self.cell.load());
        if next.remove(group) {
            self.cell.store(next);
        }
    }

    /// Changes what every group shares (prices) without touching sizes: serialized with writes.
    pub fn amend(&self, change: impl FnOnce(&mut Snapshot)) {
        let _seq = self.lock();
        let mut next = Snapshot::clone(&self.cell.load());
        change(&mut next);
        self.cell.store(next);
    }

    /// When the last refresh was published.
    pub fn loaded_at(&self) -> Option<Instant> {
        *self.loaded_at.lock()
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, Sequence> {
        self.seq.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TemplateNode;

    fn group(id: &str, target: i32) -> NodeGroup {
        NodeGroup {
            max_size: 10,
            target_size: target,
            ..NodeGroup::new(id, TemplateNode::default(), "aws:///z/")
        }
    }

    fn target(p: &Published, id: &str) -> i32 {
        p.load().group(id).unwrap().target_size
    }

    #[test]
    fn a_refresh_that_started_before_a_write_keeps_the_write() {
        let p = Published::default();
        p.finish_refresh(
            p.begin_refresh(),
            Snapshot::new([group("a", 2), group("b", 1)]),
        );
        let ticket = p.begin_refresh();
        p.write(group("a", 5));
        // The refresh read AWS before the write: a=2 is stale, b=3 is news.
        p.finish_refresh(ticket, Snapshot::new([group("a", 2), group("b", 3)]));
        assert_eq!((target(&p, "a"), target(&p, "b")), (5, 3));
        // A refresh that started after the write is newer than it.
        let ticket = p.begin_refresh();
        p.finish_refresh(ticket, Snapshot::new([group("a", 4), group("b", 3)]));
        assert_eq!(target(&p, "a"), 4);
    }

    #[test]
    fn a_group_aws_says_is_gone_goes_even_after_a_write() {
        let p = Published::default();
        p.finish_refresh(p.begin_refresh(), Snapshot::new([group("a", 2)]));
        let ticket = p.begin_refresh();
        p.write(group("a", 3));
        p.finish_refresh(ticket, Snapshot::new([group("b", 1)]));
        assert!(p.load().group("a").is_err());
    }

    #[test]
    fn writes_to_two_groups_keep_both() {
        let p = Published::default();
        p.finish_refresh(
            p.begin_refresh(),
            Snapshot::new([group("a", 1), group("b", 1)]),
        );
        p.write(group("a", 2));
        p.write(group("b", 2));
        assert_eq!((target(&p, "a"), target(&p, "b")), (2, 2));
    }
}
