//! The descheduler's flags, one group for every command that deschedules (`simulate`, `run`):
//! the policy file, how often a cycle runs and how long a moved workload is left alone.

use std::path::PathBuf;
use std::sync::LazyLock;
use std::time::Duration;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::config::relative_to_config;
use super::values::GoDuration;
use crate::deschedule::policy::Warning;
use crate::deschedule::{Policy, Settings};
use crate::error::{Error, Result};

/// The planner's defaults as the core writes them: `--deschedule-cooldown` takes its default from here.
static CORE: LazyLock<Settings> = LazyLock::new(Settings::default);

/// `--deschedule-cooldown`'s default, from the core's [`Settings`].
pub(super) fn default_cooldown() -> GoDuration {
    GoDuration(Duration::from_secs(
        CORE.cooldown_secs.max(0).unsigned_abs(),
    ))
}

/// The descheduler's flags.
#[derive(Debug, Clone, Args, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct DescheduleFlags {
    /// A DeschedulerPolicy file (`descheduler/v1alpha2`, or `v1alpha1`), as the descheduler reads it:
    /// after the loop's autoscaling decisions, its strategies' evictions are planned by the scheduling
    /// simulation and carried out (none without this flag).
    #[arg(long, value_name = "FILE")]
    #[serde(deserialize_with = "relative_to_config")]
    pub deschedule_policy: Option<PathBuf>,
    /// Time between descheduling cycles (the first runs with the first loop).
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    pub deschedule_interval: GoDuration,
    /// A workload (by owner) evicted is not evicted again for this long.
    #[arg(long, value_name = "DURATION", default_value_t = default_cooldown())]
    pub deschedule_cooldown: GoDuration,
}

impl Default for DescheduleFlags {
    /// What an empty command line gives.
    fn default() -> Self {
        super::defaults()
    }
}

/// What descheduling runs with, read from its flags.
#[derive(Debug, Clone)]
pub struct Descheduling {
    pub policy: Policy,
    /// `--deschedule-interval`.
    pub interval: Duration,
    /// The planner's settings (`--deschedule-cooldown`).
    pub settings: Settings,
    /// What the policy sets that has no effect, for the command to say.
    pub warnings: Vec<Warning>,
}

impl DescheduleFlags {
    /// The policy and settings, or None without `--deschedule-policy`. A file that cannot be read or
    /// that the parser refuses is an error naming the flag, the file and (through the parser) the field.
    pub fn descheduling(&self) -> Result<Option<Descheduling>> {
        let Some(path) = &self.deschedule_policy else {
            return Ok(None);
        };
        self.descheduling_with(path, "--deschedule-policy")
            .map(Some)
    }

    /// The policy at `path` (which `flag` names in errors) with these flags' interval and cooldown.
    pub fn descheduling_with(&self, path: &std::path::Path, flag: &str) -> Result<Descheduling> {
        let at =
            |e: &dyn std::fmt::Display| Error::config(format!("{flag} {}: {e}", path.display()));
        let text = crate::input::read_file(path, &crate::bounds::POLICY, flag)?;
        let (policy, warnings) = Policy::parse(&text).map_err(|e| at(&e))?;
        if self.deschedule_interval.0.is_zero() {
            return Err(Error::config(
                "--deschedule-interval: must be more than 0s".to_string(),
            ));
        }
        Ok(Descheduling {
            policy,
            interval: self.deschedule_interval.0,
            settings: Settings {
                cooldown_secs: crate::model::duration::secs(self.deschedule_cooldown.0),
            },
            warnings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_five_minutes_and_the_cores_cooldown() {
        let f = DescheduleFlags::default();
        assert_eq!(f.deschedule_policy, None);
        assert_eq!(f.deschedule_interval.0, Duration::from_secs(300));
        assert_eq!(
            crate::model::duration::secs(f.deschedule_cooldown.0),
            CORE.cooldown_secs
        );
        assert!(f.descheduling().unwrap().is_none());
    }

    #[test]
    fn a_missing_policy_file_is_named() {
        let f = DescheduleFlags {
            deschedule_policy: Some("/nonexistent/policy.yaml".into()),
            ..DescheduleFlags::default()
        };
        let e = f.descheduling().unwrap_err().to_string();
        assert!(
            e.contains("--deschedule-policy /nonexistent/policy.yaml"),
            "{e}"
        );
    }
}
