//! `ferroscale run`: the whole autoscaler, watching the cluster and scaling node groups through a cloud.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::config::relative_to_config;
use super::deschedule_flags::DescheduleFlags;
use super::flags::{CloudFlags, ExpanderFlags, LoopFlags, UPSTREAM};
use super::kube_client::{identity, kube_clients};
use super::serve::{bind, PRIORITY_FILE_POLL};
use super::values::GoDuration;
use crate::cloud::aws::interruption::InterruptionQueue;
use crate::descheduler::DeschedulerSettings;
use crate::engine::expander::Strategy;
use crate::error::{Error, Result};
use crate::k8s::drain::DrainSettings;
use crate::k8s::lease::LeaseSettings;
use crate::k8s::priorities::{PriorityWatch, CONFIG_MAP};
use crate::metrics::Metrics;
use crate::run::interruptions::{Inbox, IntakeSettings};
use crate::run::{Health, Interruptions, RunSettings, Runner};

/// How long `run` waits for the first lists of pods, nodes, PDBs and DaemonSets.
const INITIAL_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// Flags of `ferroscale run`: upstream cluster-autoscaler's names and defaults; every one may also come
/// from `--config FILE` (camelCase keys).
#[derive(Debug, Clone, Args, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RunFlags {
    /// cluster-autoscaler flags on the command line that ferroscale does not implement, as written:
    /// accepted so CA's command line works unchanged, each named in a warning at start.
    #[arg(skip)]
    #[serde(skip)]
    pub upstream_only: Vec<String>,
    /// YAML file with any of these settings (camelCase keys); flags win, relative paths are relative to
    /// the file.
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Kubeconfig to use [default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account].
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub kubeconfig: Option<PathBuf>,
    /// Address of the HTTP listener for /metrics and /health-check.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:8085")]
    pub address: SocketAddr,
    /// Time between loops (also what upstream's unneeded-nodes limit divides the unneeded time by).
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(UPSTREAM.scan_interval))]
    pub scan_interval: GoDuration,
    /// Decide and report (logs, metrics), but change nothing: no cloud calls, taints, evictions,
    /// events, status or Lease.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub dry_run: bool,
    /// Namespace of the status ConfigMap, the Lease and the priority expander's ConfigMap.
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
    #[arg(long, value_name = "DURATION", default_value = "15s")]
    pub leader_elect_lease_duration: GoDuration,
    /// How long the leader keeps acting while renewals fail.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub leader_elect_renew_deadline: GoDuration,
    /// Time between attempts to take or renew the Lease.
    #[arg(long, value_name = "DURATION", default_value = "2s")]
    pub leader_elect_retry_period: GoDuration,
    /// Name of the Lease.
    #[arg(long, default_value = "cluster-autoscaler")]
    pub leader_elect_resource_name: String,
    /// How long evictions of a node's pods are retried (a PodDisruptionBudget may block them).
    #[arg(long, value_name = "DURATION", default_value = "2m")]
    pub max_pod_eviction_time: GoDuration,
    /// The most seconds a pod is given to terminate on scale-down (at most Go's longest duration,
    /// 9223372036).
    #[arg(long, default_value_t = 600,
          value_parser = clap::value_parser!(u64).range(..=crate::model::duration::GO_MAX_SECS))]
    pub max_graceful_termination_sec: u64,
    /// /health-check fails when no loop started for this long.
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub max_inactivity: GoDuration,
    /// /health-check fails when no loop succeeded for this long.
    #[arg(long, value_name = "DURATION", default_value = "15m")]
    pub max_failing_time: GoDuration,
    /// SQS queue (name or URL) EventBridge fills with spot interruption warnings, rebalance
    /// recommendations, scheduled changes and instance state changes; off when unset.
    #[arg(long, value_name = "NAME_OR_URL")]
    pub interruption_queue: Option<String>,
    /// Move pods off an instance on its rebalance recommendation, not only on its interruption warning.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub handle_rebalance_recommendations: bool,
    /// Interruption events older than this (by their `time`) are not acted on: deleted and counted as
    /// `unverified`. Events more than 5m ahead of this clock are refused too.
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    pub interruption_max_age: GoDuration,
    #[command(flatten)]
    #[serde(flatten)]
    pub cloud: CloudFlags,
    #[command(flatten)]
    #[serde(flatten)]
    pub expander: ExpanderFlags,
    #[command(flatten)]
    #[serde(flatten)]
    pub rules: LoopFlags,
    #[command(flatten)]
    #[serde(flatten)]
    pub deschedule: DescheduleFlags,
}

