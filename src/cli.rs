//! The `ferroscale` command line. Flags keep upstream cluster-autoscaler's names where one exists; every
//! `serve` setting may also come from `--config FILE` (YAML, camelCase keys), flags winning.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Deserialize;

use crate::cloud::aws::discovery::{NamedGroup, TagDiscovery};
use crate::cloud::aws::{AwsCloud, AwsSettings, PricingSettings};
use crate::cloud::memory::{MemoryCloud, MemoryConfig};
use crate::cloud::Cloud;
use crate::engine::expander::{Priorities, Strategy};
use crate::engine::Settings;
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::pricing::{PriceOverrides, PricingSource};
use crate::tls::TlsFiles;

/// A node autoscaler for Kubernetes on AWS.
#[derive(Debug, Parser)]
#[command(name = "ferroscale", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// What to run.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve cluster-autoscaler's externalgrpc CloudProvider protocol (point CA's --cloud-config at it).
    Serve(ServeArgs),
    /// The whole autoscaler: watches the cluster and scales node groups through --cloud.
    Run(RunArgs),
    /// What would the autoscaler do, and why? Runs the loop on a cluster snapshot with a virtual clock.
    Simulate(SimulateArgs),
}

/// Flags of the autoscaling loop, upstream cluster-autoscaler's names and defaults.
#[derive(Debug, Args, Clone)]
pub struct EngineArgs {
    /// Expander strategy chain: random, most-pods, least-waste, least-nodes, price, priority.
    #[arg(long, value_name = "CHAIN", default_value = "least-waste")]
    pub expander: String,
    /// YAML of the priority strategy (upstream's `priorities` format).
    #[arg(long, value_name = "FILE")]
    pub priority_config: Option<PathBuf>,
    /// The user's prices (see `serve --price-overrides`).
    #[arg(long, value_name = "FILE")]
    pub price_overrides: Option<PathBuf>,
    /// Maximum nodes in all groups together (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub max_nodes_total: usize,
    /// Minimum and maximum cores in the cluster, MIN:MAX.
    #[arg(long, value_name = "MIN:MAX", default_value = "0:320000", value_parser = parse_range)]
    pub cores_total: (i64, i64),
    /// Minimum and maximum GiB of memory in the cluster, MIN:MAX.
    #[arg(long, value_name = "MIN:MAX", default_value = "0:6400000", value_parser = parse_range)]
    pub memory_total: (i64, i64),
    /// Most nodes one scale-up adds.
    #[arg(long, default_value_t = 1000)]
    pub max_nodes_per_scaleup: usize,
    /// Time budget of one node group's binpacking estimate.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::model::parse_go_duration)]
    pub max_nodegroup_binpacking_duration: Duration,
    /// Pods younger than this do not trigger a scale-up.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = crate::model::parse_go_duration)]
    pub new_pod_scale_up_delay: Duration,
    /// Pods with priority below this never trigger a scale-up.
    #[arg(long, default_value_t = -10, allow_negative_numbers = true)]
    pub expendable_pods_priority_cutoff: i32,
    /// Whether nodes are ever removed.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub scale_down_enabled: bool,
    /// After a scale-up, scale-down waits this long.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::model::parse_go_duration)]
    pub scale_down_delay_after_add: Duration,
    /// After a node was removed, the next removal waits this long.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = crate::model::parse_go_duration)]
    pub scale_down_delay_after_delete: Duration,
    /// After a removal failed, scale-down waits this long.
    #[arg(long, value_name = "DURATION", default_value = "3m", value_parser = crate::model::parse_go_duration)]
    pub scale_down_delay_after_failure: Duration,
    /// A node below this share of requested cpu and memory may be removed (groups may override).
    #[arg(long, default_value_t = 0.5)]
    pub scale_down_utilization_threshold: f64,
    /// How long a node must be unneeded before it is removed (groups may override).
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::model::parse_go_duration)]
    pub scale_down_unneeded_time: Duration,
    /// Keep nodes with pods using emptyDir or hostPath.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub skip_nodes_with_local_storage: bool,
    /// Keep nodes with kube-system pods that have no PodDisruptionBudget.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub skip_nodes_with_system_pods: bool,
    /// Most empty nodes removed in one loop.
    #[arg(long, default_value_t = 10)]
    pub max_empty_bulk_delete: usize,
    /// Split scale-ups across groups with the same template (zone aside).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub balance_similar_node_groups: bool,
    /// Instances without a node after this long are deleted and their group backs off (groups may
    /// override).
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = crate::model::parse_go_duration)]
    pub max_node_provision_time: Duration,
}

