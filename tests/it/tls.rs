//! The CloudProvider listener with mutual TLS, as CA's cloud-config `cert`/`key`/`cacert` connect to it:
//! a client certificate from the trusted CA is required; none, or one from another CA, is refused.

use std::sync::Arc;

use ferroscale::cloud::memory::{MemoryCloud, MemoryConfig};
use ferroscale::proto::externalgrpc as pb;
use ferroscale::proto::externalgrpc::cloud_provider_client::CloudProviderClient;

use crate::support::fixtures::grpc::GROUPS;
use crate::support::pki::Pki;
use crate::support::server::{Extras, Running};

async fn node_groups(
    pki: &Pki,
    addr: std::net::SocketAddr,
    identity: Option<&crate::support::pki::Pair>,
) -> Result<Vec<String>, String> {
    let channel = pki
        .channel(addr, identity)
        .await
        .map_err(|e| e.to_string())?;
    let groups = CloudProviderClient::new(channel)
        .node_groups(pb::NodeGroupsRequest {})
        .await
        .map_err(|e| e.to_string())?;
    Ok(groups
        .into_inner()
        .node_groups
        .into_iter()
        .map(|g| g.id)
        .collect())
}

/// The CloudProvider on the memory cloud with `GROUPS`, over `tls`.
async fn serve(tls: Option<Arc<ferroscale::tls::ReloadingTls>>) -> Running {
    let cloud = Arc::new(MemoryCloud::new(&MemoryConfig::parse(GROUPS).unwrap()).unwrap());
    let extras = Extras {
        grpc_tls: tls,
        ..Extras::default()
    };
    Running::spawn(cloud, Default::default(), extras).await
}

#[tokio::test]
async fn mutual_tls_requires_a_client_certificate_from_the_trusted_ca() {
    let pki = Pki::new();
    let running = serve(Some(pki.server_tls(true))).await;
    let addr = running.grpc_addr;
    assert_eq!(
        node_groups(&pki, addr, Some(&pki.client)).await.unwrap(),
        vec!["batch", "general", "gpu"]
    );
    assert!(
        node_groups(&pki, addr, None).await.is_err(),
        "no client certificate"
    );
    assert!(
        node_groups(&pki, addr, Some(&pki.stranger)).await.is_err(),
        "a certificate from another CA"
    );
    let plain = CloudProviderClient::connect(format!("http://{addr}")).await;
    if let Ok(mut c) = plain {
        assert!(
            c.node_groups(pb::NodeGroupsRequest {}).await.is_err(),
            "plaintext"
        );
    }
}

#[tokio::test]
async fn client_names_refuse_a_certificate_of_the_same_ca_issued_to_another_workload() {
    let pki = Pki::new();
    let running = serve(Some(pki.server_tls_naming(&["cluster-autoscaler"]))).await;
    let addr = running.grpc_addr;
    assert_eq!(
        node_groups(&pki, addr, Some(&pki.client))
            .await
            .unwrap()
            .len(),
        3,
        "cluster-autoscaler's certificate is accepted"
    );
    assert!(
        node_groups(&pki, addr, Some(&pki.neighbour)).await.is_err(),
        "same CA, another name: refused"
    );
    assert!(
        node_groups(&pki, addr, None).await.is_err(),
        "no certificate"
    );
}

#[tokio::test]
async fn server_only_tls_serves_any_client_that_trusts_it() {
    let pki = Pki::new();
    let running = serve(Some(pki.server_tls(false))).await;
    assert_eq!(
        node_groups(&pki, running.grpc_addr, None)
            .await
            .unwrap()
            .len(),
        3
    );
}

