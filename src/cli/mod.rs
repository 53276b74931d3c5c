//! The `ferroscale` command line: one module per command, each with one flags struct that derives both
//! clap and serde (so `--config FILE` reads the same struct, flags winning), built from the flag groups
//! the commands share (`flags`). Flags keep upstream cluster-autoscaler's names and defaults; defaults
//! are written once, in the clap attributes.

mod config;
pub mod deschedule;
pub mod deschedule_flags;
mod engine_settings;
pub mod flags;
pub mod kube_client;
pub mod log;
pub mod record;
mod replay;
pub mod run;
pub mod serve;
pub mod simulate;
mod upstream_flags;
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
    /// The descheduler alone (next to upstream cluster-autoscaler): its policy file and flags, each
    /// cycle's evictions planned by the scheduling simulation.
    Deschedule(deschedule::DeschedulerFlags),
    /// Write the cluster's timeline (every change of the objects the engine reads, one JSON line each)
    /// for `simulate --trace`; read-only.
    Record(record::RecordFlags),
}

/// `ferroscale simulate`: a replay of `--trace`'s timeline, else the loops on `--cluster`'s snapshot.
pub fn simulate_or_replay(flags: simulate::SimulateFlags) -> Result<()> {
    match &flags.trace {
        Some(_) if flags.cluster.is_some() => Err(Error::config(
            "--trace and --cluster: a replay starts from the timeline's first moment; give one",
        )),
        Some(trace) => replay::main(&flags, trace),
        None => simulate::main(flags),
    }
}

impl Cli {
    /// `run`'s arguments without the cluster-autoscaler flags ferroscale does not implement (see
    /// `upstream_flags`), and those flags as written; other commands' arguments as they are.
    fn without_upstream_only_flags<I, T>(args: I) -> (Vec<std::ffi::OsString>, Vec<String>)
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
        // The command is the first argument that is neither a flag nor the value of a global one.
        let mut at = None;
        let mut i = 1;
        while i < args.len() {
            let a = args[i].to_string_lossy();
            if matches!(a.as_ref(), "--log-format" | "--v" | "--stderrthreshold") {
                i += 2;
                continue;
            }
            if !a.starts_with('-') {
                at = Some(i);
                break;
            }
            i += 1;
        }
        let Some(at) = at.filter(|&i| args[i] == "run") else {
            return (args, Vec::new());
        };
        let command = Cli::command();
        let ours = |c: &clap::Command, name: &str| {
            c.get_arguments().any(|a| {
                a.get_long_and_visible_aliases()
                    .into_iter()
                    .flatten()
                    .any(|l| l == name)
            })
        };
        let run = command.find_subcommand("run").cloned().unwrap_or_default();
        let known = |name: &str| ours(&run, name) || ours(&command, name);
        let mut args = args;
        let tail = args.split_off(at + 1);
        let (tail, dropped) = upstream_flags::strip_unimplemented(tail, known);
        args.extend(tail);
        (args, dropped)
    }

    /// Parses the command line and merges the command's `--config` file under its flags, returning the
    /// logging flags too. Usage errors are clap's (printed with usage, exit 2); a bad file is a
    /// configuration error naming the key.
    #[allow(clippy::type_complexity)]
    pub fn load<I, T>(args: I) -> std::result::Result<(log::LogFlags, Result<Command>), clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let (args, upstream_only) = Cli::without_upstream_only_flags(args);
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
                    config::load(f, sub, config.as_deref()).map(|mut f| {
                        f.upstream_only = upstream_only;
                        Command::Run(f)
                    })
                }
                Command::Simulate(f) => {
                    let config = f.config.clone();
                    config::load(f, sub, config.as_deref()).map(Command::Simulate)
                }
                Command::Deschedule(f) => {
                    let config = f.config.clone();
                    config::load(f, sub, config.as_deref()).map(Command::Deschedule)
                }
                Command::Record(f) => Ok(Command::Record(f)),
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_flags(args: &[&str]) -> std::result::Result<run::RunFlags, String> {
        let args = ["ferroscale", "--v", "2", "run"].iter().chain(args);
        match Cli::load(args) {
            Ok((_, Ok(Command::Run(f)))) => Ok(f),
            Ok((_, Ok(_))) => Err("another command".into()),
            Ok((_, Err(e))) => Err(e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn run_accepts_a_cluster_autoscaler_command_line_and_names_what_it_ignores() {
        let f = run_flags(&[
            "--cordon-node-before-terminating",
            "--node-deletion-delay-timeout",
            "5s",
            "--scan-interval",
            "20s",
            "--kube-client-qps=20",
        ])
        .unwrap();
        assert_eq!(f.scan_interval.0, std::time::Duration::from_secs(20));
        assert_eq!(
            f.upstream_only,
            [
                "--cordon-node-before-terminating",
                "--node-deletion-delay-timeout 5s",
                "--kube-client-qps=20"
            ]
        );
    }

    #[test]
    fn upstreams_backoff_flags_and_scan_interval_reach_the_engine() {
        let f = run_flags(&[
            "--initial-node-group-backoff-duration=1m",
            "--max-node-group-backoff-duration",
            "4m",
            "--node-group-backoff-reset-timeout=1h",
        ])
        .unwrap();
        assert!(f.upstream_only.is_empty(), "{:?}", f.upstream_only);
        let s = f.rules.engine(&f.expander).unwrap();
        let minutes = |m: u64| std::time::Duration::from_secs(m * 60);
        assert_eq!(
            (s.node_group_backoff.initial, s.node_group_backoff.max),
            (minutes(1), minutes(4))
        );
        assert_eq!(s.node_group_backoff.reset, minutes(60));
        // Without them, upstream's 5m, 30m and 3h.
        let s = flags::default_engine();
        assert_eq!(
            (s.node_group_backoff.initial, s.node_group_backoff.max),
            (minutes(5), minutes(30))
        );
        assert_eq!(s.node_group_backoff.reset, minutes(180));
    }

    #[test]
    fn a_flag_nobody_has_is_still_an_error() {
        let e = run_flags(&["--scan-intervall", "20s"]).unwrap_err();
        assert!(e.contains("--scan-intervall"), "{e}");
        // Other commands take no cluster-autoscaler flags.
        let e = Cli::load(["ferroscale", "simulate", "--cordon-node-before-terminating"]);
        assert!(e.is_err());
    }

    #[test]
    fn a_config_file_gives_the_interruption_cap_as_a_count_or_a_share() {
        let dir = tempfile::tempdir().unwrap();
        for (written, read) in [("50", "50"), ("\"10%\"", "10%")] {
            let path = dir.path().join("run.yaml");
            std::fs::write(&path, format!("maxInterruptionsPerMinute: {written}\n")).unwrap();
            let f = run_flags(&["--config", path.to_str().unwrap()]).unwrap();
            assert_eq!(f.rules.max_interruptions_per_minute, read);
        }
    }

    #[test]
    fn a_config_file_gives_the_disruption_budget_as_a_count_or_a_share() {
        let dir = tempfile::tempdir().unwrap();
        for (written, read) in [("2", "2"), ("\"25%\"", "25%")] {
            let path = dir.path().join("run.yaml");
            std::fs::write(&path, format!("maxDisruption: {written}\n")).unwrap();
            let f = run_flags(&["--config", path.to_str().unwrap()]).unwrap();
            assert_eq!(f.rules.max_disruption, read);
        }
    }
}
