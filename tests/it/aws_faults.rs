//! Capacity AWS could not fulfil, failed launches, throttling and AWS being down, through a fault proxy.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use ferroscale::cloud::aws::AwsCloud;
use ferroscale::cloud::Cloud;
use ferroscale::metrics::Metrics;
use ferroscale::proto::externalgrpc as pb;
use pb::instance_status::InstanceState;

use crate::support::aws_proxy::FaultProxy;
use crate::support::moto::{Moto, DISCOVERY};
use crate::support::server::TestServer;

fn now() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[tokio::test]
async fn unfulfilled_capacity_becomes_placeholders_with_the_launch_error() {
    let moto = Moto::start().await;
    moto.group("gpu", "g4dn.xlarge", 0, 4, 2, &[]).await;
    let proxy = FaultProxy::start(&moto.url).await;
    proxy.set(|f| {
        f.hide_instances = true;
        f.failed_activity = Some(
            "We currently do not have sufficient g4dn.xlarge capacity in the Availability Zone you requested (us-east-1a). Launching EC2 instance failed."
                .into(),
        );
        f.failed_activity_start = now() - 60;
    });
    let cloud = moto
        .cloud_via(&proxy.url, Duration::ZERO, Default::default())
        .await;
    let s = TestServer::start_with(cloud.clone()).await;
    let instances = s.instances("gpu").await;
    let ids: Vec<&str> = instances.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(
        ids,
        vec![
            "aws:///us-east-1a/i-placeholder-gpu-0",
            "aws:///us-east-1a/i-placeholder-gpu-1"
        ]
    );
    for i in &instances {
        let st = i.status.as_ref().unwrap();
        assert_eq!(st.instance_state, InstanceState::InstanceCreating as i32);
        let e = st.error_info.as_ref().unwrap();
        assert_eq!(
            (e.error_code.as_str(), e.instance_error_class),
            ("InsufficientInstanceCapacity", 1)
        );
    }

    // A failure older than our own scale-up is history: the new placeholders carry no error.
    proxy.set(|f| f.failed_activity_start = now() - 30);
    s.client
        .clone()
        .node_group_increase_size(pb::NodeGroupIncreaseSizeRequest {
            delta: 1,
            id: "gpu".into(),
        })
        .await
        .unwrap();
    s.client
        .clone()
        .refresh(pb::RefreshRequest {})
        .await
        .unwrap();
    let instances = s.instances("gpu").await;
    assert_eq!(instances.len(), 3);
    assert!(instances
        .iter()
        .all(|i| i.status.as_ref().unwrap().error_info.is_none()));

    // Cancelling unfulfilled capacity: DecreaseTargetSize and DeleteNodes of a placeholder.
    s.client
        .clone()
        .node_group_decrease_target_size(pb::NodeGroupDecreaseTargetSizeRequest {
            delta: -1,
            id: "gpu".into(),
        })
        .await
        .unwrap();
    s.client
        .clone()
        .node_group_delete_nodes(pb::NodeGroupDeleteNodesRequest {
            nodes: vec![crate::support::fixtures::grpc::node(
                "aws:///us-east-1a/i-placeholder-gpu-1",
            )],
            id: "gpu".into(),
        })
        .await
        .unwrap();
    assert_eq!(s.target("gpu").await, 1);
    s.stop().await;
}

#[tokio::test]
async fn aws_down_keeps_serving_the_last_snapshot_and_recovers() {
    let moto = Moto::start().await;
    moto.group("workers", "m5.large", 0, 10, 2, &[]).await;
    let proxy = FaultProxy::start(&moto.url).await;
    let metrics = Arc::new(Metrics::default());
    let cloud = moto
        .cloud_via(&proxy.url, Duration::ZERO, metrics.clone())
        .await;
    let s = TestServer::start_with_metrics(cloud.clone(), metrics).await;
    let mut c = s.client.clone();

    proxy.set(|f| f.down = true);
    let e = c.refresh(pb::RefreshRequest {}).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unavailable, "{e:?}");
    // Reads: the last good snapshot.
    assert_eq!(s.target("workers").await, 2);
    assert_eq!(s.instances("workers").await.len(), 2);
    // Writes: UNAVAILABLE, and nothing changes.
    let e = c
        .node_group_increase_size(pb::NodeGroupIncreaseSizeRequest {
            delta: 1,
            id: "workers".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unavailable);
    assert_eq!(s.target("workers").await, 2);
    let (status, ready) = s.get("/readyz").await;
    assert_eq!(status, 200, "still serving");
    assert!(ready.contains("state age"), "{ready}");
    let (_, metrics) = s.get("/metrics").await;
    assert!(
        metrics.contains("endpoint=\"autoscaling/DescribeAutoScalingGroups\",status=\"error\"")
            || metrics
                .contains("status=\"error\",endpoint=\"autoscaling/DescribeAutoScalingGroups\""),
        "{metrics}"
    );

    // AWS returns: the next refresh after the retry delay succeeds by itself.
    proxy.set(|f| f.down = false);
    moto.asg
        .set_desired_capacity()
        .auto_scaling_group_name("workers")
        .desired_capacity(3)
        .send()
        .await
        .unwrap();
    tokio::time::sleep(
        ferroscale::cloud::aws::ttl::RETRY_AFTER_FAILURE + Duration::from_millis(200),
    )
    .await;
    c.refresh(pb::RefreshRequest {}).await.unwrap();
    assert_eq!(s.target("workers").await, 3);
    s.stop().await;
}

#[tokio::test]
async fn throttling_fails_the_refresh_not_the_reads() {
    let moto = Moto::start().await;
    moto.group("workers", "m5.large", 0, 10, 1, &[]).await;
    let proxy = FaultProxy::start(&moto.url).await;
    let cloud = moto
        .cloud_via(&proxy.url, Duration::ZERO, Default::default())
        .await;
    proxy.set(|f| f.throttle = 1);
    let e = cloud.refresh().await.unwrap_err();
    assert!(e.to_string().contains("Throttling"), "{e}");
    assert_eq!(cloud.snapshot().group("workers").unwrap().target_size, 1);
    assert!(proxy
        .requests
        .lock()
        .unwrap()
        .contains(&"DescribeAutoScalingGroups".to_string()));
}

#[tokio::test]
async fn throttled_calls_are_retried_with_backoff() {
    let moto = Moto::start().await;
    moto.group("workers", "m5.large", 0, 10, 1, &[]).await;
    let proxy = FaultProxy::start(&moto.url).await;
    let mut settings = moto.settings(&[DISCOVERY], &[]);
    settings.endpoint_url = Some(proxy.url.clone());
    settings.refresh_interval = Duration::ZERO;
    settings.max_attempts = Some(3);
    let cloud = AwsCloud::connect(settings, Default::default())
        .await
        .unwrap();
    moto.asg
        .set_desired_capacity()
        .auto_scaling_group_name("workers")
        .desired_capacity(2)
        .send()
        .await
        .unwrap();
    proxy.set(|f| f.throttle = 2);
    let before = proxy.requests.lock().unwrap().len();
    cloud.refresh().await.unwrap();
    assert_eq!(cloud.snapshot().group("workers").unwrap().target_size, 2);
    let sent: Vec<String> = proxy.requests.lock().unwrap()[before..].to_vec();
    assert_eq!(
        sent.iter()
            .filter(|a| *a == "DescribeAutoScalingGroups")
            .count(),
        3,
        "two throttled attempts, then success: {sent:?}"
    );
}
