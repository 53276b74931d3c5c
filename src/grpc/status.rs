//! The one mapping from the library's errors to gRPC status codes.

use tonic::{Code, Status};

use crate::error::{DomainError, Error, Revoked};

/// The gRPC code cluster-autoscaler should see for an error.
pub fn code(err: &Error) -> Code {
    match err {
        Error::Domain(e) => domain_code(e),
        Error::CloudRefused { .. } => Code::FailedPrecondition,
        Error::PermissionDenied { .. } => Code::PermissionDenied,
        // What failed decides: a throttled termination is worth retrying, a forbidden one is not.
        Error::PartiallyDeleted { cause, .. } => code(cause),
        // The caller's right ended before the write started: said as gRPC says each ending.
        Error::NotStarted { why, .. } => match why {
            Revoked::Deadline => Code::DeadlineExceeded,
            Revoked::Cancelled => Code::Cancelled,
            Revoked::Leadership => Code::Aborted,
        },
        // Worth retrying: the cloud or the cluster may answer, a group's data may be whole, next time.
        Error::Unavailable(_)
        | Error::GroupData { .. }
        | Error::Kubernetes { .. }
        | Error::KubernetesTimeout { .. } => Code::Unavailable,
        // The world changed under the call (a fence, a 409, a pod that landed): decide again.
        Error::LeadershipLost { .. }
        | Error::Conflict { .. }
        | Error::PodsLanded { .. }
        | Error::Superseded(_) => Code::Aborted,
        Error::Eviction { .. } => Code::FailedPrecondition,
        // Busy: the caller may retry once requests in flight are answered.
        Error::Overloaded { .. } => Code::ResourceExhausted,
        Error::Pricing { .. } | Error::Task { .. } | Error::Io { .. } => Code::Internal,
    }
}

fn domain_code(err: &DomainError) -> Code {
    match err {
        DomainError::GroupNotFound(_) | DomainError::NoPrice(_) => Code::NotFound,
        DomainError::InvalidArgument { .. } | DomainError::NodeNotInGroup { .. } => {
            Code::InvalidArgument
        }
        DomainError::IncreaseTooLarge { .. }
        | DomainError::BelowMinSize { .. }
        | DomainError::WouldDeleteExisting { .. } => Code::FailedPrecondition,
        // UNIMPLEMENTED is how the protocol says "keep your defaults" for optional RPCs.
        DomainError::NotConfigured { .. } => Code::Unimplemented,
        DomainError::Config(_) => Code::Internal,
    }
}

/// Converts an error into the status sent on the wire, message included.
pub fn to_status(err: &Error) -> Status {
    Status::new(code(err), err.to_string())
}

