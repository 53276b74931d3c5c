//! NodeGroupTemplateNodeInfo: a complete v1.Node, identical in both protocol generations.

use std::collections::BTreeMap;

use ferroscale::proto::externalgrpc as pb;
use k8s_pb::api::core::v1 as core;
use prost::Message;

use crate::support::fixtures::grpc::GROUPS;
use crate::support::server::TestServer;

async fn template(
    s: &TestServer,
    id: &str,
) -> Result<pb::NodeGroupTemplateNodeInfoResponse, tonic::Status> {
    s.client
        .clone()
        .node_group_template_node_info(pb::NodeGroupTemplateNodeInfoRequest { id: id.into() })
        .await
        .map(|r| r.into_inner())
}

fn quantities(
    m: &BTreeMap<String, k8s_pb::apimachinery::pkg::api::resource::Quantity>,
) -> BTreeMap<&str, &str> {
    m.iter()
        .map(|(k, v)| (k.as_str(), v.string.as_deref().unwrap()))
        .collect()
}

#[tokio::test]
#[allow(deprecated)]
async fn both_generations_carry_the_same_complete_node() {
    let s = TestServer::start(GROUPS).await;
    for id in ["general", "batch", "gpu"] {
        let r = template(&s, id).await.unwrap();
        assert!(!r.node_bytes.is_empty(), "{id}: empty bytes would crash CA");
        let from_bytes = core::Node::decode(r.node_bytes.as_slice()).unwrap();
        assert_eq!(
            Some(&from_bytes),
            r.node_info.as_ref(),
            "{id}: generations differ"
        );
        let labels = &from_bytes.metadata.as_ref().unwrap().labels;
        for key in [
            "kubernetes.io/arch",
            "kubernetes.io/os",
            "node.kubernetes.io/instance-type",
            "kubernetes.io/hostname",
        ] {
            assert!(labels.contains_key(key), "{id}: missing label {key}");
        }
        let status = from_bytes.status.as_ref().unwrap();
        let ready = status
            .conditions
            .iter()
            .find(|c| c.r#type.as_deref() == Some("Ready"))
            .unwrap();
        assert_eq!(ready.status.as_deref(), Some("True"));
    }
    s.stop().await;
}

#[tokio::test]
async fn labels_taints_capacity_and_allocatable() {
    let s = TestServer::start(GROUPS).await;
    let node =
        core::Node::decode(template(&s, "general").await.unwrap().node_bytes.as_slice()).unwrap();
    let meta = node.metadata.unwrap();
    let labels = &meta.labels;
    assert_eq!(labels["topology.kubernetes.io/zone"], "us-east-1a");
    assert_eq!(labels["topology.kubernetes.io/region"], "us-east-1");
    assert_eq!(labels["node.kubernetes.io/instance-type"], "m5.xlarge");
    assert_eq!(labels["kubernetes.io/hostname"], meta.name.clone().unwrap());
    let status = node.status.unwrap();
    assert_eq!(
        quantities(&status.capacity),
        BTreeMap::from([
            ("cpu", "4"),
            ("memory", "16Gi"),
            ("pods", "58"),
            ("ephemeral-storage", "100Gi")
        ])
    );
    // Given cpu/memory win; the rest comes from the reserve formula (10% nodefs eviction for storage).
    assert_eq!(
        quantities(&status.allocatable),
        BTreeMap::from([
            ("cpu", "3920m"),
            ("memory", "15Gi"),
            ("pods", "58"),
            ("ephemeral-storage", "90Gi")
        ])
    );

    let gpu = core::Node::decode(template(&s, "gpu").await.unwrap().node_bytes.as_slice()).unwrap();
    let taints = gpu.spec.unwrap().taints;
    assert_eq!(taints.len(), 1);
    assert_eq!(
        (
            taints[0].key.as_deref(),
            taints[0].value.as_deref(),
            taints[0].effect.as_deref()
        ),
        (Some("nvidia.com/gpu"), Some("true"), Some("NoSchedule"))
    );
    let status = gpu.status.unwrap();
    assert_eq!(
        status.capacity["nvidia.com/gpu"].string.as_deref(),
        Some("1")
    );
    assert_eq!(
        status.allocatable["nvidia.com/gpu"].string.as_deref(),
        Some("1")
    );
    // No allocatable given: capacity minus the EKS reserve (4 cpu → 80m; 29 pods → 574Mi + 100Mi eviction).
    assert_eq!(status.allocatable["cpu"].string.as_deref(), Some("3920m"));
    assert_eq!(
        status.allocatable["memory"].string.as_deref(),
        Some("15710Mi")
    );
    assert_eq!(
        gpu.metadata.unwrap().labels["k8s.amazonaws.com/accelerator"],
        "nvidia-tesla-t4"
    );

    let batch =
        core::Node::decode(template(&s, "batch").await.unwrap().node_bytes.as_slice()).unwrap();
    let labels = batch.metadata.unwrap().labels;
    assert_eq!(labels["kubernetes.io/arch"], "amd64");
    assert_eq!(labels["kubernetes.io/os"], "linux");
    assert_eq!(
        batch.status.unwrap().capacity["pods"].string.as_deref(),
        Some("110")
    );
    s.stop().await;
}

#[tokio::test]
async fn unknown_group_is_not_found() {
    let s = TestServer::start(GROUPS).await;
    let e = template(&s, "ghost").await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);
    assert!(e.message().contains("ghost"));
    s.stop().await;
}
