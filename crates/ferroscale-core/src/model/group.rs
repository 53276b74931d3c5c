//! A node group at one moment: its bounds, size, instances (with placeholders for capacity not yet
//! fulfilled, upstream's AWS convention) and the checks every resize goes through (`plan_*`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::lifecycle::GroupLifecycle;

use serde::{Deserialize, Serialize};

use super::{AutoscalingOptions, TemplateNode};
use crate::error::{Error, Result};
use crate::labels;

/// Lifecycle state of a cloud instance, as cluster-autoscaler distinguishes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum InstanceState {
    Creating,
    Running,
    Deleting,
}

/// Why a launch failed, as CA classifies it: out-of-resources errors make CA back off the group quickly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ErrorClass {
    /// No capacity or quota (CA's class 1).
    OutOfResources,
    /// Anything else (CA's class 99).
    Other,
}

impl ErrorClass {
    /// The number CA expects in `instanceErrorClass`.
    pub fn code(self) -> i32 {
        match self {
            ErrorClass::OutOfResources => 1,
            ErrorClass::Other => 99,
        }
    }
}

/// A failed launch attached to an instance that is still being created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceError {
    /// Cloud-specific code, e.g. `InsufficientInstanceCapacity`.
    pub code: String,
    pub message: String,
    pub class: ErrorClass,
}

/// A cloud instance of a node group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// Equal to the node's `spec.providerID`, e.g. `aws:///us-east-1a/i-0123456789abcdef0`.
    pub id: String,
    pub state: InstanceState,
    pub error: Option<InstanceError>,
}

/// A node group (an Auto Scaling group, or a group of the in-memory cloud) at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeGroup {
    pub id: String,
    pub min_size: i32,
    pub max_size: i32,
    /// Desired number of instances; above `instances.len()` the rest is capacity not yet fulfilled.
    pub target_size: i32,
    /// Instances that exist in the cloud.
    pub instances: Vec<Instance>,
    pub template: Arc<TemplateNode>,
    pub options: Option<AutoscalingOptions>,
    /// On-demand (or configured) price of one node per hour, in USD: what the group's next node costs
    /// (a mixed-instances group's blend of on-demand and spot).
    pub price_per_hour: Option<f64>,
    /// Instance (provider id) → what that instance costs an hour, by its own type, zone and lifecycle
    /// (on-demand or spot) as the price source says; an instance not listed costs the group's price.
    pub instance_prices: BTreeMap<String, f64>,
    /// Why the capacity not yet fulfilled could not be launched, if the cloud said so.
    pub launch_error: Option<InstanceError>,
    /// Prefix of the group's provider ids, e.g. `aws:///us-east-1a/`; placeholders use it too.
    pub provider_id_prefix: String,
    /// Revisions, lifetime and disruption budget.
    pub lifecycle: GroupLifecycle,
}

/// Marker in the provider ids of placeholders for capacity not yet fulfilled (upstream's AWS convention).
const PLACEHOLDER_MARKER: &str = "i-placeholder-";

/// What a validated DeleteNodes request removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletePlan {
    /// Provider ids of real instances to terminate.
    pub instances: Vec<String>,
    /// Placeholders cancelled (they lower the target without terminating anything).
    pub placeholders: Vec<String>,
    /// Instances named that are already being deleted (a retried call): nothing is done for them.
    pub already_deleting: Vec<String>,
    /// Target size once done.
    pub new_target: i32,
}

impl NodeGroup {
    /// An empty group (no size, no instances, no options, no price) of `template`, whose provider ids
    /// start with `provider_id_prefix`; set the rest with struct update syntax.
    pub fn new(
        id: impl Into<String>,
        template: TemplateNode,
        provider_id_prefix: impl Into<String>,
    ) -> Self {
        NodeGroup {
            id: id.into(),
            min_size: 0,
            max_size: 0,
            target_size: 0,
            instances: Vec::new(),
            template: Arc::new(template),
            options: None,
            price_per_hour: None,
            instance_prices: BTreeMap::new(),
            launch_error: None,
            provider_id_prefix: provider_id_prefix.into(),
            lifecycle: GroupLifecycle::default(),
        }
    }

    /// What the node of instance `provider_id` costs an hour: its own price, else the group's.
    pub fn price_of(&self, provider_id: &str) -> Option<f64> {
        self.instance_prices
            .get(provider_id)
            .copied()
            .or(self.price_per_hour)
    }

    /// Capacity asked for but not yet fulfilled.
    pub fn placeholder_count(&self) -> usize {
        (self.target_size.max(0) as usize).saturating_sub(self.instances.len())
    }

    /// Provider id of placeholder `n` (0-based).
    pub fn placeholder_id(&self, n: usize) -> String {
        format!(
            "{}{PLACEHOLDER_MARKER}{}-{}",
            self.provider_id_prefix, self.id, n
        )
    }

    /// Whether `provider_id` is one of this group's current placeholders.
    pub fn is_placeholder(&self, provider_id: &str) -> bool {
        placeholder_parts(provider_id).is_some_and(|(group, n)| {
            group == self.id
                && n < self.placeholder_count()
                && provider_id == self.placeholder_id(n)
        })
    }

    /// Real instances followed by one creating placeholder per unfulfilled slot, carrying the launch error.
    pub fn instances_with_placeholders(&self) -> Vec<Instance> {
        let mut out = self.instances.clone();
        out.extend((0..self.placeholder_count()).map(|n| Instance {
            id: self.placeholder_id(n),
            state: InstanceState::Creating,
            error: self.launch_error.clone(),
        }));
        out
    }

