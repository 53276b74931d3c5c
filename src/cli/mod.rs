//! The `ferroscale` command line: one module per command, each with one flags struct that derives both
//! clap and serde (so `--config FILE` reads the same struct, flags winning), built from the flag groups
//! the commands share (`flags`). Flags keep upstream cluster-autoscaler's names and defaults; defaults
//! are written once, in the clap attributes.

mod config;
pub mod flags;
pub mod log;
pub mod run;
pub mod serve;
pub mod simulate;
pub mod values;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

pub use config::defaults;

use crate::error::{Error, Result};

/// A node autoscaler for Kubernetes on AWS.
#[derive(Debug, Parser)]
#[command(name = "ferroscale", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    #[command(flatten)]
    pub log: log::LogFlags,
}

/// What to run.
#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
pub enum Command {
    /// Serve cluster-autoscaler's externalgrpc CloudProvider protocol (point CA's --cloud-config at it).
    Serve(serve::ServeFlags),
    /// The whole autoscaler: watches the cluster and scales node groups through --cloud.
    Run(run::RunFlags),
    /// What would the autoscaler do, and why? Runs the loop on a cluster snapshot with a virtual clock.
    Simulate(simulate::SimulateFlags),
}

impl Cli {
    /// Parses the command line and merges the command's `--config` file under its flags, returning the
    /// logging flags too. Usage errors are clap's (printed with usage, exit 2); a bad file is a
    /// configuration error naming the key.
    #[allow(clippy::type_complexity)]
    pub fn load<I, T>(args: I) -> std::result::Result<(log::LogFlags, Result<Command>), clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let matches = Cli::command().try_get_matches_from(args)?;
        let cli = Cli::from_arg_matches(&matches)?;
        let sub = matches.subcommand().map(|(_, m)| m);
        let Some(sub) = sub else {
            return Ok((cli.log, Err(Error::config("no command given"))));
        };
        let log = cli.log.clone();
        Ok((
            log,
            match cli.command {
                Command::Serve(f) => {
                    let config = f.config.clone();
                    config::load(f, sub, config.as_deref()).map(Command::Serve)
                }
                Command::Run(f) => {
                    let config = f.config.clone();
                    config::load(f, sub, config.as_deref()).map(Command::Run)
                }
                Command::Simulate(f) => {
                    let config = f.config.clone();
                    config::load(f, sub, config.as_deref()).map(Command::Simulate)
                }
            },
        ))
    }
}
