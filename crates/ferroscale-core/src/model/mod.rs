//! Pure domain types shared by every part of ferroscale: node groups, their instances and template nodes,
//! resources and autoscaling options. No protobuf, AWS or Kubernetes client types appear here, so the
//! engine, the clouds and the gRPC layer can all speak the same language.

pub mod quantity;
pub mod reserve;
pub mod workload;

use crate::labels;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Resources of a node or a pod, in exact integer units.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources {
    /// CPU in millicores.
    pub cpu_milli: i64,
    /// Memory in bytes.
    pub memory: i64,
    /// Pod slots.
    pub pods: i64,
    /// Local ephemeral storage in bytes.
    pub ephemeral_storage: i64,
    /// Extended resources (e.g. `nvidia.com/gpu`) in whole units.
    pub extended: BTreeMap<String, i64>,
}

impl Resources {
    /// Parses Kubernetes resource names and quantities; `field` prefixes error messages.
    pub fn from_quantities<'a>(
        field: &str,
        entries: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self> {
        let mut r = Resources::default();
        for (name, text) in entries {
            r.set(name, text)
                .map_err(|e| Error::invalid(format!("{field}.{name}"), e.to_string()))?;
        }
        Ok(r)
    }

    /// Sets one resource from its Kubernetes name and quantity text.
    pub fn set(&mut self, name: &str, text: &str) -> Result<(), quantity::QuantityError> {
        match name {
            "cpu" => self.cpu_milli = quantity::parse_cpu_milli(text)?,
            "memory" => self.memory = quantity::parse_units(text)?,
            "pods" => self.pods = quantity::parse_units(text)?,
            "ephemeral-storage" => self.ephemeral_storage = quantity::parse_units(text)?,
            other => {
                self.extended
                    .insert(other.to_string(), quantity::parse_units(text)?);
            }
        }
        Ok(())
    }

    /// Kubernetes resource names and canonical quantity strings; zero-valued core resources are left out.
    pub fn to_quantities(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let mut put = |name: &str, value: i64, text: String| {
            if value != 0 {
                out.insert(name.to_string(), text);
            }
        };
        put(
            "cpu",
            self.cpu_milli,
            quantity::format_cpu_milli(self.cpu_milli),
        );
        put("memory", self.memory, quantity::format_bytes(self.memory));
        put("pods", self.pods, self.pods.to_string());
        put(
            "ephemeral-storage",
            self.ephemeral_storage,
            quantity::format_bytes(self.ephemeral_storage),
        );
        for (name, v) in &self.extended {
            out.insert(name.clone(), v.to_string());
        }
        out
    }

    /// Number of NVIDIA GPUs.
    pub fn gpus(&self) -> i64 {
        self.extended.get(labels::NVIDIA_GPU).copied().unwrap_or(0)
    }

    /// Adds `other`, resource by resource.
    pub fn add(&mut self, other: &Resources) {
        self.cpu_milli += other.cpu_milli;
        self.memory += other.memory;
        self.pods += other.pods;
        self.ephemeral_storage += other.ephemeral_storage;
        for (k, v) in &other.extended {
            *self.extended.entry(k.clone()).or_default() += v;
        }
    }

    /// Raises each resource to at least `other`'s.
    pub fn max_with(&mut self, other: &Resources) {
        self.cpu_milli = self.cpu_milli.max(other.cpu_milli);
        self.memory = self.memory.max(other.memory);
        self.pods = self.pods.max(other.pods);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        for (k, v) in &other.extended {
            let e = self.extended.entry(k.clone()).or_default();
            *e = (*e).max(*v);
        }
    }
}

/// The request parts of a pod spec, combined as the scheduler does (one rule for every adapter).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestParts {
    /// Pod-level `spec.resources.requests`, which win over containers when set.
    pub pod_level: Option<Resources>,
    pub containers: Vec<Resources>,
    /// Init containers in order, each with whether it is a sidecar (`restartPolicy: Always`).
    pub init: Vec<(Resources, bool)>,
    pub overhead: Resources,
}

impl RequestParts {
    /// Effective requests: pod-level resources when set, else the sum of containers and sidecars, at least
    /// each regular init container plus the sidecars started before it; then the runtime overhead; one
    /// pod slot.
    pub fn effective(&self) -> Resources {
        let mut total = match &self.pod_level {
            Some(r) => r.clone(),
            None => {
                let mut sidecars = Resources::default();
                let mut init_peak = Resources::default();
                for (r, sidecar) in &self.init {
                    if *sidecar {
                        sidecars.add(r);
                    } else {
                        let mut this = sidecars.clone();
                        this.add(r);
                        init_peak.max_with(&this);
                    }
                }
                let mut total = sidecars;
                for c in &self.containers {
                    total.add(c);
                }
                total.max_with(&init_peak);
                total
            }
        };
        total.add(&self.overhead);
        total.pods = 1;
        total
    }
}

/// Effect of a taint, as in Kubernetes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl TaintEffect {
    /// The Kubernetes spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Taint {
    pub key: String,
    #[serde(default)]
    pub value: String,
    pub effect: TaintEffect,
}

/// What a new node of a group looks like before it exists: the input of scale-up simulations.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateNode {
    /// Node name (also its `kubernetes.io/hostname`).
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub capacity: Resources,
    pub allocatable: Resources,
}

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

/// Per-group overrides of cluster-autoscaler's autoscaling options; `None` keeps the client's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AutoscalingOptions {
    pub scale_down_utilization_threshold: Option<f64>,
    pub scale_down_gpu_utilization_threshold: Option<f64>,
    pub scale_down_unneeded_time: Option<Duration>,
    pub scale_down_unready_time: Option<Duration>,
    pub max_node_provision_time: Option<Duration>,
    pub max_node_startup_time: Option<Duration>,
    pub ignore_daemonsets_utilization: Option<bool>,
    pub zero_or_max_node_scaling: Option<bool>,
    pub allow_non_atomic_scale_up_to_max: Option<bool>,
}

