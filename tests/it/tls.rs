//! The CloudProvider listener with mutual TLS, as CA's cloud-config `cert`/`key`/`cacert` connect to it:
//! a client certificate from the trusted CA is required; none, or one from another CA, is refused.

use std::sync::Arc;

use ferroscale::cloud::memory::{MemoryCloud, MemoryConfig};
use ferroscale::proto::externalgrpc as pb;
use ferroscale::proto::externalgrpc::cloud_provider_client::CloudProviderClient;

use crate::common::{Extras, Running, GROUPS};
use crate::pki::Pki;

async fn node_groups(
    pki: &Pki,
    addr: std::net::SocketAddr,
    identity: Option<&crate::pki::Pair>,
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

#[tokio::test]
async fn mutual_tls_requires_a_client_certificate_from_the_trusted_ca() {
    let pki = Pki::new();
    let cloud = Arc::new(MemoryCloud::new(&MemoryConfig::parse(GROUPS).unwrap()).unwrap());
    let extras = Extras {
        grpc_tls: Some(pki.server_tls(true)),
        ..Extras::default()
    };
    let running = Running::spawn(cloud, Default::default(), extras).await;
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
        assert!(c.node_groups(pb::NodeGroupsRequest {}).await.is_err(), "plaintext");
    }
}

#[tokio::test]
async fn server_only_tls_serves_any_client_that_trusts_it() {
    let pki = Pki::new();
    let cloud = Arc::new(MemoryCloud::new(&MemoryConfig::parse(GROUPS).unwrap()).unwrap());
    let extras = Extras {
        grpc_tls: Some(pki.server_tls(false)),
        ..Extras::default()
    };
    let running = Running::spawn(cloud, Default::default(), extras).await;
    assert_eq!(
        node_groups(&pki, running.grpc_addr, None).await.unwrap().len(),
        3
    );
}
