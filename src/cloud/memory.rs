//! The embedded in-memory cloud (`--cloud memory --memory-config FILE`): node groups described in YAML,
//! instances created and deleted at once. It makes the real server runnable with no cloud account and is
//! the reference behaviour every other cloud is tested against.
//!
//! Instances get AWS-style provider ids (`aws:///<zone>/i-…`) when the group has a
//! `topology.kubernetes.io/zone` label and `memory:///<group>/i-…` otherwise. A group may set
//! `launchCapacity`: launches beyond it stay unfulfilled and are reported as creating placeholders with an
//! `InsufficientInstanceCapacity` error, as an AWS group out of capacity is.

use crate::labels;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::Deserialize;

use super::{Cloud, Readiness, SnapshotCell};
use crate::error::{Error, Result};
use crate::model::{
    parse_go_duration, reserve, AutoscalingOptions, ErrorClass, Instance, InstanceError,
    InstanceState, NodeGroup, Resources, Snapshot, Taint, TemplateNode,
};
use crate::pricing::PriceOverrides;

/// The YAML document of `--memory-config`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemoryConfig {
    pub node_groups: Vec<GroupConfig>,
}

/// A number or a string in YAML, kept as the quantity text (`cpu: 4` and `cpu: "4"` are the same).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum QuantityText {
    Int(i64),
    Float(f64),
    Text(String),
}

impl QuantityText {
    fn text(&self) -> String {
        match self {
            QuantityText::Int(i) => i.to_string(),
            QuantityText::Float(f) => f.to_string(),
            QuantityText::Text(s) => s.clone(),
        }
    }
}

/// One node group of the in-memory cloud.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GroupConfig {
    /// The group id.
    pub name: String,
    pub min_size: i32,
    pub max_size: i32,
    /// Instances are created to match; defaults to the listed instances, else to min size.
    pub target_size: Option<i32>,
    /// Node capacity: `cpu` and `memory` are required, `pods` defaults to 110.
    pub capacity: BTreeMap<String, QuantityText>,
    /// Optional; each resource not given is capacity minus the reserve in `model::reserve`.
    #[serde(default)]
    pub allocatable: BTreeMap<String, QuantityText>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub taints: Vec<Taint>,
    pub price_per_hour: Option<f64>,
    pub options: Option<OptionsConfig>,
    /// How many more instances can be launched; unset means unlimited.
    pub launch_capacity: Option<i32>,
    /// Instances that exist at start, beyond those created for `targetSize`.
    #[serde(default)]
    pub instances: Vec<InstanceConfig>,
}

/// Per-group autoscaling options; durations in Go syntax ("10m").
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OptionsConfig {
    pub scale_down_utilization_threshold: Option<f64>,
    pub scale_down_gpu_utilization_threshold: Option<f64>,
    pub scale_down_unneeded_time: Option<String>,
    pub scale_down_unready_time: Option<String>,
    pub max_node_provision_time: Option<String>,
    pub max_node_startup_time: Option<String>,
    pub ignore_daemon_sets_utilization: Option<bool>,
    pub zero_or_max_node_scaling: Option<bool>,
    pub allow_non_atomic_scale_up_to_max: Option<bool>,
}

/// An instance present at start, e.g. one still creating or one whose launch failed.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InstanceConfig {
    /// Instance id (`i-…`); the provider id is built from the group's prefix.
    pub id: String,
    #[serde(default = "running")]
    pub state: InstanceState,
    pub error: Option<InstanceError>,
}

fn running() -> InstanceState {
    InstanceState::Running
}

/// Default pod slots when `capacity.pods` is not given: the kubelet's default `--max-pods`.
pub const DEFAULT_MAX_PODS: i64 = 110;

impl MemoryConfig {
    /// Reads and validates a config file; errors name the file and the offending field.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::config(format!(
                "cannot read memory cloud config {}: {e}",
                path.display()
            ))
        })?;
        Self::parse(&text).map_err(|e| Error::config(format!("{}: {e}", path.display())))
    }

    /// Parses YAML text and checks it.
    pub fn parse(text: &str) -> Result<Self> {
        let cfg: MemoryConfig =
            serde_yaml::from_str(text).map_err(|e| Error::config(e.to_string()))?;
        let mut seen = std::collections::BTreeSet::new();
        for (i, g) in cfg.node_groups.iter().enumerate() {
            if !seen.insert(g.name.as_str()) {
                return Err(Error::config(format!(
                    "nodeGroups[{i}].name: duplicate node group name {:?}",
                    g.name
                )));
            }
        }
        Ok(cfg)
    }
}

