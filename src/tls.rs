//! TLS of the two gRPC listeners. CA's cloud-provider client speaks plaintext or mutual TLS (its
//! cloud-config `cert`/`key`/`cacert`); its expander client always speaks server-authenticated TLS and
//! sends no client certificate. So the CloudProvider listener takes a server certificate and, optionally,
//! the CA that client certificates must chain to (then required), and the expander listener takes a
//! server certificate only.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;
use tokio_stream::wrappers::ReceiverStream;

use crate::error::{Error, Result};

/// PEM files of one TLS listener, with the flag names used in errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Client certificates are required and must chain to this CA bundle.
    pub client_ca: Option<PathBuf>,
}

/// Flag names of one listener's TLS files, for messages.
pub struct TlsFlags {
    pub cert: &'static str,
    pub key: &'static str,
    pub client_ca: &'static str,
}

/// The CloudProvider listener's flags.
pub const PROVIDER_FLAGS: TlsFlags = TlsFlags {
    cert: "--tls-cert",
    key: "--tls-key",
    client_ca: "--tls-client-ca",
};

/// The expander listener's flags (it has no client CA: CA's expander client sends no certificate).
pub const EXPANDER_FLAGS: TlsFlags = TlsFlags {
    cert: "--expander-tls-cert",
    key: "--expander-tls-key",
    client_ca: "",
};

impl TlsFiles {
    /// The files of one listener from its flags: none, or both certificate and key; a client CA needs them.
    pub fn from_flags(
        cert: Option<PathBuf>,
        key: Option<PathBuf>,
        client_ca: Option<PathBuf>,
        flags: &TlsFlags,
    ) -> Result<Option<TlsFiles>> {
        match (cert, key) {
            (Some(cert), Some(key)) => Ok(Some(TlsFiles {
                cert,
                key,
                client_ca,
            })),
            (None, None) if client_ca.is_none() => Ok(None),
            (None, None) => Err(Error::Config(format!(
                "{} needs {} and {} (mutual TLS needs a server certificate)",
                flags.client_ca, flags.cert, flags.key
            ))),
            (Some(_), None) => Err(Error::Config(format!("{} needs {}", flags.cert, flags.key))),
            (None, Some(_)) => Err(Error::Config(format!("{} needs {}", flags.key, flags.cert))),
        }
    }

    /// Reads the files; a CA bundle without certificates or a key that does not match is an error.
    fn read(&self, flags: &TlsFlags) -> Result<(Vec<u8>, ServerConfig)> {
        let read = |path: &Path, flag: &str| {
            std::fs::read(path)
                .map_err(|e| Error::Config(format!("{flag} {}: {e}", path.display())))
        };
        let pem_error = |flag: &str, path: &Path, e: &dyn std::fmt::Display| {
            Error::Config(format!("{flag} {}: {e}", path.display()))
        };
        let cert_pem = read(&self.cert, flags.cert)?;
        let key_pem = read(&self.key, flags.key)?;
        let mut fingerprint = cert_pem.clone();
        fingerprint.extend_from_slice(&key_pem);
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| pem_error(flags.cert, &self.cert, &e))?;
        if certs.is_empty() {
            return Err(pem_error(flags.cert, &self.cert, &"no PEM certificate"));
        }
        let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
            pem_error(
                flags.key,
                &self.key,
                &format!("not a PEM private key (PKCS#8, PKCS#1 or SEC1): {e}"),
            )
        })?;
        let builder = ServerConfig::builder();
        let builder = match &self.client_ca {
            Some(ca) => {
                let ca_pem = read(ca, flags.client_ca)?;
                fingerprint.extend_from_slice(&ca_pem);
                let mut roots = RootCertStore::empty();
                for c in CertificateDer::pem_slice_iter(&ca_pem) {
                    let c = c.map_err(|e| pem_error(flags.client_ca, ca, &e))?;
                    roots
                        .add(c)
                        .map_err(|e| pem_error(flags.client_ca, ca, &e))?;
                }
                if roots.is_empty() {
                    return Err(pem_error(flags.client_ca, ca, &"no PEM certificate"));
                }
                let verifier = WebPkiClientVerifier::builder(Arc::new(roots))
                    .build()
                    .map_err(|e| pem_error(flags.client_ca, ca, &e))?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let mut config = builder.with_single_cert(certs, key).map_err(|e| {
            Error::Config(format!(
                "{} {} / {} {}: {e}",
                flags.cert,
                self.cert.display(),
                flags.key,
                self.key.display()
            ))
        })?;
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok((fingerprint, config))
    }
}

/// A listener's TLS configuration, re-read when its files change so certificates rotate without a
/// restart (cert-manager renews them in place); a change that does not load keeps the previous one.
pub struct ReloadingTls {
    files: TlsFiles,
    flags: &'static TlsFlags,
    current: RwLock<(Vec<u8>, Arc<ServerConfig>)>,
}

impl ReloadingTls {
    /// Loads the files; errors name the flag and the file.
    pub fn load(files: TlsFiles, flags: &'static TlsFlags) -> Result<Arc<Self>> {
        let (fingerprint, config) = files.read(flags)?;
        Ok(Arc::new(ReloadingTls {
            files,
            flags,
            current: RwLock::new((fingerprint, Arc::new(config))),
        }))
    }

    /// The configuration new connections use.
    pub fn current(&self) -> Arc<ServerConfig> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .clone()
    }

    /// Reads the files again and swaps the configuration in when they changed and load; true if swapped.
    pub fn reload(&self) -> bool {
        match self.files.read(self.flags) {
            Ok((fingerprint, config)) => {
                let mut cur = self.current.write().unwrap_or_else(|p| p.into_inner());
                if cur.0 == fingerprint {
                    return false;
                }
                *cur = (fingerprint, Arc::new(config));
                tracing::info!(cert = %self.files.cert.display(), "TLS certificate reloaded");
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "TLS files changed but do not load; keeping the previous certificate");
                false
            }
        }
    }

    /// Checks the files every `interval`.
    pub fn watch(self: &Arc<Self>, interval: Duration) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                me.reload();
            }
        })
    }
}

/// How long a client may take to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// TLS connections accepted on `listener` with the configuration current at each accept. Handshakes
/// run concurrently, so a slow or failing client does not hold up the others; failures are logged.
pub fn incoming(
    listener: TcpListener,
    tls: Arc<ReloadingTls>,
) -> ReceiverStream<std::io::Result<TlsStream<TcpStream>>> {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(async move {
        loop {
            let (tcp, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = tx.closed() => return,
            };
            let _ = tcp.set_nodelay(true);
            let acceptor = TlsAcceptor::from(tls.current());
            let tx = tx.clone();
            tokio::spawn(async move {
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                    Ok(Ok(stream)) => {
                        let _ = tx.send(Ok(stream)).await;
                    }
                    Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                    Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                }
            });
        }
    });
    ReceiverStream::new(rx)
}
