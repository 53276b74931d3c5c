//! What a caller can make `serve` do is bounded: requests up to 16 MiB are taken, oversized ids are refused
//! before they cost anything, and a client that never sends its headers is disconnected.

use ferroscale::proto::externalgrpc as pb;
use tonic::Code;

use crate::support::fixtures::grpc::{node, GROUPS};
use crate::support::moto::{Moto, DISCOVERY, REGION};
use crate::support::process::Served;
use crate::support::server::{connect, TestServer};

#[tokio::test]
async fn a_hundred_one_mebibyte_ids_are_refused_and_cost_no_memory() {
    let moto = Moto::start().await;
    moto.group("workers", "m5.large", 0, 10, 1, &[]).await;
    let dir = tempfile::tempdir().unwrap();
    let prices = dir.path().join("prices.yaml");
    std::fs::write(
        &prices,
        "instanceTypes:\n  m5.large: {pricePerHour: 0.096}\n",
    )
    .unwrap();
    let served = Served::start(
        &[
            "--cloud",
            "aws",
            "--aws-region",
            REGION,
            "--node-group-auto-discovery",
            DISCOVERY,
            "--pricing-source",
            "file",
            "--price-overrides",
            prices.to_str().unwrap(),
        ],
        &[("AWS_ENDPOINT_URL", &moto.url)],
    )
    .await;
    let mut c = connect(served.grpc)
        .await
        .max_encoding_message_size(16 << 20);
    // Warm up the server's buffers with requests of the same size.
    let id = "x".repeat(1 << 20);
    let _ = c
        .node_group_target_size(pb::NodeGroupTargetSizeRequest { id: id.clone() })
        .await;
    let before = served.rss_kib();
    for i in 0..100 {
        let id = format!("{i:03}{}", &id[3..]);
        let e = match i % 4 {
            0 => c
                .node_group_increase_size(pb::NodeGroupIncreaseSizeRequest { delta: 1, id })
                .await
                .map(|_| ()),
            1 => c
                .node_group_decrease_target_size(pb::NodeGroupDecreaseTargetSizeRequest {
                    delta: -1,
                    id,
                })
                .await
                .map(|_| ()),
            2 => c
                .node_group_delete_nodes(pb::NodeGroupDeleteNodesRequest {
                    nodes: vec![node("aws:///us-east-1a/i-1")],
                    id,
                })
                .await
                .map(|_| ()),
            _ => c
                .node_group_for_node(pb::NodeGroupForNodeRequest {
                    node: Some(pb::ExternalGrpcNode {
                        provider_id: id,
                        ..Default::default()
                    }),
                })
                .await
                .map(|_| ()),
        }
        .unwrap_err();
        assert_eq!(
            e.code(),
            Code::InvalidArgument,
            "{}",
            &e.message()[..80.min(e.message().len())]
        );
        assert!(e.message().len() < 200, "the answer does not echo the id");
    }
    let after = served.rss_kib();
    assert!(
        after < before + 32 * 1024,
        "RSS grew from {before} KiB to {after} KiB"
    );
    // The server still answers.
    assert_eq!(
        c.node_group_target_size(pb::NodeGroupTargetSizeRequest {
            id: "workers".into()
        })
        .await
        .unwrap()
        .into_inner()
        .target_size,
        1
    );
}

/// A client that opens the operations listener and never finishes its headers (slow loris) is cut off;
/// the probes and Prometheus keep being answered meanwhile.
#[tokio::test]
async fn a_client_that_never_sends_its_headers_is_disconnected() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let s = TestServer::start(GROUPS).await;
    let mut slow = tokio::net::TcpStream::connect(s.http_addr).await.unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    assert_eq!(s.get("/healthz").await.0, 200, "others are served");
    let mut buf = Vec::new();
    let read = tokio::time::timeout(
        ferroscale::http::HEADER_READ_TIMEOUT * 3,
        slow.read_to_end(&mut buf),
    )
    .await
    .expect("the server closes the connection after its header-read timeout");
    assert!(read.is_ok() || buf.is_empty(), "{read:?}");
    assert!(
        !String::from_utf8_lossy(&buf).contains("200 OK"),
        "no answer to half a request"
    );
    s.stop().await;
}

#[tokio::test]
async fn accepts_requests_up_to_16_mib() {
    let s = TestServer::start(GROUPS).await;
    let mut big = node("aws:///us-east-1a/i-0123456789abcdef0");
    big.annotations.insert("blob".into(), "x".repeat(12 << 20));
    let e = s
        .client
        .clone()
        .node_group_delete_nodes(pb::NodeGroupDeleteNodesRequest {
            nodes: vec![big],
            id: "ghost".into(),
        })
        .await
        .unwrap_err();
    // Decoded and answered by the handler, not refused for its size.
    assert_eq!(e.code(), tonic::Code::NotFound, "{e:?}");
    s.stop().await;
}
