//! The chart's provider mode talks mutual TLS by default, with certificates the chart generates: the
//! handshake between its two Secrets runs through ferroscale's own TLS configuration, as serve builds it
//! from the chart's flags, to the address in cluster-autoscaler's cloud-config. Plaintext only when asked
//! for, with the flag serve demands. (One replica and the NetworkPolicy: `chart_policy`.)

use std::collections::BTreeMap;
use std::sync::Arc;

use clap::Parser;
use ferroscale::cli::serve::ServeFlags;
use ferroscale::cli::{Cli, Command as Cmd};
use ferroscale::tls::{ReloadingTls, TlsFiles, PROVIDER_FLAGS};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use serde_json::Value;
use tokio_rustls::rustls::client::danger::ServerCertVerifier;
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::crypto::aws_lc_rs;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio_rustls::rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::support::chart::{
    cluster_autoscaler, count, ferroscale, notes, one, render, render_set,
};

const SERVICE_NAMES: [&str; 4] = [
    "fs-ferroscale",
    "fs-ferroscale.autoscaling",
    "fs-ferroscale.autoscaling.svc",
    "fs-ferroscale.autoscaling.svc.cluster.local",
];

fn args(d: &Deployment) -> Vec<String> {
    d.spec.template.spec.as_ref().unwrap().containers[0]
        .args
        .clone()
        .unwrap()
}

/// serve's settings from the container's flags, resolved by the binary itself.
fn serve_settings(args: &[String]) -> ferroscale::Result<ServeFlags> {
    let cli = Cli::try_parse_from(std::iter::once("ferroscale".to_string()).chain(args.to_vec()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    let Cmd::Serve(serve) = cli.command else {
        panic!("provider mode runs serve")
    };
    serve.check()?;
    Ok(serve)
}

/// The files of a Secret the chart renders, by key.
fn secret_files(objects: &[Value], name: &str) -> BTreeMap<String, Vec<u8>> {
    let secret: Secret = one(objects, "Secret", name);
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let files: BTreeMap<String, Vec<u8>> = secret
        .data
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect();
    assert_eq!(
        files.keys().map(String::as_str).collect::<Vec<_>>(),
        ["ca.crt", "tls.crt", "tls.key"],
        "{name}"
    );
    files
}

fn cert(pem: &[u8]) -> CertificateDer<'static> {
    CertificateDer::from_pem_slice(pem).expect("a PEM certificate")
}

fn roots(ca_pem: &[u8]) -> Arc<RootCertStore> {
    let mut roots = RootCertStore::empty();
    roots.add(cert(ca_pem)).unwrap();
    Arc::new(roots)
}

/// A TLS handshake over an in-memory pipe: `server` (ferroscale) against a client trusting `client["ca.crt"]`,
/// presenting `client`'s certificate when `present`, asking for `host` (CA's cloud-config address).
async fn handshake(
    server: Arc<ServerConfig>,
    client: &BTreeMap<String, Vec<u8>>,
    present: bool,
    host: &str,
) -> Result<(), String> {
    let provider = Arc::new(aws_lc_rs::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots(&client["ca.crt"]));
    let mut config = if present {
        builder
            .with_client_auth_cert(
                vec![cert(&client["tls.crt"])],
                PrivateKeyDer::from_pem_slice(&client["tls.key"]).expect("a PEM key"),
            )
            .unwrap()
    } else {
        builder.with_no_client_auth()
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    let (a, b) = tokio::io::duplex(64 * 1024);
    let name = ServerName::try_from(host.to_string()).unwrap();
    let (accepted, connected) = tokio::join!(
        TlsAcceptor::from(server).accept(a),
        TlsConnector::from(Arc::new(config)).connect(name, b)
    );
    // With TLS 1.3 the client may finish first; the server's verdict on the client certificate is final.
    accepted.map_err(|e| format!("server: {e}"))?;
    connected.map_err(|e| format!("client: {e}"))?;
    Ok(())
}

#[tokio::test]
async fn provider_defaults_to_mutual_tls_with_certificates_the_chart_generates() {
    let objects = render(None).unwrap();
    let serve = args(&ferroscale(&objects));
    for flag in [
        "--tls-cert=/etc/ferroscale/tls/tls.crt",
        "--tls-key=/etc/ferroscale/tls/tls.key",
        "--tls-client-ca=/etc/ferroscale/tls/ca.crt",
        "--tls-client-san=cluster-autoscaler",
        "--expander-tls-cert=/etc/ferroscale/tls/tls.crt",
        "--expander-tls-key=/etc/ferroscale/tls/tls.key",
    ] {
        assert!(serve.iter().any(|a| a == flag), "{flag} in {serve:?}");
    }
    assert!(!serve.iter().any(|a| a.starts_with("--allow-plaintext")));
    assert_eq!(count(&objects, "Secret"), 2);
    assert_eq!(count(&objects, "Certificate"), 0);

    // The bundled cluster-autoscaler, in one render so both Secrets come from one generated CA.
    let objects = render_set(&["provider.clusterAutoscaler.enabled=true"]).unwrap();
    let (server_secret, client_secret) = (
        secret_files(&objects, "fs-ferroscale-server-tls"),
        secret_files(&objects, "fs-ferroscale-client-tls"),
    );
    assert_eq!(server_secret["ca.crt"], client_secret["ca.crt"], "one CA");
    let provider = Arc::new(aws_lc_rs::default_provider());
    let verifier =
        WebPkiServerVerifier::builder_with_provider(roots(&server_secret["ca.crt"]), provider)
            .build()
            .unwrap();
    for name in SERVICE_NAMES {
        verifier
            .verify_server_cert(
                &cert(&server_secret["tls.crt"]),
                &[],
                &ServerName::try_from(name).unwrap(),
                &[],
                UnixTime::now(),
            )
            .unwrap_or_else(|e| panic!("the server certificate names {name}: {e}"));
    }

    // ferroscale mounts the server Secret where its flags point.
    let d = ferroscale(&objects);
    let pod = d.spec.template.spec.as_ref().unwrap();
    let tls_volume = pod
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == "tls")
        .unwrap();
    assert_eq!(
        tls_volume.secret.as_ref().unwrap().secret_name.as_deref(),
        Some("fs-ferroscale-server-tls")
    );
    let mount = pod.containers[0]
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.name == "tls")
        .unwrap();
    assert_eq!(mount.mount_path, "/etc/ferroscale/tls");

    // cluster-autoscaler mounts the client Secret where its cloud-config and expander flag point.
    let ca = cluster_autoscaler(&objects);
    let ca_pod = ca.spec.template.spec.as_ref().unwrap();
    let volume = ca_pod
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == "client-tls")
        .unwrap();
    assert_eq!(
        volume.secret.as_ref().unwrap().secret_name.as_deref(),
        Some("fs-ferroscale-client-tls")
    );
    let dir = ca_pod.containers[0]
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.name == "client-tls")
        .unwrap();
    let in_secret = |path: &str| {
        let key = path.strip_prefix(&format!("{}/", dir.mount_path));
        assert!(
            key.is_some_and(|k| client_secret.contains_key(k)),
            "{path} is a file of the client Secret"
        );
    };
    let cloud_config: serde_norway::Value = serde_norway::from_str(
        &one::<k8s_openapi::api::core::v1::ConfigMap>(
            &objects,
            "ConfigMap",
            "fs-ferroscale-cluster-autoscaler-cloud-config",
        )
        .data
        .unwrap()["cloud-config"],
    )
    .unwrap();
    for key in ["cert", "key", "cacert"] {
        in_secret(cloud_config[key].as_str().unwrap());
    }
    assert_eq!(
        cloud_config["cacert"].as_str(),
        Some("/etc/ssl/client/ca.crt")
    );
    let ca_args = args(&ca);
    let expander_cert = ca_args
        .iter()
        .find_map(|a| a.strip_prefix("--grpc-expander-cert="))
        .unwrap();
    in_secret(expander_cert);
    let address = cloud_config["address"].as_str().unwrap();
    let host = address.rsplit_once(':').unwrap().0;
    assert!(
        ca_args.contains(&format!("--grpc-expander-url={host}:8087")),
        "{ca_args:?}"
    );

    // serve's own TLS configuration from the chart's flags, over the server Secret's files: CA's client
    // Secret completes mutual TLS to the address in its cloud-config; no certificate, or a name other than
    // --tls-client-san, is refused.
    let settings = serve_settings(&args(&d)).unwrap();
    let files = settings.tls().unwrap().expect("TLS from the chart's flags");
    assert_eq!(files.client_sans, ["cluster-autoscaler"]);
    let tmp = tempfile::tempdir().unwrap();
    for (key, data) in &server_secret {
        std::fs::write(tmp.path().join(key), data).unwrap();
    }
    let load = |sans: Vec<String>| {
        let moved =
            |p: &std::path::Path| tmp.path().join(p.strip_prefix(&mount.mount_path).unwrap());
        ReloadingTls::load(
            TlsFiles {
                cert: moved(&files.cert),
                key: moved(&files.key),
                client_ca: files.client_ca.as_deref().map(moved),
                client_sans: sans,
            },
            &PROVIDER_FLAGS,
        )
        .unwrap()
        .current()
    };
    let server = load(files.client_sans.clone());
    handshake(server.clone(), &client_secret, true, host)
        .await
        .unwrap();
    assert!(handshake(server.clone(), &client_secret, false, host)
        .await
        .is_err());
    assert!(
        handshake(server, &client_secret, true, "fs-ferroscale.elsewhere.svc")
            .await
            .is_err()
    );
    let strict = load(vec!["someone-else".into()]);
    assert!(handshake(strict, &client_secret, true, host).await.is_err());
}

