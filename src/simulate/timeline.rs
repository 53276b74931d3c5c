//! `simulate --trace`: a recorded timeline replayed against the simulation. The objects of its first
//! moment are the start (nodes, pods where they ran, everything else); afterwards pods are created and
//! deleted at their recorded times, without the nodes they really ran on (the simulated scheduler places
//! them on the simulated nodes), a pod that finished leaves, and the objects pods are read against
//! (owners, namespaces, storage, budgets) follow the recording. The recorded nodes after the start are
//! what really happened: [`Real`] follows them beside the simulation.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

use k8s_openapi::api::core::v1 as core;
use serde_json::Value;

use super::real::{PodKey, Real};
use crate::cloud::memory::MemoryConfig;
use crate::error::{Error, Result};
use crate::k8s::documents::Objects;
use crate::k8s::pod_status::pod_terminal;
use crate::labels;
use crate::model::workload::Pod;
use crate::trace::{read_file, Change, Entry, Kind, Reader};

/// What happens to the simulation at one moment of the timeline.
#[derive(Debug, Default)]
pub struct Due {
    /// Pods created (not bound), in the timeline's order.
    pub added: Vec<Pod>,
    /// Pods deleted or finished.
    pub removed: Vec<PodKey>,
    /// Whether the budgets changed (the simulation's are then read again from [`Timeline::objects`]).
    pub budgets_changed: bool,
    /// Nodes deleted that no autoscaler had marked for deletion (see [`lost`]): lost, as to a spot
    /// interruption, with whether they were spot capacity.
    pub lost: Vec<(String, bool)>,
}

/// Taints an autoscaler puts on a node it is about to delete: cluster-autoscaler's (and ferroscale's),
/// Karpenter's since v1 and before it.
const REMOVAL_MARKS: [&str; 3] = [
    labels::TO_BE_DELETED,
    "karpenter.sh/disrupted",
    "karpenter.sh/disruption",
];

/// Whether a node's last recorded state (a `DELETED` entry's object) shows it was lost rather than
/// removed by an autoscaler: none of [`REMOVAL_MARKS`] among its taints. With whether it was spot
/// capacity (its EKS or Karpenter capacity-type label).
fn lost(object: &serde_json::Value) -> Option<bool> {
    let taints = object["spec"]["taints"].as_array();
    let marked = taints.is_some_and(|ts| {
        ts.iter().any(|t| {
            t["key"]
                .as_str()
                .is_some_and(|k| REMOVAL_MARKS.contains(&k))
        })
    });
    if marked {
        return None;
    }
    let label = |k: &str| {
        object["metadata"]["labels"][k]
            .as_str()
            .map(str::to_ascii_lowercase)
    };
    let spot = [labels::EKS_CAPACITY_TYPE, labels::KARPENTER_CAPACITY_TYPE]
        .iter()
        .any(|k| label(k).as_deref() == Some("spot"));
    Some(spot)
}

/// A timeline being replayed.
pub struct Timeline {
    entries: Reader<Box<dyn BufRead + Send>>,
    /// The first entry not replayed yet.
    next: Option<Entry>,
    /// The time of the first moment (Unix seconds).
    pub start: i64,
    /// The objects as the timeline has them now, but pods and nodes: what a pod created later is read
    /// against, and the budgets.
    pub objects: Objects,
    /// What really happened, as recorded.
    pub real: Real,
    /// Pods created by DaemonSets or mirrored after the start: the simulated kubelet makes its own.
    pub skipped: u64,
    /// Where each of `objects`' objects is.
    keys: Keys,
    /// Reading for [`calibrate`] only: what really happened, no pod made for the simulation.
    calibrating: bool,
    /// The file, for errors.
    source: std::path::PathBuf,
}

fn typed<T: serde::de::DeserializeOwned>(value: Value, what: impl Fn() -> String) -> Result<T> {
    serde_json::from_value(value).map_err(|e| Error::config(format!("{}: {e}", what())))
}

/// Where each object of a list of [`Objects`] is, by kind, namespace and name: a timeline's first moment
/// lists every pod of the cluster, and finding each one's place by walking the list was quadratic
/// (25,000 pods: 6 s before the first loop).
#[derive(Debug, Default)]
struct Keys(std::collections::HashMap<(Kind, String, String), usize>);

impl Keys {
    /// Puts `object` in `list` (`kind`'s) in place of the one of its namespace and name (`key`), or adds
    /// it; `None` deletes it.
    fn upsert<T>(&mut self, kind: Kind, list: &mut Vec<T>, key: (&str, &str), object: Option<T>) {
        let k = (kind, key.0.to_string(), key.1.to_string());
        match (self.0.get(&k).copied(), object) {
            (Some(i), Some(o)) => list[i] = o,
            (None, Some(o)) => {
                self.0.insert(k, list.len());
                list.push(o);
            }
            (Some(i), None) => {
                // Rare (a deletion): the list keeps its order, and the kind's later places move up.
                list.remove(i);
                self.0.remove(&k);
                for (_, at) in self
                    .0
                    .iter_mut()
                    .filter(|((of, ..), at)| *of == kind && **at > i)
                {
                    *at -= 1;
                }
            }
            (None, None) => {}
        }
    }
}

