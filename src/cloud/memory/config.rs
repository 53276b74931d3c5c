//! The memory cloud's YAML (`--memory-config`, and `simulate`'s `--node-groups`): node groups with their
//! bounds, template, options, price and launch capacity, checked with errors that name the field.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use super::prices::{instance_price, GroupPrices, InstanceLifecycle};
use crate::error::{Error, Result};
use crate::labels;
use crate::model::consolidation::{Consolidation, ConsolidationPolicy};
use crate::model::drift::DriftPolicy;
use crate::model::lifecycle::{Budget, GroupLifecycle, Window};
use crate::model::{parse_go_duration, provider_id};
use crate::model::{
    reserve, AutoscalingOptions, Instance, InstanceError, InstanceState, NodeGroup, Resources,
    Taint, TemplateNode,
};
use crate::pricing::PriceOverrides;

/// The YAML document of `--memory-config`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemoryConfig {
    pub node_groups: Vec<GroupConfig>,
}

/// A scalar in YAML, kept as its text (`cpu: 4` and `cpu: "4"` are the same).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum QuantityText {
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
}

impl QuantityText {
    fn text(&self) -> String {
        match self {
            QuantityText::Int(i) => i.to_string(),
            QuantityText::Float(f) => f.to_string(),
            QuantityText::Bool(b) => b.to_string(),
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
    /// What an on-demand instance of the group costs, when it differs from `pricePerHour` (a
    /// mixed-instances group's blend): instances listed `lifecycle: on-demand` are priced at it.
    pub on_demand_price_per_hour: Option<f64>,
    /// What a spot instance of the group costs: instances listed `lifecycle: spot` are priced at it.
    pub spot_price_per_hour: Option<f64>,
    /// Per-group autoscaling options by name (`scaleDownUnneededTime: 5m`), durations in Go syntax.
    pub options: Option<BTreeMap<String, QuantityText>>,
    /// How many more instances can be launched; unset means unlimited.
    pub launch_capacity: Option<i32>,
    /// Instances that exist at start, beyond those created for `targetSize`.
    #[serde(default)]
    pub instances: Vec<InstanceConfig>,
    /// The launch template or configuration new instances come from; an instance of another revision
    /// is drifted and replaced.
    pub revision: Option<String>,
    /// How many of the group's nodes may be out of service at once (`"20%"` or a count); overrides
    /// `--max-disruption`.
    pub disruption_budget: Option<String>,
    /// When voluntary disruptions may happen: `{schedule: "0 2 * * *", duration: 4h}` (cron, UTC).
    pub disruption_window: Option<WindowConfig>,
    /// `{policy: WhenEmptyOrUnderutilized, after: 10m}`; overrides `--consolidation`.
    pub consolidation: Option<ConsolidationConfig>,
    /// `Replace` or `Never`: what is done with drifted nodes; overrides `--drift`.
    pub drift: Option<String>,
}

/// A group's consolidation in the config.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsolidationConfig {
    /// `Never`, `WhenEmpty` or `WhenEmptyOrUnderutilized`.
    pub policy: String,
    /// A Go duration; 10m when unset.
    pub after: Option<String>,
}

/// A disruption window of the config.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowConfig {
    pub schedule: String,
    pub duration: String,
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
    /// The revision it was launched from (default: the group's).
    pub revision: Option<String>,
    /// `spot` or `on-demand`: priced at the group's `spotPricePerHour` or `onDemandPricePerHour`.
    pub lifecycle: Option<InstanceLifecycle>,
    /// What this instance costs an hour (its own type's price), before the group's.
    pub price_per_hour: Option<f64>,
}

fn running() -> InstanceState {
    InstanceState::Running
}

/// The most node groups a file may list.
pub const MAX_GROUPS: usize = 10_000;

/// The most a group's `minSize`, `maxSize` or `targetSize` may be (an EC2 Auto Scaling group's
/// quota is far lower).
pub const MAX_GROUP_SIZE: i32 = 1_000_000;

/// The most instances a file may make at start, over all its groups: each group's `targetSize` (else
/// `minSize`) or the instances it lists, counted before any is made.
pub const MAX_INSTANCES_AT_START: u64 = 200_000;