/// The tiers of `--priority-config`, or none; errors name the flag and file.
fn load_priorities(path: Option<&Path>) -> Result<Priorities> {
    let Some(path) = path else {
        return Ok(Priorities::default());
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::config(format!(
            "cannot read --priority-config {}: {e}",
            path.display()
        ))
    })?;
    Priorities::parse(&text).map_err(|e| Error::config(format!("{}: {e}", path.display())))
}

/// `aws` or `file`, with clap's list of possible values in `--help`.
fn pricing_source() -> impl clap::builder::TypedValueParser<Value = PricingSource> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(PricingSource::NAMES).map(|s| {
        s.parse::<PricingSource>()
            .expect("one of the possible values")
    })
}

fn parse_range(s: &str) -> std::result::Result<(i64, i64), String> {
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?}: expected MIN:MAX"))?;
    let n = |x: &str| x.trim().parse::<i64>().map_err(|e| format!("{x:?}: {e}"));
    let (a, b) = (n(a)?, n(b)?);
    if a > b {
        return Err(format!("{s:?}: MIN above MAX"));
    }
    Ok((a, b))
}

impl EngineArgs {
    /// The engine's settings; files are read here, errors name the flag.
    pub fn settings(&self) -> Result<Settings> {
        if !(0.0..=1.0).contains(&self.scale_down_utilization_threshold) {
            return Err(Error::config(format!(
                "--scale-down-utilization-threshold: must be in [0, 1], got {}",
                self.scale_down_utilization_threshold
            )));
        }
        let priorities = load_priorities(self.priority_config.as_deref())?;
        let defaults = crate::model::OptionValues {
            scale_down_utilization_threshold: self.scale_down_utilization_threshold,
            scale_down_unneeded_time: self.scale_down_unneeded_time,
            max_node_provision_time: self.max_node_provision_time,
            ..Default::default()
        };
        Ok(Settings {
            expander: Strategy::parse_chain(&self.expander)?,
            priorities,
            max_nodes_total: self.max_nodes_total,
            cores_total: self.cores_total,
            memory_total_gib: self.memory_total,
            max_nodes_per_scaleup: self.max_nodes_per_scaleup,
            max_nodegroup_binpacking_duration: self.max_nodegroup_binpacking_duration,
            new_pod_scale_up_delay: self.new_pod_scale_up_delay,
            expendable_pods_priority_cutoff: self.expendable_pods_priority_cutoff,
            scale_down_enabled: self.scale_down_enabled,
            scale_down_delay_after_add: self.scale_down_delay_after_add,
            scale_down_delay_after_delete: self.scale_down_delay_after_delete,
            scale_down_delay_after_failure: self.scale_down_delay_after_failure,
            skip_nodes_with_local_storage: self.skip_nodes_with_local_storage,
            skip_nodes_with_system_pods: self.skip_nodes_with_system_pods,
            max_empty_bulk_delete: self.max_empty_bulk_delete,
            balance_similar_node_groups: self.balance_similar_node_groups,
            defaults,
        })
    }

    /// The price file, if given.
    pub fn price_overrides(&self) -> Result<PriceOverrides> {
        match &self.price_overrides {
            Some(p) => Ok(PriceOverrides::load(p)?),
            None => Ok(PriceOverrides::default()),
        }
    }
}

