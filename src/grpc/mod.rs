//! Thin tonic services: they translate protobuf to the model (`convert`), call the cloud, and map errors
//! to gRPC codes in one place (`status`). Every call is timed and counted the same way (`instrument`).

pub mod budget;
pub mod convert;
pub mod expander;
pub mod options;
pub mod provider;
pub mod status;

use std::future::Future;
use std::time::Instant;

use tonic::{Response, Status};

use crate::error::Result;
use crate::metrics::Metrics;

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

/// Runs a cloud write as a task of its own: when CA's deadline cancels the RPC, the write still
/// completes and publishes what AWS accepted, instead of stopping between two AWS calls unrecorded.
pub async fn detached<T: Send + 'static>(
    write: impl Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    tokio::spawn(write)
        .await
        .map_err(|e| crate::error::Error::task("the write task", e))?
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
