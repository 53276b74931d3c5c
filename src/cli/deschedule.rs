//! `ferroscale deschedule`: the descheduler alone, for clusters that keep upstream cluster-autoscaler,
//! with kubernetes-sigs/descheduler's own flag names and defaults (`--policy-config-file`,
//! `--descheduling-interval`, `--dry-run`, `--leader-elect*`). `run`'s and `simulate`'s descheduler
//! flags are the group in `deschedule_flags`.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::config::relative_to_config;
use super::deschedule_flags::default_cooldown;
use super::kube_client::{identity, kube_clients};
use super::serve::bind;
use super::values::GoDuration;
use crate::deschedule::Settings;
use crate::descheduler::{read_policy, DeschedulerSettings};
use crate::error::{Error, Result};
use crate::k8s::lease::LeaseSettings;
use crate::metrics::Metrics;

/// How long `deschedule` waits for the first lists of pods, nodes and PDBs.
const INITIAL_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// The planner's settings with `--deschedule-cooldown`.
fn cooldown(d: GoDuration) -> Settings {
    Settings {
        cooldown_secs: crate::model::duration::secs(d.0),
    }
}

/// Flags of `ferroscale deschedule`: the descheduler's names and defaults where it has the flag.
#[derive(Debug, Clone, Args, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct DeschedulerFlags {
    /// YAML file with any of these settings (camelCase keys); flags win, relative paths are relative to
    /// the file.
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// File with the descheduler policy (a DeschedulerPolicy, descheduler/v1alpha2 or v1alpha1).
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub policy_config_file: Option<PathBuf>,
    /// Time between two descheduling cycles; 0 runs one cycle and exits (the descheduler's meaning).
    #[arg(long, value_name = "DURATION", default_value = "0s")]
    pub descheduling_interval: GoDuration,
    /// Plan and report (logs, metrics), evict nothing, write no events and take no Lease.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub dry_run: bool,
    /// A workload (by owner) evicted is not evicted again for this long.
    #[arg(long, value_name = "DURATION", default_value_t = default_cooldown())]
    pub deschedule_cooldown: GoDuration,
    /// Kubeconfig to use [default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account].
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub kubeconfig: Option<PathBuf>,
    /// Address of the HTTP listener for /metrics and /healthz (none with --secure-port).
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:10258")]
    pub address: SocketAddr,
    /// Serve /metrics and /healthz over HTTPS on this port of --bind-address instead, as the
    /// descheduler does (its default: 10258); 0 picks a free port (logged).
    #[arg(long, value_name = "PORT")]
    pub secure_port: Option<u16>,
    /// The address --secure-port listens on.
    #[arg(long, value_name = "IP", default_value = "0.0.0.0")]
    pub bind_address: IpAddr,
    /// The HTTPS certificate (PEM); with neither it nor --tls-private-key-file, a self-signed one
    /// is made at start.
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub tls_cert_file: Option<PathBuf>,
    /// The HTTPS certificate's key (PEM).
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub tls_private_key_file: Option<PathBuf>,
    /// Take a Lease before each cycle, so only one replica evicts (needs --descheduling-interval).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub leader_elect: bool,
    /// How long followers wait after the leader's last renewal.
    #[arg(long, value_name = "DURATION", default_value = "137s")]
    pub leader_elect_lease_duration: GoDuration,
    /// How long the leader keeps acting while renewals fail.
    #[arg(long, value_name = "DURATION", default_value = "107s")]
    pub leader_elect_renew_deadline: GoDuration,
    /// Time between attempts to take or renew the Lease.
    #[arg(long, value_name = "DURATION", default_value = "26s")]
    pub leader_elect_retry_period: GoDuration,
    /// Name of the Lease.
    #[arg(long, default_value = "descheduler")]
    pub leader_elect_resource_name: String,
    /// Namespace of the Lease.
    #[arg(long, default_value = "kube-system")]
    pub leader_elect_resource_namespace: String,
}

impl Default for DeschedulerFlags {
    fn default() -> Self {
        super::defaults()
    }
}

impl DeschedulerFlags {
    /// The descheduler's settings, its policy read now.
    pub fn settings(&self) -> Result<DeschedulerSettings> {
        let path = self
            .policy_config_file
            .as_ref()
            .ok_or_else(|| Error::config("--policy-config-file: required"))?;
        Ok(DeschedulerSettings {
            policy: Arc::new(read_policy(path, "--policy-config-file")?),
            interval: self.descheduling_interval.0,
            plan: cooldown(self.deschedule_cooldown),
            dry_run: self.dry_run,
        })
    }

    /// The Lease, or None: without --leader-elect, and in dry-run (which changes nothing), as the
    /// descheduler does. Leader election needs an interval, as the descheduler's.
    pub fn lease(&self, identity: &str) -> Result<Option<LeaseSettings>> {
        if !self.leader_elect || self.dry_run {
            return Ok(None);
        }
        if self.descheduling_interval.0.is_zero() {
            return Err(Error::config(
                "--leader-elect: leader election must be used with --descheduling-interval",
            ));
        }
        let lease = LeaseSettings {
            namespace: self.leader_elect_resource_namespace.clone(),
            name: self.leader_elect_resource_name.clone(),
            identity: identity.to_string(),
            lease_duration: self.leader_elect_lease_duration.0,
            renew_deadline: self.leader_elect_renew_deadline.0,
            retry_period: self.leader_elect_retry_period.0,
        };
        lease.check()?;
        Ok(Some(lease))
    }
}

