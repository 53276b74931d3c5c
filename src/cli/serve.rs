//! `ferroscale serve`: cluster-autoscaler's externalgrpc CloudProvider, and optionally its grpc
//! expander, on one cloud.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::config::relative_to_config;
use super::flags::{CloudFlags, ExpanderFlags};
use super::values::GoDuration;
use crate::error::{Error, Result};
use crate::grpc::expander::ExpanderSettings;
use crate::metrics::Metrics;
use crate::tls::{ReloadingTls, TlsFiles, TlsFlags, EXPANDER_FLAGS, PROVIDER_FLAGS};

/// How often the priority file is checked for changes.
pub const PRIORITY_FILE_POLL: Duration = Duration::from_secs(5);
/// How often TLS certificate files are checked for changes (rotation without a restart).
pub const TLS_FILE_POLL: Duration = Duration::from_secs(10);

/// Flags of `ferroscale serve`; every one may also come from `--config FILE` (camelCase keys).
#[derive(Debug, Clone, Args, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ServeFlags {
    /// YAML file with any of these settings (camelCase keys, e.g. httpListen, tlsClientCa); flags win,
    /// relative paths are relative to the file.
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Address of the CloudProvider gRPC listener.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8086")]
    pub listen: SocketAddr,
    /// Address of the HTTP listener for /metrics, /healthz and /readyz.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8085")]
    pub http_listen: SocketAddr,
    /// Address of the grpc expander listener for CA's --expander=grpc (off when not set).
    #[arg(long, value_name = "ADDR")]
    pub expander_listen: Option<SocketAddr>,
    #[command(flatten)]
    #[serde(flatten)]
    pub cloud: CloudFlags,
    #[command(flatten)]
    #[serde(flatten)]
    pub expander: ExpanderFlags,
    /// PEM certificate of the CloudProvider listener (plaintext without it).
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub tls_key: Option<PathBuf>,
    /// PEM CA bundle client certificates must chain to; set, a client certificate is required (mutual TLS,
    /// CA's cloud-config cert/key/cacert).
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
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
    #[serde(deserialize_with = "relative_to_config")]
    pub expander_tls_cert: Option<PathBuf>,
    /// PEM private key of --expander-tls-cert.
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub expander_tls_key: Option<PathBuf>,
    /// How long in-flight requests may finish after SIGTERM.
    #[arg(long, value_name = "DURATION", default_value_t = GoDuration(crate::server::DEFAULT_SHUTDOWN_GRACE))]
    pub shutdown_grace_period: GoDuration,
}

impl Default for ServeFlags {
    /// What an empty command line gives.
    fn default() -> Self {
        super::defaults()
    }
}

impl ServeFlags {
    /// TLS of the CloudProvider listener (mutual when it names a client CA), or none.
    pub fn tls(&self) -> Result<Option<TlsFiles>> {
        TlsFiles::from_flags(
            self.tls_cert.clone(),
            self.tls_key.clone(),
            self.tls_client_ca.clone(),
            self.tls_client_san.clone(),
            &PROVIDER_FLAGS,
        )
    }

    /// TLS of the expander listener, or none.
    pub fn expander_tls(&self) -> Result<Option<TlsFiles>> {
        TlsFiles::from_flags(
            self.expander_tls_cert.clone(),
            self.expander_tls_key.clone(),
            None,
            Vec::new(),
            &EXPANDER_FLAGS,
        )
    }

    /// Checks every flag without binding or connecting: bad combinations and files that do not load
    /// are errors naming the flag (exit code 2).
    pub fn check(&self) -> Result<()> {
        let tls = self.tls()?;
        self.expander_tls()?;
        if tls.is_none() && !self.allow_plaintext && !self.listen.ip().is_loopback() {
            return Err(Error::config(format!(
                "--listen {}: the CloudProvider listener would accept write RPCs in plaintext from anyone who can reach it; pass --tls-cert/--tls-key/--tls-client-ca (mutual TLS) or, to accept that, --allow-plaintext",
                self.listen
            )));
        }
        self.expander.chain()?;
        self.expander.priorities()?;
        self.cloud.check(&self.expander)
    }
}

/// Loads a listener's certificates (errors name the flag) and re-reads them as they rotate.
fn load_tls(
    files: Option<TlsFiles>,
    flags: &'static TlsFlags,
) -> Result<Option<Arc<ReloadingTls>>> {
    files
        .map(|files| {
            let tls = ReloadingTls::load(files, flags)?;
            tls.watch(TLS_FILE_POLL);
            Ok(tls)
        })
        .transpose()
}

/// Binds an address; the error names the flag.
pub async fn bind(addr: SocketAddr, flag: &str) -> Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| Error::io(format!("binding {flag} {addr}"), source))
}

/// Runs `serve` until SIGTERM or SIGINT.
pub async fn main(flags: ServeFlags) -> Result<()> {
    flags.check()?;
    // Certificates are read before anything starts, so a bad one stops start-up naming its flag.
    let grpc_tls = load_tls(flags.tls()?, &PROVIDER_FLAGS)?;
    let expander_tls = load_tls(flags.expander_tls()?, &EXPANDER_FLAGS)?;
    let metrics = Arc::new(Metrics::default());
    let cloud = flags.cloud.build(&flags.expander, metrics.clone()).await?;
    let expander = match flags.expander_listen {
        Some(addr) => {
            let settings = Arc::new(ExpanderSettings {
                chain: flags.expander.chain()?,
                priorities: flags.expander.watched_priorities(PRIORITY_FILE_POLL)?,
            });
            Some((bind(addr, "--expander-listen").await?, settings))
        }
        None => None,
    };
    let listeners = crate::server::Listeners {
        grpc: bind(flags.listen, "--listen").await?,
        http: bind(flags.http_listen, "--http-listen").await?,
        expander,
        grpc_tls,
        expander_tls,
    };
    crate::server::serve(
        cloud,
        metrics,
        listeners,
        crate::server::termination_signal(),
        flags.shutdown_grace_period.0,
    )
    .await
}