/// The binary from its flags: mutual TLS on `--listen`, server TLS on `--expander-listen`, prices from
/// `--price-overrides`, as the Helm chart and CA's cloud-config and `--grpc-expander-cert` use them.
#[tokio::test]
async fn the_binary_serves_both_listeners_over_tls() {
    use crate::support::process::Served;
    use ferroscale::proto::expander::expander_client::ExpanderClient;

    let pki = Pki::new();
    let prices = pki.path("prices.yaml");
    std::fs::write(&prices, "nodeGroups:\n  general: {pricePerHour: 0.5}\n").unwrap();
    let path = |n: &str| pki.path(n).to_str().unwrap().to_string();
    let mut served = Served::start(
        &[
            "--memory-config",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/memory-cloud.yaml"),
            "--expander-listen",
            "127.0.0.1:0",
            "--expander",
            "price",
            "--tls-cert",
            &path("server.pem"),
            "--tls-key",
            &path("server-key.pem"),
            "--tls-client-ca",
            &path("ca.pem"),
            "--expander-tls-cert",
            &path("server.pem"),
            "--expander-tls-key",
            &path("server-key.pem"),
            "--price-overrides",
            &path("prices.yaml"),
        ],
        &[],
    )
    .await;
    let (grpc, exp) = (served.grpc, served.expander.unwrap());
    let groups = node_groups(&pki, grpc, Some(&pki.client)).await.unwrap();
    assert!(groups.contains(&"general".to_string()), "{groups:?}");
    assert!(node_groups(&pki, grpc, None).await.is_err(), "mutual TLS");
    let channel = pki.channel(exp, None).await.unwrap();
    let answer = ExpanderClient::new(channel)
        .best_options(ferroscale::proto::expander::BestOptionsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(answer.options.is_empty());
    // The expander listener is TLS-only: a plaintext client (CA without --grpc-expander-cert) is refused.
    let plaintext = tonic::transport::Endpoint::from_shared(format!("http://{exp}"))
        .unwrap()
        .connect()
        .await;
    if let Ok(channel) = plaintext {
        let refused = ExpanderClient::new(channel)
            .best_options(ferroscale::proto::expander::BestOptionsRequest::default())
            .await;
        assert!(refused.is_err(), "plaintext BestOptions must fail");
    }
    // An m5.xlarge node of no group costs what `general` (m5.xlarge) costs after the price file.
    let channel = pki.channel(grpc, Some(&pki.client)).await.unwrap();
    let price = CloudProviderClient::new(channel)
        .pricing_node_price(pb::PricingNodePriceRequest {
            node: Some(pb::ExternalGrpcNode {
                provider_id: "aws:///us-east-1a/i-0123456789abcdef0".into(),
                name: "n".into(),
                labels: [(
                    "node.kubernetes.io/instance-type".to_string(),
                    "m5.xlarge".to_string(),
                )]
                .into(),
                annotations: Default::default(),
            }),
            start_timestamp: crate::support::fixtures::grpc::ts(0),
            end_timestamp: crate::support::fixtures::grpc::ts(2 * 3600),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .price;
    assert!((price - 1.0).abs() < 1e-9, "2 h at 0.5/h: {price}");
    assert!(served.terminate().success());
}

#[tokio::test]
async fn rotated_certificates_are_served_without_a_restart() {
    let pki = Pki::new();
    let tls = pki.server_tls(false);
    let watcher = tls.watch(std::time::Duration::from_millis(20));
    let running = serve(Some(tls.clone())).await;
    let addr = running.grpc_addr;
    assert!(node_groups(&pki, addr, None).await.is_ok());
    // cert-manager renews the certificate in place, here from another CA.
    let renewed = Pki::new();
    std::fs::write(pki.path("server-key.pem"), "not a key").unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert!(
        node_groups(&pki, addr, None).await.is_ok(),
        "a half-written pair keeps the old certificate"
    );
    pki.rotate_to(&renewed);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while node_groups(&renewed, addr, None).await.is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "new certificate not served"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        node_groups(&pki, addr, None).await.is_err(),
        "clients trusting only the old CA no longer verify the server"
    );
    watcher.abort();
}
