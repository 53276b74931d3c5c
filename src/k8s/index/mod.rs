//! `ferroscale run`'s index of the cluster: the model's pods, nodes, PodDisruptionBudgets and DaemonSet
//! pods, converted once when their watch events arrive (`k8s::watch::feed`) and changed in place by the
//! next events, so a loop in which nothing changed converts nothing. What depends on other kinds is
//! resolved here, again only for what changed: pods' claims (against the storage kinds), nodes' attach
//! limits (CSINodes) and pods' owners' replicas (`--min-replica-count`). Nodes are also stamped with
//! when the index first held them ([`Node::seen`]), on the loop's clock, kept across their updates and
//! relists, and taken anew by a node recreated under the same name. Nodes of the first listing were
//! there before this process: their creation timestamp stands, capped at the loop's `now`.

mod slab;

pub use slab::Slab;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

pub use super::converted::{NodeExtra, PodExtra};
use super::volumes::Storage;
use super::watch::feed::{Changes, Converted};
use super::watch::Watches;
use crate::model::workload::{Node, Pdb, Pod};

/// The index; the loop owns it and brings it up to date at its start with [`Index::update`].
#[derive(Default)]
pub struct Index {
    /// Shared with the engine's simulations, which never copy them.
    pub pods: Slab<Arc<Pod>, PodExtra>,
    /// Pods finished (failed or succeeded) and still bound to their node: the descheduler's
    /// `RemoveFailedPods` and `PodLifeTime` read them; the autoscaling engine never does (they need
    /// no place).
    pub failed: Slab<Arc<Pod>, PodExtra>,
    pub nodes: Slab<Node, NodeExtra>,
    pub pdbs: Slab<Pdb>,
    pub daemon_pods: Slab<Pod>,
    /// Pods whose claims could not be resolved, kept to try again when the storage kinds change.
    set_aside: BTreeMap<String, (Arc<Pod>, PodExtra, String)>,
    storage_seen: Option<u64>,
    owners_seen: Option<u64>,
    /// Node name → the incarnation (uid) first held, and when, on the loop's clock.
    first_seen: HashMap<String, (Option<String>, i64)>,
    /// Whether nodes were listed once: later ones are seen as they come.
    nodes_listed: bool,
}

/// What one update did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Updated {
    /// Watch events applied (a relist counts its objects).
    pub changes: usize,
    /// Pods whose claims were resolved.
    pub claims_resolved: usize,
}

impl Index {
    /// Applies what the watches delivered since the last update, then resolves what depends on other
    /// kinds for the objects that changed (for all of them when those kinds changed). `now` is the
    /// loop's clock, which stamps nodes held for the first time.
    pub fn update(&mut self, watches: &Watches, now: i64) -> Updated {
        let node_changes = self.nodes.apply(watches.nodes.take());
        if node_changes > 0 {
            self.stamp_seen(now);
        }
        let mut out = Updated {
            changes: node_changes
                + self.apply_pods(watches.pods.take())
                + self.pdbs.apply(watches.pdbs.take())
                + self.daemon_pods.apply(watches.daemonsets.take()),
            ..Default::default()
        };
        // A pod set aside whose object changed or went is the feed's again.
        if !self.set_aside.is_empty() {
            let (pods, errors) = (&self.pods, self.pods.errors());
            self.set_aside
                .retain(|k, v| pods.get(k).is_none() && errors.get(k) == Some(&v.2));
        }
        let storage = watches.storage_changes();
        let storage_changed = self.storage_seen != Some(storage);
        self.storage_seen = Some(storage);
        let owners = watches.owner_changes();
        let owners_changed = self.owners_seen != Some(owners);
        self.owners_seen = Some(owners);
        let pods_fresh = self.pods.any_fresh();
        let nodes_fresh = self.nodes.any_fresh();
        if storage_changed || pods_fresh || nodes_fresh {
            out.claims_resolved = self.resolve_storage(watches, storage_changed);
        }
        if let (Some((rs, rc)), true) = (&watches.owners, owners_changed || pods_fresh) {
            let (rs, rc) = (rs.state(), rc.state());
            let replicas =
                super::owners::replicas(rs.iter().map(AsRef::as_ref), rc.iter().map(AsRef::as_ref));
            let (items, _, _, fresh) = self.pods.parts_mut();
            for (p, _) in items
                .iter_mut()
                .zip(fresh)
                .filter(|(_, f)| owners_changed || **f)
            {
                super::owners::set_replicas(Arc::make_mut(p), &replicas);
            }
        }
        // Fresh marks were read by both resolutions: clear them only now.
        self.pods.settle();
        self.nodes.settle();
        out
    }