#[test]
fn plaintext_only_when_asked_for_explicitly() {
    // The default flags are accepted by serve as they are.
    let objects = render(None).unwrap();
    serve_settings(&args(&ferroscale(&objects))).unwrap();
    assert!(!notes(&[]).contains("WARNING"));

    let objects = render_set(&[
        "tls.enabled=false",
        "provider.clusterAutoscaler.enabled=true",
    ])
    .unwrap();
    let serve = args(&ferroscale(&objects));
    assert!(serve.iter().any(|a| a == "--allow-plaintext"), "{serve:?}");
    assert!(!serve.iter().any(|a| a.starts_with("--tls-")), "{serve:?}");
    assert_eq!(count(&objects, "Secret"), 0);
    assert!(serve_settings(&serve).unwrap().tls().unwrap().is_none());
    // serve refuses exactly this without the flag.
    let without: Vec<String> = serve
        .iter()
        .filter(|a| *a != "--allow-plaintext")
        .cloned()
        .collect();
    let err = serve_settings(&without).unwrap_err().to_string();
    assert!(err.contains("--allow-plaintext"), "{err}");
    // CA's grpc expander exits without a certificate: the bundled CA does not use it in plaintext.
    let ca_args = args(&cluster_autoscaler(&objects)).join(" ");
    assert!(!ca_args.contains("--expander=grpc"), "{ca_args}");
    let text = notes(&["tls.enabled=false"]);
    assert!(
        text.contains("WARNING") && text.contains("PLAINTEXT"),
        "{text}"
    );
}