    /// Sets the target size; once no capacity is left unfulfilled, the last launch error no longer applies.
    pub fn set_target(&mut self, target: i32) {
        self.target_size = target;
        if self.placeholder_count() == 0 {
            self.launch_error = None;
        }
    }

    /// A one-line description for CA's `debug` field and logs.
    pub fn debug(&self) -> String {
        let instance_type = self
            .template
            .labels
            .get(labels::INSTANCE_TYPE)
            .map(String::as_str)
            .unwrap_or("-");
        format!(
            "{} (min: {}, max: {}, target: {}, instances: {}, type: {instance_type})",
            self.id,
            self.min_size,
            self.max_size,
            self.target_size,
            self.instances.len()
        )
    }

    /// Checks an IncreaseSize request and returns the new target size.
    pub fn plan_increase(&self, delta: i32) -> Result<i32> {
        if delta <= 0 {
            return Err(Error::invalid(
                "delta",
                format!("size increase must be positive, got {delta}"),
            ));
        }
        let desired = i64::from(self.target_size) + i64::from(delta);
        if desired > i64::from(self.max_size) {
            return Err(Error::IncreaseTooLarge {
                desired,
                max: self.max_size,
            });
        }
        Ok(desired as i32)
    }

    /// Checks a DecreaseTargetSize request (delta < 0, only unfulfilled capacity) and returns the new target.
    pub fn plan_decrease(&self, delta: i32) -> Result<i32> {
        if delta >= 0 {
            return Err(Error::invalid(
                "delta",
                format!("size decrease must be negative, got {delta}"),
            ));
        }
        let new_target = i64::from(self.target_size) + i64::from(delta);
        if new_target < self.instances.len() as i64 {
            return Err(Error::WouldDeleteExisting {
                group: self.id.clone(),
                target: self.target_size,
                delta,
                existing: self.instances.len(),
            });
        }
        Ok(new_target as i32)
    }

    /// Checks a DeleteNodes request: every node must be an instance or placeholder of this group and the
    /// group must stay at or above its min size. Duplicates count once; instances already deleting are
    /// left alone and not counted again, so a retried call is safe.
    pub fn plan_delete(&self, provider_ids: &[String]) -> Result<DeletePlan> {
        if provider_ids.is_empty() {
            return Err(Error::invalid("nodes", "no node to delete"));
        }
        let known: BTreeMap<&str, InstanceState> = self
            .instances
            .iter()
            .map(|i| (i.id.as_str(), i.state))
            .collect();
        let mut seen = BTreeSet::new();
        let mut plan = DeletePlan {
            instances: Vec::new(),
            placeholders: Vec::new(),
            already_deleting: Vec::new(),
            new_target: self.target_size,
        };
        for id in provider_ids {
            if !seen.insert(id.as_str()) {
                continue;
            }
            if let Some(state) = known.get(id.as_str()) {
                if *state == InstanceState::Deleting {
                    plan.already_deleting.push(id.clone());
                } else {
                    plan.instances.push(id.clone());
                }
            } else if self.is_placeholder(id) {
                plan.placeholders.push(id.clone());
            } else {
                return Err(Error::NodeNotInGroup {
                    node: id.clone(),
                    group: self.id.clone(),
                });
            }
        }
        let count = plan.instances.len() + plan.placeholders.len();
        let new_target = i64::from(self.target_size) - count as i64;
        if new_target < i64::from(self.min_size) {
            return Err(Error::BelowMinSize {
                group: self.id.clone(),
                target: self.target_size,
                count,
                min: self.min_size,
            });
        }
        plan.new_target = new_target as i32;
        Ok(plan)
    }
}

/// Splits a placeholder provider id into its group and index.
pub(super) fn placeholder_parts(provider_id: &str) -> Option<(&str, usize)> {
    let rest = super::provider_id::instance_id(provider_id).strip_prefix(PLACEHOLDER_MARKER)?;
    let (group, n) = rest.rsplit_once('-')?;
    Some((group, n.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::group;
    use crate::model::Snapshot;

    #[test]
    fn placeholders_fill_the_gap_and_resolve() {
        let g = group("g").sizes(1, 5, 4).running(2).build();
        let all = g.instances_with_placeholders();
        assert_eq!(all.len(), 4);
        assert_eq!(all[2].id, "aws:///z/i-placeholder-g-0");
        assert!(g.is_placeholder("aws:///z/i-placeholder-g-1"));
        assert!(!g.is_placeholder("aws:///z/i-placeholder-g-2"));
        let snap = Snapshot::new([g]);
        assert_eq!(
            snap.group_for_provider_id("aws:///z/i-placeholder-g-1")
                .unwrap()
                .id,
            "g"
        );
        assert!(snap.group_for_provider_id("aws:///z/i-9").is_none());
    }

    #[test]
    fn delete_plan_cancels_placeholders_and_guards_min() {
        let g = group("g").sizes(1, 5, 3).running(2).build();
        let plan = g
            .plan_delete(&["aws:///z/i-placeholder-g-0".into(), "aws:///z/i-0".into()])
            .unwrap();
        assert_eq!(plan.instances, vec!["aws:///z/i-0".to_string()]);
        assert_eq!(
            plan.placeholders,
            vec!["aws:///z/i-placeholder-g-0".to_string()]
        );
        assert_eq!(plan.new_target, 1);
        assert!(matches!(
            g.plan_delete(&[
                "aws:///z/i-0".into(),
                "aws:///z/i-1".into(),
                "aws:///z/i-placeholder-g-0".into()
            ]),
            Err(Error::BelowMinSize { .. })
        ));
    }
}
