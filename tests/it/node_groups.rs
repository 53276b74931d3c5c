//! NodeGroups and NodeGroupForNode: what CA asks first on every loop.

use ferroscale::proto::externalgrpc as pb;

use crate::support::fixtures::grpc::{node, GROUPS};
use crate::support::server::TestServer;

#[tokio::test]
async fn lists_every_group_with_its_bounds() {
    let s = TestServer::start(GROUPS).await;
    let groups = s
        .client
        .clone()
        .node_groups(pb::NodeGroupsRequest {})
        .await
        .unwrap()
        .into_inner()
        .node_groups;
    let got: Vec<_> = groups
        .iter()
        .map(|g| (g.id.as_str(), g.min_size, g.max_size))
        .collect();
    assert_eq!(
        got,
        vec![("batch", 0, 5), ("general", 1, 10), ("gpu", 0, 4)]
    );
    assert!(groups[1].debug.contains("m5.xlarge"), "{}", groups[1].debug);
    s.stop().await;
}

#[tokio::test]
async fn resolves_instances_by_provider_id_and_leaves_others_unmanaged() {
    let s = TestServer::start(GROUPS).await;
    let mut c = s.client.clone();
    for group in ["general", "batch"] {
        for i in s.instances(group).await {
            let got = c
                .node_group_for_node(pb::NodeGroupForNodeRequest {
                    node: Some(node(&i.id)),
                })
                .await
                .unwrap()
                .into_inner()
                .node_group
                .unwrap();
            assert_eq!(got.id, group, "instance {}", i.id);
            assert!(got.max_size > 0);
        }
    }
    let general = s.instances("general").await;
    assert!(
        general[0].id.starts_with("aws:///us-east-1a/i-"),
        "{}",
        general[0].id
    );
    assert!(s.instances("batch").await[0]
        .id
        .starts_with("memory:///batch/i-"));

    // Foreign, unknown and empty provider ids are unmanaged: OK with an empty id, never an error.
    for pid in [
        "aws:///us-east-1a/i-0000000000000dead",
        "gce://project/zone/vm",
        "",
    ] {
        let got = c
            .node_group_for_node(pb::NodeGroupForNodeRequest {
                node: Some(node(pid)),
            })
            .await
            .unwrap()
            .into_inner()
            .node_group
            .unwrap();
        assert_eq!(got.id, "", "{pid:?} must be unmanaged");
    }
    let got = c
        .node_group_for_node(pb::NodeGroupForNodeRequest { node: None })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(got.node_group.unwrap().id, "");
    s.stop().await;
}
