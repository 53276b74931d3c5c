//! The strategies by their plugin names, the argument types several strategies and the evictor share
//! (`namespaces`, `labelSelector`, thresholds, `priorityThreshold`), and why arguments are refused
//! ([`ArgsError`], naming each field). Below the strategies: each one's own arguments, and
//! [`PluginArgs`](super::strategies::PluginArgs) over them all, are in `strategies`.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::model::workload::{LabelSelector, Requirement, SelectorOp};

/// The strategies by name: each variant is the descheduler's plugin name (everything else about a
/// strategy is its `strategies::Plugin` impl).
macro_rules! strategies {
    ($($s:ident,)*) => {
        /// A descheduling strategy, by the descheduler's plugin name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum Strategy {
            $($s,)*
        }

        impl Strategy {
            /// Every strategy, in the descheduler's order.
            pub const ALL: &'static [Strategy] = &[$(Strategy::$s,)*];

            /// The plugin name, as policies and the descheduler's metrics write it.
            pub fn name(self) -> &'static str {
                match self {
                    $(Strategy::$s => stringify!($s),)*
                }
            }
        }
    };
}

strategies! {
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
    /// The strategy of a plugin name, if it is one.
    pub fn parse(name: &str) -> Option<Strategy> {
        Strategy::ALL.iter().copied().find(|s| s.name() == name)
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
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