    /// Applies the pods' changes: a pod that failed (still bound) goes to [`Index::failed`] and out of
    /// [`Index::pods`], every other one the other way round.
    fn apply_pods(&mut self, changes: Changes<(Arc<Pod>, PodExtra)>) -> usize {
        let is_failed =
            |v: &Option<Converted<(Arc<Pod>, PodExtra)>>| matches!(v, Some(Ok((_, x))) if x.failed);
        let mut live = Changes::default();
        let mut failed = Changes::default();
        if let Some(all) = changes.replace {
            let (f, l): (Vec<_>, Vec<_>) = all
                .into_iter()
                .partition(|(_, v)| matches!(v, Ok((_, x)) if x.failed));
            live.replace = Some(l);
            failed.replace = Some(f);
        }
        for (key, value) in changes.changes {
            if is_failed(&value) {
                live.changes.push((key.clone(), None));
                failed.changes.push((key, value));
            } else {
                failed.changes.push((key.clone(), None));
                live.changes.push((key, value));
            }
        }
        self.failed.apply(failed);
        self.failed.settle();
        self.pods.apply(live)
    }

    /// Sets `seen` on the nodes that changed: when this index first held that incarnation of the node
    /// (a conversion replaced the value with the API server's time); forgets nodes gone.
    fn stamp_seen(&mut self, now: i64) {
        let listed = std::mem::replace(&mut self.nodes_listed, true);
        let (nodes, extras, keys, fresh) = self.nodes.parts_mut();
        for (i, n) in nodes.iter_mut().enumerate().filter(|(i, _)| fresh[*i]) {
            let uid = &extras[i].uid;
            let first = match (listed, n.created) {
                (false, created @ 1..) => created.min(now),
                _ => now,
            };
            let e = self
                .first_seen
                .entry(keys[i].clone())
                .or_insert_with(|| (uid.clone(), first));
            if e.0 != *uid {
                *e = (uid.clone(), now);
            }
            n.seen = e.1;
        }
        // Kept for a node that cannot be read for now: it is the same node when it can again.
        let (nodes, errors) = (&self.nodes, self.nodes.errors());
        self.first_seen
            .retain(|k, _| nodes.get(k).is_some() || errors.contains_key(k));
    }

    /// Resolves claims and attach limits: of everything when the storage kinds changed (`all`), else
    /// of what changed. A pod whose claims cannot be resolved is set aside (left out, as an object that
    /// cannot be read) until the storage kinds change again.
    fn resolve_storage(&mut self, watches: &Watches, all: bool) -> usize {
        let (claims, volumes) = (watches.claims.state(), watches.volumes.state());
        let (classes, csinodes) = (watches.classes.state(), watches.csinodes.state());
        let storage = Storage::new(
            claims.iter().map(AsRef::as_ref),
            volumes.iter().map(AsRef::as_ref),
            classes.iter().map(AsRef::as_ref),
            csinodes.iter().map(AsRef::as_ref),
        );
        {
            let (nodes, _, _, fresh) = self.nodes.parts_mut();
            for (n, _) in nodes.iter_mut().zip(fresh).filter(|(_, f)| all || **f) {
                n.volume_limits = storage.limits_of(&n.name);
            }
        }
        if all {
            // Pods set aside get another chance with the new storage objects.
            for (key, (pod, extra, _)) in std::mem::take(&mut self.set_aside) {
                self.pods.restore(key, pod, extra);
            }
        }
        let mut resolved = 0;
        let mut failed = Vec::new();
        {
            let (pods, extras, keys, fresh) = self.pods.parts_mut();
            for i in 0..pods.len() {
                if extras[i].claims.is_empty() || !(all || fresh[i]) {
                    continue;
                }
                resolved += 1;
                match storage.resolve_claims(&pods[i].namespace, &extras[i].claims) {
                    Ok(c) => Arc::make_mut(&mut pods[i]).claims = c,
                    Err(e) => failed.push((keys[i].clone(), e.to_string())),
                }
            }
        }
        for (key, why) in failed {
            tracing::warn!(pod = %key, error = %why, "pod left out of the loop; no scale-down");
            if let Some((pod, extra)) = self.pods.set_aside(&key, why.clone()) {
                self.set_aside.insert(key, (pod, extra, why));
            }
        }
        resolved
    }

    /// Objects that cannot be used: how many, and the first one's error.
    pub fn unreadable(&self) -> (usize, Option<&str>) {
        let all = [
            self.pods.errors(),
            self.nodes.errors(),
            self.pdbs.errors(),
            self.daemon_pods.errors(),
        ];
        let count = all.iter().map(|e| e.len()).sum();
        let first = all
            .iter()
            .find_map(|e| e.values().next())
            .map(String::as_str);
        (count, first)
    }
}
