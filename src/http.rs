//! The operations listener (`--http-listen`): `/metrics` (OpenMetrics text), `/healthz` (the process
//! answers) and `/readyz` (the cloud's state is loaded; 503 with the reason otherwise); `ferroscale run`
//! adds `/health-check`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use crate::cloud::Cloud;
use crate::metrics::Metrics;

#[derive(Clone)]
struct Ops {
    cloud: Arc<dyn Cloud>,
    metrics: Arc<Metrics>,
}

/// The router of the operations listener.
pub fn router(cloud: Arc<dyn Cloud>, metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/metrics", get(metrics_text))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .with_state(Ops { cloud, metrics })
}

/// The router of `ferroscale run`: the same endpoints plus upstream's `/health-check`.
pub fn run_router(
    cloud: Arc<dyn Cloud>,
    metrics: Arc<Metrics>,
    health: Arc<crate::run::Health>,
) -> Router {
    router(cloud, metrics).route(
        "/health-check",
        get(move || {
            let health = health.clone();
            async move {
                match health.check(crate::run::unix_now()) {
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
    let code = if r.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, format!("{}\n", r.detail))
}
