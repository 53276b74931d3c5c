//! IncreaseSize, DeleteNodes and DecreaseTargetSize: every refusal leaves the group exactly as it was.

use ferroscale::proto::externalgrpc as pb;
use tonic::Code;

use crate::support::fixtures::grpc::{node, GROUPS};
use crate::support::server::TestServer;

async fn increase(s: &TestServer, id: &str, delta: i32) -> Result<(), tonic::Status> {
    s.client
        .clone()
        .node_group_increase_size(pb::NodeGroupIncreaseSizeRequest {
            delta,
            id: id.into(),
        })
        .await
        .map(|_| ())
}

async fn delete(s: &TestServer, id: &str, pids: &[&str]) -> Result<(), tonic::Status> {
    s.client
        .clone()
        .node_group_delete_nodes(pb::NodeGroupDeleteNodesRequest {
            nodes: pids.iter().map(|p| node(p)).collect(),
            id: id.into(),
        })
        .await
        .map(|_| ())
}

async fn decrease(s: &TestServer, id: &str, delta: i32) -> Result<(), tonic::Status> {
    s.client
        .clone()
        .node_group_decrease_target_size(pb::NodeGroupDecreaseTargetSizeRequest {
            delta,
            id: id.into(),
        })
        .await
        .map(|_| ())
}

#[tokio::test]
async fn increase_adds_instances_that_resolve_at_once() {
    let s = TestServer::start(GROUPS).await;
    increase(&s, "general", 3).await.unwrap();
    assert_eq!(s.target("general").await, 5);
    let instances = s.instances("general").await;
    assert_eq!(instances.len(), 5);
    let last = instances.last().unwrap();
    assert_eq!(
        last.status.as_ref().unwrap().instance_state,
        pb::instance_status::InstanceState::InstanceRunning as i32
    );
    let g = s
        .client
        .clone()
        .node_group_for_node(pb::NodeGroupForNodeRequest {
            node: Some(node(&last.id)),
        })
        .await
        .unwrap()
        .into_inner()
        .node_group
        .unwrap();
    assert_eq!(g.id, "general");
    s.stop().await;
}

#[tokio::test]
async fn increase_refusals_change_nothing() {
    let s = TestServer::start(GROUPS).await;
    for delta in [0, -1] {
        let e = increase(&s, "general", delta).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        assert!(e.message().contains("delta"), "{}", e.message());
    }
    let e = increase(&s, "general", 9).await.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert_eq!(e.message(), "size increase too large - desired:11 max:10");
    let e = increase(&s, "general", i32::MAX).await.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "no overflow: {e:?}");
    let e = increase(&s, "no-such-group", 1).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    assert!(e.message().contains("no-such-group"), "{}", e.message());
    assert_eq!(s.target("general").await, 2);
    assert_eq!(s.instances("general").await.len(), 2);
    increase(&s, "general", 8).await.unwrap();
    assert_eq!(
        s.target("general").await,
        10,
        "up to max exactly is allowed"
    );
    s.stop().await;
}

#[tokio::test]
async fn delete_removes_named_instances_and_lowers_the_target() {
    let s = TestServer::start(GROUPS).await;
    increase(&s, "general", 2).await.unwrap();
    let ids: Vec<String> = s
        .instances("general")
        .await
        .into_iter()
        .map(|i| i.id)
        .collect();
    delete(&s, "general", &[&ids[1], &ids[3], &ids[1]])
        .await
        .unwrap();
    assert_eq!(s.target("general").await, 2, "a duplicate counts once");
    let left: Vec<String> = s
        .instances("general")
        .await
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(left, vec![ids[0].clone(), ids[2].clone()]);
    s.stop().await;
}

#[tokio::test]
async fn delete_is_all_or_nothing() {
    let s = TestServer::start(GROUPS).await;
    increase(&s, "general", 2).await.unwrap();
    let general: Vec<String> = s
        .instances("general")
        .await
        .into_iter()
        .map(|i| i.id)
        .collect();
    let batch = s.instances("batch").await[0].id.clone();

    // One node of another group spoils the whole request.
    let e = delete(&s, "general", &[&general[0], &batch])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message().contains(&batch) && e.message().contains("general"),
        "{}",
        e.message()
    );
    let e = delete(
        &s,
        "general",
        &[&general[0], "aws:///us-east-1a/i-0000000000000dead"],
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);

    // A node without providerID cannot be matched.
    let e = s
        .client
        .clone()
        .node_group_delete_nodes(pb::NodeGroupDeleteNodesRequest {
            nodes: vec![pb::ExternalGrpcNode {
                name: "ip-10-0-0-1".into(),
                ..Default::default()
            }],
            id: "general".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message().contains("nodes[0].providerID"),
        "{}",
        e.message()
    );

    // min size 1 with 4 instances: deleting all 4 is refused, 3 is fine.
    let all: Vec<&str> = general.iter().map(String::as_str).collect();
    let e = delete(&s, "general", &all).await.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert!(e.message().contains("min size"), "{}", e.message());
    assert_eq!(s.target("general").await, 4);
    assert_eq!(s.instances("general").await.len(), 4);

    let e = delete(&s, "nope", &all).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);

    delete(&s, "general", &all[1..]).await.unwrap();
    assert_eq!(s.target("general").await, 1);
    s.stop().await;
}

#[tokio::test]
async fn decrease_only_cancels_unfulfilled_capacity() {
    let s = TestServer::start(GROUPS).await;
    // gpu can launch 2 instances; asking for 4 leaves 2 unfulfilled.
    increase(&s, "gpu", 4).await.unwrap();
    assert_eq!(s.target("gpu").await, 4);
    assert_eq!(
        s.instances("gpu").await.len(),
        4,
        "2 running + 2 placeholders"
    );

    for delta in [0, 1] {
        let e = decrease(&s, "gpu", delta).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "delta {delta}");
    }
    let e = decrease(&s, "gpu", -3).await.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert!(e.message().contains("existingNodes:2"), "{}", e.message());
    assert_eq!(s.target("gpu").await, 4);

    decrease(&s, "gpu", -2).await.unwrap();
    assert_eq!(s.target("gpu").await, 2);
    let left = s.instances("gpu").await;
    assert_eq!(left.len(), 2);
    assert!(left
        .iter()
        .all(|i| i.status.as_ref().unwrap().error_info.is_none()));
    let e = decrease(&s, "gpu", -1).await.unwrap_err();
    assert_eq!(
        e.code(),
        Code::FailedPrecondition,
        "existing instances are never removed"
    );
    s.stop().await;
}

#[tokio::test]
async fn deleting_a_placeholder_cancels_it() {
    let s = TestServer::start(GROUPS).await;
    increase(&s, "gpu", 3).await.unwrap();
    let placeholder = s.instances("gpu").await[2].id.clone();
    assert_eq!(placeholder, "aws:///us-east-1b/i-placeholder-gpu-0");
    delete(&s, "gpu", &[&placeholder]).await.unwrap();
    assert_eq!(s.target("gpu").await, 2);
    assert_eq!(s.instances("gpu").await.len(), 2);
    s.stop().await;
}