impl Timeline {
    /// Opens the timeline at `path` and reads its first moment: the start, as a dump would give it.
    pub fn open(path: &Path) -> Result<(Objects, Timeline)> {
        let mut entries = read_file(path)?;
        let first = entries
            .next()
            .transpose()?
            .ok_or_else(|| Error::config(format!("trace {}: no entry", path.display())))?;
        let start_time = first.time;
        let mut start = Objects::default();
        let mut keys = Keys::default();
        let mut next = Some(first);
        while let Some(entry) = next.take_if(|e| e.time == start_time) {
            let line = entries.line();
            apply(&mut start, &mut keys, entry, line, path)?;
            next = entries.next().transpose()?;
        }
        let real = Real::starting(&start);
        keys.0
            .retain(|(kind, ..), _| !matches!(kind, Kind::Node | Kind::Pod));
        let objects = Objects {
            nodes: Vec::new(),
            pods: Vec::new(),
            ..start.clone()
        };
        Ok((
            start,
            Timeline {
                entries,
                next,
                start: start_time.as_second(),
                objects,
                real,
                skipped: 0,
                keys,
                calibrating: false,
                source: path.to_path_buf(),
            },
        ))
    }

    /// The time of the last entry read so far, or of the next one (Unix seconds); `None` once all are
    /// replayed.
    pub fn next_time(&self) -> Option<i64> {
        self.next.as_ref().map(|e| e.time.as_second())
    }

    /// Everything the timeline says happened up to `now` (Unix seconds), for the simulation.
    pub fn due(&mut self, now: i64) -> Result<Due> {
        let mut due = Due::default();
        while let Some(entry) = self.next.take_if(|e| e.time.as_second() <= now) {
            let line = self.entries.line();
            self.replay(entry, line, &mut due)?;
            self.next = self.entries.next().transpose()?;
        }
        Ok(due)
    }

    fn replay(&mut self, entry: Entry, line: u64, due: &mut Due) -> Result<()> {
        let at = entry.time.as_second();
        let what = || {
            format!(
                "trace {} line {line}: {}",
                self.source.display(),
                entry.kind.name()
            )
        };
        match entry.kind {
            Kind::Node => {
                let (_, name) = entry.key();
                let name = name.to_string();
                if entry.change == Change::Deleted {
                    if let Some(spot) = lost(&entry.object) {
                        due.lost.push((name.clone(), spot));
                    }
                }
                self.real.node(&name, entry.change, &entry.object, at);
            }
            Kind::Pod => {
                let (ns, name) = entry.key();
                let key = (ns.to_string(), name.to_string());
                let change = entry.change;
                let pod: core::Pod = typed(entry.object, what)?;
                self.real.pod(&key, change, &pod, at);
                match change {
                    Change::Deleted => due.removed.push(key),
                    Change::Modified if pod_terminal(&pod) => due.removed.push(key),
                    Change::Modified => {}
                    Change::Added if pod_terminal(&pod) || self.calibrating => {}
                    Change::Added => match self.created(&pod)? {
                        Some(p) => due.added.push(p),
                        None => self.skipped += 1,
                    },
                }
            }
            kind => {
                due.budgets_changed |= kind == Kind::PodDisruptionBudget;
                apply(&mut self.objects, &mut self.keys, entry, line, &self.source)?;
            }
        }
        Ok(())
    }

    /// The model of a pod created at its recorded time, not bound; `None` for pods the simulated
    /// kubelet makes itself (DaemonSet and mirror pods).
    fn created(&self, pod: &core::Pod) -> Result<Option<Pod>> {
        let mut p = crate::k8s::objects::pod(pod)?;
        if p.owned_by_daemon_set() || p.meta.mirror {
            return Ok(None);
        }
        p.claims = self.objects.storage().claims_of(pod)?;
        p.node_name = None;
        let mut one = [p];
        crate::k8s::owners::set_owner_replicas(
            &mut one,
            &self.objects.replicasets,
            &self.objects.replication_controllers,
        );
        crate::k8s::namespaces::set_namespace_labels(&mut one, &self.objects.namespaces);
        let [p] = one;
        Ok(Some(p))
    }
}

/// The start-up times of the nodes a timeline saw launched, as `--provision-delay` and
/// `--node-ready-delay` take them: the median of each, over the whole cluster and group by group.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Calibration {
    /// Nodes launched after the start, measured.
    pub nodes: usize,
    pub provision_delay_seconds: Option<i64>,
    pub node_ready_delay_seconds: Option<i64>,
    /// Each group of the node-groups file, by name: its own nodes' medians, else the cluster's.
    pub groups: BTreeMap<String, GroupCalibration>,
}

/// One group's start-up times from a timeline.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupCalibration {
    /// The group's nodes launched after the start, measured (0: the cluster's medians stand in).
    pub nodes: usize,
    pub provision_delay_seconds: Option<i64>,
    pub node_ready_delay_seconds: Option<i64>,
}

fn median(mut v: Vec<i64>) -> Option<i64> {
    v.sort_unstable();
    v.get(v.len().saturating_sub(1) / 2).copied()
}