/// Flags of `ferroscale simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The cluster: what `kubectl get nodes,pods,pdb,ds -A -o yaml` writes, or multi-document YAML.
    #[arg(long, value_name = "FILE")]
    pub cluster: PathBuf,
    /// The node groups, in the memory cloud's format (see examples/groups.yaml).
    #[arg(long, value_name = "FILE")]
    pub node_groups: PathBuf,
    /// Loops to run.
    #[arg(long, default_value_t = 1)]
    pub loops: u32,
    /// Virtual time between loops.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::model::parse_go_duration)]
    pub scan_interval: Duration,
    /// Virtual time from a scale-up to the new node joining (0: the next loop).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = crate::model::parse_go_duration)]
    pub provision_delay: Duration,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Flags of `ferroscale run`: upstream cluster-autoscaler's names and defaults.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Kubeconfig to use [default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account].
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Address of the HTTP listener for /metrics and /health-check.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8085")]
    pub address: SocketAddr,
    /// Time between loops.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::model::parse_go_duration)]
    pub scan_interval: Duration,
    /// Decide and report (logs, metrics), but change nothing: no cloud calls, taints, evictions,
    /// events, status or Lease.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub dry_run: bool,
    /// Namespace of the status ConfigMap and the Lease.
    #[arg(long, default_value = "kube-system")]
    pub namespace: String,
    /// Write the status ConfigMap.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub write_status_configmap: bool,
    /// Name of the status ConfigMap.
    #[arg(long, default_value = "cluster-autoscaler-status")]
    pub status_config_map_name: String,
    /// Take a Lease before acting, so only one replica acts.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub leader_elect: bool,
    /// How long followers wait after the leader's last renewal.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = crate::model::parse_go_duration)]
    pub leader_elect_lease_duration: Duration,
    /// How long the leader keeps acting while renewals fail.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::model::parse_go_duration)]
    pub leader_elect_renew_deadline: Duration,
    /// Time between attempts to take or renew the Lease.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = crate::model::parse_go_duration)]
    pub leader_elect_retry_period: Duration,
    /// Name of the Lease.
    #[arg(long, default_value = "cluster-autoscaler")]
    pub leader_elect_resource_name: String,
    /// How long evictions of a node's pods are retried (a PodDisruptionBudget may block them).
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = crate::model::parse_go_duration)]
    pub max_pod_eviction_time: Duration,
    /// The most seconds a pod is given to terminate on scale-down.
    #[arg(long, default_value_t = 600)]
    pub max_graceful_termination_sec: u64,
    /// /health-check fails when no loop started for this long.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::model::parse_go_duration)]
    pub max_inactivity: Duration,
    /// /health-check fails when no loop succeeded for this long.
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = crate::model::parse_go_duration)]
    pub max_failing_time: Duration,
    #[command(flatten)]
    pub cloud: CloudFlags,
    #[command(flatten)]
    pub engine: EngineArgs,
}

impl RunArgs {
    /// The cloud flags as `serve` reads them, so both commands build clouds the same way.
    pub fn cloud_settings(&self) -> Result<ServeSettings> {
        ServeArgs {
            cloud: self.cloud.clone(),
            price_overrides: self.engine.price_overrides.clone(),
            ..Default::default()
        }
        .resolve()
    }

    /// The loop's own settings; `identity` names this replica in the Lease and on events.
    pub fn run_settings(&self, identity: &str) -> Result<crate::run::RunSettings> {
        if self.scan_interval.is_zero() {
            return Err(Error::config("--scan-interval: must be above 0"));
        }
        if self.leader_elect
            && (self.leader_elect_renew_deadline >= self.leader_elect_lease_duration
                || self.leader_elect_retry_period.is_zero())
        {
            return Err(Error::config("--leader-elect-renew-deadline must be below --leader-elect-lease-duration, and --leader-elect-retry-period above 0"));
        }
        Ok(crate::run::RunSettings {
            scan_interval: self.scan_interval,
            dry_run: self.dry_run,
            namespace: self.namespace.clone(),
            status_config_map: self
                .write_status_configmap
                .then(|| self.status_config_map_name.clone()),
            lease: (self.leader_elect && !self.dry_run).then(|| crate::k8s::lease::LeaseSettings {
                namespace: self.namespace.clone(),
                name: self.leader_elect_resource_name.clone(),
                identity: identity.to_string(),
                lease_duration: self.leader_elect_lease_duration,
                renew_deadline: self.leader_elect_renew_deadline,
                retry_period: self.leader_elect_retry_period,
            }),
            drain: crate::k8s::drain::DrainSettings {
                max_pod_eviction_time: self.max_pod_eviction_time,
                max_graceful_termination: Duration::from_secs(self.max_graceful_termination_sec),
            },
            max_inactivity: self.max_inactivity,
            max_failing_time: self.max_failing_time,
            instance: identity.to_string(),
        })
    }

    /// A client from --kubeconfig, else kube's usual inference (KUBECONFIG, ~/.kube/config, in-cluster).
    pub async fn client(&self) -> Result<kube::Client> {
        let mut config = match &self.kubeconfig {
            Some(path) => {
                let kubeconfig = kube::config::Kubeconfig::read_from(path).map_err(|e| {
                    Error::config(format!("--kubeconfig {}: {e}", path.display()))
                })?;
                kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                    .await
                    .map_err(|e| Error::config(format!("--kubeconfig {}: {e}", path.display())))?
            }
            None => kube::Config::infer().await.map_err(|e| {
                Error::config(format!(
                    "no Kubernetes configuration (--kubeconfig, KUBECONFIG, ~/.kube/config or in-cluster): {e}"
                ))
            })?,
        };
        // Evictions answered 429 by a PodDisruptionBudget are retried by drain's own policy, bounded by
        // --max-pod-eviction-time; kube's built-in retry (up to 15 tries per call) would blur that.
        config.default_retry = false;
        kube::Client::try_from(config).map_err(|e| Error::config(format!("Kubernetes client: {e}")))
    }
}

