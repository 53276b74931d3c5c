//! The error of the clouds, services and commands: the core's refusals ([`DomainError`]) plus what the
//! world does (clouds unreachable or refusing, the Kubernetes API, I/O). Every variant names the offending
//! field, object or call; `grpc::status` maps it to a gRPC code in one place.

use thiserror::Error;

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The core's refusals (bad requests, sizes outside bounds, configuration that does not parse).
pub use ferroscale_core::Error as DomainError;

/// Everything that can go wrong in ferroscale's clouds, services and commands.
#[derive(Debug, Error)]
pub enum Error {
    /// What the core refuses: an unknown group, a size outside bounds, bad configuration.
    #[error(transparent)]
    Domain(#[from] DomainError),

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

    /// A request field with a value that can never be valid ([`DomainError::InvalidArgument`]).
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        DomainError::invalid(field, reason).into()
    }

    /// A configuration file or flag that is wrong ([`DomainError::Config`]): exit code 2.
    pub fn config(message: impl Into<String>) -> Self {
        DomainError::Config(message.into()).into()
    }

    /// Whether this is bad configuration (the command exits with code 2).
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            Error::Domain(DomainError::Config(_) | DomainError::InvalidArgument { .. })
        )
    }
}
