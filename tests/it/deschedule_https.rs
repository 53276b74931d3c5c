//! `ferroscale deschedule --secure-port`: `/metrics` served over HTTPS as the descheduler serves it,
//! with a self-signed certificate made at start (a client that trusts that certificate verifies it
//! for `localhost`; plain HTTP is not answered), or with `--tls-cert-file`/`--tls-private-key-file`,
//! which a client trusting their CA verifies. Each scrape shows `descheduler_build_info`.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_rustls::rustls::{self, ClientConfig, DigitallySignedStruct, RootCertStore};
use tokio_rustls::TlsConnector;

use crate::support::fixtures::kube::node;
use crate::support::kube_api::{KubeApi, NODES};
use crate::support::pki::Pki;
use crate::support::process::Served;

const POLICY: &str = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n\
- name: p\n  plugins: {deschedule: {enabled: [RemoveFailedPods]}}\n";

/// `ferroscale deschedule` cycling hourly against `api`, with `extra` flags.
async fn deschedule(api: &KubeApi, dir: &std::path::Path, extra: &[&str]) -> Served {
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let kubeconfig = api.kubeconfig(dir);
    let mut args = vec![
        "deschedule".to_string(),
        format!("--policy-config-file={}", policy.display()),
        format!("--kubeconfig={}", kubeconfig.display()),
        "--descheduling-interval=1h".into(),
        "--bind-address=127.0.0.1".into(),
        "--secure-port=0".into(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Served::spawn(&args, &[]).await
}

/// Accepts any certificate, keeping the last of the chain shown (the issuer, when one is sent).
#[derive(Debug)]
struct Capture(
    Mutex<Option<CertificateDer<'static>>>,
    Arc<rustls::crypto::CryptoProvider>,
);

impl ServerCertVerifier for Capture {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let last = intermediates.last().unwrap_or(end_entity);
        *self.0.lock().unwrap() = Some(last.clone().into_owned());
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.1.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.1.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.1.signature_verification_algorithms.supported_schemes()
    }
}

/// GET `path` over HTTPS from `addr` as `localhost`: the status line and body.
async fn get(
    config: ClientConfig,
    addr: std::net::SocketAddr,
    path: &str,
) -> Result<String, String> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let name = ServerName::try_from("localhost").unwrap();
    let mut tls = TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    tls.write_all(req.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut out = String::new();
    tls.read_to_string(&mut out)
        .await
        .map_err(|e| e.to_string())?;
    Ok(out)
}

fn trusting(roots: RootCertStore) -> ClientConfig {
    ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth()
}

fn has_build_info(answer: &str) {
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer
            .lines()
            .any(|l| l.starts_with("descheduler_build_info{")),
        "{answer}"
    );
}

#[tokio::test]
async fn secure_port_serves_metrics_with_a_self_signed_certificate() {
    let api = KubeApi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let served = deschedule(&api, dir.path(), &[]).await;
    let addr = served.http;
    // A client that trusts nothing the server shows refuses it: the certificate is its own.
    let e = get(trusting(RootCertStore::empty()), addr, "/metrics")
        .await
        .unwrap_err();
    assert!(e.to_lowercase().contains("certificate"), "{e}");
    // Shown the chain, then trusting its issuer alone, a client verifies it for localhost.
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let capture = Arc::new(Capture(Mutex::new(None), provider));
    let any = ClientConfig::builder()
        .dangerous()
        .with_custom_certificate_verifier(capture.clone())
        .with_no_client_auth();
    has_build_info(&get(any, addr, "/metrics").await.unwrap());
    let shown = capture.0.lock().unwrap().clone().expect("a certificate");
    let mut roots = RootCertStore::empty();
    roots.add(shown).unwrap();
    has_build_info(&get(trusting(roots), addr, "/metrics").await.unwrap());
    // No plain HTTP on the secure port.
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut plain = Vec::new();
    let _ = tcp.read_to_end(&mut plain).await;
    assert!(!String::from_utf8_lossy(&plain).contains("descheduler_build_info"));
}

#[tokio::test]
async fn secure_port_serves_the_given_certificate() {
    let api = KubeApi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new();
    let cert = format!("--tls-cert-file={}", pki.path("server.pem").display());
    let key = format!(
        "--tls-private-key-file={}",
        pki.path("server-key.pem").display()
    );
    let served = deschedule(&api, dir.path(), &[&cert, &key]).await;
    let mut roots = RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(pki.ca.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    has_build_info(&get(trusting(roots), served.http, "/metrics").await.unwrap());
}
