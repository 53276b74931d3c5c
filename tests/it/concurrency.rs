//! Parallel writes, as CA's parallel scale-up makes them: no lost update, never above max.

use ferroscale::proto::externalgrpc as pb;

use crate::support::server::{connect, TestServer};

const WIDE: &str = r#"
nodeGroups:
  - name: wide
    minSize: 0
    maxSize: 50
    targetSize: 0
    capacity: {cpu: 2, memory: 4Gi}
    labels: {topology.kubernetes.io/zone: us-west-2a}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_increases_never_exceed_max_nor_lose_updates() {
    let s = TestServer::start(WIDE).await;
    let mut tasks = Vec::new();
    for i in 0..120 {
        let addr = s.grpc_addr;
        tasks.push(tokio::spawn(async move {
            let mut c = connect(addr).await;
            c.node_group_increase_size(pb::NodeGroupIncreaseSizeRequest {
                delta: 1 + i % 2,
                id: "wide".into(),
            })
            .await
            .map(|_| 1 + i % 2)
            .map_err(|e| e.code())
        }));
    }
    let mut granted = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(d) => granted += d,
            Err(code) => assert_eq!(code, tonic::Code::FailedPrecondition),
        }
    }
    let target = s.target("wide").await;
    assert_eq!(target, granted, "every granted delta is counted once");
    assert!((49..=50).contains(&target), "filled to max, got {target}");
    let instances = s.instances("wide").await;
    assert_eq!(instances.len() as i32, target);
    let mut ids: Vec<_> = instances.iter().map(|i| i.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len() as i32, target, "instance ids are unique");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_deletes_and_increases_stay_consistent() {
    let s = TestServer::start(WIDE).await;
    let mut c = s.client.clone();
    c.node_group_increase_size(pb::NodeGroupIncreaseSizeRequest {
        delta: 30,
        id: "wide".into(),
    })
    .await
    .unwrap();
    let ids: Vec<String> = s
        .instances("wide")
        .await
        .into_iter()
        .map(|i| i.id)
        .collect();
    let mut tasks = Vec::new();
    for id in ids.into_iter().take(20) {
        let addr = s.grpc_addr;
        tasks.push(tokio::spawn(async move {
            let mut c = connect(addr).await;
            c.node_group_delete_nodes(pb::NodeGroupDeleteNodesRequest {
                nodes: vec![crate::support::fixtures::grpc::node(&id)],
                id: "wide".into(),
            })
            .await
            .map(|_| -1)
        }));
        tasks.push(tokio::spawn(async move {
            let mut c = connect(addr).await;
            c.node_group_increase_size(pb::NodeGroupIncreaseSizeRequest {
                delta: 1,
                id: "wide".into(),
            })
            .await
            .map(|_| 1)
        }));
    }
    let mut net = 30;
    for t in tasks {
        net += t.await.unwrap().unwrap();
    }
    assert_eq!(net, 30);
    assert_eq!(s.target("wide").await, 30);
    assert_eq!(s.instances("wide").await.len(), 30);
    s.stop().await;
}
