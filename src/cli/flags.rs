//! The flag groups commands share, upstream cluster-autoscaler's names and defaults: where node groups
//! come from (`serve`, `run`), how the expander chooses (all three), and the loop's rules (`run`,
//! `simulate`). Each is one struct for the command line and the `--config` file alike.

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use clap::{Args, ValueEnum};
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use super::config::{count_or_text, relative_to_config};
use super::values::{GoDuration, GpuTotal, Range};
use crate::cloud::aws::discovery::{NamedGroup, TagDiscovery};
use crate::cloud::aws::{ttl, AwsCloud, AwsSettings, PricingSettings};
use crate::cloud::memory::{MemoryCloud, MemoryConfig};
use crate::cloud::Cloud;
use crate::engine::expander::{Priorities, Strategy};
use crate::engine::Settings;
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::pricing::{PriceOverrides, PricingSource};

/// Upstream's defaults as the core writes them ([`Settings::upstream`]): the loop's and the expander's
/// flags take their defaults from here, so the two cannot disagree.
pub(super) static UPSTREAM: LazyLock<Settings> = LazyLock::new(Settings::upstream);

/// Where node groups come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CloudKind {
    /// Groups described in a YAML file, resized in memory (no cloud account needed).
    Memory,
    /// Auto Scaling groups, through the AWS SDK's standard credential and endpoint chain.
    Aws,
}

/// `aws` or `file`, with clap's list of possible values in `--help`.
fn pricing_source() -> impl clap::builder::TypedValueParser<Value = PricingSource> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(PricingSource::NAMES).map(|s| {
        s.parse::<PricingSource>()
            .expect("one of the possible values")
    })
}

/// Where node groups come from and how they and their prices are read (`serve`, `run`).
#[derive(Debug, Clone, Args, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CloudFlags {
    /// Cloud backend.
    #[arg(long, value_enum, default_value = "memory")]
    pub cloud: CloudKind,
    /// Node groups of the memory cloud (see examples/memory-cloud.yaml).
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub memory_config: Option<PathBuf>,
    /// AWS: discover Auto Scaling groups by tags, e.g.
    /// asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/CLUSTER (repeatable, tags AND-ed).
    #[arg(long, value_name = "SPEC")]
    pub node_group_auto_discovery: Vec<String>,
    /// AWS: manage an Auto Scaling group by name with these bounds, MIN:MAX:NAME (repeatable).
    #[arg(long, value_name = "MIN:MAX:NAME")]
    pub nodes: Vec<String>,
    /// AWS: region [default: the SDK's chain, e.g. AWS_REGION].
    #[arg(long, value_name = "REGION")]
    pub aws_region: Option<String>,
    /// AWS: minimum time between two reads of the Auto Scaling groups, jittered ±10%.
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(ttl::DEFAULT_REFRESH_INTERVAL))]
    pub aws_refresh_interval: GoDuration,
    /// AWS: where prices come from: aws (Pricing API and spot price history) or file (--price-overrides
    /// alone, for isolated clusters).
    #[arg(long, value_parser = pricing_source(), default_value = "aws")]
    pub pricing_source: PricingSource,
    /// AWS: prices older than this are read again.
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(ttl::DEFAULT_PRICE_REFRESH_INTERVAL))]
    pub pricing_refresh_interval: GoDuration,
}

impl CloudFlags {
    /// The AWS cloud's settings; `overrides` is the price file. Errors name the flag.
    pub fn aws(&self, overrides: PriceOverrides, has_price_file: bool) -> Result<AwsSettings> {
        if self.pricing_source == PricingSource::File && !has_price_file {
            return Err(Error::config(
                "--pricing-source=file needs --price-overrides FILE",
            ));
        }
        Ok(AwsSettings {
            region: self.aws_region.clone(),
            auto_discovery: self
                .node_group_auto_discovery
                .iter()
                .map(|s| TagDiscovery::parse(s))
                .collect::<Result<_>>()?,
            nodes: self
                .nodes
                .iter()
                .map(|s| NamedGroup::parse(s))
                .collect::<Result<_>>()?,
            refresh_interval: self.aws_refresh_interval.0,
            endpoint_url: None,
            max_attempts: None,
            pricing: PricingSettings {
                source: self.pricing_source,
                overrides,
                refresh_interval: self.pricing_refresh_interval.0,
                endpoint_url: None,
            },
        })
    }

