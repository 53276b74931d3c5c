//! Writes that must never destroy capacity on a doubt, against moto: replicas with old snapshots, a
//! refresh racing a write, a write whose RPC CA's deadline cancelled, a DeleteNodes that fails halfway,
//! and AWS errors that keep their meaning.

use std::sync::Arc;
use std::time::Duration;

use ferroscale::cloud::aws::AwsCloud;
use ferroscale::cloud::{Cloud, WriteGuard};
use ferroscale::metrics::Metrics;
use ferroscale::proto::externalgrpc as pb;
use tonic::Code;

use crate::support::aws_proxy::{Failure, FaultProxy};
use crate::support::fixtures::grpc::node;
use crate::support::moto::{Moto, DISCOVERY};
use crate::support::server::TestServer;

fn increase(id: &str, delta: i32) -> pb::NodeGroupIncreaseSizeRequest {
    pb::NodeGroupIncreaseSizeRequest {
        delta,
        id: id.into(),
    }
}

#[tokio::test]
async fn two_servers_with_old_snapshots_never_lower_the_desired_capacity() {
    let moto = Moto::start().await;
    moto.group("workers", "m5.large", 0, 10, 2, &[]).await;
    // Both replicas read the group at desired 2 and do not refresh again for an hour.
    let a = TestServer::start_with(moto.cloud(&[DISCOVERY], &[]).await).await;
    let b = TestServer::start_with(moto.cloud(&[DISCOVERY], &[]).await).await;

    a.client
        .clone()
        .node_group_increase_size(increase("workers", 2))
        .await
        .unwrap();
    assert_eq!(moto.desired("workers").await, 4);
    // B's snapshot still says 2: an absolute write from it would send 3 and terminate a node.
    b.client
        .clone()
        .node_group_increase_size(increase("workers", 1))
        .await
        .unwrap();
    assert_eq!(moto.desired("workers").await, 5, "fresh desired + delta");
    assert_eq!(b.target("workers").await, 5, "B now serves what AWS holds");

    // Max is checked against the fresh size too: A (snapshot 4) may not add 6.
    let e = a
        .client
        .clone()
        .node_group_increase_size(increase("workers", 6))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert_eq!(e.message(), "size increase too large - desired:11 max:10");
    assert_eq!(moto.desired("workers").await, 5);
    assert_eq!(
        a.target("workers").await,
        5,
        "a refused write still shows the fresh read"
    );
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_that_read_aws_before_a_write_does_not_undo_it() {
    let moto = Moto::start().await;
    moto.group("workers", "m5.large", 0, 10, 2, &[]).await;
    let proxy = FaultProxy::start(&moto.url).await;
    let cloud = moto
        .cloud_via(&proxy.url, Duration::ZERO, Default::default())
        .await;

    // The refresh reads desired 2, and its answer is slow to come back...
    proxy.set(|f| f.hold = Some("DescribeAutoScalingGroups".into()));
    let refreshing = tokio::spawn({
        let cloud = cloud.clone();
        async move { cloud.refresh().await }
    });
    proxy.until_held().await;
    // ...while a write lands.
    cloud
        .increase_size("workers", 3, &WriteGuard::always())
        .await
        .unwrap();
    assert_eq!(cloud.snapshot().group("workers").unwrap().target_size, 5);
    proxy.release();
    refreshing.await.unwrap().unwrap();
    assert_eq!(
        cloud.snapshot().group("workers").unwrap().target_size,
        5,
        "the refresh's older read does not overwrite the write"
    );
    // The next refresh reads after the write and agrees.
    cloud.refresh().await.unwrap();
    assert_eq!(cloud.snapshot().group("workers").unwrap().target_size, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_cancelled_by_the_deadline_still_finishes_and_is_recorded() {
    let moto = Moto::start().await;
    moto.group("workers", "m5.large", 0, 10, 2, &[]).await;
    let proxy = FaultProxy::start(&moto.url).await;
    let cloud = moto
        .cloud_via(&proxy.url, Duration::from_secs(3600), Default::default())
        .await;
    let s = TestServer::start_with(cloud.clone()).await;

    // AWS carries the SetDesiredCapacity out, but its answer comes after CA's deadline.
    proxy.set(|f| f.hold = Some("SetDesiredCapacity".into()));
    let mut request = tonic::Request::new(increase("workers", 1));
    request.set_timeout(Duration::from_millis(300));
    let call = tokio::spawn({
        let mut c = s.client.clone();
        async move { c.node_group_increase_size(request).await }
    });
    proxy.until_held().await;
    let e = call.await.unwrap().unwrap_err();
    assert!(
        matches!(e.code(), Code::Cancelled | Code::DeadlineExceeded),
        "{e:?}"
    );
    proxy.release();
    // Without any Refresh, the snapshot learns what AWS did.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while s.target("workers").await != 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the write was not recorded"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(moto.desired("workers").await, 3);
    s.stop().await;
}

#[tokio::test]
async fn delete_nodes_failing_halfway_says_what_happened_and_a_retry_is_safe() {
    let moto = Moto::start().await;
    moto.group("workers", "m5.large", 0, 10, 3, &[]).await;
    let proxy = FaultProxy::start(&moto.url).await;
    let cloud = moto
        .cloud_via(&proxy.url, Duration::from_secs(3600), Default::default())
        .await;
    let s = TestServer::start_with(cloud.clone()).await;
    let ids: Vec<String> = s
        .instances("workers")
        .await
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(ids.len(), 3);
    let request = pb::NodeGroupDeleteNodesRequest {
        nodes: ids.iter().map(|i| node(i)).collect(),
        id: "workers".into(),
    };

    // The first termination goes through, the second is throttled.
    proxy.set(|f| {
        f.failures = vec![Failure {
            skip: 1,
            times: 1,
            ..Failure::new("TerminateInstanceInAutoScalingGroup", 400, "Throttling")
        }]
    });
    let e = s
        .client
        .clone()
        .node_group_delete_nodes(request.clone())
        .await
        .unwrap_err();
    assert_eq!(
        e.code(),
        Code::Unavailable,
        "throttling is worth a retry: {e:?}"
    );
    let short = |id: &String| id.rsplit('/').next().unwrap().to_string();
    for part in [
        format!("deleted [{:?}]", ids[0]),
        format!("failed {:?}", ids[1]),
        format!("not attempted [{:?}]", ids[2]),
    ] {
        assert!(e.message().contains(&part), "{part} in {}", e.message());
    }
    // The snapshot shows what AWS holds: one instance gone, the target one lower.
    assert_eq!(moto.desired("workers").await, 2);
    assert_eq!(s.target("workers").await, 2);
    let left: Vec<String> = s
        .instances("workers")
        .await
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert!(!left.contains(&ids[0]), "{:?} {left:?}", short(&ids[0]));

    // CA retries the same call: the instance already gone is not an error and is not counted twice.
    s.client
        .clone()
        .node_group_delete_nodes(request)
        .await
        .unwrap();
    assert_eq!(moto.desired("workers").await, 0);
    assert_eq!(s.target("workers").await, 0);
    assert_eq!(
        proxy.count("TerminateInstanceInAutoScalingGroup"),
        4,
        "i0 once, i1 twice (throttled, then done), i2 once"
    );
    s.stop().await;
}

#[tokio::test]
async fn aws_errors_keep_their_meaning() {
    let moto = Moto::start().await;
    moto.group("workers", "m5.large", 0, 10, 1, &[]).await;
    let proxy = FaultProxy::start(&moto.url).await;
    let metrics = Arc::new(Metrics::default());
    let mut settings = moto.settings(&[DISCOVERY], &[]);
    settings.endpoint_url = Some(proxy.url.clone());
    let cloud = AwsCloud::connect(settings, metrics.clone()).await.unwrap();
    let s = TestServer::start_with_metrics(cloud, metrics).await;
    let mut c = s.client.clone();
    for (status, code, wanted) in [
        (403, "AccessDenied", Code::PermissionDenied),
        (400, "ValidationError", Code::FailedPrecondition),
        (400, "Throttling", Code::Unavailable),
        (503, "ServiceUnavailable", Code::Unavailable),
    ] {
        proxy.set(|f| f.failures = vec![Failure::new("SetDesiredCapacity", status, code)]);
        let e = c
            .node_group_increase_size(increase("workers", 1))
            .await
            .unwrap_err();
        assert_eq!(e.code(), wanted, "{code}: {e:?}");
        assert!(
            e.message().contains("autoscaling/SetDesiredCapacity") && e.message().contains(code),
            "{code}: the message names the action and AWS's code: {}",
            e.message()
        );
    }
    assert_eq!(moto.desired("workers").await, 1, "nothing was changed");
    let (_, text) = s.get("/metrics").await;
    for code in ["AccessDenied", "ValidationError", "Throttling"] {
        let line = format!("status=\"{code}\"");
        assert!(
            text.lines()
                .any(|l| l.contains("SetDesiredCapacity") && l.contains(&line)),
            "{line} in\n{text}"
        );
    }
    s.stop().await;
}

/// A missing IAM permission reaches CA as PERMISSION_DENIED naming AWS's action and code once, whether
/// IncreaseSize's own call is refused, its fresh read of the group, or a Refresh, also when the failed
/// refresh is repeated to the next caller before another attempt is due.
#[tokio::test]
async fn a_missing_permission_reaches_ca_as_permission_denied_once() {
    let moto = Moto::start().await;
    moto.group("workers", "m5.large", 0, 10, 1, &[]).await;
    let proxy = FaultProxy::start(&moto.url).await;
    let cloud = moto
        .cloud_via(&proxy.url, Duration::ZERO, Default::default())
        .await;
    let s = TestServer::start_with(cloud).await;
    let mut c = s.client.clone();
    let denied_once = |e: &tonic::Status, action: &str| {
        assert_eq!(e.code(), Code::PermissionDenied, "{action}: {e:?}");
        assert!(
            e.message()
                .starts_with(&format!("{action}: permission denied (AccessDenied): ")),
            "{action}: {}",
            e.message()
        );
        assert_eq!(e.message().matches("permission denied").count(), 1, "{e:?}");
        assert!(!e.message().contains("unavailable"), "{e:?}");
    };

    proxy.set(|f| f.failures = vec![Failure::new("SetDesiredCapacity", 403, "AccessDenied")]);
    let e = c
        .node_group_increase_size(increase("workers", 1))
        .await
        .unwrap_err();
    denied_once(&e, "autoscaling/SetDesiredCapacity");

    let describe = "autoscaling/DescribeAutoScalingGroups";
    proxy.set(|f| {
        f.failures = vec![Failure::new(
            "DescribeAutoScalingGroups",
            403,
            "AccessDenied",
        )]
    });
    let e = c
        .node_group_increase_size(increase("workers", 1))
        .await
        .unwrap_err();
    denied_once(&e, describe);
    let e = c.refresh(pb::RefreshRequest {}).await.unwrap_err();
    denied_once(&e, describe);
    // The next Refresh comes before a retry is due: the same error, with the same meaning.
    let calls = proxy.count("DescribeAutoScalingGroups");
    let e = c.refresh(pb::RefreshRequest {}).await.unwrap_err();
    assert_eq!(
        proxy.count("DescribeAutoScalingGroups"),
        calls,
        "not asked again"
    );
    denied_once(&e, describe);
    assert_eq!(moto.desired("workers").await, 1, "nothing was changed");
    s.stop().await;
}

#[tokio::test]
async fn a_transient_error_on_one_groups_data_keeps_the_group() {
    let moto = Moto::start().await;
    moto.group("gpu", "g4dn.xlarge", 0, 4, 2, &[]).await;
    let proxy = FaultProxy::start(&moto.url).await;
    proxy.set(|f| {
        f.hide_instances = true;
        f.failed_activity = Some("Could not launch: InsufficientInstanceCapacity".into());
        f.failed_activity_start = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
            - 60;
    });
    let cloud = moto
        .cloud_via(&proxy.url, Duration::ZERO, Default::default())
        .await;
    let error_of = |c: &AwsCloud| {
        c.snapshot()
            .group("gpu")
            .ok()
            .and_then(|g| g.launch_error.clone())
            .map(|e| e.code)
    };
    assert_eq!(
        error_of(&cloud).as_deref(),
        Some("InsufficientInstanceCapacity")
    );

    // Its scaling activities cannot be read now: the group stays, with its last known launch error
    // and the sizes just read.
    proxy.set(|f| f.failures = vec![Failure::new("DescribeScalingActivities", 400, "Throttling")]);
    moto.asg
        .set_desired_capacity()
        .auto_scaling_group_name("gpu")
        .desired_capacity(3)
        .send()
        .await
        .unwrap();
    cloud.refresh().await.unwrap();
    let g = cloud.snapshot().group("gpu").unwrap().clone();
    assert_eq!(g.target_size, 3);
    assert_eq!(
        error_of(&cloud).as_deref(),
        Some("InsufficientInstanceCapacity")
    );

    // A new group whose launch template cannot be read is left out, the others are not.
    proxy.set(|f| {
        f.failures = vec![Failure::new(
            "DescribeLaunchTemplateVersions",
            403,
            "UnauthorizedOperation",
        )]
    });
    moto.group("new", "m5.large", 0, 4, 0, &[]).await;
    cloud.refresh().await.unwrap();
    assert!(cloud.snapshot().group("gpu").is_ok());
    assert!(cloud.snapshot().group("new").is_err());
    proxy.set(|f| f.failures.clear());
    cloud.refresh().await.unwrap();
    assert!(
        cloud.snapshot().group("new").is_ok(),
        "read once AWS answers"
    );

    // A group disappears when AWS says it is gone.
    moto.asg
        .delete_auto_scaling_group()
        .auto_scaling_group_name("new")
        .force_delete(true)
        .send()
        .await
        .unwrap();
    cloud.refresh().await.unwrap();
    assert!(cloud.snapshot().group("new").is_err());
}

#[tokio::test]
async fn readiness_fails_once_the_state_is_five_intervals_old() {
    let moto = Moto::start().await;
    moto.group("workers", "m5.large", 0, 10, 1, &[]).await;
    let proxy = FaultProxy::start(&moto.url).await;
    let cloud = moto
        .cloud_via(&proxy.url, Duration::from_secs(1), Default::default())
        .await;
    let s = TestServer::start_with(cloud).await;
    let (status, body) = s.get("/readyz").await;
    assert_eq!(status, 200, "{body}");
    proxy.set(|f| f.down = true);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let body = loop {
        let _ = s.client.clone().refresh(pb::RefreshRequest {}).await;
        let (status, body) = s.get("/readyz").await;
        if status == 503 {
            break body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still ready: {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(body.contains("stale"), "{body}");
    // Reads still answer from the last good state.
    assert_eq!(s.target("workers").await, 1);
    proxy.set(|f| f.down = false);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let _ = s.client.clone().refresh(pb::RefreshRequest {}).await;
        if s.get("/readyz").await.0 == 200 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "did not recover");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    s.stop().await;
}
