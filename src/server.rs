//! `ferroscale serve`: the CloudProvider gRPC listener, the optional expander listener and the operations
//! HTTP listener, sharing one cloud and one shutdown signal.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Server, ServerTlsConfig};

use crate::cloud::Cloud;
use crate::error::{Error, Result};
use crate::grpc::expander::{ExpanderService, ExpanderSettings};
use crate::grpc::provider::CloudProviderService;
use crate::metrics::Metrics;

/// How long in-flight requests may finish after the shutdown signal when none is configured: CA's
/// default per-call deadline, after which its request has failed anyway.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The bound sockets of `serve`.
pub struct Listeners {
    /// The CloudProvider service.
    pub grpc: TcpListener,
    /// `/metrics`, `/healthz`, `/readyz`.
    pub http: TcpListener,
    /// The expander service and its strategies, when `--expander-listen` is set.
    pub expander: Option<(TcpListener, Arc<ExpanderSettings>)>,
    /// TLS of the CloudProvider listener (mutual when it names a client CA); None: plaintext.
    pub grpc_tls: Option<ServerTlsConfig>,
    /// TLS of the expander listener; None: plaintext (CA's expander client cannot use that).
    pub expander_tls: Option<ServerTlsConfig>,
}

/// A tonic server builder with TLS when configured.
fn builder(tls: Option<ServerTlsConfig>, listener: &str) -> Result<Server> {
    match tls {
        Some(tls) => Server::builder()
            .tls_config(tls)
            .map_err(|e| Error::Config(format!("TLS of the {listener} listener: {e}"))),
        None => Ok(Server::builder()),
    }
}

/// Serves `cloud` on already-bound listeners until `shutdown` resolves, then drains the servers for at
/// most `grace` (clients such as CA keep their connection open forever, so draining alone never ends).
pub async fn serve(
    cloud: Arc<dyn Cloud>,
    metrics: Arc<Metrics>,
    listeners: Listeners,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> Result<()> {
    let Listeners {
        grpc,
        http,
        expander,
        grpc_tls,
        expander_tls,
    } = listeners;
    if grpc_tls.is_none() {
        tracing::warn!("CloudProvider listener is plaintext: pass --tls-cert/--tls-key (and --tls-client-ca) for mutual TLS");
    }
    if expander.is_some() && expander_tls.is_none() {
        tracing::warn!("expander listener is plaintext: cluster-autoscaler's grpc expander client always uses TLS; pass --expander-tls-cert/--expander-tls-key");
    }
    let mut grpc_builder = builder(grpc_tls, "CloudProvider")?;
    let mut expander_builder = builder(expander_tls, "expander")?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });

    let provider = CloudProviderService::new(cloud.clone(), metrics.clone()).into_server();
    let grpc_addr = grpc.local_addr().ok();
    let http_addr = http.local_addr().ok();
    let grpc_server = grpc_builder
        .add_service(provider)
        .serve_with_incoming_shutdown(TcpIncoming::from(grpc).with_nodelay(Some(true)), stopped());
    let expander_addr = expander.as_ref().and_then(|(l, _)| l.local_addr().ok());
    let expander_server = async {
        match expander {
            Some((listener, settings)) => {
                let service =
                    ExpanderService::new(cloud.clone(), metrics.clone(), settings).into_server();
                expander_builder
                    .add_service(service)
                    .serve_with_incoming_shutdown(
                        TcpIncoming::from(listener).with_nodelay(Some(true)),
                        stopped(),
                    )
                    .await
            }
            None => Ok(()),
        }
    };
    let http_server = axum::serve(http, crate::http::router(cloud.clone(), metrics.clone()))
        .with_graceful_shutdown(stopped());
    tracing::info!(grpc = ?grpc_addr, expander = ?expander_addr, http = ?http_addr, cloud = cloud.name(), "serving");
    let both = async {
        let (g, e, h) = tokio::join!(grpc_server, expander_server, async { http_server.await });
        (g.and(e), h)
    };
    let deadline = async {
        stopped().await;
        tokio::time::sleep(grace).await;
    };
    let finished = tokio::select! {
        done = both => Some(done),
        () = deadline => None,
    };
    let Some((g, h)) = finished else {
        tracing::warn!(
            ?grace,
            "connections still open after the grace period; closing them"
        );
        cloud.cleanup().await?;
        return Ok(());
    };
    g.map_err(|e| Error::Unavailable(format!("gRPC server failed: {e}")))?;
    h.map_err(|source| Error::Io {
        context: "HTTP server failed".into(),
        source,
    })?;
    cloud.cleanup().await?;
    tracing::info!("stopped");
    Ok(())
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C).
pub async fn termination_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(
            tokio::signal::unix::SignalKind::terminate(),
        ) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM; only SIGINT stops the server");
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
    tracing::info!("termination signal received, shutting down");
}
