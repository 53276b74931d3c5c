//! A `DeschedulerPolicy` file read into profiles of configured strategies: `descheduler/v1alpha2` as
//! the descheduler reads it (its profiles, `pluginConfig`, `plugins` and top-level limits), and
//! `descheduler/v1alpha1` converted as the descheduler's conversion did (one profile per enabled
//! strategy). Plugin arguments are decoded on the file's values (`check`, `evictor_args`: known
//! fields, types, enum values, the descheduler's `defaults.go`), read into the typed args, then
//! checked by the typed args' `validate` (each plugin's `validation.go`, and a refusal of what
//! ferroscale does not honour where ignoring it would evict more than the policy asks). Anything
//! refused names its field; what the descheduler itself ignores is accepted with a [`Warning`].

use std::fmt;

use serde_norway::Value;

use super::args::{ArgsError, Strategy};
use super::evictor::EvictorArgs;
use super::strategies::PluginArgs;
use crate::model::workload::LabelSelector;
use field::{Field, Object};

pub use error::PolicyError;

mod check;
pub(crate) mod decode;
mod error;
mod evictor_args;
pub(crate) mod field;
mod v1alpha1;
mod v1alpha2;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_readme;
#[cfg(test)]
mod tests_refused;
#[cfg(test)]
mod tests_typed;
#[cfg(test)]
mod tests_upstream;
#[cfg(test)]
mod tests_v1alpha1;

pub use evictor_args::SYSTEM_CRITICAL_PRIORITY;

/// A policy: its profiles and the limits over all of them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Policy {
    pub profiles: Vec<Profile>,
    /// `nodeSelector`: only nodes it matches are descheduled (a label selector string, checked;
    /// [`Policy::nodes`] reads it).
    pub node_selector: Option<String>,
    /// `maxNoOfPodsToEvictPerNode`.
    pub max_per_node: Option<u32>,
    /// `maxNoOfPodsToEvictPerNamespace`.
    pub max_per_namespace: Option<u32>,
    /// `maxNoOfPodsToEvictTotal`.
    pub max_total: Option<u32>,
    /// `gracePeriodSeconds`: the evictions' grace period (None: each pod's own).
    pub grace_period_seconds: Option<u64>,
}

/// The grace period an eviction gives the pod, in seconds: the policy's `gracePeriodSeconds` when
/// set (as the descheduler sends it with each eviction), else the pod's own
/// `terminationGracePeriodSeconds` (the API's default, 30, when it has none).
pub fn grace_period(policy: Option<u64>, pod: &crate::model::workload::Pod) -> i64 {
    match policy {
        Some(g) => i64::try_from(g).unwrap_or(i64::MAX),
        None => pod.meta.grace_period.unwrap_or(30).max(0),
    }
}

/// One profile: its evictor and its strategies, `deschedule` ones then `balance` ones, each in the
/// order the policy enables them. (The descheduler runs every profile's `deschedule` plugins
/// before any profile's `balance` ones.)
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Profile {
    pub name: String,
    pub evictor: EvictorArgs,
    pub strategies: Vec<PluginArgs>,
}

/// Something the policy says that the descheduler accepts but that has no effect here (or there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub profile: Option<String>,
    /// The field's path, `profiles[0].plugins.sort`.
    pub field: String,
    pub why: String,
}

impl Warning {
    pub(crate) fn new(field: impl Into<String>, why: impl Into<String>) -> Self {
        Warning {
            profile: None,
            field: field.into(),
            why: why.into(),
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.profile {
            write!(f, "profile {p:?}: ")?;
        }
        write!(f, "{}: {}", self.field, self.why)
    }
}

/// The most profiles a policy may have (the descheduler's own policies have a handful).
pub const MAX_PROFILES: usize = 1_000;

impl Policy {
    /// Reads a policy file's YAML (or JSON): the policy, and what it says to no effect.
    pub fn parse(text: &str) -> Result<(Policy, Vec<Warning>), PolicyError> {
        let (draft, warnings) = read(text)?;
        Ok((draft.typed()?, warnings))
    }

    /// The nodes `nodeSelector` selects (None: all).
    pub fn nodes(&self) -> Option<LabelSelector> {
        self.node_selector
            .as_deref()
            .map(|s| LabelSelector::parse(s).unwrap_or_else(|_| LabelSelector::nothing()))
    }
}

/// A policy read and checked, its plugins' args still the file's values (defaulted).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Draft {
    /// The top-level fields (its `profiles` empty).
    pub limits: Policy,
    pub profiles: Vec<DraftProfile>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DraftProfile {
    pub name: String,
    pub evictor: Configured,
    pub strategies: Vec<(Strategy, Configured)>,
}

/// A plugin's args and the field they were read from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Configured {
    pub args: Value,
    pub at: String,
    /// The plugin has no `pluginConfig` entry: its args are the descheduler's defaults, and `at`
    /// is where it is enabled.
    pub defaults_only: bool,
}

