//! The one error type of the library. Every variant says what a caller did wrong or what failed, naming the
//! offending field or object; `grpc::status` maps it to a gRPC code in one place.

use thiserror::Error;

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in ferroscale's core, clouds and services.
#[derive(Debug, Error)]
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

    /// The cloud's API cannot be reached or failed; reads may still serve the last good state.
    #[error("cloud unavailable: {0}")]
    Unavailable(String),

    /// The cloud refused a call for lack of permission (AWS `AccessDenied`, `UnauthorizedOperation`):
    /// the operator must grant `action`; retrying does not help.
    #[error("{action}: permission denied ({code}): {message}")]
    PermissionDenied {
        action: String,
        code: String,
        message: String,
    },

    /// The cloud refused a change in its current state (AWS `ValidationError`: a size outside the
    /// group's bounds, an instance no longer in the group).
    #[error("{action}: refused ({code}): {message}")]
    CloudRefused {
        action: String,
        code: String,
        message: String,
    },

    /// DeleteNodes terminated some instances before one failed: what happened to each, so the caller
    /// knows exactly what is gone (a retry of the same call skips what is already terminating).
    #[error("node group {group:?}: deleted {deleted:?}; failed {failed:?}: {cause}; not attempted {not_attempted:?}")]
    PartiallyDeleted {
        group: String,
        deleted: Vec<String>,
        failed: String,
        #[source]
        cause: Box<Error>,
        not_attempted: Vec<String>,
    },

    /// A configuration file or flag is wrong; the message names the file and field.
    #[error("{0}")]
    Config(String),

    /// A Kubernetes API call failed (`ferroscale run`); the context names the call and object.
    #[error("{context}: {source}")]
    Kubernetes {
        context: String,
        #[source]
        source: kube::Error,
    },

    /// An I/O failure outside of request handling (binding a port, reading a file).
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// Wraps a Kubernetes API error with what was being done.
    pub fn kube(context: impl Into<String>, source: kube::Error) -> Self {
        Error::Kubernetes {
            context: context.into(),
            source,
        }
    }

    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            field: field.into(),
            reason: reason.into(),
        }
    }
}