/// Default pod slots when `capacity.pods` is not given: the kubelet's default `--max-pods`.
pub const DEFAULT_MAX_PODS: i64 = 110;

impl MemoryConfig {
    /// Reads and validates a config file; errors name the file and the offending field.
    pub fn load(path: &Path) -> Result<Self> {
        let text =
            crate::input::read_file(path, &crate::input::NODE_GROUPS, "memory cloud config")?;
        Self::parse(&text).map_err(|e| Error::config(format!("{}: {e}", path.display())))
    }

    /// Parses YAML text and checks it: within [`crate::input::NODE_GROUPS`] before it is parsed, then
    /// its counts and sizes against [`MAX_GROUPS`], [`MAX_GROUP_SIZE`] and [`MAX_INSTANCES_AT_START`]
    /// before any instance is made.
    pub fn parse(text: &str) -> Result<Self> {
        crate::input::NODE_GROUPS
            .check_yaml(text)
            .map_err(|e| Error::config(e.to_string()))?;
        let cfg: MemoryConfig =
            serde_norway::from_str(text).map_err(|e| Error::config(e.to_string()))?;
        if cfg.node_groups.len() > MAX_GROUPS {
            return Err(Error::config(format!(
                "nodeGroups: {} groups is over the limit of {MAX_GROUPS}",
                cfg.node_groups.len()
            )));
        }
        let mut seen = std::collections::HashSet::new();
        let mut at_start = 0u64;
        for (i, g) in cfg.node_groups.iter().enumerate() {
            if !seen.insert(g.name.as_str()) {
                return Err(Error::config(format!(
                    "nodeGroups[{i}].name: duplicate node group name {:?}",
                    g.name
                )));
            }
            for (name, size) in [
                ("minSize", Some(g.min_size)),
                ("maxSize", Some(g.max_size)),
                ("targetSize", g.target_size),
            ] {
                if let Some(n) = size.filter(|&n| n > MAX_GROUP_SIZE) {
                    return Err(bad(
                        i,
                        g,
                        name,
                        format!("{n} is over the limit of {MAX_GROUP_SIZE}"),
                    ));
                }
            }
            let target = g.target_size.unwrap_or(g.min_size).max(0) as u64;
            at_start += target.max(g.instances.len() as u64);
        }
        if at_start > MAX_INSTANCES_AT_START {
            return Err(Error::config(format!(
                "nodeGroups: {at_start} instances at start (each group's targetSize, else minSize, or its \
                 instances listed) is over the limit of {MAX_INSTANCES_AT_START}"
            )));
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

fn options(
    i: usize,
    g: &GroupConfig,
    map: &BTreeMap<String, QuantityText>,
) -> Result<AutoscalingOptions> {
    let mut o = AutoscalingOptions::default();
    for (name, value) in map.iter().filter(|(k, _)| *k != MAX_NODE_LIFETIME) {
        o.set(name, &value.text())
            .map_err(|e| bad(i, g, &format!("options.{name}"), e))?;
    }
    Ok(o)
}

/// The option naming a group's maximum node lifetime (not one of the protocol's options).
const MAX_NODE_LIFETIME: &str = "maxNodeLifetime";

/// The group's revisions, lifetime and budget.
fn lifecycle(i: usize, g: &GroupConfig, prefix: &str) -> Result<GroupLifecycle> {
    let max_node_lifetime = match g.options.as_ref().and_then(|o| o.get(MAX_NODE_LIFETIME)) {
        Some(v) => Some(
            parse_go_duration(&v.text())
                .map_err(|e| bad(i, g, &format!("options.{MAX_NODE_LIFETIME}"), e))?,
        ),
        None => None,
    };
    let disruption_budget = match &g.disruption_budget {
        Some(b) => Some(Budget::parse(b).map_err(|e| bad(i, g, "disruptionBudget", e))?),
        None => None,
    };
    let disruption_window = match &g.disruption_window {
        Some(w) => {
            let field = |f: &str| format!("disruptionWindow.{f}");
            let duration =
                parse_go_duration(&w.duration).map_err(|e| bad(i, g, &field("duration"), e))?;
            Some(
                Window::parse(&w.schedule, duration)
                    .map_err(|e| bad(i, g, &field("schedule"), e))?,
            )
        }
        None => None,
    };
    let consolidation = match &g.consolidation {
        Some(c) => {
            let policy = ConsolidationPolicy::parse(&c.policy)
                .map_err(|e| bad(i, g, "consolidation.policy", e))?;
            let after = match &c.after {
                Some(a) => parse_go_duration(a).map_err(|e| bad(i, g, "consolidation.after", e))?,
                None => Consolidation::default().after,
            };
            Some(Consolidation { policy, after })
        }
        None => None,
    };
    let drift = match &g.drift {
        Some(p) => Some(DriftPolicy::parse(p).map_err(|e| bad(i, g, "drift", e))?),
        None => None,
    };
    let instance_revisions = g
        .instances
        .iter()
        .filter_map(|ic| {
            let rev = ic.revision.clone().or_else(|| g.revision.clone())?;
            Some((format!("{prefix}{}", ic.id), rev))
        })
        .collect();
    Ok(GroupLifecycle {
        revision: g.revision.clone(),
        also_current: Default::default(),
        instance_revisions,
        max_node_lifetime,
        disruption_budget,
        disruption_window,
        consolidation,
        drift,
    })
}

/// Group `i` of the config, checked, priced by `overrides`, with the instances it lists; its target
/// (the instances still to launch are the caller's).
pub(super) fn group(i: usize, g: &GroupConfig, overrides: &PriceOverrides) -> Result<NodeGroup> {
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
    let prices = [
        ("pricePerHour".to_string(), g.price_per_hour),
        ("onDemandPricePerHour".into(), g.on_demand_price_per_hour),
        ("spotPricePerHour".into(), g.spot_price_per_hour),
    ];
    let listed = g
        .instances
        .iter()
        .enumerate()
        .map(|(k, ic)| (format!("instances[{k}].pricePerHour"), ic.price_per_hour));
    for (field, p) in prices.into_iter().chain(listed) {
        if let Some(p) = p.filter(|p| !p.is_finite() || *p < 0.0) {
            return Err(bad(i, g, &field, format!("must be >= 0, got {p}")));
        }
    }
    let template = template(i, g)?;
    let provider_id_prefix = match template.labels.get(labels::ZONE) {
        Some(zone) => provider_id::prefix(provider_id::AWS, zone),
        None => provider_id::prefix(provider_id::MEMORY, &g.name),
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
    let group = NodeGroup {
        id: g.name.clone(),
        min_size: g.min_size,
        max_size: g.max_size,
        target_size: target,
        instances,
        // A group whose only option is its node lifetime has no protocol options (GetOptions answers
        // UNIMPLEMENTED, CA keeps its defaults).
        options: g
            .options
            .as_ref()
            .filter(|o| o.keys().any(|k| k != MAX_NODE_LIFETIME))
            .map(|o| options(i, g, o))
            .transpose()?,
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
        instance_prices: listed_prices(g, &provider_id_prefix, overrides),
        launch_error: None,
        lifecycle: lifecycle(i, g, &provider_id_prefix)?,
        provider_id_prefix,
        template: Arc::new(template),
    };
    Ok(group)
}

impl GroupConfig {
    /// The group's prices, for [`instance_price`].
    pub fn prices(&self) -> GroupPrices<'_> {
        GroupPrices {
            group: &self.name,
            instance_type: self.labels.get(labels::INSTANCE_TYPE).map(String::as_str),
            price: self.price_per_hour,
            on_demand: self.on_demand_price_per_hour,
            spot: self.spot_price_per_hour,
        }
    }
}

/// The listed instances' own prices of `g`, by provider id (`prefix` and the instance id).
pub(super) fn listed_prices(
    g: &GroupConfig,
    prefix: &str,
    overrides: &PriceOverrides,
) -> BTreeMap<String, f64> {
    g.instances
        .iter()
        .filter_map(|ic| {
            let p = instance_price(g.prices(), ic.lifecycle, ic.price_per_hour, overrides)?;
            Some((format!("{prefix}{}", ic.id), p))
        })
        .collect()
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
        // Known only from a real node's CSINode.
        volume_limits: Default::default(),
    })
}

/// `us-east-1a` → `us-east-1` (an AZ name is its region plus a letter suffix).
fn region_of(zone: &str) -> String {
    zone.trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .to_string()
}
