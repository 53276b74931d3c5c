//! The `ferroscale` command line. Flags keep upstream cluster-autoscaler's names where one exists; every
//! `serve` setting may also come from `--config FILE` (YAML, camelCase keys), flags winning.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Deserialize;

use crate::cloud::memory::{MemoryCloud, MemoryConfig};
use crate::cloud::Cloud;
use crate::error::{Error, Result};

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
}

/// Where node groups come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CloudKind {
    /// Groups described in a YAML file, resized in memory (no cloud account needed).
    Memory,
}

/// Flags of `ferroscale serve`.
#[derive(Debug, Args, Default)]
pub struct ServeArgs {
    /// YAML file with any of the settings below (camelCase keys: listen, httpListen, cloud, memoryConfig, shutdownGracePeriod).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address of the CloudProvider gRPC listener [default: 127.0.0.1:8086].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Address of the HTTP listener for /metrics, /healthz and /readyz [default: 127.0.0.1:8085].
    #[arg(long, value_name = "ADDR")]
    pub http_listen: Option<SocketAddr>,
    /// Cloud backend [default: memory].
    #[arg(long, value_enum)]
    pub cloud: Option<CloudKind>,
    /// Node groups of the memory cloud (see examples/memory-cloud.yaml).
    #[arg(long, value_name = "FILE")]
    pub memory_config: Option<PathBuf>,
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
}

/// Resolved settings of `serve`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeSettings {
    pub listen: SocketAddr,
    pub http_listen: SocketAddr,
    pub cloud: CloudKind,
    pub memory_config: Option<PathBuf>,
    pub shutdown_grace_period: Duration,
}

impl ServeArgs {
    /// Merges flags over the config file over defaults. Relative paths in the file are relative to it.
    pub fn resolve(&self) -> Result<ServeSettings> {
        let file = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    Error::Config(format!("cannot read --config {}: {e}", path.display()))
                })?;
                let mut f: ServeFile = serde_yaml::from_str(&text)
                    .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
                let base = path.parent().unwrap_or(Path::new("."));
                f.memory_config = f.memory_config.map(|p| base.join(p));
                f
            }
            None => ServeFile::default(),
        };
        Ok(ServeSettings {
            listen: self
                .listen
                .or(file.listen)
                .unwrap_or(([127, 0, 0, 1], 8086).into()),
            http_listen: self
                .http_listen
                .or(file.http_listen)
                .unwrap_or(([127, 0, 0, 1], 8085).into()),
            cloud: self.cloud.or(file.cloud).unwrap_or(CloudKind::Memory),
            memory_config: self.memory_config.clone().or(file.memory_config),
            shutdown_grace_period: match (self.shutdown_grace_period, &file.shutdown_grace_period) {
                (Some(d), _) => d,
                (None, Some(text)) => crate::model::parse_go_duration(text)
                    .map_err(|e| Error::Config(format!("shutdownGracePeriod: {e}")))?,
                (None, None) => crate::server::DEFAULT_SHUTDOWN_GRACE,
            },
        })
    }
}

impl ServeSettings {
    /// Builds the configured cloud.
    pub fn build_cloud(&self) -> Result<Arc<dyn Cloud>> {
        match self.cloud {
            CloudKind::Memory => {
                let path = self.memory_config.as_ref().ok_or_else(|| {
                    Error::Config("--memory-config FILE is required with --cloud memory".into())
                })?;
                Ok(Arc::new(MemoryCloud::new(&MemoryConfig::load(path)?)?))
            }
        }
    }
}
