//! PricingNodePrice and PricingPodPrice from the groups' hourly prices, either generation.

use ferroscale::proto::externalgrpc as pb;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use prost::Message;
use tonic::Code;

use crate::support::fixtures::grpc::{node, pod, ts, GROUPS};
use crate::support::server::TestServer;

fn old_ts(seconds: i64) -> Option<meta::Time> {
    Some(meta::Time {
        seconds: Some(seconds),
        nanos: Some(0),
    })
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[tokio::test]
#[allow(deprecated)]
async fn node_price_is_hourly_price_times_hours() {
    let s = TestServer::start(GROUPS).await;
    let mut c = s.client.clone();
    let id = s.instances("general").await[0].id.clone();
    let price = c
        .pricing_node_price(pb::PricingNodePriceRequest {
            node: Some(node(&id)),
            start_timestamp: ts(1_000_000),
            end_timestamp: ts(1_000_000 + 2 * 3600),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .price;
    assert!(close(price, 0.384), "{price}");
    // Old generation: meta.v1.Time at fields 2/3, half an hour.
    let price = c
        .pricing_node_price(pb::PricingNodePriceRequest {
            node: Some(node(&id)),
            start_time: old_ts(0),
            end_time: old_ts(1800),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .price;
    assert!(close(price, 0.096), "{price}");
    // A node of no group is priced by its instance type.
    let mut foreign = node("aws:///us-east-1a/i-0123456789abcdef0");
    foreign.labels.insert(
        "node.kubernetes.io/instance-type".into(),
        "c5.2xlarge".into(),
    );
    let price = c
        .pricing_node_price(pb::PricingNodePriceRequest {
            node: Some(foreign),
            start_timestamp: ts(0),
            end_timestamp: ts(3600),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .price;
    assert!(close(price, 0.34), "{price}");
    s.stop().await;
}

#[tokio::test]
async fn node_price_errors() {
    let s = TestServer::start(GROUPS).await;
    let mut c = s.client.clone();
    let e = c
        .pricing_node_price(pb::PricingNodePriceRequest {
            node: Some(node("aws:///us-east-1a/i-0000000000000dead")),
            start_timestamp: ts(0),
            end_timestamp: ts(3600),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    let id = s.instances("general").await[0].id.clone();
    let e = c
        .pricing_node_price(pb::PricingNodePriceRequest {
            node: Some(node(&id)),
            start_timestamp: ts(3600),
            end_timestamp: ts(0),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("endTimestamp"), "{}", e.message());
    let e = c
        .pricing_node_price(pb::PricingNodePriceRequest {
            node: Some(node(&id)),
            end_timestamp: ts(0),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("startTimestamp"), "{}", e.message());
    s.stop().await;
}

#[tokio::test]
#[allow(deprecated)]
async fn pod_price_from_cheapest_unit_rates_in_both_generations() {
    let s = TestServer::start(GROUPS).await;
    let mut c = s.client.clone();
    // Cheapest rates: cpu from batch (0.34/2/8 = 0.02125 per vCPU-h), memory from batch (0.34/2/32 =
    // 0.0053125 per GiB-h). A 2 cpu / 4 GiB pod for 3 hours: (0.0425 + 0.02125) × 3.
    let expected = (2.0 * 0.02125 + 4.0 * 0.0053125) * 3.0;
    let p = pod("2", "4Gi");
    let by_bytes = c
        .pricing_pod_price(pb::PricingPodPriceRequest {
            pod_bytes: p.encode_to_vec(),
            start_timestamp: ts(0),
            end_timestamp: ts(3 * 3600),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .price;
    assert!(close(by_bytes, expected), "{by_bytes} != {expected}");
    let embedded = c
        .pricing_pod_price(pb::PricingPodPriceRequest {
            pod: Some(p.clone()),
            start_time: old_ts(0),
            end_time: old_ts(3 * 3600),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .price;
    assert!(close(embedded, expected), "{embedded}");
    // Both set: the bytes field wins.
    let both = c
        .pricing_pod_price(pb::PricingPodPriceRequest {
            pod: Some(pod("8", "32Gi")),
            pod_bytes: p.encode_to_vec(),
            start_timestamp: ts(0),
            end_timestamp: ts(3 * 3600),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .price;
    assert!(close(both, expected), "{both}");
    s.stop().await;
}

#[tokio::test]
async fn pod_price_rejects_bad_pods() {
    let s = TestServer::start(GROUPS).await;
    let mut c = s.client.clone();
    let e = c
        .pricing_pod_price(pb::PricingPodPriceRequest {
            pod_bytes: b"{\"kind\":\"Pod\"}".to_vec(),
            start_timestamp: ts(0),
            end_timestamp: ts(1),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("pod_bytes"), "{}", e.message());
    let e = c
        .pricing_pod_price(pb::PricingPodPriceRequest {
            pod_bytes: pod("lots", "1Gi").encode_to_vec(),
            start_timestamp: ts(0),
            end_timestamp: ts(1),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message()
            .contains("spec.containers[0].resources.requests.cpu"),
        "{}",
        e.message()
    );
    let e = c
        .pricing_pod_price(pb::PricingPodPriceRequest {
            start_timestamp: ts(0),
            end_timestamp: ts(1),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    s.stop().await;
}
