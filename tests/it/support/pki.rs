//! Certificates made for one test with rcgen: a CA, a server certificate for localhost/127.0.0.1 and a
//! client certificate it signed, plus a client certificate from a CA the server does not trust. Written
//! to a temporary directory too, for the flags.

use std::path::PathBuf;
use std::sync::Arc;

use ferroscale::tls::ReloadingTls;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};

/// One PEM certificate with its key.
pub struct Pair {
    pub cert: String,
    pub key: String,
}

pub struct Pki {
    pub ca: String,
    pub server: Pair,
    pub client: Pair,
    /// Signed by another CA.
    pub stranger: Pair,
    /// Signed by the trusted CA for another workload (`some-other-app`).
    pub neighbour: Pair,
    pub dir: tempfile::TempDir,
}

fn ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}

fn leaf(issuer: &Issuer<'static, KeyPair>, names: &[&str], usage: ExtendedKeyUsagePurpose) -> Pair {
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    params.distinguished_name.push(DnType::CommonName, names[0]);
    params.extended_key_usages = vec![usage];
    let cert = params.signed_by(&key, issuer).unwrap();
    Pair {
        cert: cert.pem(),
        key: key.serialize_pem(),
    }
}

impl Pki {
    pub fn new() -> Pki {
        let (ca_pem, issuer) = ca("ferroscale test CA");
        let (_, other) = ca("somebody else's CA");
        let pki = Pki {
            ca: ca_pem,
            server: leaf(
                &issuer,
                &["localhost", "127.0.0.1"],
                ExtendedKeyUsagePurpose::ServerAuth,
            ),
            client: leaf(
                &issuer,
                &["cluster-autoscaler"],
                ExtendedKeyUsagePurpose::ClientAuth,
            ),
            stranger: leaf(&other, &["intruder"], ExtendedKeyUsagePurpose::ClientAuth),
            neighbour: leaf(
                &issuer,
                &["some-other-app"],
                ExtendedKeyUsagePurpose::ClientAuth,
            ),
            dir: tempfile::tempdir().unwrap(),
        };
        for (name, text) in [
            ("ca.pem", &pki.ca),
            ("server.pem", &pki.server.cert),
            ("server-key.pem", &pki.server.key),
        ] {
            std::fs::write(pki.dir.path().join(name), text).unwrap();
        }
        pki
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The server's TLS settings from the files: mutual when `client_ca`.
    pub fn server_tls(&self, client_ca: bool) -> Arc<ReloadingTls> {
        let files = ferroscale::tls::TlsFiles::from_flags(
            Some(self.path("server.pem")),
            Some(self.path("server-key.pem")),
            client_ca.then(|| self.path("ca.pem")),
            Vec::new(),
            &ferroscale::tls::PROVIDER_FLAGS,
        )
        .unwrap()
        .unwrap();
        ReloadingTls::load(files, &ferroscale::tls::PROVIDER_FLAGS).unwrap()
    }

    /// Mutual TLS that also requires the client certificate to name one of `names` (`--tls-client-san`).
    pub fn server_tls_naming(&self, names: &[&str]) -> Arc<ReloadingTls> {
        let files = ferroscale::tls::TlsFiles::from_flags(
            Some(self.path("server.pem")),
            Some(self.path("server-key.pem")),
            Some(self.path("ca.pem")),
            names.iter().map(|n| n.to_string()).collect(),
            &ferroscale::tls::PROVIDER_FLAGS,
        )
        .unwrap()
        .unwrap();
        ReloadingTls::load(files, &ferroscale::tls::PROVIDER_FLAGS).unwrap()
    }

    /// Replaces the server certificate and key files with `other`'s (a rotation to another CA).
    pub fn rotate_to(&self, other: &Pki) {
        std::fs::write(self.path("server.pem"), &other.server.cert).unwrap();
        std::fs::write(self.path("server-key.pem"), &other.server.key).unwrap();
    }

    /// A channel to `addr` that verifies the server against our CA, presenting `identity` if given.
    pub async fn channel(
        &self,
        addr: std::net::SocketAddr,
        identity: Option<&Pair>,
    ) -> Result<Channel, tonic::transport::Error> {
        let mut tls = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&self.ca))
            .domain_name("localhost");
        if let Some(p) = identity {
            tls = tls.identity(Identity::from_pem(&p.cert, &p.key));
        }
        Channel::from_shared(format!("https://{addr}"))
            .unwrap()
            .tls_config(tls)?
            .connect()
            .await
    }
}