impl Default for RunFlags {
    /// What an empty command line gives.
    fn default() -> Self {
        super::defaults()
    }
}

impl RunFlags {
    /// The loop's own settings; `identity` names this replica in the Lease and on events.
    pub fn run_settings(&self, identity: &str) -> Result<RunSettings> {
        if self.scan_interval.0.is_zero() {
            return Err(Error::config("--scan-interval: must be above 0"));
        }
        if self.interruption_max_age.0.is_zero() {
            return Err(Error::config("--interruption-max-age: must be above 0"));
        }
        let lease = (self.leader_elect && !self.dry_run).then(|| LeaseSettings {
            namespace: self.namespace.clone(),
            name: self.leader_elect_resource_name.clone(),
            identity: identity.to_string(),
            lease_duration: self.leader_elect_lease_duration.0,
            renew_deadline: self.leader_elect_renew_deadline.0,
            retry_period: self.leader_elect_retry_period.0,
        });
        if let Some(l) = &lease {
            l.check()?;
        }
        Ok(RunSettings {
            scan_interval: self.scan_interval.0,
            dry_run: self.dry_run,
            namespace: self.namespace.clone(),
            status_config_map: self
                .write_status_configmap
                .then(|| self.status_config_map_name.clone()),
            lease,
            drain: DrainSettings {
                max_pod_eviction_time: self.max_pod_eviction_time.0,
                // The flag's range is clap's; a `--config` file's value is checked here.
                max_graceful_termination: crate::model::duration::go_secs(
                    self.max_graceful_termination_sec,
                )
                .map_err(|e| Error::config(format!("--max-graceful-termination-sec: {e}")))?,
            },
            max_inactivity: self.max_inactivity.0,
            max_failing_time: self.max_failing_time.0,
            instance: identity.to_string(),
            deschedule: self.deschedule.descheduling()?.map(|d| {
                for w in &d.warnings {
                    tracing::warn!(warning = %w, "--deschedule-policy: has no effect");
                }
                DeschedulerSettings {
                    policy: Arc::new(d.policy),
                    interval: d.interval,
                    plan: d.settings,
                    dry_run: self.dry_run,
                }
            }),
        })
    }

    /// The two clients of `run` ([`kube_clients`]).
    pub async fn clients(&self) -> Result<(kube::Client, kube::Client)> {
        kube_clients(self.kubeconfig.as_deref()).await
    }
}