fn field(i: usize, g: &GroupConfig, name: &str) -> String {
    format!("nodeGroups[{i}] ({}).{name}", g.name)
}

fn bad(i: usize, g: &GroupConfig, name: &str, why: impl std::fmt::Display) -> Error {
    Error::config(format!("{}: {why}", field(i, g, name)))
}

fn duration(
    i: usize,
    g: &GroupConfig,
    name: &str,
    v: &Option<String>,
) -> Result<Option<std::time::Duration>> {
    v.as_deref()
        .map(|t| parse_go_duration(t).map_err(|e| bad(i, g, &format!("options.{name}"), e)))
        .transpose()
}

fn threshold(i: usize, g: &GroupConfig, name: &str, v: Option<f64>) -> Result<Option<f64>> {
    match v {
        Some(t) if !(0.0..=1.0).contains(&t) => Err(bad(
            i,
            g,
            &format!("options.{name}"),
            format!("must be between 0 and 1, got {t}"),
        )),
        v => Ok(v),
    }
}

impl OptionsConfig {
    fn to_model(&self, i: usize, g: &GroupConfig) -> Result<AutoscalingOptions> {
        Ok(AutoscalingOptions {
            scale_down_utilization_threshold: threshold(
                i,
                g,
                "scaleDownUtilizationThreshold",
                self.scale_down_utilization_threshold,
            )?,
            scale_down_gpu_utilization_threshold: threshold(
                i,
                g,
                "scaleDownGpuUtilizationThreshold",
                self.scale_down_gpu_utilization_threshold,
            )?,
            scale_down_unneeded_time: duration(
                i,
                g,
                "scaleDownUnneededTime",
                &self.scale_down_unneeded_time,
            )?,
            scale_down_unready_time: duration(
                i,
                g,
                "scaleDownUnreadyTime",
                &self.scale_down_unready_time,
            )?,
            max_node_provision_time: duration(
                i,
                g,
                "maxNodeProvisionTime",
                &self.max_node_provision_time,
            )?,
            max_node_startup_time: duration(
                i,
                g,
                "maxNodeStartupTime",
                &self.max_node_startup_time,
            )?,
            ignore_daemonsets_utilization: self.ignore_daemon_sets_utilization,
            zero_or_max_node_scaling: self.zero_or_max_node_scaling,
            allow_non_atomic_scale_up_to_max: self.allow_non_atomic_scale_up_to_max,
        })
    }
}

fn resources(
    i: usize,
    g: &GroupConfig,
    name: &str,
    map: &BTreeMap<String, QuantityText>,
) -> Result<Resources> {
    let mut r = Resources::default();
    for (k, v) in map {
        r.set(k, &v.text())
            .map_err(|e| bad(i, g, &format!("{name}.{k}"), e))?;
    }
    Ok(r)
}

/// Builds the template node of a group: user labels plus the well-known ones, capacity and allocatable.
fn template(i: usize, g: &GroupConfig) -> Result<TemplateNode> {
    let mut capacity = resources(i, g, "capacity", &g.capacity)?;
    for required in ["cpu", "memory"] {
        if !g.capacity.contains_key(required) {
            return Err(bad(i, g, &format!("capacity.{required}"), "is required"));
        }
    }
    if capacity.cpu_milli <= 0 || capacity.memory <= 0 {
        return Err(bad(i, g, "capacity", "cpu and memory must be positive"));
    }
    if !g.capacity.contains_key("pods") {
        capacity.pods = DEFAULT_MAX_PODS;
    }
    let mut allocatable = reserve::allocatable_from_capacity(&capacity);
    for (k, v) in &g.allocatable {
        allocatable
            .set(k, &v.text())
            .map_err(|e| bad(i, g, &format!("allocatable.{k}"), e))?;
    }
    let over = |a: i64, c: i64| a > c;
    if over(allocatable.cpu_milli, capacity.cpu_milli)
        || over(allocatable.memory, capacity.memory)
        || over(allocatable.pods, capacity.pods)
    {
        return Err(bad(i, g, "allocatable", "must not exceed capacity"));
    }
    let name = format!("{}-template", g.name);
    let mut labels = g.labels.clone();
    let mut default = |k: &str, v: String| {
        labels.entry(k.to_string()).or_insert(v);
    };
    default(labels::ARCH, "amd64".into());
    default(labels::OS, "linux".into());
    default(labels::INSTANCE_TYPE, g.name.clone());
    if let Some(zone) = g.labels.get(labels::ZONE) {
        default(labels::REGION, region_of(zone));
    }
    labels.insert(labels::HOSTNAME.into(), name.clone());
    labels.insert(labels::NODE_GROUP.into(), g.name.clone());
    Ok(TemplateNode {
        name,
        labels,
        taints: g.taints.clone(),
        capacity,
        allocatable,
    })
}