/// Where node groups come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CloudKind {
    /// Groups described in a YAML file, resized in memory (no cloud account needed).
    Memory,
    /// Auto Scaling groups, through the AWS SDK's standard credential and endpoint chain.
    Aws,
}

/// Where node groups come from and how they are read: the flags `serve` and `run` share.
#[derive(Debug, Args, Default, Clone)]
pub struct CloudFlags {
    /// Cloud backend [default: memory].
    #[arg(long, value_enum)]
    pub cloud: Option<CloudKind>,
    /// Node groups of the memory cloud (see examples/memory-cloud.yaml).
    #[arg(long, value_name = "FILE")]
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
    /// AWS: minimum time between two reads of the Auto Scaling groups, jittered ±10% [default: 60s].
    #[arg(long, value_name = "DURATION", value_parser = crate::model::parse_go_duration)]
    pub aws_refresh_interval: Option<Duration>,
    /// AWS: where prices come from: aws (Pricing API and spot price history) or file (--price-overrides
    /// alone, for isolated clusters) [default: aws].
    #[arg(long, value_parser = pricing_source())]
    pub pricing_source: Option<PricingSource>,
}

/// Flags of `ferroscale serve`.
#[derive(Debug, Args, Default)]
pub struct ServeArgs {
    /// YAML file with any of the settings below (camelCase keys: listen, httpListen, cloud, memoryConfig, shutdownGracePeriod, nodeGroupAutoDiscovery, nodes, awsRegion, awsRefreshInterval, expanderListen, expander, priorityConfig, priceOverrides, pricingSource, pricingRefreshInterval, tlsCert, tlsKey, tlsClientCa, tlsClientSan, allowPlaintext, expanderTlsCert, expanderTlsKey).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address of the CloudProvider gRPC listener [default: 127.0.0.1:8086].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Address of the HTTP listener for /metrics, /healthz and /readyz [default: 127.0.0.1:8085].
    #[arg(long, value_name = "ADDR")]
    pub http_listen: Option<SocketAddr>,
    #[command(flatten)]
    pub cloud: CloudFlags,
    /// Address of the grpc expander listener for CA's --expander=grpc (off when not set).
    #[arg(long, value_name = "ADDR")]
    pub expander_listen: Option<SocketAddr>,
    /// Expander strategy chain, as upstream's --expander: random, most-pods, least-waste, least-nodes,
    /// price, priority, comma-separated [default: least-waste].
    #[arg(long, value_name = "CHAIN")]
    pub expander: Option<String>,
    /// YAML of the priority strategy, upstream's `priorities` format (priority: [regex, ...]).
    #[arg(long, value_name = "FILE")]
    pub priority_config: Option<PathBuf>,
    /// YAML of the user's prices: per instance type or node group, pricePerHour or discount (Savings
    /// Plans, reserved instances, negotiated rates).
    #[arg(long, value_name = "FILE")]
    pub price_overrides: Option<PathBuf>,
    /// AWS: prices older than this are read again [default: 12h].
    #[arg(long, value_name = "DURATION", value_parser = crate::model::parse_go_duration)]
    pub pricing_refresh_interval: Option<Duration>,
    /// PEM certificate of the CloudProvider listener (plaintext without it).
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// PEM CA bundle client certificates must chain to; set, a client certificate is required (mutual TLS,
    /// CA's cloud-config cert/key/cacert).
    #[arg(long, value_name = "FILE")]
    pub tls_client_ca: Option<PathBuf>,
    /// Accept only client certificates naming this DNS name or IP address (repeatable; needs
    /// --tls-client-ca), e.g. the name of cluster-autoscaler's certificate.
    #[arg(long, value_name = "NAME")]
    pub tls_client_san: Vec<String>,
    /// Serve the CloudProvider listener without TLS on an address other than loopback (refused
    /// otherwise: any pod could call its write RPCs).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub allow_plaintext: bool,
    /// PEM certificate of the expander listener (CA's --grpc-expander-cert must verify it).
    #[arg(long, value_name = "FILE")]
    pub expander_tls_cert: Option<PathBuf>,
    /// PEM private key of --expander-tls-cert.
    #[arg(long, value_name = "FILE")]
    pub expander_tls_key: Option<PathBuf>,
    /// How long in-flight requests may finish after SIGTERM, e.g. "5s" [default: 5s].
    #[arg(long, value_name = "DURATION", value_parser = crate::model::parse_go_duration)]
    pub shutdown_grace_period: Option<Duration>,
}