/// Go's spelling of a gRPC code (`OK`, `InvalidArgument`, …), as metric labels use it.
pub fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "Canceled",
        Code::Unknown => "Unknown",
        Code::InvalidArgument => "InvalidArgument",
        Code::DeadlineExceeded => "DeadlineExceeded",
        Code::NotFound => "NotFound",
        Code::AlreadyExists => "AlreadyExists",
        Code::PermissionDenied => "PermissionDenied",
        Code::ResourceExhausted => "ResourceExhausted",
        Code::FailedPrecondition => "FailedPrecondition",
        Code::Aborted => "Aborted",
        Code::OutOfRange => "OutOfRange",
        Code::Unimplemented => "Unimplemented",
        Code::Internal => "Internal",
        Code::Unavailable => "Unavailable",
        Code::DataLoss => "DataLoss",
        Code::Unauthenticated => "Unauthenticated",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> String {
        text.to_string()
    }

    /// Every kind of error, with the code CA must see for it: what a retry may cure is UNAVAILABLE,
    /// what the operator must fix is PERMISSION_DENIED or FAILED_PRECONDITION, a change of the world
    /// under the call is ABORTED, a server busy with other requests RESOURCE_EXHAUSTED, our own failures
    /// are INTERNAL.
    #[test]
    fn each_kind_of_error_has_its_code() {
        let denied = Error::PermissionDenied {
            action: s("autoscaling/SetDesiredCapacity"),
            code: s("AccessDenied"),
            message: s("no"),
        };
        let cases = [
            (
                Error::from(DomainError::GroupNotFound(s("g"))),
                Code::NotFound,
            ),
            (
                Error::invalid("delta", "must be positive"),
                Code::InvalidArgument,
            ),
            (Error::config("bad"), Code::Internal),
            (
                Error::Unavailable(s("autoscaling/X: Throttling")),
                Code::Unavailable,
            ),
            (denied.clone(), Code::PermissionDenied),
            (
                Error::CloudRefused {
                    action: s("autoscaling/SetDesiredCapacity"),
                    code: s("ValidationError"),
                    message: s("no"),
                },
                Code::FailedPrecondition,
            ),
            (
                Error::PartiallyDeleted {
                    group: s("g"),
                    deleted: vec![s("a")],
                    failed: s("b"),
                    cause: Box::new(denied),
                    not_attempted: vec![],
                },
                Code::PermissionDenied,
            ),
            (
                Error::PartiallyDeleted {
                    group: s("g"),
                    deleted: vec![s("a")],
                    failed: s("b"),
                    cause: Box::new(Error::Unavailable(s("Throttling"))),
                    not_attempted: vec![],
                },
                Code::Unavailable,
            ),
            (
                Error::NotStarted {
                    group: s("g"),
                    action: s("TerminateInstanceInAutoScalingGroup"),
                    why: Revoked::Deadline,
                    done: vec![s("a")],
                    not_done: vec![s("b")],
                },
                Code::DeadlineExceeded,
            ),
            (
                Error::NotStarted {
                    group: s("g"),
                    action: s("SetDesiredCapacity"),
                    why: Revoked::Cancelled,
                    done: vec![],
                    not_done: vec![],
                },
                Code::Cancelled,
            ),
            (
                Error::NotStarted {
                    group: s("g"),
                    action: s("SetDesiredCapacity"),
                    why: Revoked::Leadership,
                    done: vec![],
                    not_done: vec![],
                },
                Code::Aborted,
            ),
            (
                Error::GroupData {
                    group: s("g"),
                    reason: s("no known instance type"),
                },
                Code::Unavailable,
            ),
            (
                Error::Pricing {
                    reason: s("bad item"),
                },
                Code::Internal,
            ),
            (
                Error::LeadershipLost {
                    reason: s("another replica holds Lease kube-system/ca"),
                },
                Code::Aborted,
            ),
            (
                Error::Conflict {
                    context: s("patching node n"),
                    attempts: 5,
                },
                Code::Aborted,
            ),
            (
                Error::PodsLanded {
                    node: s("n"),
                    pods: vec![s("default/web")],
                },
                Code::Aborted,
            ),
            (
                Error::Eviction {
                    pod: s("default/web"),
                    reason: s("a disruption budget forbids it"),
                },
                Code::FailedPrecondition,
            ),
            (
                Error::Overloaded {
                    what: s("BestOptions"),
                    bytes: 100 << 20,
                    budget: 128 << 20,
                },
                Code::ResourceExhausted,
            ),
            (
                Error::KubernetesTimeout {
                    call: s("the first list of Nodes"),
                },
                Code::Unavailable,
            ),
            (Error::task("the write task", "panicked"), Code::Internal),
            (
                Error::kube(
                    "listing nodes",
                    kube::Error::LinesCodecMaxLineLengthExceeded,
                ),
                Code::Unavailable,
            ),
            (
                Error::io("binding --address", std::io::Error::other("in use")),
                Code::Internal,
            ),
        ];
        for (err, wanted) in cases {
            assert_eq!(code(&err), wanted, "{err:?}");
            assert_eq!(to_status(&err).message(), err.to_string());
        }
    }
}
