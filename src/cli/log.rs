//! How the binary logs, for every command: the format (`--log-format text|json`), the level (`RUST_LOG`,
//! or else cluster-autoscaler's klog verbosity `--v`), and colour only on a terminal.

use std::io::IsTerminal;

use clap::{Args, ValueEnum};
use tracing_subscriber::EnvFilter;

/// The log line format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event (coloured only when stderr is a terminal and NO_COLOR is unset).
    #[default]
    Text,
    /// One JSON object per line: timestamp, level, target, message and the event's fields at the top level.
    Json,
}

/// Logging flags, accepted by every command (before or after its name).
#[derive(Debug, Clone, Default, Args)]
pub struct LogFlags {
    /// Log line format: text, or json (one object per line, for log collectors).
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        default_value = "text",
        global = true
    )]
    pub log_format: LogFormat,
    /// Verbosity as cluster-autoscaler's klog --v, used when RUST_LOG is not set (RUST_LOG wins):
    /// 0 → warn, 1-2 → info, 3-4 → debug, 5 → trace for ferroscale's own messages; other crates log at
    /// warn with 0 and info otherwise. Not set: info.
    #[arg(long = "v", value_name = "LEVEL", global = true,
          value_parser = clap::value_parser!(u8).range(0..=5))]
    pub verbosity: Option<u8>,
    /// Accepted for cluster-autoscaler's command lines (klog's flag): ferroscale always logs to stderr,
    /// so only true is.
    #[arg(long, value_name = "BOOL", global = true, num_args = 0..=1, default_missing_value = "true",
          value_parser = ["true"])]
    pub logtostderr: Option<String>,
    /// Accepted for cluster-autoscaler's command lines (klog's flag); with every line on stderr, as with
    /// klog's --logtostderr, it changes nothing.
    #[arg(long, value_name = "SEVERITY", global = true, ignore_case = true,
          value_parser = ["info", "warning", "error", "fatal", "0", "1", "2", "3"])]
    pub stderrthreshold: Option<String>,
}

impl LogFlags {
    /// The filter directives `--v` stands for (`None`: info).
    pub fn directives(&self) -> String {
        let (ours, others) = match self.verbosity {
            Some(0) => ("warn", "warn"),
            None | Some(1 | 2) => ("info", "info"),
            Some(3 | 4) => ("debug", "info"),
            Some(_) => ("trace", "info"),
        };
        format!("{others},ferroscale={ours},ferroscale_core={ours}")
    }

    /// The filter: `RUST_LOG` when it is set and valid, otherwise `--v`'s.
    pub fn filter(&self) -> EnvFilter {
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(self.directives()))
    }

    /// Installs the process's subscriber, writing to stderr.
    pub fn init(&self) {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let ansi = std::io::stderr().is_terminal() && !no_color;
        let builder = tracing_subscriber::fmt()
            .with_env_filter(self.filter())
            .with_writer(std::io::stderr)
            .with_ansi(ansi);
        match self.log_format {
            LogFormat::Text => builder.init(),
            LogFormat::Json => builder.json().flatten_event(true).init(),
        }
    }
}
