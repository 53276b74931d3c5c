//! `--cloud aws` discovery and caching against moto: groups by tags and by name, changes made outside
//! seen after a refresh, and reads between refreshes costing no AWS call.

use std::time::Duration;

use ferroscale::cloud::aws::AwsCloud;
use ferroscale::cloud::Cloud;
use ferroscale::proto::externalgrpc as pb;

use crate::support::fixtures::grpc::node;
use crate::support::moto::{Moto, DISCOVERY};
use crate::support::server::TestServer;

fn ids(cloud: &dyn Cloud) -> Vec<String> {
    cloud.snapshot().groups().map(|g| g.id.clone()).collect()
}

#[tokio::test]
async fn discovers_by_tags_and_by_name() {
    let moto = Moto::start().await;
    moto.group("workers", "m5.large", 0, 10, 2, &[]).await;
    moto.group("gpu", "g4dn.xlarge", 0, 4, 0, &[]).await;
    // Tagged for another cluster: only the enabled tag, not this cluster's.
    moto.asg
        .create_auto_scaling_group()
        .auto_scaling_group_name("other-cluster")
        .launch_configuration_name({
            moto.asg
                .create_launch_configuration()
                .launch_configuration_name("other-lc")
                .image_id("ami-12c6146b")
                .instance_type("t3.micro")
                .send()
                .await
                .unwrap();
            "other-lc"
        })
        .min_size(0)
        .max_size(3)
        .availability_zones("us-east-1a")
        .tags(
            aws_sdk_autoscaling::types::Tag::builder()
                .resource_id("other-cluster")
                .resource_type("auto-scaling-group")
                .key("k8s.io/cluster-autoscaler/enabled")
                .value("true")
                .build(),
        )
        .send()
        .await
        .unwrap();

    let cloud = moto.cloud(&[DISCOVERY], &[]).await;
    assert_eq!(ids(cloud.as_ref()), vec!["gpu", "workers"]);
    assert!(cloud.readiness().ready);

    // By name, with the flag's bounds winning; a launch configuration gives the type.
    let named = moto.cloud(&[], &["1:7:other-cluster"]).await;
    let s = named.snapshot();
    let g = s.group("other-cluster").unwrap();
    assert_eq!((g.min_size, g.max_size), (1, 7));
    assert_eq!(
        g.template.labels["node.kubernetes.io/instance-type"],
        "t3.micro"
    );
    assert_eq!(
        g.template.capacity.pods, 4,
        "t3.micro: 2 ENIs × (2 − 1) + 2"
    );

    // Both together: union.
    let both = moto.cloud(&[DISCOVERY], &["1:7:other-cluster"]).await;
    assert_eq!(ids(both.as_ref()), vec!["gpu", "other-cluster", "workers"]);
}

#[tokio::test]
async fn instances_resolve_and_refresh_sees_outside_changes() {
    let moto = Moto::start().await;
    moto.group("workers", "m5.large", 0, 10, 2, &[]).await;
    let cloud = moto.cloud(&[DISCOVERY], &[]).await;
    let s = TestServer::start_with(cloud.clone()).await;
    let instances = s.instances("workers").await;
    assert_eq!(instances.len(), 2);
    for i in &instances {
        assert!(i.id.starts_with("aws:///us-east-1a/i-"), "{}", i.id);
        let g = s
            .client
            .clone()
            .node_group_for_node(pb::NodeGroupForNodeRequest {
                node: Some(node(&i.id)),
            })
            .await
            .unwrap()
            .into_inner()
            .node_group
            .unwrap();
        assert_eq!(g.id, "workers");
    }

    // Someone else changes AWS: a new group appears and the old one is resized.
    moto.group("late", "c5.large", 0, 5, 1, &[]).await;
    moto.asg
        .set_desired_capacity()
        .auto_scaling_group_name("workers")
        .desired_capacity(4)
        .send()
        .await
        .unwrap();
    let before = cloud.aws_calls();
    s.client
        .clone()
        .refresh(pb::RefreshRequest {})
        .await
        .unwrap();
    assert_eq!(
        cloud.aws_calls(),
        before,
        "refresh interval not elapsed: no AWS call"
    );
    assert_eq!(
        ids(cloud.as_ref()),
        vec!["workers"],
        "the snapshot is kept until then"
    );
    s.stop().await;

    // The same changes seen by a cloud whose interval has elapsed, then a group deleted outside is dropped.
    let mut settings = moto.settings(&[DISCOVERY], &[]);
    settings.refresh_interval = Duration::from_millis(200);
    let eager = AwsCloud::connect(settings, Default::default())
        .await
        .unwrap();
    assert_eq!(ids(eager.as_ref()), vec!["late", "workers"]);
    assert_eq!(eager.snapshot().group("workers").unwrap().target_size, 4);
    moto.asg
        .delete_auto_scaling_group()
        .auto_scaling_group_name("late")
        .force_delete(true)
        .send()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    eager.refresh().await.unwrap();
    assert_eq!(
        ids(eager.as_ref()),
        vec!["workers"],
        "deleted groups are dropped"
    );

    // Concurrent Refresh calls once the interval has elapsed share one rebuild (single flight).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = eager.aws_calls();
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let c = eager.clone();
        tasks.push(tokio::spawn(async move { c.refresh().await }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let one_refresh = eager.aws_calls() - before;
    assert!(one_refresh >= 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = eager.aws_calls();
    eager.refresh().await.unwrap();
    assert_eq!(
        one_refresh,
        eager.aws_calls() - before,
        "20 concurrent refreshes cost one"
    );
}

#[tokio::test]
async fn a_thousand_reads_between_refreshes_cost_no_aws_call() {
    let moto = Moto::start().await;
    moto.group("workers", "m5.large", 0, 10, 3, &[]).await;
    moto.group("gpu", "g4dn.xlarge", 0, 4, 0, &[]).await;
    let cloud = moto.cloud(&[DISCOVERY], &[]).await;
    let s = TestServer::start_with(cloud.clone()).await;
    let instance = s.instances("workers").await[0].id.clone();
    let before = cloud.aws_calls();
    let mut c = s.client.clone();
    for i in 0..200 {
        c.refresh(pb::RefreshRequest {}).await.unwrap();
        c.node_groups(pb::NodeGroupsRequest {}).await.unwrap();
        c.node_group_for_node(pb::NodeGroupForNodeRequest {
            node: Some(node(&instance)),
        })
        .await
        .unwrap();
        let id = if i % 2 == 0 { "workers" } else { "gpu" };
        c.node_group_target_size(pb::NodeGroupTargetSizeRequest { id: id.into() })
            .await
            .unwrap();
        c.node_group_template_node_info(pb::NodeGroupTemplateNodeInfoRequest { id: id.into() })
            .await
            .unwrap();
    }
    assert_eq!(
        cloud.aws_calls(),
        before,
        "1,000 reads must cost zero AWS calls"
    );
    s.stop().await;
}
