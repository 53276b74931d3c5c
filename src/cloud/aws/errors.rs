//! What an AWS error means for ferroscale's callers: the SDK's error turned into the library's [`Error`]
//! by its AWS error code, so CA sees PERMISSION_DENIED for a missing IAM permission (no retry helps),
//! FAILED_PRECONDITION for a change AWS refused in the group's current state, and UNAVAILABLE for what
//! a retry may cure (throttling, 5xx, timeouts, no connection).

use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::display::DisplayErrorContext;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;

use crate::error::Error;

/// AWS error codes of a missing permission or credential.
const DENIED: [&str; 9] = [
    "AccessDenied",
    "AccessDeniedException",
    "UnauthorizedOperation",
    "UnauthorizedAccess",
    "AuthFailure",
    "InvalidClientTokenId",
    "UnrecognizedClientException",
    "ExpiredToken",
    "ExpiredTokenException",
];

/// AWS error codes of a request refused as invalid in the resource's current state.
const REFUSED: [&str; 6] = [
    "ValidationError",
    "ValidationException",
    "InvalidParameterValue",
    "InvalidParameterCombination",
    "InvalidInstanceID.NotFound",
    "InvalidLaunchTemplateId.NotFound",
];

/// The metric status of a failed call (its AWS error code, else `timeout` or `error`) and its error.
pub fn classify<E, R>(action: &'static str, err: &SdkError<E, R>) -> (String, Error)
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    let code = err.as_service_error().and_then(|e| e.code());
    let message = err
        .as_service_error()
        .and_then(|e| e.message())
        .map(str::to_string)
        .unwrap_or_else(|| DisplayErrorContext(err).to_string());
    let status = match (code, err) {
        (Some(c), _) => c.to_string(),
        (None, SdkError::TimeoutError(_)) => "timeout".into(),
        (None, _) => "error".into(),
    };
    let error = match code {
        Some(c) if DENIED.contains(&c) => Error::PermissionDenied {
            action: action.into(),
            code: c.into(),
            message,
        },
        Some(c) if REFUSED.contains(&c) => Error::CloudRefused {
            action: action.into(),
            code: c.into(),
            message,
        },
        Some(c) => Error::Unavailable(format!("{action}: {c}: {message}")),
        None => Error::Unavailable(format!("{action}: {}", DisplayErrorContext(err))),
    };
    (status, error)
}
