//! TLS of the two gRPC listeners. CA's cloud-provider client speaks plaintext or mutual TLS (its
//! cloud-config `cert`/`key`/`cacert`); its expander client always speaks server-authenticated TLS and
//! sends no client certificate. So the CloudProvider listener takes a server certificate and, optionally,
//! the CA that client certificates must chain to (then required), and the expander listener takes a
//! server certificate only.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls::client::danger::HandshakeSignatureValid;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio_rustls::rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{
    self as rustls, DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig,
    SignatureScheme,
};
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
    /// When not empty, a client certificate must also name one of these (DNS or IP subject alternative
    /// names), so a certificate of the same CA issued to another workload is refused.
    pub client_sans: Vec<String>,
}

/// Flag names of one listener's TLS files, for messages.
pub struct TlsFlags {
    pub cert: &'static str,
    pub key: &'static str,
    pub client_ca: &'static str,
    pub client_san: &'static str,
}

/// The CloudProvider listener's flags.
pub const PROVIDER_FLAGS: TlsFlags = TlsFlags {
    cert: "--tls-cert",
    key: "--tls-key",
    client_ca: "--tls-client-ca",
    client_san: "--tls-client-san",
};

/// The expander listener's flags (it has no client CA: CA's expander client sends no certificate).
pub const EXPANDER_FLAGS: TlsFlags = TlsFlags {
    cert: "--expander-tls-cert",
    key: "--expander-tls-key",
    client_ca: "",
    client_san: "",
};

impl TlsFiles {
    /// The files of one listener from its flags: none, or both certificate and key; a client CA needs them,
    /// and client names need a client CA.
    pub fn from_flags(
        cert: Option<PathBuf>,
        key: Option<PathBuf>,
        client_ca: Option<PathBuf>,
        client_sans: Vec<String>,
        flags: &TlsFlags,
    ) -> Result<Option<TlsFiles>> {
        if !client_sans.is_empty() && client_ca.is_none() {
            return Err(Error::config(format!(
                "{} needs {} (only verified client certificates carry names to check)",
                flags.client_san, flags.client_ca
            )));
        }
        for name in &client_sans {
            ServerName::try_from(name.as_str()).map_err(|e| {
                Error::config(format!(
                    "{} {name:?}: not a DNS name or IP address: {e}",
                    flags.client_san
                ))
            })?;
        }
        match (cert, key) {
            (Some(cert), Some(key)) => Ok(Some(TlsFiles {
                cert,
                key,
                client_ca,
                client_sans,
            })),
            (None, None) if client_ca.is_none() => Ok(None),
            (None, None) => Err(Error::config(format!(
                "{} needs {} and {} (mutual TLS needs a server certificate)",
                flags.client_ca, flags.cert, flags.key
            ))),
            (Some(_), None) => Err(Error::config(format!("{} needs {}", flags.cert, flags.key))),
            (None, Some(_)) => Err(Error::config(format!("{} needs {}", flags.key, flags.cert))),
        }
    }

    /// Reads the files; a CA bundle without certificates or a key that does not match is an error.
    fn read(&self, flags: &TlsFlags) -> Result<(Vec<u8>, ServerConfig)> {
        let read = |path: &Path, flag: &str| {
            std::fs::read(path)
                .map_err(|e| Error::config(format!("{flag} {}: {e}", path.display())))
        };
        let pem_error = |flag: &str, path: &Path, e: &dyn std::fmt::Display| {
            Error::config(format!("{flag} {}: {e}", path.display()))
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
                if self.client_sans.is_empty() {
                    builder.with_client_cert_verifier(verifier)
                } else {
                    builder.with_client_cert_verifier(Arc::new(NamedClients {
                        inner: verifier,
                        names: self.client_sans.clone(),
                    }))
                }
            }
            None => builder.with_no_client_auth(),
        };
        let mut config = builder.with_single_cert(certs, key).map_err(|e| {
            Error::config(format!(
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

/// Client certificates that chain to the client CA *and* name one of `names` (`--tls-client-san`): the
/// chain check is rustls's own, the name check webpki's (the same matching a client does for a server).
#[derive(Debug)]
struct NamedClients {
    inner: Arc<dyn ClientCertVerifier>,
    names: Vec<String>,
}

impl ClientCertVerifier for NamedClients {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> std::result::Result<ClientCertVerified, rustls::Error> {
        let verified = self
            .inner
            .verify_client_cert(end_entity, intermediates, now)?;
        let cert = webpki::EndEntityCert::try_from(end_entity).map_err(|e| {
            rustls::Error::InvalidCertificate(rustls::CertificateError::Other(rustls::OtherError(
                Arc::new(e),
            )))
        })?;
        let named = self.names.iter().any(|n| {
            ServerName::try_from(n.as_str())
                .is_ok_and(|name| cert.verify_is_valid_for_subject_name(&name).is_ok())
        });
        if named {
            Ok(verified)
        } else {
            tracing::warn!(allowed = ?self.names, "client certificate refused: it names none of --tls-client-san");
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
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
        self.current.read().1.clone()
    }

    /// Reads the files again and swaps the configuration in when they changed and load; true if swapped.
    pub fn reload(&self) -> bool {
        match self.files.read(self.flags) {
            Ok((fingerprint, config)) => {
                let mut cur = self.current.write();
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
/// Most TLS handshakes in progress at once (each costs a public-key operation); further connections
/// wait to be accepted.
pub const MAX_CONCURRENT_HANDSHAKES: usize = 64;

/// TLS connections accepted on `listener` with the configuration current at each accept. Handshakes
/// run concurrently, so a slow or failing client does not hold up the others, at most
/// [`MAX_CONCURRENT_HANDSHAKES`] at once; failures are logged.
pub fn incoming(
    listener: TcpListener,
    tls: Arc<ReloadingTls>,
) -> ReceiverStream<std::io::Result<TlsStream<TcpStream>>> {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let handshakes = Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_HANDSHAKES));
    tokio::spawn(async move {
        loop {
            let permit = tokio::select! {
                p = handshakes.clone().acquire_owned() => p.expect("the semaphore is never closed"),
                () = tx.closed() => return,
            };
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
                let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await;
                drop(permit);
                match handshake {
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
