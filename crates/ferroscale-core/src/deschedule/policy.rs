//! A `DeschedulerPolicy` file (`descheduler/v1alpha2`, and `v1alpha1` converted as the descheduler
//! does) read into profiles of configured strategies.

use serde::Deserialize;
use thiserror::Error;

use super::args::PluginArgs;
use super::evictor::EvictorArgs;

/// A policy: its profiles and the limits over all of them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Policy {
    pub profiles: Vec<Profile>,
    /// `nodeSelector`: only nodes it matches are descheduled (a label selector string).
    pub node_selector: Option<String>,
    pub max_per_node: Option<u32>,
    pub max_per_namespace: Option<u32>,
    pub max_total: Option<u32>,
}

/// One profile: its evictor and its strategies, `deschedule` ones then `balance` ones, each in the
/// order the policy enables them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Profile {
    pub name: String,
    pub evictor: EvictorArgs,
    pub strategies: Vec<PluginArgs>,
}

/// Why a policy file is refused: the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PolicyError {
    #[error("policy: {0}")]
    Invalid(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head {
    api_version: Option<String>,
    kind: Option<String>,
}

impl Policy {
    /// Reads a policy file's YAML (or JSON).
    pub fn parse(text: &str) -> Result<Policy, PolicyError> {
        let head: Head =
            serde_norway::from_str(text).map_err(|e| PolicyError::Invalid(e.to_string()))?;
        if head.kind.as_deref() != Some("DeschedulerPolicy") {
            return Err(PolicyError::Invalid(format!(
                "kind: want DeschedulerPolicy, got {:?}",
                head.kind
            )));
        }
        Err(PolicyError::Invalid(format!(
            "apiVersion: {:?} not read yet",
            head.api_version
        )))
    }
}