/// Runs the loop until SIGTERM or SIGINT (or, leading, until the Lease is lost).
pub async fn main(flags: RunFlags) -> Result<()> {
    for flag in &flags.upstream_only {
        tracing::warn!(%flag, "a cluster-autoscaler flag ferroscale does not implement; ignored");
    }
    let settings = crate::engine::Settings {
        scan_interval: flags.scan_interval.0,
        ..flags.rules.engine(&flags.expander)?
    };
    let identity = identity();
    let run_settings = flags.run_settings(&identity)?;
    flags.cloud.check(&flags.expander)?;
    let priorities = flags.expander.watched_priorities(PRIORITY_FILE_POLL)?;
    let metrics = match run_settings.deschedule {
        Some(_) => Metrics::for_run().with_descheduler(),
        None => Metrics::for_run(),
    };
    let metrics = Arc::new(metrics);
    let cloud = flags.cloud.build(&flags.expander, metrics.clone()).await?;
    let (client, watch_client) = flags.clients().await?;
    let health = Arc::new(Health::new(
        run_settings.max_inactivity,
        run_settings.max_failing_time,
    ));
    let interruptions = match &flags.interruption_queue {
        // A replica that changes nothing leaves every message to one that acts.
        Some(_) if run_settings.dry_run => {
            tracing::info!("--dry-run: the interruption queue is not read");
            None
        }
        Some(q) => Some(
            InterruptionQueue::connect(q, flags.cloud.aws_region.as_deref(), None)
                .await
                .map_err(|e| Error::config(format!("--interruption-queue {q}: {e}")))?,
        ),
        None => None,
    };
    // Loops take the inbox every --scan-interval while this replica leads.
    let inbox = Inbox::new((flags.scan_interval.0 * 3).max(Duration::from_secs(30)));
    let listener = bind(flags.address, "--address").await?;
    tracing::info!(http = ?listener.local_addr().ok(), cloud = cloud.name(), "serving");
    let check = health.clone();
    let router = crate::http::run_router(
        cloud.clone(),
        metrics.clone(),
        Arc::new(move || check.check(crate::time::loop_now())),
        interruptions.as_ref().map(|_| {
            let inbox = inbox.clone();
            Arc::new(move || inbox.ready()) as crate::http::HealthCheck
        }),
    );
    tokio::spawn(async move {
        if let Err(e) = crate::http::serve(listener, router, std::future::pending()).await {
            tracing::error!(error = %e, "HTTP listener stopped");
        }
    });
    // Upstream's replica count rule reads the owners' replicas only when it applies.
    let owners = settings.min_replica_count > 0 && settings.skip_nodes_with_custom_controller_pods;
    let watches = crate::k8s::watch::Watches::start(&watch_client, owners);
    watches
        .ready(tokio::time::sleep(INITIAL_SYNC_TIMEOUT))
        .await?;
    // Upstream's priority expander reads its ConfigMap in its own namespace; a --priority-config file,
    // ferroscale's own way, wins.
    let from_config_map = flags.expander.priority_config.is_none()
        && flags.expander.chain()?.contains(&Strategy::Priority);
    let priority_config_map = if from_config_map {
        let watch = PriorityWatch::start(&watch_client, &run_settings.namespace);
        watch
            .ready(tokio::time::sleep(INITIAL_SYNC_TIMEOUT))
            .await?;
        tracing::info!(
            namespace = run_settings.namespace,
            config_map = CONFIG_MAP,
            "priorities from the ConfigMap"
        );
        Some(watch)
    } else {
        None
    };
    tracing::info!(
        identity,
        dry_run = run_settings.dry_run,
        "watching the cluster"
    );
    let mut runner = Runner::new(
        cloud.clone(),
        client,
        watches,
        settings,
        run_settings,
        metrics.clone(),
        health,
    );
    if let Some(queue) = interruptions {
        let lifecycle = metrics
            .autoscaler
            .as_ref()
            .map(|m| m.lifecycle.clone())
            .expect("run's metrics");
        let intake = IntakeSettings {
            handle_rebalance: flags.handle_rebalance_recommendations,
            max_age: flags.interruption_max_age.0,
            ..IntakeSettings::default()
        };
        runner.set_interruptions(Interruptions::start(queue, cloud, inbox, intake, lifecycle));
    }
    match priority_config_map {
        Some(watch) => runner.with_priority_config_map(watch),
        None => runner.with_priorities(priorities),
    }
    .run(crate::server::termination_signal())
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grace_seconds_from_a_config_file_stop_at_gos_range() {
        let with = |secs: u64| {
            RunFlags {
                max_graceful_termination_sec: secs,
                ..RunFlags::default()
            }
            .run_settings("me")
        };
        assert!(with(crate::model::duration::GO_MAX_SECS).is_ok());
        match with(u64::MAX) {
            Ok(_) => panic!("u64::MAX seconds accepted"),
            Err(e) => assert!(
                e.to_string().contains("--max-graceful-termination-sec"),
                "{e}"
            ),
        }
    }
}
