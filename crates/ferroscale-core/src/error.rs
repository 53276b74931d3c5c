//! The core's refusals: what a caller asked for that the model does not allow (a size outside a group's
//! bounds, a node of another group, an unknown group) and configuration that does not parse. Each names
//! the offending field or object. The binary wraps them in its own error, next to cloud and API failures.

use thiserror::Error;

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the core can refuse (`Clone`: an error repeated later keeps its kind).
#[derive(Debug, Clone, Error)]
pub enum Error {
    /// A request named a node group that does not exist.
    #[error("node group {0:?} not found")]
    GroupNotFound(String),

    /// A request field has a value that can never be valid.
    #[error("invalid {field}: {reason}")]
    InvalidArgument { field: String, reason: String },

    /// IncreaseSize would take the group above its max size (upstream's wording, which CA logs).
    #[error("size increase too large - desired:{desired} max:{max}")]
    IncreaseTooLarge { desired: i64, max: i32 },

    /// DeleteNodes would take the group below its min size.
    #[error("min size reached, nodes will not be deleted: node group {group:?} has target size {target}, deleting {count} would go below min size {min}")]
    BelowMinSize {
        group: String,
        target: i32,
        count: usize,
        min: i32,
    },

    /// DeleteNodes named a node that is not an instance of the group.
    #[error("node {node:?} does not belong to node group {group:?}")]
    NodeNotInGroup { node: String, group: String },

    /// DecreaseTargetSize would have to remove instances that already exist.
    #[error("attempt to delete existing nodes: node group {group:?} targetSize:{target} delta:{delta} existingNodes:{existing}")]
    WouldDeleteExisting {
        group: String,
        target: i32,
        delta: i32,
        existing: usize,
    },

    /// The group has no setting of this kind; the client should keep its own defaults.
    #[error("node group {group:?} has no {what}")]
    NotConfigured { group: String, what: &'static str },

    /// No price is known for what was asked.
    #[error("no price known for {0}")]
    NoPrice(String),

    /// A configuration file or flag is wrong; the message names the file and field.
    #[error("{0}")]
    Config(String),
}

impl Error {
    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            field: field.into(),
            reason: reason.into(),
        }
    }
}
