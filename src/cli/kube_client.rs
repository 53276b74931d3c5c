//! The Kubernetes clients of the commands that watch the cluster (`run`, `deschedule`), built the same
//! way, and this replica's name in the Lease and on events.

use std::path::Path;
use std::time::Duration;

use crate::error::{Error, Result};

/// Longest wait for an answer of one API call other than a watch.
pub const API_CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for a connection to the API server.
pub const API_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The two clients of `run` (and `deschedule`), from --kubeconfig or kube's usual inference (KUBECONFIG,
/// ~/.kube/config, in-cluster): one for every call but the watches, bounded by [`API_CALL_TIMEOUT`] so
/// no call (a Lease renewal, an eviction, a patch) can hang while this replica believes it leads, and
/// one for the watches, whose reads wait for events as long as the API server keeps them open.
pub async fn kube_clients(kubeconfig: Option<&Path>) -> Result<(kube::Client, kube::Client)> {
    let config = kube_config(kubeconfig).await?;
    let mut calls = config.clone();
    calls.connect_timeout = Some(API_CONNECT_TIMEOUT);
    calls.read_timeout = Some(API_CALL_TIMEOUT);
    calls.write_timeout = Some(API_CALL_TIMEOUT);
    let client = |c: kube::Config| {
        kube::Client::try_from(c).map_err(|e| Error::config(format!("Kubernetes client: {e}")))
    };
    Ok((client(calls)?, client(config)?))
}

async fn kube_config(kubeconfig: Option<&Path>) -> Result<kube::Config> {
    let mut config = match kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| Error::config(format!("--kubeconfig {}: {e}", path.display())))?;
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
    Ok(config)
}

/// This replica's name: the pod's host name plus a suffix unique to this start, as client-go does.
pub(super) fn identity() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "ferroscale".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() ^ std::process::id())
        .unwrap_or_default();
    format!("{host}_{nanos:08x}")
}