/// The delays measured on `group`'s nodes (`None`: on every node).
fn of_group<'a>(
    delays: &'a [(Option<String>, i64)],
    group: Option<&'a str>,
) -> impl Iterator<Item = i64> + 'a {
    let of_group = delays
        .iter()
        .filter(move |(g, _)| group.is_none() || g.as_deref() == group);
    of_group.map(|(_, d)| *d)
}

/// The median of the delays measured on `group`'s nodes (`None`: on every node).
fn median_of(delays: &[(Option<String>, i64)], group: Option<&str>) -> Option<i64> {
    median(of_group(delays, group).collect())
}

/// Reads the whole timeline at `path` for its nodes' start-up times, telling the nodes' groups by
/// `config`'s (as the replay does).
pub fn calibrate(path: &Path, config: &MemoryConfig) -> Result<Calibration> {
    let (_, mut timeline) = Timeline::open(path)?;
    timeline.calibrating = true;
    timeline.real.set_groups(config);
    timeline.due(i64::MAX)?;
    let real = timeline.real;
    let (provision, ready) = (&real.provision_delays, &real.ready_delays);
    let cluster_provision = median_of(provision, None);
    let cluster_ready = median_of(ready, None);
    let groups = config
        .node_groups
        .iter()
        .map(|g| {
            let own = |d: &[(Option<String>, i64)]| of_group(d, Some(&g.name)).count();
            let calibration = GroupCalibration {
                nodes: own(provision).max(own(ready)),
                provision_delay_seconds: median_of(provision, Some(&g.name)).or(cluster_provision),
                node_ready_delay_seconds: median_of(ready, Some(&g.name)).or(cluster_ready),
            };
            (g.name.clone(), calibration)
        })
        .collect();
    Ok(Calibration {
        nodes: ready.len().max(provision.len()),
        provision_delay_seconds: cluster_provision,
        node_ready_delay_seconds: cluster_ready,
        groups,
    })
}

/// Applies one entry to `objects` (by its kind's list).
fn apply(
    objects: &mut Objects,
    keys: &mut Keys,
    entry: Entry,
    line: u64,
    path: &Path,
) -> Result<()> {
    let (ns, name) = entry.key();
    let key = (ns.to_string(), name.to_string());
    let key = (key.0.as_str(), key.1.as_str());
    let what = || {
        format!(
            "trace {} line {line}: {} {}/{}",
            path.display(),
            entry.kind.name(),
            key.0,
            key.1
        )
    };
    let deleted = entry.change == Change::Deleted;
    macro_rules! set {
        ($list:expr) => {{
            let object = if deleted {
                None
            } else {
                Some(typed(entry.object.clone(), what)?)
            };
            keys.upsert(entry.kind, &mut $list, key, object);
        }};
    }
    match entry.kind {
        Kind::Node => set!(objects.nodes),
        Kind::Pod => set!(objects.pods),
        Kind::PodDisruptionBudget => set!(objects.pdbs),
        Kind::DaemonSet => set!(objects.daemonsets),
        Kind::ReplicaSet => set!(objects.replicasets),
        Kind::ReplicationController => set!(objects.replication_controllers),
        Kind::PersistentVolumeClaim => set!(objects.claims),
        Kind::PersistentVolume => set!(objects.volumes),
        Kind::StorageClass => set!(objects.classes),
        Kind::CSINode => set!(objects.csinodes),
        Kind::Namespace => set!(objects.namespaces),
        Kind::PriorityClass => set!(objects.priority_classes),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(name: &str, label: &str) -> core::Namespace {
        let mut n = core::Namespace::default();
        n.metadata.name = Some(name.into());
        n.metadata.labels = Some([("v".to_string(), label.to_string())].into());
        n
    }

    fn names(list: &[core::Namespace]) -> Vec<(String, String)> {
        list.iter()
            .map(|n| {
                let v = n.metadata.labels.as_ref().unwrap()["v"].clone();
                (n.metadata.name.clone().unwrap(), v)
            })
            .collect()
    }

    /// A deletion keeps the others' order, and what comes after it is still found in its new place.
    #[test]
    fn upserts_after_a_deletion_replace_the_right_object() {
        let (mut keys, mut list) = (Keys::default(), Vec::new());
        for n in ["a", "b", "c", "d"] {
            keys.upsert(Kind::Namespace, &mut list, ("", n), Some(ns(n, "1")));
        }
        keys.upsert(Kind::Namespace, &mut list, ("", "b"), None);
        keys.upsert(Kind::Namespace, &mut list, ("", "d"), Some(ns("d", "2")));
        keys.upsert(Kind::Namespace, &mut list, ("", "c"), Some(ns("c", "2")));
        keys.upsert(Kind::Namespace, &mut list, ("", "b"), Some(ns("b", "3")));
        keys.upsert(Kind::Namespace, &mut list, ("", "x"), None);
        let want = [("a", "1"), ("c", "2"), ("d", "2"), ("b", "3")];
        let want: Vec<_> = want
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        assert_eq!(names(&list), want);
    }
}