/// `us-east-1a` → `us-east-1` (an AZ name is its region plus a letter suffix).
fn region_of(zone: &str) -> String {
    zone.trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .to_string()
}

/// Mutable bookkeeping behind the published snapshot; only touched with the write lock held.
struct WriteState {
    next_instance: u64,
    /// Instances each group can still launch (`None` = unlimited).
    launch_capacity: BTreeMap<String, Option<i32>>,
}

impl WriteState {
    fn new_instance_id(&mut self, group: &NodeGroup) -> String {
        self.next_instance += 1;
        format!("{}i-{:017x}", group.provider_id_prefix, self.next_instance)
    }

    /// Launches instances until `group` has `target` (or capacity runs out, recording the error).
    fn launch_up_to_target(&mut self, group: &mut NodeGroup) {
        let wanted = group.placeholder_count();
        let capacity = self.launch_capacity.get(&group.id).copied().flatten();
        let launch = capacity.map_or(wanted, |c| wanted.min(c.max(0) as usize));
        for _ in 0..launch {
            let id = self.new_instance_id(group);
            group.instances.push(Instance {
                id,
                state: InstanceState::Running,
                error: None,
            });
        }
        if let Some(Some(c)) = self.launch_capacity.get_mut(&group.id) {
            *c -= launch as i32;
        }
        group.launch_error = (launch < wanted).then(|| InstanceError {
            code: "InsufficientInstanceCapacity".into(),
            message: format!(
                "We currently do not have sufficient {} capacity in the Availability Zone you requested.",
                group
                    .template
                    .labels
                    .get(labels::INSTANCE_TYPE)
                    .map(String::as_str)
                    .unwrap_or("instance")
            ),
            class: ErrorClass::OutOfResources,
        });
    }
}

/// The in-memory cloud.
pub struct MemoryCloud {
    snapshot: SnapshotCell,
    writes: Mutex<WriteState>,
}

impl MemoryCloud {
    /// Builds the groups of a config, launching their initial instances.
    pub fn new(config: &MemoryConfig) -> Result<Self> {
        Self::with_prices(config, &PriceOverrides::default())
    }

    /// A cloud whose group prices are the config's `pricePerHour` adjusted by the user's price file (by
    /// the template's instance type, then by group).
    pub fn with_prices(config: &MemoryConfig, overrides: &PriceOverrides) -> Result<Self> {
        let mut state = WriteState {
            next_instance: 0x0f3e_0000_0000,
            launch_capacity: BTreeMap::new(),
        };
        let mut groups = Vec::new();
        for (i, g) in config.node_groups.iter().enumerate() {
            if g.name.is_empty() || g.name.contains('/') {
                return Err(bad(i, g, "name", "must be non-empty and contain no '/'"));
            }
            if g.min_size < 0 || g.max_size < g.min_size {
                return Err(bad(
                    i,
                    g,
                    "maxSize",
                    format!(
                        "need 0 <= minSize <= maxSize, got {}..{}",
                        g.min_size, g.max_size
                    ),
                ));
            }
            let target = g
                .target_size
                .unwrap_or_else(|| g.min_size.max(g.instances.len() as i32));
            if target < g.min_size || target > g.max_size {
                return Err(bad(
                    i,
                    g,
                    "targetSize",
                    format!(
                        "{target} is outside minSize..maxSize ({}..{})",
                        g.min_size, g.max_size
                    ),
                ));
            }
            if (g.instances.len() as i32) > target {
                return Err(bad(
                    i,
                    g,
                    "instances",
                    format!("{} listed but targetSize is {target}", g.instances.len()),
                ));
            }
            if let Some(p) = g.price_per_hour.filter(|p| !p.is_finite() || *p < 0.0) {
                return Err(bad(i, g, "pricePerHour", format!("must be >= 0, got {p}")));
            }
            let template = template(i, g)?;
            let provider_id_prefix = match template.labels.get(labels::ZONE) {
                Some(zone) => format!("aws:///{zone}/"),
                None => format!("memory:///{}/", g.name),
            };
            let instances = g
                .instances
                .iter()
                .map(|ic| Instance {
                    id: format!("{provider_id_prefix}{}", ic.id),
                    state: ic.state,
                    error: ic.error.clone(),
                })
                .collect();
            let mut group = NodeGroup {
                id: g.name.clone(),
                min_size: g.min_size,
                max_size: g.max_size,
                target_size: target,
                instances,
                options: g.options.as_ref().map(|o| o.to_model(i, g)).transpose()?,
                price_per_hour: overrides.group(
                    &g.name,
                    overrides.on_demand(
                        template
                            .labels
                            .get(labels::INSTANCE_TYPE)
                            .map(String::as_str),
                        g.price_per_hour,
                    ),
                ),
                launch_error: None,
                provider_id_prefix,
                template: Arc::new(template),
            };
            state
                .launch_capacity
                .insert(g.name.clone(), g.launch_capacity);
            state.launch_up_to_target(&mut group);
            groups.push(group);
        }
        Ok(MemoryCloud {
            snapshot: SnapshotCell::new(Snapshot::new(groups)),
            writes: Mutex::new(state),
        })
    }