    /// Checks the flags without connecting to anything.
    pub fn check(&self, expander: &ExpanderFlags) -> Result<()> {
        let overrides = expander.price_overrides()?;
        self.aws(overrides, expander.price_overrides.is_some())?;
        if self.cloud == CloudKind::Memory && self.memory_config.is_none() {
            return Err(Error::config(
                "--memory-config FILE is required with --cloud memory",
            ));
        }
        Ok(())
    }

    /// Builds the configured cloud, priced by the price file of `expander`.
    pub async fn build(
        &self,
        expander: &ExpanderFlags,
        metrics: Arc<Metrics>,
    ) -> Result<Arc<dyn Cloud>> {
        let overrides = expander.price_overrides()?;
        match self.cloud {
            CloudKind::Aws => Ok(AwsCloud::connect(
                self.aws(overrides, expander.price_overrides.is_some())?,
                metrics,
            )
            .await?),
            CloudKind::Memory => {
                let path = self.memory_config.as_ref().ok_or_else(|| {
                    Error::config("--memory-config FILE is required with --cloud memory")
                })?;
                Ok(Arc::new(MemoryCloud::with_prices(
                    &MemoryConfig::load(path)?,
                    &overrides,
                )?))
            }
        }
    }
}

/// How the expander chooses among scale-up options, and with which prices (all commands).
#[derive(Debug, Clone, Args, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ExpanderFlags {
    /// Expander strategy chain, as upstream's --expander: random, most-pods, least-waste, least-nodes,
    /// price, priority, comma-separated.
    #[arg(long, value_name = "CHAIN", default_value_t = Strategy::chain_text(&UPSTREAM.expander))]
    pub expander: String,
    /// YAML of the priority strategy, upstream's `priorities` format (priority: [regex, ...]); re-read
    /// while running.
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub priority_config: Option<PathBuf>,
    /// YAML of the user's prices: per instance type or node group, pricePerHour or discount (Savings
    /// Plans, reserved instances, negotiated rates).
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub price_overrides: Option<PathBuf>,
}

impl ExpanderFlags {
    /// The strategy chain.
    pub fn chain(&self) -> Result<Vec<Strategy>> {
        Ok(Strategy::parse_chain(&self.expander)?)
    }

    /// The tiers of `--priority-config`, or none; errors name the flag and file.
    pub fn priorities(&self) -> Result<Priorities> {
        let Some(path) = &self.priority_config else {
            return Ok(Priorities::default());
        };
        let text = crate::input::read_file(path, &crate::bounds::PRIORITIES, "--priority-config")?;
        Priorities::parse(&text).map_err(|e| Error::config(format!("{}: {e}", path.display())))
    }

    /// The price file, if given.
    pub fn price_overrides(&self) -> Result<PriceOverrides> {
        match &self.price_overrides {
            Some(p) => Ok(PriceOverrides::load(p)?),
            None => Ok(PriceOverrides::default()),
        }
    }

    /// The priority tiers, kept current: the file is re-read every `interval` and a change that parses
    /// replaces them (a bad file keeps the last good tiers and logs why, as upstream does with its
    /// ConfigMap).
    pub fn watched_priorities(&self, interval: Duration) -> Result<Arc<RwLock<Priorities>>> {
        let tiers = Arc::new(RwLock::new(self.priorities()?));
        if let Some(path) = &self.priority_config {
            watch_priority_file(path.clone(), tiers.clone(), interval);
        }
        Ok(tiers)
    }
}

