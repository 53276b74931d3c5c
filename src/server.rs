//! `ferroscale serve`: the CloudProvider gRPC listener, the optional expander listener and the operations
//! HTTP listener, sharing one cloud and one shutdown signal.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tonic::transport::server::TcpIncoming;
use tonic::transport::Server;

use crate::cloud::Cloud;
use crate::error::{Error, Result};
use crate::grpc::budget::ByteBudget;
use crate::grpc::expander::{ExpanderService, ExpanderSettings};
use crate::grpc::provider::CloudProviderService;
use crate::metrics::Metrics;
use crate::proto::expander::expander_server::ExpanderServer;
use crate::tls::ReloadingTls;

/// How long in-flight requests may finish after the shutdown signal when none is configured: CA's
/// default per-call deadline, after which its request has failed anyway.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Most RPCs one gRPC listener handles at once, over all connections; more wait their turn.
pub const GRPC_CONCURRENCY_LIMIT: usize = 256;
/// Most concurrent HTTP/2 streams per connection.
pub const GRPC_MAX_CONCURRENT_STREAMS: u32 = 128;
/// HTTP/2 pings on idle connections, so dead peers (a CA pod gone without a FIN) are noticed...
pub const GRPC_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
/// ...and dropped when a ping is not answered in this time.
pub const GRPC_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);
/// Longest time one RPC may take (CA's own deadline is shorter; writes run on as tasks of their own).
pub const GRPC_REQUEST_TIMEOUT: Duration = crate::grpc::REQUEST_TIMEOUT;

/// A gRPC router with the listener's limits.
type LimitedRouter = tonic::transport::server::Router<
    tower::layer::util::Stack<
        tower::limit::GlobalConcurrencyLimitLayer,
        tower::layer::util::Identity,
    >,
>;

/// A tonic server with the limits every gRPC listener of `serve` has: a concurrency limit shared by all
/// connections, bounded streams per connection, keepalive and a per-request timeout.
fn limited() -> Server<
    tower::layer::util::Stack<
        tower::limit::GlobalConcurrencyLimitLayer,
        tower::layer::util::Identity,
    >,
> {
    Server::builder()
        .max_concurrent_streams(Some(GRPC_MAX_CONCURRENT_STREAMS))
        .http2_keepalive_interval(Some(GRPC_KEEPALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(GRPC_KEEPALIVE_TIMEOUT))
        .timeout(GRPC_REQUEST_TIMEOUT)
        .layer(tower::limit::GlobalConcurrencyLimitLayer::new(
            GRPC_CONCURRENCY_LIMIT,
        ))
}

/// The bound sockets of `serve`.
pub struct Listeners {
    /// The CloudProvider service.
    pub grpc: TcpListener,
    /// `/metrics`, `/healthz`, `/readyz`.
    pub http: TcpListener,
    /// The expander service and its strategies, when `--expander-listen` is set.
    pub expander: Option<(TcpListener, Arc<ExpanderSettings>)>,
    /// TLS of the CloudProvider listener (mutual when it names a client CA); None: plaintext.
    pub grpc_tls: Option<Arc<ReloadingTls>>,
    /// TLS of the expander listener; None: plaintext (CA's expander client cannot use that).
    pub expander_tls: Option<Arc<ReloadingTls>>,
}

/// Serves a router on a listener, over TLS when configured, until `stop` resolves.
async fn serve_on(
    router: LimitedRouter,
    listener: TcpListener,
    tls: Option<Arc<ReloadingTls>>,
    stop: impl Future<Output = ()>,
) -> std::result::Result<(), tonic::transport::Error> {
    match tls {
        Some(tls) => {
            router
                .serve_with_incoming_shutdown(crate::tls::incoming(listener, tls), stop)
                .await
        }
        None => {
            router
                .serve_with_incoming_shutdown(
                    TcpIncoming::from(listener).with_nodelay(Some(true)),
                    stop,
                )
                .await
        }
    }
}

/// Serves the expander on a runtime of its own (one async worker; scoring on its blocking threads), so
/// that decoding a flood of 100 MB BestOptions requests never occupies the workers that answer CA's
/// CloudProvider calls.
async fn serve_expander(
    listener: TcpListener,
    service: ByteBudget<ExpanderServer<ExpanderService>>,
    tls: Option<Arc<ReloadingTls>>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::result::Result<(), String> {
    let listener = listener.into_std().map_err(|e| e.to_string())?;
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("expander".into())
        .spawn(move || {
            let outcome = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("expander")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
                .and_then(|rt| {
                    rt.block_on(async move {
                        let listener =
                            TcpListener::from_std(listener).map_err(|e| e.to_string())?;
                        serve_on(limited().add_service(service), listener, tls, stop)
                            .await
                            .map_err(|e| e.to_string())
                    })
                });
            let _ = done_tx.send(outcome);
        })
        .map_err(|e| e.to_string())?;
    done_rx
        .await
        .map_err(|_| "the expander's runtime stopped".to_string())?
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
    let grpc_server = serve_on(limited().add_service(provider), grpc, grpc_tls, stopped());
    let expander_addr = expander.as_ref().and_then(|(l, _)| l.local_addr().ok());
    let expander_server = async {
        match expander {
            Some((listener, settings)) => {
                let service =
                    ExpanderService::new(cloud.clone(), metrics.clone(), settings).into_server();
                serve_expander(listener, service, expander_tls, stopped()).await
            }
            None => Ok(()),
        }
    };
    let http_server = crate::http::serve(
        http,
        crate::http::router(cloud.clone(), metrics.clone()),
        stopped(),
    );
    tracing::info!(grpc = ?grpc_addr, expander = ?expander_addr, http = ?http_addr, cloud = cloud.name(), "serving");
    let both = async {
        let (g, e, h) = tokio::join!(grpc_server, expander_server, http_server);
        (g.map_err(|e| e.to_string()).and(e), h)
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
    g.map_err(|e| Error::io("gRPC server failed", std::io::Error::other(e)))?;
    h.map_err(|source| Error::io("HTTP server failed", source))?;
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
