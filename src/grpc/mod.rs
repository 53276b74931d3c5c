//! Thin tonic services: they translate protobuf to the model (`convert`), call the cloud, and map errors
//! to gRPC codes in one place (`status`). Every call is timed and counted the same way (`instrument`).

pub mod budget;
pub mod convert;
pub mod expander;
pub mod options;
pub mod provider;
pub mod status;

use std::future::Future;
use std::time::{Duration, Instant};

use tonic::metadata::MetadataMap;
use tonic::{Response, Status};

use crate::error::Result;
use crate::guard::{Caller, WriteGuard};
use crate::metrics::Metrics;

/// Longest time one RPC may take: tonic answers CANCELLED after it (CA's own deadline is shorter).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The end of a caller's time kept for the answer to reach it: no write starts in it, so a caller
/// whose write waited too long hears which ids were and were not acted on instead of a bare timeout.
pub const ANSWER_TIME: Duration = Duration::from_millis(250);

/// Largest CloudProvider request accepted (a DeleteNodes of many nodes is the biggest CA sends).
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// Largest BestOptions request accepted: CA sends every option's pods (200 options × 500 pods is about
/// 30 MB) and its expander client allows 128 MiB answers, so the expander accepts as much.
pub const MAX_EXPANDER_MESSAGE_BYTES: usize = 128 << 20;

/// Most BestOptions request bytes in flight at once, reserved before decoding ([`budget`]): one request
/// of the largest size, or several of a large scale-up's ~30 MB (CA sends one at a time). Decoded and
/// buffered, that stays within a few hundred MiB; more is refused RESOURCE_EXHAUSTED at once.
pub const MAX_EXPANDER_INFLIGHT_BYTES: usize = MAX_EXPANDER_MESSAGE_BYTES;

/// Longest node group id, node name or provider id accepted: real ones are under 300 bytes, and a bound
/// keeps a caller from making the server hold (or log) megabytes per request.
pub const MAX_ID_BYTES: usize = 1024;

/// Refuses an id over [`MAX_ID_BYTES`] with INVALID_ARGUMENT naming the field.
pub fn bounded(field: &str, value: &str) -> Result<()> {
    if value.len() > MAX_ID_BYTES {
        return Err(crate::error::Error::invalid(
            field,
            format!("{} bytes, more than {MAX_ID_BYTES}", value.len()),
        ));
    }
    Ok(())
}

/// The write guard of an RPC that arrived now with these headers: writes start only before its
/// deadline (`grpc-timeout`, capped at [`REQUEST_TIMEOUT`]) less [`ANSWER_TIME`], and while the returned
/// [`Caller`] is held by the handler (tonic drops it when the call is cancelled or times out).
pub fn write_guard(metadata: &MetadataMap) -> (WriteGuard, Caller) {
    let timeout = metadata
        .get("grpc-timeout")
        .and_then(|v| v.to_str().ok())
        .and_then(grpc_timeout)
        .map_or(REQUEST_TIMEOUT, |t| t.min(REQUEST_TIMEOUT));
    let deadline = Instant::now() + timeout.saturating_sub(ANSWER_TIME);
    WriteGuard::for_caller(Some(deadline))
}

/// A `grpc-timeout` header: at most 8 digits and a unit (H, M, S, m, u, n), as the gRPC spec says.
fn grpc_timeout(value: &str) -> Option<Duration> {
    if !value.is_ascii() {
        return None;
    }
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// Runs a cloud write as a task of its own: when CA's deadline cancels the RPC, a call already sent
/// still completes and publishes what AWS accepted, instead of stopping between two AWS calls
/// unrecorded; `caller` is held while the RPC waits, and no further call starts once it is dropped.
/// What the task did not do is logged with its ids, as the caller may no longer hear the answer.
pub async fn detached<T: Send + 'static>(
    caller: Caller,
    write: impl Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    let task = tokio::spawn(async move {
        let outcome = write.await;
        if let Err(e @ crate::error::Error::NotStarted { .. }) = &outcome {
            tracing::warn!(error = %e, "write not started: its caller's right to it ended");
        }
        outcome
    });
    let outcome = task
        .await
        .map_err(|e| crate::error::Error::task("the write task", e))?;
    drop(caller);
    outcome
}

/// Runs a handler, maps its error, logs failures and records the RPC's count and latency.
pub async fn instrument<T>(
    metrics: &Metrics,
    service: &'static str,
    method: &'static str,
    handler: impl Future<Output = Result<T>>,
) -> Result<Response<T>, Status> {
    let started = Instant::now();
    metrics.rpc_started(service, method);
    let outcome = handler.await.map(Response::new).map_err(|e| {
        let s = status::to_status(&e);
        if s.code() == tonic::Code::Unimplemented {
            tracing::debug!(method, error = %e, "answered UNIMPLEMENTED");
        } else {
            tracing::warn!(method, code = ?s.code(), error = %e, "request failed");
        }
        s
    });
    let code = outcome
        .as_ref()
        .map_or_else(|s| s.code(), |_| tonic::Code::Ok);
    metrics.rpc_handled(service, method, status::code_name(code), started.elapsed());
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_are_read_as_the_spec_writes_them() {
        assert_eq!(grpc_timeout("5S"), Some(Duration::from_secs(5)));
        assert_eq!(grpc_timeout("300m"), Some(Duration::from_millis(300)));
        assert_eq!(grpc_timeout("30000000u"), Some(Duration::from_secs(30)));
        assert_eq!(grpc_timeout("2H"), Some(Duration::from_secs(7200)));
        for bad in ["", "S", "5", "5x", "123456789S", "-5S", "5 S"] {
            assert_eq!(grpc_timeout(bad), None, "{bad:?}");
        }
    }
}
