//! IncreaseSize, DeleteNodes and DecreaseTargetSize on Auto Scaling groups (moto): our own checks protect
//! users (moto accepts a desired capacity above max), and the cache is right at once after a write.

use ferroscale::cloud::Cloud;
use ferroscale::proto::externalgrpc as pb;
use tonic::Code;

use crate::support::fixtures::grpc::node;
use crate::support::moto::{Moto, DISCOVERY};
use crate::support::server::TestServer;

#[tokio::test]
async fn increase_delete_decrease_with_every_refusal() {
    let moto = Moto::start().await;
    moto.group("workers", "m5.large", 1, 5, 2, &[]).await;
    let cloud = moto.cloud(&[DISCOVERY], &[]).await;
    let s = TestServer::start_with(cloud.clone()).await;
    let mut c = s.client.clone();

    c.node_group_increase_size(pb::NodeGroupIncreaseSizeRequest {
        delta: 2,
        id: "workers".into(),
    })
    .await
    .unwrap();
    assert_eq!(s.target("workers").await, 4, "the cache is right at once");
    assert_eq!(moto.desired("workers").await, 4);

    let e = c
        .node_group_increase_size(pb::NodeGroupIncreaseSizeRequest {
            delta: 2,
            id: "workers".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert_eq!(e.message(), "size increase too large - desired:6 max:5");
    assert_eq!(moto.desired("workers").await, 4, "nothing sent to AWS");

    // Decrease: only what is not yet an instance. moto launches at once, so nothing can be cancelled.
    let e = c
        .node_group_decrease_target_size(pb::NodeGroupDecreaseTargetSizeRequest {
            delta: -1,
            id: "workers".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");

    let fresh = moto.cloud(&[DISCOVERY], &[]).await;
    let ids: Vec<String> = fresh
        .snapshot()
        .group("workers")
        .unwrap()
        .instances
        .iter()
        .map(|i| i.id.clone())
        .collect();
    assert_eq!(ids.len(), 4);
    let s2 = TestServer::start_with(fresh.clone()).await;
    let mut c2 = s2.client.clone();
    let e = c2
        .node_group_delete_nodes(pb::NodeGroupDeleteNodesRequest {
            nodes: vec![node(&ids[0]), node("aws:///us-east-1a/i-0000000000000dead")],
            id: "workers".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(moto.desired("workers").await, 4, "all or nothing");
    let e = c2
        .node_group_delete_nodes(pb::NodeGroupDeleteNodesRequest {
            nodes: ids.iter().map(|i| node(i)).collect(),
            id: "workers".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "min size 1");

    c2.node_group_delete_nodes(pb::NodeGroupDeleteNodesRequest {
        nodes: vec![node(&ids[0]), node(&ids[1])],
        id: "workers".into(),
    })
    .await
    .unwrap();
    assert_eq!(s2.target("workers").await, 2);
    assert_eq!(moto.desired("workers").await, 2);
    let states: Vec<i32> = s2
        .instances("workers")
        .await
        .iter()
        .filter(|i| i.id == ids[0] || i.id == ids[1])
        .map(|i| i.status.as_ref().unwrap().instance_state)
        .collect();
    assert_eq!(
        states,
        vec![pb::instance_status::InstanceState::InstanceDeleting as i32; 2]
    );
    s.stop().await;
    s2.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_increases_never_exceed_max() {
    let moto = Moto::start().await;
    moto.group("wide", "t3.micro", 0, 12, 0, &[]).await;
    let cloud = moto.cloud(&[DISCOVERY], &[]).await;
    let s = TestServer::start_with(cloud.clone()).await;
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let mut c = s.client.clone();
        tasks.push(tokio::spawn(async move {
            c.node_group_increase_size(pb::NodeGroupIncreaseSizeRequest {
                delta: 1,
                id: "wide".into(),
            })
            .await
            .is_ok()
        }));
    }
    let mut granted = 0;
    for t in tasks {
        granted += i32::from(t.await.unwrap());
    }
    assert_eq!(granted, 12);
    assert_eq!(s.target("wide").await, 12);
    assert_eq!(moto.desired("wide").await, 12);
    s.stop().await;
}
