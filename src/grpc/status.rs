//! The one mapping from the library's errors to gRPC status codes.

use tonic::{Code, Status};

use crate::error::{DomainError, Error};

/// The gRPC code cluster-autoscaler should see for an error.
pub fn code(err: &Error) -> Code {
    match err {
        Error::Domain(e) => domain_code(e),
        Error::CloudRefused { .. } => Code::FailedPrecondition,
        Error::PermissionDenied { .. } => Code::PermissionDenied,
        // What failed decides: a throttled termination is worth retrying, a forbidden one is not.
        Error::PartiallyDeleted { cause, .. } => code(cause),
        Error::Unavailable(_) | Error::Kubernetes { .. } => Code::Unavailable,
        Error::Io { .. } => Code::Internal,
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
