//! The operations listener (`--http-listen`): `/metrics` (OpenMetrics text), `/healthz` (the process
//! answers) and `/readyz` (the cloud's state is loaded; 503 with the reason otherwise); `ferroscale run`
//! adds `/health-check`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

use crate::cloud::Cloud;
use crate::metrics::Metrics;

/// A client must send its request headers within this time (a slow-loris connection is closed).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Most connections served at once; further ones wait in the kernel's backlog.
pub const MAX_CONNECTIONS: usize = 256;

/// Serves `router` on `listener` over HTTP/1.1 until `shutdown` resolves, then lets the open
/// connections finish their request. Connections are capped at [`MAX_CONNECTIONS`] and must send their
/// headers within [`HEADER_READ_TIMEOUT`], so a client holding sockets open cannot exhaust the listener
/// that probes and Prometheus depend on.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let permits = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "HTTP accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let service = TowerToHyperService::new(router.clone());
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stop.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
            drop(permit);
        });
    }
    let _ = stop_tx.send(true);
    // Wait until every connection has finished (each holds a permit).
    let _ = permits
        .acquire_many(MAX_CONNECTIONS as u32)
        .await
        .expect("the semaphore is never closed");
    Ok(())
}

#[derive(Clone)]
struct Ops {
    cloud: Arc<dyn Cloud>,
    metrics: Arc<Metrics>,
    /// Another part `/readyz` answers for (`run`'s interruption queue).
    also_ready: Option<HealthCheck>,
}

/// The router of the operations listener.
pub fn router(cloud: Arc<dyn Cloud>, metrics: Arc<Metrics>) -> Router {
    ops_router(cloud, metrics, None)
}

fn ops_router(
    cloud: Arc<dyn Cloud>,
    metrics: Arc<Metrics>,
    also_ready: Option<HealthCheck>,
) -> Router {
    Router::new()
        .route("/metrics", get(metrics_text))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .with_state(Ops {
            cloud,
            metrics,
            also_ready,
        })
}

/// What `/health-check` answers: Ok, or why the process is unhealthy (`ferroscale run` decides).
pub type HealthCheck = Arc<dyn Fn() -> std::result::Result<(), String> + Send + Sync>;

/// The router of `ferroscale run`: the same endpoints plus upstream's `/health-check`; `/readyz` also
/// answers for `also_ready` when given.
pub fn run_router(
    cloud: Arc<dyn Cloud>,
    metrics: Arc<Metrics>,
    health: HealthCheck,
    also_ready: Option<HealthCheck>,
) -> Router {
    ops_router(cloud, metrics, also_ready).route(
        "/health-check",
        get(move || {
            let health = health.clone();
            async move {
                match health() {
                    Ok(()) => (StatusCode::OK, "OK\n".to_string()),
                    Err(why) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{why}\n")),
                }
            }
        }),
    )
}

async fn metrics_text(State(ops): State<Ops>) -> impl IntoResponse {
    if let Some(age) = ops.cloud.state_age() {
        ops.metrics.set_state_age(age);
    }
    if let Some(age) = ops.cloud.price_age() {
        ops.metrics.set_price_age(age);
    }
    ops.metrics.set_groups(&ops.cloud.snapshot());
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        ops.metrics.encode(),
    )
}

async fn ready(State(ops): State<Ops>) -> impl IntoResponse {
    let r = ops.cloud.readiness();
    let also = ops.also_ready.as_ref().map_or(Ok(()), |check| check());
    match (r.ready, also) {
        (true, Ok(())) => (StatusCode::OK, format!("{}\n", r.detail)),
        (true, Err(why)) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")),
        (false, _) => (StatusCode::SERVICE_UNAVAILABLE, format!("{}\n", r.detail)),
    }
}

/// The router of `ferroscale deschedule`, which has no cloud: `/metrics` and `/healthz`.
pub fn metrics_router(metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(move || {
                let metrics = metrics.clone();
                async move {
                    (
                        [(
                            header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        metrics.encode(),
                    )
                }
            }),
        )
        .route("/healthz", get(|| async { "ok\n" }))
}