impl Configured {
    /// The refusal of these args, naming the plugin and the first problem's field (and listing the
    /// others).
    fn refusal(&self, plugin: &str, e: ArgsError) -> PolicyError {
        let first = e.first();
        let also = match &e.0[1..] {
            [] => String::new(),
            rest => {
                let rest: Vec<String> = rest.iter().map(ToString::to_string).collect();
                format!(" (also: {})", rest.join("; "))
            }
        };
        if self.defaults_only {
            return PolicyError::field(
                &self.at,
                format!(
                    "{plugin} has no pluginConfig entry, and its defaults are not enough: {first}{also}"
                ),
            );
        }
        PolicyError::field(
            format!("{}.{}", self.at, first.field),
            format!("{} (plugin {plugin}){also}", first.why),
        )
    }
}

/// The file read and checked, before the typed args.
pub(crate) fn read(text: &str) -> Result<(Draft, Vec<Warning>), PolicyError> {
    crate::bounds::POLICY.check_yaml(text)?;
    let value: Value =
        serde_norway::from_str(text).map_err(|e| PolicyError::Syntax(e.to_string()))?;
    let root = Field::new(&value, "");
    let Some(map) = value.as_mapping() else {
        return Err(PolicyError::field(
            "kind",
            format!(
                "want a DeschedulerPolicy mapping, got {}",
                field::kind(&value)
            ),
        ));
    };
    let kind = map.get("kind").and_then(Value::as_str);
    if kind != Some("DeschedulerPolicy") {
        return Err(PolicyError::field(
            "kind",
            format!("want DeschedulerPolicy, got {kind:?}"),
        ));
    }
    match map.get("apiVersion").and_then(Value::as_str) {
        Some("descheduler/v1alpha2") => v1alpha2::read(&root),
        Some("descheduler/v1alpha1") => v1alpha1::read(&root),
        other => Err(PolicyError::field(
            "apiVersion",
            format!("want descheduler/v1alpha2 or descheduler/v1alpha1, got {other:?}"),
        )),
    }
}

/// The top-level fields both versions have.
fn limits(o: &Object, out: &mut Policy) -> Result<(), PolicyError> {
    if let Some(s) = o.opt("nodeSelector") {
        let text = s.string()?;
        crate::deschedule::validate::selector_string(text).map_err(|why| s.err(why))?;
        out.node_selector = Some(text.to_string());
    }
    let max = |key: &str| -> Result<Option<u32>, PolicyError> {
        o.opt(key)
            .map(|f| f.int(0, u32::MAX.into()).map(|n| n as u32))
            .transpose()
    };
    out.max_per_node = max("maxNoOfPodsToEvictPerNode")?;
    out.max_per_namespace = max("maxNoOfPodsToEvictPerNamespace")?;
    out.max_total = max("maxNoOfPodsToEvictTotal")?;
    Ok(())
}

impl Draft {
    /// The typed policy: each plugin's args read into its strategy's arguments and validated there.
    pub(crate) fn typed(self) -> Result<Policy, PolicyError> {
        let mut policy = self.limits;
        for p in self.profiles {
            let in_profile = |e: PolicyError| e.in_profile(&p.name);
            let evictor = serde_norway::from_value::<EvictorArgs>(p.evictor.args.clone())
                .map_err(|e| in_profile(PolicyError::field(&p.evictor.at, e.to_string())))?;
            evictor
                .validate()
                .map_err(|e| in_profile(p.evictor.refusal(evictor_args::DEFAULT_EVICTOR, e)))?;
            let strategies = p
                .strategies
                .into_iter()
                .map(|(s, c)| {
                    let args = PluginArgs::from_value(s, c.args.clone())
                        .map_err(|e| in_profile(PolicyError::field(&c.at, e.to_string())))?;
                    args.validate()
                        .map_err(|e| in_profile(c.refusal(s.name(), e)))?;
                    Ok(args)
                })
                .collect::<Result<_, PolicyError>>()?;
            policy.profiles.push(Profile {
                name: p.name,
                evictor,
                strategies,
            });
        }
        Ok(policy)
    }
}
#[cfg(test)]
mod tests_files;
