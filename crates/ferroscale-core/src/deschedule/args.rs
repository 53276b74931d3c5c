//! The strategies by their plugin names, their arguments as the descheduler's policy writes them, the
//! argument types several strategies share (`namespaces`, `labelSelector`, thresholds), and why
//! arguments are refused ([`ArgsError`], naming each field).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::strategies::{
    failed::RemoveFailedPodsArgs, high_utilization::HighNodeUtilizationArgs,
    inter_pod_anti_affinity::RemovePodsViolatingInterPodAntiAffinityArgs,
    lifetime::PodLifeTimeArgs, low_utilization::LowNodeUtilizationArgs,
    node_affinity::RemovePodsViolatingNodeAffinityArgs,
    node_taints::RemovePodsViolatingNodeTaintsArgs, remove_duplicates::RemoveDuplicatesArgs,
    restarts::RemovePodsHavingTooManyRestartsArgs,
    spread::RemovePodsViolatingTopologySpreadConstraintArgs,
};
use crate::model::workload::{LabelSelector, Requirement, SelectorOp};

/// A descheduling strategy, by the descheduler's plugin name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Strategy {
    RemoveDuplicates,
    LowNodeUtilization,
    HighNodeUtilization,
    RemovePodsViolatingInterPodAntiAffinity,
    RemovePodsViolatingNodeAffinity,
    RemovePodsViolatingNodeTaints,
    RemovePodsViolatingTopologySpreadConstraint,
    RemovePodsHavingTooManyRestarts,
    PodLifeTime,
    RemoveFailedPods,
}

impl Strategy {
    pub const ALL: [Strategy; 10] = [
        Strategy::RemoveDuplicates,
        Strategy::LowNodeUtilization,
        Strategy::HighNodeUtilization,
        Strategy::RemovePodsViolatingInterPodAntiAffinity,
        Strategy::RemovePodsViolatingNodeAffinity,
        Strategy::RemovePodsViolatingNodeTaints,
        Strategy::RemovePodsViolatingTopologySpreadConstraint,
        Strategy::RemovePodsHavingTooManyRestarts,
        Strategy::PodLifeTime,
        Strategy::RemoveFailedPods,
    ];

