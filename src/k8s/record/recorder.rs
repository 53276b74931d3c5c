//! What `record` writes for what the API server says: each object once as it was listed, then each
//! change once. A watch that fails starts over with a full list (its `Init` … `InitDone`); the
//! recorder compares that list with what it wrote, by resourceVersion, so a restart adds no duplicate
//! and loses no change: an object changed during the gap is `MODIFIED`, one created `ADDED`, one deleted
//! `DELETED` (with its name only: its last state is gone).

use std::collections::{HashMap, HashSet};

use k8s_openapi::jiff::Timestamp;
use serde_json::{json, Value};

use super::keep;
use crate::error::Result;
use crate::trace::{Change, Entry, Kind, Writer};

/// What a watch (or the first list) said about one kind.
#[derive(Debug, Clone)]
pub enum Seen {
    /// A full list starts.
    Init,
    /// An object of that list.
    Listed(Value),
    /// The list is complete: objects not in it are gone.
    InitDone,
    /// An object was added or changed.
    Applied(Value),
    /// An object was deleted.
    Deleted(Value),
}

/// (namespace, name).
type Key = (String, String);

/// The recording's state: what was written of each object (its resourceVersion).
pub struct Recorder {
    writer: Writer,
    known: HashMap<Kind, HashMap<Key, String>>,
    /// The keys listed so far by a list in progress, per kind.
    relisting: HashMap<Kind, HashSet<Key>>,
    last: Option<Timestamp>,
    /// Objects refused by [`keep`] (not of their kind's shape), not written.
    pub unreadable: u64,
}

fn key_and_version(object: &Value) -> (Key, String) {
    let meta = &object["metadata"];
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    (
        (s(&meta["namespace"]), s(&meta["name"])),
        s(&meta["resourceVersion"]),
    )
}

impl Recorder {
    /// Records into `writer`.
    pub fn new(writer: Writer) -> Self {
        Recorder {
            writer,
            known: HashMap::new(),
            relisting: HashMap::new(),
            last: None,
            unreadable: 0,
        }
    }

    /// Takes what was seen of `kind` at `now` (times never go back: a clock step is written as the last
    /// time written).
    pub fn see(&mut self, kind: Kind, seen: Seen, now: Timestamp) -> Result<()> {
        let now = self.last.map_or(now, |last| now.max(last));
        match seen {
            Seen::Init => {
                self.relisting.insert(kind, HashSet::new());
            }
            Seen::Listed(object) => {
                let (key, _) = key_and_version(&object);
                if let Some(listed) = self.relisting.get_mut(&kind) {
                    listed.insert(key);
                }
                self.applied(kind, object, now)?;
            }
            Seen::Applied(object) => self.applied(kind, object, now)?,
            Seen::InitDone => {
                let listed = self.relisting.remove(&kind).unwrap_or_default();
                let known = self.known.entry(kind).or_default();
                let mut gone: Vec<Key> = known
                    .keys()
                    .filter(|k| !listed.contains(*k))
                    .cloned()
                    .collect();
                gone.sort();
                for key in &gone {
                    known.remove(key);
                }
                for key in gone {
                    let mut meta = json!({ "name": key.1 });
                    if !key.0.is_empty() {
                        meta["namespace"] = json!(key.0);
                    }
                    let object = json!({
                        "kind": kind.name(),
                        "apiVersion": kind.api_version(),
                        "metadata": meta,
                    });
                    self.write(kind, Change::Deleted, object, now)?;
                }
            }
            Seen::Deleted(object) => {
                let (key, _) = key_and_version(&object);
                if self
                    .known
                    .get_mut(&kind)
                    .and_then(|k| k.remove(&key))
                    .is_some()
                {
                    self.write_kept(kind, Change::Deleted, object, now)?;
                }
            }
        }
        Ok(())
    }

    fn applied(&mut self, kind: Kind, object: Value, now: Timestamp) -> Result<()> {
        let (key, version) = key_and_version(&object);
        let known = self.known.entry(kind).or_default();
        let change = match known.get(&key) {
            Some(v) if *v == version && !version.is_empty() => return Ok(()),
            Some(_) => Change::Modified,
            None => Change::Added,
        };
        known.insert(key, version);
        self.write_kept(kind, change, object, now)
    }

    fn write_kept(
        &mut self,
        kind: Kind,
        change: Change,
        object: Value,
        now: Timestamp,
    ) -> Result<()> {
        match keep(kind, object) {
            Ok(object) => self.write(kind, change, object, now),
            Err(e) => {
                self.unreadable += 1;
                tracing::warn!(kind = kind.name(), error = %e, "object not recorded: not of its kind's shape");
                Ok(())
            }
        }
    }

    fn write(&mut self, kind: Kind, change: Change, object: Value, time: Timestamp) -> Result<()> {
        self.last = Some(time);
        self.writer.write(&Entry {
            time,
            change,
            kind,
            object,
        })
    }

    /// Pushes the buffered lines to the file.
    pub fn flush(&mut self) -> Result<()> {
        self.writer.flush()
    }

    /// Lines written so far.
    pub fn lines(&self) -> u64 {
        self.writer.lines()
    }

    /// Closes the file.
    pub fn finish(self) -> Result<()> {
        self.writer.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::read_file;

    fn pod(name: &str, rv: u32) -> Value {
        json!({"metadata": {"name": name, "namespace": "d", "resourceVersion": rv.to_string()},
               "spec": {"containers": [{"name": "c"}]}})
    }

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).unwrap()
    }

    #[test]
    fn a_relist_after_a_gap_writes_each_change_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl.gz");
        let mut r = Recorder::new(Writer::create(&path).unwrap());
        let p = Kind::Pod;
        r.see(p, Seen::Init, at(0)).unwrap();
        for (n, rv) in [("a", 1), ("b", 2), ("c", 3)] {
            r.see(p, Seen::Listed(pod(n, rv)), at(0)).unwrap();
        }
        r.see(p, Seen::InitDone, at(0)).unwrap();
        r.see(p, Seen::Applied(pod("a", 4)), at(5)).unwrap();
        // The watch fails; during the gap b changed, c was deleted, d was created. The relist also
        // repeats a as it was.
        r.see(p, Seen::Init, at(20)).unwrap();
        for (n, rv) in [("a", 4), ("b", 7), ("d", 8)] {
            r.see(p, Seen::Listed(pod(n, rv)), at(20)).unwrap();
        }
        r.see(p, Seen::InitDone, at(20)).unwrap();
        // A late duplicate of a deletion already written is dropped.
        r.see(p, Seen::Deleted(pod("c", 3)), at(21)).unwrap();
        r.finish().unwrap();
        let got: Vec<(Change, String)> = read_file(&path)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.change, e.key().1.to_string())
            })
            .collect();
        let want = [
            (Change::Added, "a"),
            (Change::Added, "b"),
            (Change::Added, "c"),
            (Change::Modified, "a"),
            (Change::Modified, "b"),
            (Change::Added, "d"),
            (Change::Deleted, "c"),
        ]
        .map(|(c, n)| (c, n.to_string()));
        assert_eq!(got, want);
    }
}
