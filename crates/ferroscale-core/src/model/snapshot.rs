//! A consistent view of every node group, indexed for the lookups CA makes on every loop.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use super::group::placeholder_parts;
use super::NodeGroup;
use crate::error::{Error, Result};
use crate::labels;

/// A consistent view of every node group, indexed for the lookups CA makes on every loop.
/// Clouds publish a new snapshot after each change; readers never wait on a cloud API.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    groups: BTreeMap<String, Arc<NodeGroup>>,
    by_provider_id: HashMap<String, String>,
    /// On-demand USD per hour by instance type, for nodes that belong to no group.
    instance_prices: Arc<BTreeMap<String, f64>>,
}

impl Snapshot {
    /// Builds a snapshot from groups; ids must be unique (later ones replace earlier ones).
    pub fn new(groups: impl IntoIterator<Item = NodeGroup>) -> Self {
        let mut s = Snapshot::default();
        for g in groups {
            s.upsert(g);
        }
        s
    }

    /// Adds or replaces one group, keeping the provider-id index in step.
    pub fn upsert(&mut self, group: NodeGroup) {
        if let Some(old) = self.groups.get(&group.id) {
            for i in &old.instances {
                self.by_provider_id.remove(&i.id);
            }
        }
        for i in &group.instances {
            self.by_provider_id.insert(i.id.clone(), group.id.clone());
        }
        self.groups.insert(group.id.clone(), Arc::new(group));
    }

    /// Removes one group; false if there was none.
    pub fn remove(&mut self, id: &str) -> bool {
        let Some(old) = self.groups.remove(id) else {
            return false;
        };
        for i in &old.instances {
            self.by_provider_id.remove(&i.id);
        }
        true
    }

    /// Sets the on-demand prices of instance types (shared, not copied, between snapshots).
    pub fn set_instance_prices(&mut self, prices: Arc<BTreeMap<String, f64>>) {
        self.instance_prices = prices;
    }

    /// On-demand USD per hour of an instance type, if the price source knows it.
    pub fn instance_price(&self, instance_type: &str) -> Option<f64> {
        self.instance_prices.get(instance_type).copied()
    }

    /// Every group, ordered by id.
    pub fn groups(&self) -> impl Iterator<Item = &Arc<NodeGroup>> {
        self.groups.values()
    }

    /// One group, or [`Error::GroupNotFound`].
    pub fn group(&self, id: &str) -> Result<&Arc<NodeGroup>> {
        self.groups
            .get(id)
            .ok_or_else(|| Error::GroupNotFound(id.to_string()))
    }

    /// The group owning the instance or placeholder with this provider id, if any.
    pub fn group_for_provider_id(&self, provider_id: &str) -> Option<&Arc<NodeGroup>> {
        if let Some(g) = self.by_provider_id.get(provider_id) {
            return self.groups.get(g);
        }
        let (group, _) = placeholder_parts(provider_id)?;
        self.groups
            .get(group)
            .filter(|g| g.is_placeholder(provider_id))
    }

    /// Distinct GPU types offered by the groups, from their templates' GPU label.
    pub fn gpu_types(&self) -> BTreeSet<String> {
        self.groups
            .values()
            .filter_map(|g| g.template.labels.get(labels::GPU).cloned())
            .collect()
    }

    /// Total number of instances across groups.
    pub fn instance_count(&self) -> usize {
        self.by_provider_id.len()
    }
}
