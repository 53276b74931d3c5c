//! Why a policy file is refused, naming the field: below the strategies, whose own decoding of
//! their arguments refuses with it too.

use thiserror::Error;

/// Why a policy file is refused: the message names the field (and its profile).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PolicyError {
    /// Not YAML (nor JSON).
    #[error("policy: not YAML or JSON: {0}")]
    Syntax(String),
    /// Over its size or depth limit ([`crate::bounds::POLICY`]), refused before it is parsed.
    #[error("{0}")]
    Bounds(#[from] crate::bounds::Exceeded),
    /// A field's value is refused.
    #[error("policy: {}{field}: {why}", profile.as_ref().map(|p| format!("profile {p:?}: ")).unwrap_or_default())]
    Field {
        profile: Option<String>,
        /// The field's path, `profiles[0].pluginConfig[1].args.thresholds.cpu`.
        field: String,
        why: String,
    },
}

impl PolicyError {
    pub(crate) fn field(path: impl Into<String>, why: impl Into<String>) -> Self {
        PolicyError::Field {
            profile: None,
            field: path.into(),
            why: why.into(),
        }
    }

    /// The refused field's path, if one is.
    pub fn path(&self) -> Option<&str> {
        match self {
            PolicyError::Field { field, .. } => Some(field),
            PolicyError::Syntax(_) | PolicyError::Bounds(_) => None,
        }
    }

    /// Why it is refused, without the field.
    pub fn why(&self) -> String {
        match self {
            PolicyError::Field { why, .. } | PolicyError::Syntax(why) => why.clone(),
            PolicyError::Bounds(e) => e.to_string(),
        }
    }

    pub(super) fn in_profile(self, name: &str) -> Self {
        match self {
            PolicyError::Field {
                profile: None,
                field,
                why,
            } => PolicyError::Field {
                profile: Some(name.to_string()),
                field,
                why,
            },
            other => other,
        }
    }
}