    /// The plugin name, as policies and the descheduler's metrics write it.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::RemoveDuplicates => "RemoveDuplicates",
            Strategy::LowNodeUtilization => "LowNodeUtilization",
            Strategy::HighNodeUtilization => "HighNodeUtilization",
            Strategy::RemovePodsViolatingInterPodAntiAffinity => {
                "RemovePodsViolatingInterPodAntiAffinity"
            }
            Strategy::RemovePodsViolatingNodeAffinity => "RemovePodsViolatingNodeAffinity",
            Strategy::RemovePodsViolatingNodeTaints => "RemovePodsViolatingNodeTaints",
            Strategy::RemovePodsViolatingTopologySpreadConstraint => {
                "RemovePodsViolatingTopologySpreadConstraint"
            }
            Strategy::RemovePodsHavingTooManyRestarts => "RemovePodsHavingTooManyRestarts",
            Strategy::PodLifeTime => "PodLifeTime",
            Strategy::RemoveFailedPods => "RemoveFailedPods",
        }
    }

    /// The strategy of a plugin name, if it is one.
    pub fn parse(name: &str) -> Option<Strategy> {
        Strategy::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether the descheduler runs it at its `balance` extension point (else `deschedule`).
    pub fn balances(self) -> bool {
        matches!(
            self,
            Strategy::RemoveDuplicates
                | Strategy::LowNodeUtilization
                | Strategy::HighNodeUtilization
                | Strategy::RemovePodsViolatingTopologySpreadConstraint
        )
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A strategy with its arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum PluginArgs {
    RemoveDuplicates(RemoveDuplicatesArgs),
    LowNodeUtilization(LowNodeUtilizationArgs),
    HighNodeUtilization(HighNodeUtilizationArgs),
    RemovePodsViolatingInterPodAntiAffinity(RemovePodsViolatingInterPodAntiAffinityArgs),
    RemovePodsViolatingNodeAffinity(RemovePodsViolatingNodeAffinityArgs),
    RemovePodsViolatingNodeTaints(RemovePodsViolatingNodeTaintsArgs),
    RemovePodsViolatingTopologySpreadConstraint(RemovePodsViolatingTopologySpreadConstraintArgs),
    RemovePodsHavingTooManyRestarts(RemovePodsHavingTooManyRestartsArgs),
    PodLifeTime(PodLifeTimeArgs),
    RemoveFailedPods(RemoveFailedPodsArgs),
}

impl PluginArgs {
    pub fn strategy(&self) -> Strategy {
        match self {
            PluginArgs::RemoveDuplicates(_) => Strategy::RemoveDuplicates,
            PluginArgs::LowNodeUtilization(_) => Strategy::LowNodeUtilization,
            PluginArgs::HighNodeUtilization(_) => Strategy::HighNodeUtilization,
            PluginArgs::RemovePodsViolatingInterPodAntiAffinity(_) => {
                Strategy::RemovePodsViolatingInterPodAntiAffinity
            }
            PluginArgs::RemovePodsViolatingNodeAffinity(_) => {
                Strategy::RemovePodsViolatingNodeAffinity
            }
            PluginArgs::RemovePodsViolatingNodeTaints(_) => Strategy::RemovePodsViolatingNodeTaints,
            PluginArgs::RemovePodsViolatingTopologySpreadConstraint(_) => {
                Strategy::RemovePodsViolatingTopologySpreadConstraint
            }
            PluginArgs::RemovePodsHavingTooManyRestarts(_) => {
                Strategy::RemovePodsHavingTooManyRestarts
            }
            PluginArgs::PodLifeTime(_) => Strategy::PodLifeTime,
            PluginArgs::RemoveFailedPods(_) => Strategy::RemoveFailedPods,
        }
    }

    /// The strategy's arguments read from a policy's `pluginConfig` args, as `policy` decoded and
    /// defaulted them (their shape and the descheduler's defaults are applied there, on the values;
    /// [`PluginArgs::validate`] then checks them).
    pub fn from_value(
        s: Strategy,
        args: serde_norway::Value,
    ) -> Result<PluginArgs, serde_norway::Error> {
        use serde_norway::from_value as read;
        Ok(match s {
            Strategy::RemoveDuplicates => PluginArgs::RemoveDuplicates(read(args)?),
            Strategy::LowNodeUtilization => PluginArgs::LowNodeUtilization(read(args)?),
            Strategy::HighNodeUtilization => PluginArgs::HighNodeUtilization(read(args)?),
            Strategy::RemovePodsViolatingInterPodAntiAffinity => {
                PluginArgs::RemovePodsViolatingInterPodAntiAffinity(read(args)?)
            }
            Strategy::RemovePodsViolatingNodeAffinity => {
                PluginArgs::RemovePodsViolatingNodeAffinity(read(args)?)
            }
            Strategy::RemovePodsViolatingNodeTaints => {
                PluginArgs::RemovePodsViolatingNodeTaints(read(args)?)
            }
            Strategy::RemovePodsViolatingTopologySpreadConstraint => {
                PluginArgs::RemovePodsViolatingTopologySpreadConstraint(read(args)?)
            }
            Strategy::RemovePodsHavingTooManyRestarts => {
                PluginArgs::RemovePodsHavingTooManyRestarts(read(args)?)
            }
            Strategy::PodLifeTime => PluginArgs::PodLifeTime(read(args)?),
            Strategy::RemoveFailedPods => PluginArgs::RemoveFailedPods(read(args)?),
        })
    }

    /// The strategy's own checks of its arguments (its `validation.go`), and a refusal of what
    /// ferroscale does not honour where ignoring it would evict more than the policy asks. Every
    /// policy goes through it (`Policy::parse`).
    pub fn validate(&self) -> Result<(), ArgsError> {
        match self {
            PluginArgs::RemoveDuplicates(a) => a.validate(),
            PluginArgs::LowNodeUtilization(a) => a.validate(),
            PluginArgs::HighNodeUtilization(a) => a.validate(),
            PluginArgs::RemovePodsViolatingInterPodAntiAffinity(a) => a.validate(),
            PluginArgs::RemovePodsViolatingNodeAffinity(a) => a.validate(),
            PluginArgs::RemovePodsViolatingNodeTaints(a) => a.validate(),
            PluginArgs::RemovePodsViolatingTopologySpreadConstraint(a) => a.validate(),
            PluginArgs::RemovePodsHavingTooManyRestarts(a) => a.validate(),
            PluginArgs::PodLifeTime(a) => a.validate(),
            PluginArgs::RemoveFailedPods(a) => a.validate(),
        }
    }

    /// The args struct's own defaults (tests and callers that build args in code). A policy that
    /// enables a plugin without a `pluginConfig` entry gets the descheduler's defaults instead,
    /// which `policy` applies to the values before `from_value`.
    pub fn default_for(s: Strategy) -> PluginArgs {
        match s {
            Strategy::RemoveDuplicates => PluginArgs::RemoveDuplicates(Default::default()),
            Strategy::LowNodeUtilization => PluginArgs::LowNodeUtilization(Default::default()),
            Strategy::HighNodeUtilization => PluginArgs::HighNodeUtilization(Default::default()),
            Strategy::RemovePodsViolatingInterPodAntiAffinity => {
                PluginArgs::RemovePodsViolatingInterPodAntiAffinity(Default::default())
            }
            Strategy::RemovePodsViolatingNodeAffinity => {
                PluginArgs::RemovePodsViolatingNodeAffinity(Default::default())
            }
            Strategy::RemovePodsViolatingNodeTaints => {
                PluginArgs::RemovePodsViolatingNodeTaints(Default::default())
            }
            Strategy::RemovePodsViolatingTopologySpreadConstraint => {
                PluginArgs::RemovePodsViolatingTopologySpreadConstraint(Default::default())
            }
            Strategy::RemovePodsHavingTooManyRestarts => {
                PluginArgs::RemovePodsHavingTooManyRestarts(Default::default())
            }
            Strategy::PodLifeTime => PluginArgs::PodLifeTime(Default::default()),
            Strategy::RemoveFailedPods => PluginArgs::RemoveFailedPods(Default::default()),
        }
    }
}

/// One refused value of a plugin's arguments: the field's path under the args
/// (`namespaces.exclude`, `thresholds.cpu`, `states[0]`) and why.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{field}: {why}")]
pub struct ArgsProblem {
    pub field: String,
    pub why: String,
}

/// Why a plugin's arguments are refused: every problem found, in order (never empty), as the
/// descheduler's validation aggregates them.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub struct ArgsError(pub Vec<ArgsProblem>);

impl ArgsError {
    /// The first problem, which a policy refusal names.
    pub fn first(&self) -> &ArgsProblem {
        &self.0[0]
    }
}

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

/// The problems found so far in a plugin's arguments.
#[derive(Debug, Default)]
pub struct Problems(Vec<ArgsProblem>);

impl Problems {
    pub fn add(&mut self, field: impl Into<String>, why: impl Into<String>) {
        self.0.push(ArgsProblem {
            field: field.into(),
            why: why.into(),
        });
    }

    /// Ok when none was found.
    pub fn done(self) -> Result<(), ArgsError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ArgsError(self.0))
        }
    }
}

