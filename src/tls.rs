//! TLS of the two gRPC listeners. CA's cloud-provider client speaks plaintext or mutual TLS (its
//! cloud-config `cert`/`key`/`cacert`); its expander client always speaks server-authenticated TLS and
//! sends no client certificate. So the CloudProvider listener takes a server certificate and, optionally,
//! the CA that client certificates must chain to (then required), and the expander listener takes a
//! server certificate only.

use std::path::{Path, PathBuf};

use tonic::transport::{Certificate, Identity, ServerTlsConfig};

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

    /// Reads the files into a tonic server TLS configuration.
    pub fn server_config(&self, flags: &TlsFlags) -> Result<ServerTlsConfig> {
        let read = |path: &Path, flag: &str| {
            let pem = std::fs::read(path)
                .map_err(|e| Error::Config(format!("{flag} {}: {e}", path.display())))?;
            if !String::from_utf8_lossy(&pem).contains("-----BEGIN") {
                return Err(Error::Config(format!(
                    "{flag} {}: not a PEM file",
                    path.display()
                )));
            }
            Ok(pem)
        };
        let identity =
            Identity::from_pem(read(&self.cert, flags.cert)?, read(&self.key, flags.key)?);
        let mut config = ServerTlsConfig::new().identity(identity);
        if let Some(ca) = &self.client_ca {
            config = config.client_ca_root(Certificate::from_pem(read(ca, flags.client_ca)?));
        }
        // Builds the rustls configuration now, so a bad certificate or key stops start-up with its flag.
        tonic::transport::Server::builder()
            .tls_config(config.clone())
            .map_err(|e| {
                Error::Config(format!(
                    "{} {} / {} {}: {e}",
                    flags.cert,
                    self.cert.display(),
                    flags.key,
                    self.key.display()
                ))
            })?;
        Ok(config)
    }
}
