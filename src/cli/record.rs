//! `ferroscale record`: writes a cluster's timeline for `simulate --trace` (see docs/replay.md).
//! Read-only: it lists and watches, nothing else.

use std::path::PathBuf;

use clap::Args;

use super::kube_client::kube_clients;
use super::values::GoDuration;
use crate::error::Result;
use crate::k8s::record::Recorder;
use crate::trace::Writer;

/// Flags of `ferroscale record`.
#[derive(Debug, Clone, Args)]
pub struct RecordFlags {
    /// The timeline to write (JSON lines; gzip when the name ends in `.gz`). An existing file is
    /// replaced.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
    /// How long to record (e.g. `24h`); without it, until SIGINT or SIGTERM.
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<GoDuration>,
    /// Kubeconfig to use [default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account].
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
}

/// Records until `--duration` has passed or a termination signal comes; the file is complete either way.
pub async fn main(flags: RecordFlags) -> Result<()> {
    // Watches wait for events as long as the API server keeps them open: the watch client.
    let (_, client) = kube_clients(flags.kubeconfig.as_deref()).await?;
    let recorder = Recorder::new(Writer::create(&flags.output)?);
    let duration = flags.duration.map(|d| d.0);
    let stop = async move {
        match duration {
            Some(d) => tokio::select! {
                () = tokio::time::sleep(d) => {},
                () = crate::server::termination_signal() => {},
            },
            None => crate::server::termination_signal().await,
        }
    };
    let recorded = crate::k8s::record::record(
        &client,
        recorder,
        stop,
        crate::time::unix_now,
        crate::k8s::record::FLUSH_EVERY,
    )
    .await?;
    tracing::info!(
        lines = recorded.lines,
        unreadable = recorded.unreadable,
        file = %flags.output.display(),
        "recorded"
    );
    Ok(())
}