/// `namespaces: {include, exclude}`: at most one of them set (the policy checks it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Namespaces {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
}

impl Namespaces {
    /// Whether a pod of `namespace` is in scope (none set: every namespace).
    pub fn admits(this: &Option<Namespaces>, namespace: &str) -> bool {
        match this {
            None => true,
            Some(n) if !n.include.is_empty() => n.include.iter().any(|i| i == namespace),
            Some(n) => !n.exclude.iter().any(|e| e == namespace),
        }
    }
}

/// A `metav1.LabelSelector` as written in a policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Selector {
    pub match_labels: BTreeMap<String, String>,
    pub match_expressions: Vec<Expression>,
}

/// One `matchExpressions` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Expression {
    pub key: String,
    pub operator: String,
    pub values: Vec<String>,
}

impl Selector {
    /// The model's selector; an unknown operator is refused, naming it.
    pub fn to_selector(&self) -> Result<LabelSelector, String> {
        let requirements = self
            .match_expressions
            .iter()
            .map(|e| {
                let op = match e.operator.as_str() {
                    "In" => SelectorOp::In,
                    "NotIn" => SelectorOp::NotIn,
                    "Exists" => SelectorOp::Exists,
                    "DoesNotExist" => SelectorOp::DoesNotExist,
                    other => return Err(format!("unknown operator {other:?}")),
                };
                Ok(Requirement {
                    key: e.key.clone(),
                    op,
                    values: e.values.clone(),
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(LabelSelector {
            match_labels: self.match_labels.clone(),
            requirements,
        })
    }
}

/// `thresholds` / `targetThresholds`: resource name (`cpu`, `memory`, `pods`, extended) → percent.
pub type Thresholds = BTreeMap<String, f64>;

/// The evictor's `priorityThreshold`: a value, or a PriorityClass's name (not both).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PriorityThreshold {
    pub value: Option<i32>,
    pub name: String,
}
