//! `ferroscale deschedule --secure-port`: `/metrics` and `/healthz` over HTTPS, as the descheduler
//! serves them (its secure serving: `--bind-address`, `--secure-port`, `--tls-cert-file` and
//! `--tls-private-key-file`). With no certificate files the listener uses a self-signed certificate
//! made at start (as the descheduler's serving options make one: a CA and the certificate it signs),
//! for `localhost`, `127.0.0.1` and `apiserver-loopback-client`; with files, they are re-read when they change
//! ([`ReloadingTls`]). Connections are capped and timed as the HTTP listener's ([`crate::http`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair,
};
use tokio::net::TcpListener;
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use crate::error::{Error, Result};
use crate::http::{HEADER_READ_TIMEOUT, MAX_CONNECTIONS};
use crate::tls::{ReloadingTls, TlsFiles, TlsFlags};

/// The descheduler's flags for its serving certificate.
pub const SECURE_FLAGS: TlsFlags = TlsFlags {
    cert: "--tls-cert-file",
    key: "--tls-private-key-file",
    client_ca: "",
    client_san: "",
};

/// The names the self-signed certificate is for.
pub const SELF_SIGNED_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "apiserver-loopback-client"];

/// How often certificate files are checked for a change.
const RELOAD_EVERY: Duration = Duration::from_secs(60);

/// How long a client may take to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the listener's certificate comes from.
#[derive(Clone)]
pub enum Certificate {
    /// Made at start.
    SelfSigned(Arc<ServerConfig>),
    /// `--tls-cert-file` and `--tls-private-key-file`, re-read when they change.
    Files(Arc<ReloadingTls>),
}

impl Certificate {
    /// The files when both are given, a self-signed certificate when neither is; one alone is
    /// refused, naming the other.
    pub fn from_flags(cert: Option<PathBuf>, key: Option<PathBuf>) -> Result<Certificate> {
        match (cert, key) {
            (Some(cert), Some(key)) => {
                let files = TlsFiles {
                    cert,
                    key,
                    client_ca: None,
                    client_sans: Vec::new(),
                };
                let tls = ReloadingTls::load(files, &SECURE_FLAGS)?;
                tls.watch(RELOAD_EVERY);
                Ok(Certificate::Files(tls))
            }
            (None, None) => self_signed().map(Certificate::SelfSigned),
            (Some(_), None) => Err(Error::config(format!(
                "{} needs {}",
                SECURE_FLAGS.cert, SECURE_FLAGS.key
            ))),
            (None, Some(_)) => Err(Error::config(format!(
                "{} needs {}",
                SECURE_FLAGS.key, SECURE_FLAGS.cert
            ))),
        }
    }

    fn current(&self) -> Arc<ServerConfig> {
        match self {
            Certificate::SelfSigned(c) => c.clone(),
            Certificate::Files(t) => t.current(),
        }
    }
}

/// A server configuration with a new self-signed certificate for [`SELF_SIGNED_NAMES`]: as the
/// descheduler's serving options make one, a CA made at start and the serving certificate it signs,
/// served as a chain.
pub fn self_signed() -> Result<Arc<ServerConfig>> {
    let failed = |e: rcgen::Error| Error::config(format!("making a self-signed certificate: {e}"));
    let ca_key = KeyPair::generate().map_err(failed)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "ferroscale-deschedule-ca");
    let ca = CertifiedIssuer::self_signed(ca, ca_key).map_err(failed)?;
    let key = KeyPair::generate().map_err(failed)?;
    let names: Vec<String> = SELF_SIGNED_NAMES.iter().map(|n| n.to_string()).collect();
    let mut leaf = CertificateParams::new(names).map_err(failed)?;
    leaf.distinguished_name
        .push(DnType::CommonName, SELF_SIGNED_NAMES[0]);
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = leaf.signed_by(&key, &ca).map_err(failed)?;
    let chain = vec![cert.der().clone(), ca.der().clone()];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| Error::config(format!("the self-signed certificate: {e}")))?;
    Ok(Arc::new(config))
}

/// Serves `router` over HTTPS on `listener`, for as long as the process runs: at most
/// [`MAX_CONNECTIONS`] at once, each to finish its TLS handshake and send its request headers
/// within ten seconds.
pub async fn serve(listener: TcpListener, certificate: Certificate, router: Router) {
    let permits = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let permit = permits
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let (tcp, peer) = match listener.accept().await {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "HTTPS accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let acceptor = TlsAcceptor::from(certificate.current());
        let service = TowerToHyperService::new(router.clone());
        tokio::spawn(async move {
            let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            drop(permit);
        });
    }
}
