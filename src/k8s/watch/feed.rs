//! One watch feeding the loop's index: every event is converted to the model as it arrives, on the
//! watch's task, and only the converted value is kept, waiting for the loop to take it. The raw object is
//! dropped at once, so no cache holds whole objects of the big kinds (pods, nodes).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kube::runtime::watcher;
use kube::{Api, Resource};
use parking_lot::Mutex;

use super::{WatchHealth, Watched};

pub use crate::k8s::converted::Converted;

/// A conversion of one object, which it consumes: None when the object is not indexed (a pod that has
/// finished), which the index treats as a deletion.
pub type Convert<K, T> = fn(K) -> Option<Converted<T>>;

/// What arrived since the loop last looked.
pub struct Changes<T> {
    /// A complete list after a (re)start: replaces everything indexed.
    pub replace: Option<Vec<(String, Converted<T>)>>,
    /// Then these, in order: an object as it is now, or None when it is gone.
    pub changes: Vec<(String, Option<Converted<T>>)>,
}

impl<T> Default for Changes<T> {
    fn default() -> Self {
        Changes {
            replace: None,
            changes: Vec::new(),
        }
    }
}

impl<T> Changes<T> {
    /// Whether nothing arrived.
    pub fn is_empty(&self) -> bool {
        self.replace.is_none() && self.changes.is_empty()
    }
}

/// The converted changes of one kind, shared by its watch task (which adds) and the loop (which takes).
pub struct Feed<T> {
    pending: Mutex<Changes<T>>,
    /// Keys of the objects the watch knows of now, finished pods included.
    known: Mutex<HashSet<String>>,
    /// Events received since the start (list items included).
    events: AtomicU64,
}

impl<T> Feed<T> {
    /// How many objects the watch knows of now (what a cache of whole objects would hold).
    pub fn len(&self) -> usize {
        self.known().len()
    }

    /// Whether the watch knows of the object `key` (`namespace/name`, or the name).
    pub fn contains(&self, key: &str) -> bool {
        self.known().contains(key)
    }

    fn known(&self) -> parking_lot::MutexGuard<'_, HashSet<String>> {
        self.known.lock()
    }

    /// Whether the watch knows of no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Events received so far: a test waits for this to grow after a change.
    pub fn events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }

    /// Takes what arrived since the last call.
    pub fn take(&self) -> Changes<T> {
        std::mem::take(&mut *self.pending.lock())
    }

    fn push(&self, key: String, value: Option<Converted<T>>) {
        self.events.fetch_add(1, Ordering::Relaxed);
        let mut p = self.pending.lock();
        p.changes.push((key, value));
    }

    fn replace(&self, all: Vec<(String, Converted<T>)>, known: HashSet<String>) {
        let mut p = self.pending.lock();
        p.changes.clear();
        p.replace = Some(all);
        *self.known() = known;
    }
}

/// The index key of an object: `namespace/name`, or the name of a cluster-scoped one.
pub fn key_of<K: Resource>(o: &K) -> String {
    let name = o.meta().name.as_deref().unwrap_or_default();
    match o.meta().namespace.as_deref() {
        Some(ns) => crate::model::workload::pod_key(ns, name),
        None => name.to_string(),
    }
}

/// Starts the watch of one kind ([`super::spawn_watch`]), converting each object with `convert`; a
/// complete list (the first, or one after a failure) replaces everything indexed.
pub fn start<K: Watched, T: Send + 'static>(
    api: Api<K>,
    kind: &'static str,
    health: Arc<WatchHealth>,
    convert: Convert<K, T>,
) -> Arc<Feed<T>> {
    let feed = Arc::new(Feed {
        pending: Mutex::new(Changes::default()),
        known: Mutex::default(),
        events: AtomicU64::new(0),
    });
    let out = feed.clone();
    let mut listing: Vec<(String, Converted<T>)> = Vec::new();
    let mut listed = HashSet::<String>::new();
    super::spawn_watch(api, kind, health, move |event| match event {
        watcher::Event::Init => {
            listing.clear();
            listed.clear();
        }
        watcher::Event::InitApply(o) => {
            feed.events.fetch_add(1, Ordering::Relaxed);
            let key = key_of(&o);
            if let Some(v) = convert(o) {
                listing.push((key.clone(), v));
            }
            listed.insert(key);
        }
        watcher::Event::InitDone => {
            feed.replace(std::mem::take(&mut listing), std::mem::take(&mut listed));
        }
        watcher::Event::Apply(o) => {
            let key = key_of(&o);
            let v = convert(o);
            feed.known().insert(key.clone());
            feed.push(key, v);
        }
        watcher::Event::Delete(o) => {
            let key = key_of(&o);
            feed.known().remove(&key);
            feed.push(key, None);
        }
    });
    out
}