    /// Applies `change` to one group under the write lock and publishes the result; nothing is published
    /// when `change` fails, so a refused request leaves no trace.
    fn update(
        &self,
        group: &str,
        change: impl FnOnce(&mut WriteState, &mut NodeGroup) -> Result<()>,
    ) -> Result<()> {
        let mut state = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        let current = self.snapshot();
        let mut g = NodeGroup::clone(current.group(group)?);
        change(&mut state, &mut g)?;
        let mut next = Snapshot::clone(&current);
        next.upsert(g);
        self.snapshot.store(next);
        Ok(())
    }
}

#[async_trait]
impl Cloud for MemoryCloud {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load()
    }

    async fn refresh(&self) -> Result<()> {
        Ok(())
    }

    async fn increase_size(&self, group: &str, delta: i32) -> Result<()> {
        self.update(group, |state, g| {
            g.target_size = g.plan_increase(delta)?;
            state.launch_up_to_target(g);
            Ok(())
        })
    }

    async fn delete_nodes(&self, group: &str, provider_ids: &[String]) -> Result<()> {
        self.update(group, |_, g| {
            let plan = g.plan_delete(provider_ids)?;
            g.instances.retain(|i| !plan.instances.contains(&i.id));
            g.set_target(plan.new_target);
            Ok(())
        })
    }

    async fn decrease_target_size(&self, group: &str, delta: i32) -> Result<()> {
        self.update(group, |_, g| {
            g.set_target(g.plan_decrease(delta)?);
            Ok(())
        })
    }

    fn readiness(&self) -> Readiness {
        let s = self.snapshot();
        Readiness {
            ready: true,
            detail: format!(
                "memory cloud: {} node groups, {} instances",
                s.groups().count(),
                s.instance_count()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = "
nodeGroups:
  - name: general
    minSize: 0
    maxSize: 3
    targetSize: 1
    capacity: {cpu: 4, memory: 16Gi, pods: 58}
    labels: {topology.kubernetes.io/zone: us-east-1a}
";

    #[test]
    fn template_has_well_known_labels_and_reserved_allocatable() {
        let cloud = MemoryCloud::new(&MemoryConfig::parse(ONE).unwrap()).unwrap();
        let s = cloud.snapshot();
        let g = s.group("general").unwrap();
        assert_eq!(g.instances.len(), 1);
        assert!(g.instances[0].id.starts_with("aws:///us-east-1a/i-"));
        let t = &g.template;
        assert_eq!(t.labels["topology.kubernetes.io/region"], "us-east-1");
        assert_eq!(t.labels["kubernetes.io/hostname"], t.name);
        assert_eq!(t.allocatable.cpu_milli, 3920);
        assert_eq!(t.allocatable.memory, 15391 << 20);
    }

    #[test]
    fn config_errors_name_the_field() {
        let err = |yaml: &str| match MemoryConfig::parse(yaml).and_then(|c| MemoryCloud::new(&c)) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted bad config:\n{yaml}"),
        };
        assert!(
            err(&ONE.replace("16Gi", "16Gx")).contains("nodeGroups[0] (general).capacity.memory")
        );
        assert!(err(&ONE.replace("targetSize: 1", "targetSize: 9")).contains("targetSize"));
        assert!(err(&ONE.replace("pods: 58", "pods: 58, bogus: 1Q")).contains("capacity.bogus"));
        assert!(err(&ONE.replace("minSize", "minsize")).contains("minsize"));
        assert!(err(&format!("{ONE}{}", &ONE[12..])).contains("duplicate"));
    }
}