/// Runs the descheduler: one cycle and out with `--descheduling-interval=0`, else cycles until SIGTERM
/// or SIGINT (or, leading, until the Lease is lost).
pub async fn main(flags: DeschedulerFlags) -> Result<()> {
    let settings = flags.settings()?;
    let identity = identity();
    let lease = flags.lease(&identity)?;
    if flags.leader_elect && flags.dry_run {
        tracing::warn!("--dry-run: no leader election (nothing is changed)");
    }
    let metrics = Arc::new(Metrics::default().with_descheduler());
    let (client, watch_client) = kube_clients(flags.kubeconfig.as_deref()).await?;
    listen(&flags, crate::http::metrics_router(metrics.clone())).await?;
    let owners = settings
        .policy
        .profiles
        .iter()
        .any(|p| p.evictor.min_replicas > 1);
    let watches = crate::k8s::watch::Watches::start(&watch_client, owners);
    watches
        .ready(tokio::time::sleep(INITIAL_SYNC_TIMEOUT))
        .await?;
    tracing::info!(identity, dry_run = settings.dry_run, "watching the cluster");
    crate::descheduler::standalone::serve(
        settings,
        client,
        watches,
        lease,
        &identity,
        metrics,
        crate::server::termination_signal(),
    )
    .await
}

/// Serves `router`: over HTTPS on `--bind-address`:`--secure-port` when given, else over HTTP on
/// `--address`.
async fn listen(flags: &DeschedulerFlags, router: axum::Router) -> Result<()> {
    let Some(port) = flags.secure_port else {
        let listener = bind(flags.address, "--address").await?;
        tracing::info!(http = ?listener.local_addr().ok(), "serving");
        tokio::spawn(async move {
            if let Err(e) = crate::http::serve(listener, router, std::future::pending()).await {
                tracing::error!(error = %e, "HTTP listener stopped");
            }
        });
        return Ok(());
    };
    let certificate = crate::https::Certificate::from_flags(
        flags.tls_cert_file.clone(),
        flags.tls_private_key_file.clone(),
    )?;
    let listener = bind(SocketAddr::new(flags.bind_address, port), "--secure-port").await?;
    tracing::info!(https = ?listener.local_addr().ok(), "serving");
    tokio::spawn(crate::https::serve(listener, certificate, router));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};

    fn deschedule(args: &[&str]) -> std::result::Result<DeschedulerFlags, String> {
        let args = ["ferroscale", "deschedule"].iter().chain(args);
        match Cli::load(args) {
            Ok((_, Ok(Command::Deschedule(f)))) => Ok(f),
            Ok((_, Ok(_))) => Err("another command".into()),
            Ok((_, Err(e))) => Err(e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn deschedule_takes_the_descheduler_defaults() {
        let f = deschedule(&[]).unwrap();
        // Once and out, no Lease unless asked, the descheduler's Lease timings and name.
        assert!(f.descheduling_interval.0.is_zero());
        assert!(!f.leader_elect && !f.dry_run);
        assert_eq!(f.leader_elect_lease_duration.0, Duration::from_secs(137));
        assert_eq!(f.leader_elect_renew_deadline.0, Duration::from_secs(107));
        assert_eq!(f.leader_elect_retry_period.0, Duration::from_secs(26));
        assert_eq!(f.leader_elect_resource_name, "descheduler");
        assert_eq!(f.leader_elect_resource_namespace, "kube-system");
        assert_eq!(f.deschedule_cooldown.0, Duration::from_secs(1800));
    }

    #[test]
    fn leader_election_needs_an_interval_and_dry_run_takes_no_lease() {
        let f = deschedule(&["--leader-elect"]).unwrap();
        let e = f.lease("me").unwrap_err().to_string();
        assert!(e.contains("--descheduling-interval"), "{e}");
        let f = deschedule(&["--leader-elect", "--descheduling-interval=5m"]).unwrap();
        let lease = f.lease("me").unwrap().unwrap();
        assert_eq!(lease.name, "descheduler");
        let f = deschedule(&["--leader-elect", "--dry-run"]).unwrap();
        assert!(f.lease("me").unwrap().is_none());
    }

    #[test]
    fn a_policy_is_required_and_a_bad_one_is_named_with_its_field() {
        let e = deschedule(&[]).unwrap().settings().unwrap_err().to_string();
        assert!(e.contains("--policy-config-file"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.yaml");
        std::fs::write(&path, "apiVersion: descheduler/v1alpha2\nkind: Policy\n").unwrap();
        let p = path.to_str().unwrap();
        let e = deschedule(&["--policy-config-file", p])
            .unwrap()
            .settings()
            .unwrap_err()
            .to_string();
        assert!(e.contains(p) && e.contains("kind"), "{e}");
        let e = crate::cli::deschedule_flags::DescheduleFlags {
            deschedule_policy: Some(path.clone()),
            ..Default::default()
        }
        .descheduling()
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("--deschedule-policy") && e.contains(p) && e.contains("kind"),
            "{e}"
        );
    }
}
