//! The error of the clouds, services and commands: the core's refusals ([`DomainError`]) plus what the
//! world does (clouds unreachable or refusing, the Kubernetes API, I/O). Every variant names the offending
//! field, object or call; `grpc::status` maps it to a gRPC code in one place.

use std::sync::Arc;

use thiserror::Error;

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The core's refusals (bad requests, sizes outside bounds, configuration that does not parse).
pub use ferroscale_core::Error as DomainError;

/// Everything that can go wrong in ferroscale's clouds, services and commands. Each kind of failure
/// is its own variant so callers and the gRPC mapping match on the kind, never on the text; it is
/// `Clone` (sources behind `Arc`) so an error repeated later (a cached refresh failure, one failed read
/// shared by several groups) keeps its kind instead of being re-wrapped through its message.
#[derive(Debug, Clone, Error)]
pub enum Error {
    /// What the core refuses: an unknown group, a size outside bounds, bad configuration.
    #[error(transparent)]
    Domain(#[from] DomainError),

    /// The cloud's API cannot be reached or failed (throttling, 5xx, timeouts, no connection, an answer
    /// that cannot be read): a retry may cure it; reads may still serve the last good state. Only for
    /// the cloud's API: other failures have their own variants.
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

    /// The cloud answered, but what it says about a group is not enough to serve it (no known
    /// instance type, a template that cannot be built): the group keeps its last good data or is left
    /// out until a later refresh reads it whole.
    #[error("node group {group:?}: {reason}")]
    GroupData { group: String, reason: String },

    /// AWS's price list could not be read (a PriceList item that is not the documented JSON, a filter
    /// the SDK refuses): the prices at hand stay in use.
    #[error("pricing: {reason}")]
    Pricing { reason: String },

    /// A write on the cloud was not started because its caller had lost the right to it (`why`): its
    /// deadline passed, it cancelled, or this replica stopped leading. Calls already sent completed and
    /// were recorded; `done` names what this call changed before (provider ids), `not_done` what it left.
    #[error(
        "node group {group:?}: {action} not started: {why}; done {done:?}, not done {not_done:?}"
    )]
    NotStarted {
        group: String,
        action: String,
        why: Revoked,
        done: Vec<String>,
        not_done: Vec<String>,
    },

    /// This replica does not lead any more (another replica holds the Lease, or renewals failed past
    /// the renew deadline): nothing more is changed, and `run` exits to restart as a follower.
    #[error("leadership lost: {reason}")]
    LeadershipLost { reason: String },

    /// A Kubernetes object kept changing under a read-modify-write: every attempt got HTTP 409.
    #[error("{context}: the object kept changing ({attempts} conflicts)")]
    Conflict { context: String, attempts: usize },

    /// Pods were bound to a node after it was chosen for removal (before its taint took): deleting it
    /// would kill them without eviction, so it is kept.
    #[error("pods {pods:?} were scheduled onto node {node} after it was chosen; not deleting it")]
    PodsLanded { node: String, pods: Vec<String> },

    /// A faster removal of the node (an interruption notice) took over from this one before it deleted.
    #[error("removal of node {0} superseded by a faster one")]
    Superseded(String),

    /// A pod could not be evicted in `--max-pod-eviction-time` (a disruption budget forbids it, the API
    /// kept failing), or outlived its eviction.
    #[error("evicting pod {pod}: {reason}")]
    Eviction { pod: String, reason: String },

    /// A request would take the listener's requests in flight past their byte budget (memory bounded
    /// before decoding): refused at once, to be tried again when the others are answered.
    #[error("{what}: {bytes} bytes would take the requests in flight past their budget of {budget} bytes; try again")]
    Overloaded {
        what: String,
        bytes: usize,
        budget: usize,
    },

    /// The Kubernetes API did not answer `call` in the time allowed.
    #[error("the Kubernetes API did not answer {call} in time")]
    KubernetesTimeout { call: String },

    /// A task of our own panicked, was cancelled or stopped (a write, a drain, a watch): a bug or a
    /// shutdown, not something the cloud or the cluster did.
    #[error("{task} failed: {reason}")]
    Task { task: String, reason: String },

    /// A Kubernetes API call failed (`ferroscale run`); the context names the call and object.
    #[error("{context}: {source}")]
    Kubernetes {
        context: String,
        #[source]
        source: Arc<kube::Error>,
    },

    /// An I/O failure outside of request handling (binding a port, reading a file).
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: Arc<std::io::Error>,
    },
}

/// Why a caller may no longer start a write on the cloud (the write guard of `guard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum Revoked {
    /// The caller's deadline (gRPC `grpc-timeout`) passed, or too little of it was left to answer.
    #[error("the caller's deadline passed")]
    Deadline,
    /// The caller went away (the RPC was cancelled or timed out).
    #[error("the caller cancelled the call")]
    Cancelled,
    /// This replica's term as leader ended.
    #[error("this replica does not lead any more")]
    Leadership,
}

impl Error {
    /// Wraps a Kubernetes API error with what was being done.
    pub fn kube(context: impl Into<String>, source: kube::Error) -> Self {
        Error::Kubernetes {
            context: context.into(),
            source: Arc::new(source),
        }
    }

    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source: Arc::new(source),
        }
    }

    /// A task of our own that did not finish (a [`tokio::task::JoinError`], a closed channel):
    /// [`Error::Task`] naming it.
    pub fn task(task: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        Error::Task {
            task: task.into(),
            reason: reason.to_string(),
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
