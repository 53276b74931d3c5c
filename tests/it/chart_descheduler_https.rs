//! The chart's `descheduler.securePort`: `ferroscale deschedule` serves its metrics over HTTPS on
//! `metricsPort` (`--secure-port`, its self-signed certificate), its probes use HTTPS, its Service
//! names the port `https` and the ServiceMonitor scrapes it over HTTPS without verifying; off, it
//! serves plain HTTP as before.

use clap::Parser;
use ferroscale::cli::{Cli, Command as Cmd};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use serde_json::Value;

use crate::support::chart::{one, render_set};

const NAME: &str = "fs-ferroscale-descheduler";

fn args(d: &Deployment) -> Vec<String> {
    d.spec.template.spec.as_ref().unwrap().containers[0]
        .args
        .clone()
        .unwrap()
}

#[test]
fn secure_port_serves_https_probed_and_scraped_over_https() {
    let objects = render_set(&[
        "descheduler.enabled=true",
        "descheduler.securePort=true",
        "serviceMonitor.enabled=true",
    ])
    .unwrap();
    let d: Deployment = one(&objects, "Deployment", NAME);
    let a = args(&d);
    let cli = Cli::try_parse_from(std::iter::once("ferroscale".to_string()).chain(a.clone()))
        .unwrap_or_else(|e| panic!("{a:?}: {e}"));
    let Cmd::Deschedule(f) = cli.command else {
        panic!("{a:?}")
    };
    assert_eq!(f.bind_address.to_string(), "0.0.0.0", "{a:?}");
    let port = f.secure_port.expect("--secure-port");
    let c = &d.spec.template.spec.as_ref().unwrap().containers[0];
    assert_eq!(
        c.ports.as_ref().unwrap()[0].container_port,
        i32::from(port),
        "{a:?}"
    );
    for probe in [&c.liveness_probe, &c.readiness_probe] {
        let get = probe.as_ref().unwrap().http_get.as_ref().unwrap();
        assert_eq!(get.scheme.as_deref(), Some("HTTPS"));
    }
    let s: Service = one(&objects, "Service", NAME);
    assert_eq!(
        s.spec.unwrap().ports.unwrap()[0].name.as_deref(),
        Some("https")
    );
    let monitor = objects
        .iter()
        .find(|o| o["kind"] == "ServiceMonitor")
        .unwrap();
    let https: Vec<&Value> = monitor["spec"]["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["port"] == "https")
        .collect();
    assert_eq!(https.len(), 1, "{monitor:#}");
    assert_eq!(https[0]["scheme"], "https");
    assert_eq!(https[0]["tlsConfig"]["insecureSkipVerify"], true);
}

#[test]
fn without_secure_port_it_serves_plain_http() {
    let objects = render_set(&["descheduler.enabled=true", "serviceMonitor.enabled=true"]).unwrap();
    let d: Deployment = one(&objects, "Deployment", NAME);
    let a = args(&d);
    assert!(a.iter().any(|x| x.starts_with("--address=")), "{a:?}");
    assert!(!a.iter().any(|x| x.starts_with("--secure-port")), "{a:?}");
    let monitor = objects
        .iter()
        .find(|o| o["kind"] == "ServiceMonitor")
        .unwrap();
    assert!(
        monitor["spec"]["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["port"] == "http"),
        "{monitor:#}"
    );
}