/// Settings of `serve` as they may appear in `--config`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ServeFile {
    listen: Option<SocketAddr>,
    http_listen: Option<SocketAddr>,
    cloud: Option<CloudKind>,
    memory_config: Option<PathBuf>,
    shutdown_grace_period: Option<String>,
    #[serde(default)]
    node_group_auto_discovery: Vec<String>,
    #[serde(default)]
    nodes: Vec<String>,
    aws_region: Option<String>,
    aws_refresh_interval: Option<String>,
    expander_listen: Option<SocketAddr>,
    expander: Option<String>,
    priority_config: Option<PathBuf>,
    price_overrides: Option<PathBuf>,
    pricing_source: Option<PricingSource>,
    pricing_refresh_interval: Option<String>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    tls_client_ca: Option<PathBuf>,
    #[serde(default)]
    tls_client_san: Vec<String>,
    allow_plaintext: Option<bool>,
    expander_tls_cert: Option<PathBuf>,
    expander_tls_key: Option<PathBuf>,
}

/// Resolved settings of `serve`.
#[derive(Debug, Clone)]
pub struct ServeSettings {
    pub listen: SocketAddr,
    pub http_listen: SocketAddr,
    pub cloud: CloudKind,
    pub memory_config: Option<PathBuf>,
    pub shutdown_grace_period: Duration,
    pub aws: AwsSettings,
    pub expander_listen: Option<SocketAddr>,
    pub expander_chain: Vec<Strategy>,
    pub priorities: Priorities,
    /// The priority file, re-read while serving.
    pub priority_config: Option<PathBuf>,
    /// The user's price file (also inside `aws.pricing`).
    pub price_overrides: PriceOverrides,
    /// TLS of the CloudProvider listener.
    pub tls: Option<TlsFiles>,
    /// `--allow-plaintext`: the CloudProvider listener may be plaintext on a non-loopback address.
    pub allow_plaintext: bool,
    /// TLS of the expander listener.
    pub expander_tls: Option<TlsFiles>,
}

fn go_duration(
    flag: Option<Duration>,
    file: &Option<String>,
    key: &str,
    default: Duration,
) -> Result<Duration> {
    match (flag, file) {
        (Some(d), _) => Ok(d),
        (None, Some(text)) => {
            crate::model::parse_go_duration(text).map_err(|e| Error::config(format!("{key}: {e}")))
        }
        (None, None) => Ok(default),
    }
}

/// Flag values when given, else the config file's.
fn list_or(flag: &[String], file: Vec<String>) -> Vec<String> {
    if flag.is_empty() {
        file
    } else {
        flag.to_vec()
    }
}