/// Re-reads the priority file every `interval` and swaps the tiers in when it changed and parses.
pub fn watch_priority_file(
    path: PathBuf,
    tiers: Arc<RwLock<Priorities>>,
    interval: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // Compare against nothing at first: the file may have changed since the tiers were read.
        let mut last: Option<String> = None;
        loop {
            tokio::time::sleep(interval).await;
            let text = match crate::input::read_file(
                &path,
                &crate::bounds::PRIORITIES,
                "--priority-config",
            ) {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot read priority file; keeping the last good one");
                    continue;
                }
            };
            if last.as_deref() == Some(text.as_str()) {
                continue;
            }
            match Priorities::parse(&text) {
                Ok(p) => {
                    *tiers.write() = p;
                    tracing::info!(path = %path.display(), "priority file reloaded");
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "bad priority file; keeping the last good one")
                }
            }
            last = Some(text);
        }
    })
}

/// The rules of the autoscaling loop (`run`, `simulate`), upstream cluster-autoscaler's flags.
#[derive(Debug, Clone, Args, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct LoopFlags {
    /// Maximum nodes in all groups together (0: no limit).
    #[arg(long, default_value_t = UPSTREAM.max_nodes_total)]
    pub max_nodes_total: usize,
    /// Minimum and maximum cores in the cluster, MIN:MAX.
    #[arg(long, value_name = "MIN:MAX", default_value_t = Range(UPSTREAM.cores_total.0, UPSTREAM.cores_total.1))]
    pub cores_total: Range,
    /// Minimum and maximum GiB of memory in the cluster, MIN:MAX.
    #[arg(long, value_name = "MIN:MAX", default_value_t = Range(UPSTREAM.memory_total_gib.0, UPSTREAM.memory_total_gib.1))]
    pub memory_total: Range,
    /// Minimum and maximum GPUs of one type in the cluster, GPU_TYPE:MIN:MAX (repeatable, one per
    /// type; the type is the nodes' k8s.amazonaws.com/accelerator label). None by default.
    #[arg(long, value_name = "GPU_TYPE:MIN:MAX")]
    pub gpu_total: Vec<GpuTotal>,
    /// Most nodes one scale-up adds.
    #[arg(long, default_value_t = UPSTREAM.max_nodes_per_scaleup)]
    pub max_nodes_per_scaleup: usize,
    /// Grow every group below its min size to it, with or without pending pods.
    #[arg(long, default_value_t = UPSTREAM.enforce_node_group_min_size, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub enforce_node_group_min_size: bool,
    /// Time budget of one node group's binpacking estimate.
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.max_nodegroup_binpacking_duration))]
    pub max_nodegroup_binpacking_duration: GoDuration,
    /// Pods younger than this do not trigger a scale-up.
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.new_pod_scale_up_delay))]
    pub new_pod_scale_up_delay: GoDuration,
    /// Pods with priority below this never trigger a scale-up.
    #[arg(long, default_value_t = UPSTREAM.expendable_pods_priority_cutoff, allow_negative_numbers = true)]
    pub expendable_pods_priority_cutoff: i32,
    /// A group whose scale-up failed is passed over this long after its first failure.
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.node_group_backoff.initial))]
    pub initial_node_group_backoff_duration: GoDuration,
    /// A failure after the last backoff ended doubles it, up to this long.
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.node_group_backoff.max))]
    pub max_node_group_backoff_duration: GoDuration,
    /// A group without a failed scale-up for this long backs off from the first duration again.
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.node_group_backoff.reset))]
    pub node_group_backoff_reset_timeout: GoDuration,
    /// Whether nodes are ever removed.
    #[arg(long, default_value_t = UPSTREAM.scale_down_enabled, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub scale_down_enabled: bool,
    /// After a scale-up, scale-down waits this long.
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.scale_down_delay_after_add))]
    pub scale_down_delay_after_add: GoDuration,
    /// After a node was removed, the next removal waits this long.
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.scale_down_delay_after_delete))]
    pub scale_down_delay_after_delete: GoDuration,
    /// After a removal failed, scale-down waits this long.
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.scale_down_delay_after_failure))]
    pub scale_down_delay_after_failure: GoDuration,
    /// A node below this share of requested cpu and memory may be removed (groups may override).
    #[arg(long, default_value_t = UPSTREAM.defaults.scale_down_utilization_threshold)]
    pub scale_down_utilization_threshold: f64,
    /// A GPU node below this share of requested GPUs may be removed (groups may override).
    #[arg(long, default_value_t = UPSTREAM.defaults.scale_down_gpu_utilization_threshold)]
    pub scale_down_gpu_utilization_threshold: f64,
    /// Leave DaemonSet pods out of utilization (groups may override).
    #[arg(long, default_value_t = UPSTREAM.defaults.ignore_daemonsets_utilization, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub ignore_daemonsets_utilization: bool,
    /// Leave mirror (static) pods out of utilization, as DaemonSet pods with the flag above.
    #[arg(long, default_value_t = UPSTREAM.ignore_mirror_pods_utilization, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub ignore_mirror_pods_utilization: bool,
    /// A taint key meaning the node is still starting: such a node counts as not ready, and new nodes
    /// are planned without it (repeatable; upstream's `startup-taint.` prefix needs no flag).
    #[arg(long, value_name = "KEY")]
    pub startup_taint: Vec<String>,
    /// Upstream's older name for `--startup-taint` (repeatable).
    #[arg(long, value_name = "KEY")]
    pub ignore_taint: Vec<String>,
    /// A taint key that reports a status: new nodes are planned without it (repeatable; upstream's
    /// `status-taint.` prefix needs no flag).
    #[arg(long, value_name = "KEY")]
    pub status_taint: Vec<String>,
    /// Unneeded nodes soft-tainted (`DeletionCandidateOfClusterAutoscaler:PreferNoSchedule`) per loop, and
    /// taints taken off nodes needed again (0: no soft taints).
    #[arg(long, value_name = "N", default_value_t = UPSTREAM.max_bulk_soft_taint_count)]
    pub max_bulk_soft_taint_count: usize,
    /// How long one loop may spend soft-tainting.
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.max_bulk_soft_taint_time))]
    pub max_bulk_soft_taint_time: GoDuration,
    /// At start, nodes whose soft taint is younger than this count as unneeded since the taint's time
    /// (0: off; a restart starts every unneeded time over).
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.node_deletion_candidate_ttl))]
    pub node_deletion_candidate_ttl: GoDuration,
    /// kube-scheduler's configuration: its first profile's NodeAffinity `addedAffinity` and
    /// NodeResourcesFit `ignoredResources`/`ignoredResourceGroups` are simulated; other settings that
    /// change where pods fit are refused.
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub scheduler_config_file: Option<PathBuf>,
    /// Schedulers whose pods count as pending as soon as they have no node, without waiting for the
    /// scheduler to mark them unschedulable (comma-separated, as upstream).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub bypassed_scheduler_names: Vec<String>,
    /// How long a node must be unneeded before it is removed (groups may override).
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.defaults.scale_down_unneeded_time))]
    pub scale_down_unneeded_time: GoDuration,
    /// Keep nodes with pods using emptyDir or hostPath.
    #[arg(long, default_value_t = UPSTREAM.skip_nodes_with_local_storage, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub skip_nodes_with_local_storage: bool,
    /// Keep nodes with kube-system pods that have no PodDisruptionBudget (for
    /// --blocking-system-pod-distruption-timeout after their creation).
    #[arg(long, default_value_t = UPSTREAM.skip_nodes_with_system_pods, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub skip_nodes_with_system_pods: bool,
    /// How long after its creation a kube-system pod without a PodDisruptionBudget keeps its node
    /// (upstream's spelling).
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.blocking_system_pod_disruption_timeout))]
    pub blocking_system_pod_distruption_timeout: GoDuration,
    /// Keep nodes with pods of controllers other than ReplicaSet, ReplicationController, Job and
    /// StatefulSet (false: any controller will do); --min-replica-count applies only with it.
    #[arg(long, default_value_t = UPSTREAM.skip_nodes_with_custom_controller_pods, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub skip_nodes_with_custom_controller_pods: bool,
    /// Keep nodes with pods of ReplicaSets or ReplicationControllers with fewer replicas than this
    /// (`simulate` reads them from the dump; `run` does not watch them yet).
    #[arg(long, default_value_t = UPSTREAM.min_replica_count)]
    pub min_replica_count: i32,
    /// Deprecated, no effect (as upstream since 1.33): empty nodes are capped by
    /// --max-scale-down-parallelism only. Accepted so that upstream's command lines still start.
    #[arg(long, default_value_t = UPSTREAM.max_empty_bulk_delete)]
    pub max_empty_bulk_delete: usize,
    /// Evict a removed node's DaemonSet pods after its other pods, best effort, when it had pods.
    #[arg(long, default_value_t = UPSTREAM.daemonset_eviction_for_occupied_nodes, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub daemonset_eviction_for_occupied_nodes: bool,
    /// Evict a removed empty node's DaemonSet pods, best effort.
    #[arg(long, default_value_t = UPSTREAM.daemonset_eviction_for_empty_nodes, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub daemonset_eviction_for_empty_nodes: bool,
    /// Split scale-ups across groups with the same template (zone aside).
    #[arg(long, default_value_t = UPSTREAM.balance_similar_node_groups, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub balance_similar_node_groups: bool,
    /// A label that tells similar groups: only the labels given are compared (repeatable).
    #[arg(long, value_name = "LABEL")]
    pub balancing_label: Vec<String>,
    /// A label left out when comparing groups, besides upstream's zone, hostname and AWS ones
    /// (repeatable).
    #[arg(long, value_name = "LABEL")]
    pub balancing_ignore_label: Vec<String>,
    /// Most memory capacity similar groups may differ by, as a share.
    #[arg(long, default_value_t = UPSTREAM.balancing.memory_difference_ratio)]
    pub memory_difference_ratio: f64,
    /// Most each allocatable resource of similar groups may differ by, as a share.
    #[arg(long, default_value_t = UPSTREAM.balancing.max_allocatable_difference_ratio)]
    pub max_allocatable_difference_ratio: f64,
    /// Most each free resource (after DaemonSet pods) of similar groups may differ by, as a share.
    #[arg(long, default_value_t = UPSTREAM.balancing.max_free_difference_ratio)]
    pub max_free_difference_ratio: f64,
    /// Instances without a node after this long are deleted and their group backs off; capacity not
    /// delivered after this long is given up (groups may override).
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.defaults.max_node_provision_time))]
    pub max_node_provision_time: GoDuration,
    /// A registered node not Ready after this long is unready, no longer capacity on its way (groups may
    /// override).
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.defaults.max_node_startup_time))]
    pub max_node_startup_time: GoDuration,
    /// Unready nodes the cluster may have and still be healthy (beyond this and the percentage below, the
    /// loop only reports).
    #[arg(long, default_value_t = UPSTREAM.ok_total_unready_count)]
    pub ok_total_unready_count: usize,
    /// Share of unready nodes, in percent, beyond which (and the count above) the cluster is unhealthy.
    #[arg(long, default_value_t = UPSTREAM.max_total_unready_percentage)]
    pub max_total_unready_percentage: f64,
    /// Whether unready nodes may be removed (after --scale-down-unready-time).
    #[arg(long, default_value_t = UPSTREAM.scale_down_unready_enabled, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub scale_down_unready_enabled: bool,
    /// How long a node must be unready and unneeded before it is removed (groups may override).
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.defaults.scale_down_unready_time))]
    pub scale_down_unready_time: GoDuration,
    /// Most node removals (empty or drained) in flight at once, across loops.
    #[arg(long, default_value_t = UPSTREAM.max_scale_down_parallelism)]
    pub max_scale_down_parallelism: usize,
    /// Most drains of nodes with pods in flight at once, across loops.
    #[arg(long, default_value_t = UPSTREAM.max_drain_parallelism)]
    pub max_drain_parallelism: usize,
    /// Most pods one loop's disruption methods (scale-down, notices, replacements, consolidation) may
    /// plan to evict together (0: no limit; involuntary notices are counted, never held).
    #[arg(long, default_value_t = UPSTREAM.max_evictions_per_loop)]
    pub max_evictions_per_loop: usize,
    /// Delete instances that never became nodes even when their group is at min size.
    #[arg(long, default_value_t = UPSTREAM.force_delete_unregistered_nodes, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub force_delete_unregistered_nodes: bool,
    /// Replace nodes older than this, surge first, within the disruption budget (0s: never; a group's
    /// `ferroscale.io/max-node-lifetime` tag overrides).
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.node_max_lifetime.unwrap_or_default()))]
    pub node_max_lifetime: GoDuration,
    /// How many of a group's nodes may be out of service at once for replacements (drift, expiry): a
    /// count or a percentage rounded up, 0 blocking (a group's `disruptionBudget` overrides, and only a
    /// group's own budget also limits scale-down).
    #[arg(long, value_name = "COUNT_OR_PERCENT", default_value_t = UPSTREAM.max_disruption.to_string())]
    #[serde(deserialize_with = "count_or_text")]
    pub max_disruption: String,
    /// Most nodes a minute that spot warnings and stopping instances take out without regard to pod
    /// disruption budgets, a count or a percentage of the cluster's nodes rounded up (`10%`); beyond it
    /// such notices drain as voluntary ones (drainability rules, budgets).
    #[arg(long, value_name = "COUNT_OR_PERCENT", default_value_t = UPSTREAM.max_interruptions_per_minute.to_string())]
    #[serde(deserialize_with = "count_or_text")]
    pub max_interruptions_per_minute: String,
    /// What groups that set none (tag `ferroscale.io/drift`) do with drifted nodes: `Never`
    /// (cluster-autoscaler's behaviour) or `Replace` (surge first, within the disruption budget).
    #[arg(long, value_name = "POLICY", default_value_t = UPSTREAM.drift.to_string())]
    pub drift: String,
    /// Consolidation policy of groups that set none (tag `ferroscale.io/consolidation`):
    /// `Never` (cluster-autoscaler's behaviour), `WhenEmpty`, `WhenEmptyOrUnderutilized`, optionally
    /// `,after=10m` (how long after its last pod change a node may be taken).
    #[arg(long, value_name = "POLICY[,after=DURATION]", default_value_t = UPSTREAM.consolidation.policy.to_string())]
    pub consolidation: String,
    /// A consolidation goes ahead only if it saves at least this share of the taken nodes' hourly price.
    #[arg(long, value_name = "PERCENT", default_value = "10%")]
    pub consolidation_min_savings: String,
    /// And at least this many dollars an hour per pod it evicts (0: off).
    #[arg(long, value_name = "USD", default_value_t = UPSTREAM.consolidation_min_savings_per_pod)]
    pub consolidation_min_savings_per_pod: f64,
    /// Nodes consolidation evaluates alone per loop, best first (multi-node sets are prefixes of them).
    #[arg(long, value_name = "COUNT", default_value_t = UPSTREAM.consolidation_max_candidates)]
    pub consolidation_max_candidates: usize,
    /// Most nodes one consolidation takes.
    #[arg(long, value_name = "COUNT", default_value_t = UPSTREAM.consolidation_max_set)]
    pub consolidation_max_set: usize,
    /// Time budget of consolidation's search per loop.
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.consolidation_search_time))]
    pub consolidation_search_time: GoDuration,
}

/// The engine's settings with every flag at its default: what the binary runs with when given none.
pub fn default_engine() -> Settings {
    super::defaults::<LoopFlags>()
        .engine(&super::defaults::<ExpanderFlags>())
        .expect("the defaults are valid")
}

impl Default for CloudFlags {
    /// What an empty command line gives.
    fn default() -> Self {
        super::defaults()
    }
}

impl Default for ExpanderFlags {
    /// What an empty command line gives.
    fn default() -> Self {
        super::defaults()
    }
}

impl Default for LoopFlags {
    /// What an empty command line gives.
    fn default() -> Self {
        super::defaults()
    }
}