/// A complete set of autoscaling option values.
#[derive(Debug, Clone, PartialEq)]
pub struct OptionValues {
    pub scale_down_utilization_threshold: f64,
    pub scale_down_gpu_utilization_threshold: f64,
    pub scale_down_unneeded_time: Duration,
    pub scale_down_unready_time: Duration,
    pub max_node_provision_time: Duration,
    pub max_node_startup_time: Duration,
    pub ignore_daemonsets_utilization: bool,
    pub zero_or_max_node_scaling: bool,
    pub allow_non_atomic_scale_up_to_max: bool,
}

impl OptionValues {
    /// Upstream cluster-autoscaler's flag defaults: the `--scale-down-*` and `--max-node-provision-time`
    /// flags take theirs from here, and so does a CA request that sends none.
    pub const DEFAULT: OptionValues = OptionValues {
        scale_down_utilization_threshold: 0.5,
        scale_down_gpu_utilization_threshold: 0.5,
        scale_down_unneeded_time: Duration::from_secs(600),
        scale_down_unready_time: Duration::from_secs(1200),
        max_node_provision_time: Duration::from_secs(900),
        max_node_startup_time: Duration::from_secs(900),
        ignore_daemonsets_utilization: false,
        zero_or_max_node_scaling: false,
        allow_non_atomic_scale_up_to_max: false,
    };
}

impl Default for OptionValues {
    fn default() -> Self {
        OptionValues::DEFAULT
    }
}

impl AutoscalingOptions {
    /// The group's overrides applied on top of `defaults`.
    pub fn apply_to(&self, defaults: &OptionValues) -> OptionValues {
        OptionValues {
            scale_down_utilization_threshold: self
                .scale_down_utilization_threshold
                .unwrap_or(defaults.scale_down_utilization_threshold),
            scale_down_gpu_utilization_threshold: self
                .scale_down_gpu_utilization_threshold
                .unwrap_or(defaults.scale_down_gpu_utilization_threshold),
            scale_down_unneeded_time: self
                .scale_down_unneeded_time
                .unwrap_or(defaults.scale_down_unneeded_time),
            scale_down_unready_time: self
                .scale_down_unready_time
                .unwrap_or(defaults.scale_down_unready_time),
            max_node_provision_time: self
                .max_node_provision_time
                .unwrap_or(defaults.max_node_provision_time),
            max_node_startup_time: self
                .max_node_startup_time
                .unwrap_or(defaults.max_node_startup_time),
            ignore_daemonsets_utilization: self
                .ignore_daemonsets_utilization
                .unwrap_or(defaults.ignore_daemonsets_utilization),
            zero_or_max_node_scaling: self
                .zero_or_max_node_scaling
                .unwrap_or(defaults.zero_or_max_node_scaling),
            allow_non_atomic_scale_up_to_max: self
                .allow_non_atomic_scale_up_to_max
                .unwrap_or(defaults.allow_non_atomic_scale_up_to_max),
        }
    }
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
    /// On-demand (or configured) price of one node per hour, in USD.
    pub price_per_hour: Option<f64>,
    /// Why the capacity not yet fulfilled could not be launched, if the cloud said so.
    pub launch_error: Option<InstanceError>,
    /// Prefix of the group's provider ids, e.g. `aws:///us-east-1a/`; placeholders use it too.
    pub provider_id_prefix: String,
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
fn placeholder_parts(provider_id: &str) -> Option<(&str, usize)> {
    let tail = provider_id.rsplit('/').next()?;
    let rest = tail.strip_prefix(PLACEHOLDER_MARKER)?;
    let (group, n) = rest.rsplit_once('-')?;
    Some((group, n.parse().ok()?))
}

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

/// Parses a Go-style duration ("90s", "10m", "1h30m", "1.5h", "250ms"), the format CA's flags use.
pub fn parse_go_duration(text: &str) -> std::result::Result<Duration, String> {
    let s = text.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err("empty duration".into());
    }
    let mut rest = s;
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("{text:?}: missing unit (ns, us, ms, s, m, h)"))?;
        let value: f64 = rest[..num_end]
            .parse()
            .map_err(|_| format!("{text:?}: bad number"))?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            u => return Err(format!("{text:?}: unknown unit {u:?}")),
        };
        total += value * seconds;
        rest = &rest[unit_end..];
    }
    Duration::try_from_secs_f64(total).map_err(|e| format!("{text:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(target: i32, instances: usize) -> NodeGroup {
        NodeGroup {
            id: "g".into(),
            min_size: 1,
            max_size: 5,
            target_size: target,
            instances: (0..instances)
                .map(|n| Instance {
                    id: format!("aws:///z/i-{n}"),
                    state: InstanceState::Running,
                    error: None,
                })
                .collect(),
            template: Arc::new(TemplateNode {
                name: "t".into(),
                labels: BTreeMap::new(),
                taints: vec![],
                capacity: Resources::default(),
                allocatable: Resources::default(),
            }),
            options: None,
            price_per_hour: None,
            launch_error: None,
            provider_id_prefix: "aws:///z/".into(),
        }
    }

    #[test]
    fn placeholders_fill_the_gap_and_resolve() {
        let g = group(4, 2);
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
        let g = group(3, 2);
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

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(
            parse_go_duration("1h30m").unwrap(),
            Duration::from_secs(5400)
        );
        assert_eq!(
            parse_go_duration("250ms").unwrap(),
            Duration::from_millis(250)
        );
        assert!(parse_go_duration("10").is_err());
        assert!(parse_go_duration("5 minutes").is_err());
    }
}