impl ServeArgs {
    /// Merges flags over the config file over defaults. Relative paths in the file are relative to it.
    pub fn resolve(&self) -> Result<ServeSettings> {
        let base = self
            .config
            .as_deref()
            .and_then(Path::parent)
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let file = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    Error::config(format!("cannot read --config {}: {e}", path.display()))
                })?;
                let mut f: ServeFile = serde_yaml::from_str(&text)
                    .map_err(|e| Error::config(format!("{}: {e}", path.display())))?;
                for p in [
                    &mut f.memory_config,
                    &mut f.priority_config,
                    &mut f.price_overrides,
                    &mut f.tls_cert,
                    &mut f.tls_key,
                    &mut f.tls_client_ca,
                    &mut f.expander_tls_cert,
                    &mut f.expander_tls_key,
                ] {
                    *p = p.take().map(|p| base.join(p));
                }
                f
            }
            None => ServeFile::default(),
        };
        let priority_config = self.priority_config.clone().or(file.priority_config);
        let price_overrides = match self.price_overrides.clone().or(file.price_overrides) {
            Some(path) => Some(PriceOverrides::load(&path)?),
            None => None,
        };
        let pricing_source = self
            .cloud
            .pricing_source
            .or(file.pricing_source)
            .unwrap_or_default();
        if pricing_source == PricingSource::File && price_overrides.is_none() {
            return Err(Error::config(
                "--pricing-source=file needs --price-overrides FILE",
            ));
        }
        let price_overrides = price_overrides.unwrap_or_default();
        let tls = TlsFiles::from_flags(
            self.tls_cert.clone().or(file.tls_cert),
            self.tls_key.clone().or(file.tls_key),
            self.tls_client_ca.clone().or(file.tls_client_ca),
            list_or(&self.tls_client_san, file.tls_client_san),
            &crate::tls::PROVIDER_FLAGS,
        )?;
        let expander_tls = TlsFiles::from_flags(
            self.expander_tls_cert.clone().or(file.expander_tls_cert),
            self.expander_tls_key.clone().or(file.expander_tls_key),
            None,
            Vec::new(),
            &crate::tls::EXPANDER_FLAGS,
        )?;
        let listen = self
            .listen
            .or(file.listen)
            .unwrap_or(([127, 0, 0, 1], 8086).into());
        let allow_plaintext = self.allow_plaintext || file.allow_plaintext.unwrap_or(false);
        if tls.is_none() && !allow_plaintext && !listen.ip().is_loopback() {
            return Err(Error::config(format!(
                "--listen {listen}: the CloudProvider listener would accept write RPCs in plaintext from anyone who can reach it; pass --tls-cert/--tls-key/--tls-client-ca (mutual TLS) or, to accept that, --allow-plaintext"
            )));
        }
        Ok(ServeSettings {
            listen,
            http_listen: self
                .http_listen
                .or(file.http_listen)
                .unwrap_or(([127, 0, 0, 1], 8085).into()),
            cloud: self.cloud.cloud.or(file.cloud).unwrap_or(CloudKind::Memory),
            memory_config: self.cloud.memory_config.clone().or(file.memory_config),
            shutdown_grace_period: go_duration(
                self.shutdown_grace_period,
                &file.shutdown_grace_period,
                "shutdownGracePeriod",
                crate::server::DEFAULT_SHUTDOWN_GRACE,
            )?,
            aws: AwsSettings {
                region: self.cloud.aws_region.clone().or(file.aws_region),
                auto_discovery: list_or(
                    &self.cloud.node_group_auto_discovery,
                    file.node_group_auto_discovery,
                )
                .iter()
                .map(|s| TagDiscovery::parse(s))
                .collect::<Result<_>>()?,
                nodes: list_or(&self.cloud.nodes, file.nodes)
                    .iter()
                    .map(|s| NamedGroup::parse(s))
                    .collect::<Result<_>>()?,
                refresh_interval: go_duration(
                    self.cloud.aws_refresh_interval,
                    &file.aws_refresh_interval,
                    "awsRefreshInterval",
                    crate::cloud::aws::ttl::DEFAULT_REFRESH_INTERVAL,
                )?,
                endpoint_url: None,
                max_attempts: None,
                pricing: PricingSettings {
                    source: pricing_source,
                    overrides: price_overrides.clone(),
                    refresh_interval: go_duration(
                        self.pricing_refresh_interval,
                        &file.pricing_refresh_interval,
                        "pricingRefreshInterval",
                        crate::cloud::aws::ttl::DEFAULT_PRICE_REFRESH_INTERVAL,
                    )?,
                    endpoint_url: None,
                },
            },
            expander_listen: self.expander_listen.or(file.expander_listen),
            expander_chain: Strategy::parse_chain(
                self.expander
                    .as_deref()
                    .or(file.expander.as_deref())
                    .unwrap_or("least-waste"),
            )?,
            priorities: load_priorities(priority_config.as_deref())?,
            priority_config,
            price_overrides,
            tls,
            allow_plaintext,
            expander_tls,
        })
    }
}

impl ServeSettings {
    /// Builds the configured cloud.
    pub async fn build_cloud(&self, metrics: Arc<Metrics>) -> Result<Arc<dyn Cloud>> {
        match self.cloud {
            CloudKind::Aws => Ok(AwsCloud::connect(self.aws.clone(), metrics).await?),
            CloudKind::Memory => {
                let path = self.memory_config.as_ref().ok_or_else(|| {
                    Error::config("--memory-config FILE is required with --cloud memory")
                })?;
                Ok(Arc::new(MemoryCloud::with_prices(
                    &MemoryConfig::load(path)?,
                    &self.price_overrides,
                )?))
            }
        }
    }
}
