//! Interruption notices checked against EC2 before any node is marked (issue #38): a spot warning
//! against the instance's spot request, a state change against its state, a scheduled change against
//! its scheduled events. What EC2 contradicts moves nothing and is counted (`contradicted`); a check
//! that cannot be made leaves the message in the queue. Moto's SQS, Auto Scaling and EC2 through the
//! real SDK clients; the fault proxy answers DescribeSpotInstanceRequests (moto keeps no spot request
//! for an Auto Scaling instance, nor filters them by instance) and the scheduled events moto never has.

use std::time::{Duration, Instant};

use ferroscale::cloud::aws::AwsCloud;
use ferroscale::model::lifecycle::DisruptionReason;
use ferroscale::run::interruptions::IntakeSettings;
use ferroscale::time::unix_now as now;

use crate::run_intake::{count, intake, PATIENCE};
use crate::run_interruptions::{event, spot, Queue};
use crate::support::aws_proxy::{Failure, FaultProxy};
use crate::support::fixtures::kube::{node, pod};
use crate::support::kube_api::{KubeApi, NODES, PODS};
use crate::support::moto::{Moto, REGION};
use crate::support::run_harness::{evictions, run_settings, Harness};

/// DescribeSpotInstanceRequests' answer: a request for each (instance, status code).
pub(crate) fn spot_requests(requests: &[(&str, &str)]) -> String {
    let items: String = requests
        .iter()
        .enumerate()
        .map(|(k, (instance, code))| {
            format!("<item><spotInstanceRequestId>sir-{k}</spotInstanceRequestId><state>active</state><status><code>{code}</code><message>test</message></status><instanceId>{instance}</instanceId></item>")
        })
        .collect();
    format!(
        r#"<DescribeSpotInstanceRequestsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r-1</requestId><spotInstanceRequestSet>{items}</spotInstanceRequestSet></DescribeSpotInstanceRequestsResponse>"#
    )
}

/// DescribeInstanceStatus' answer: `instance` running with one scheduled retirement.
fn retiring(instance: &str) -> String {
    format!(
        r#"<DescribeInstanceStatusResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r-1</requestId><instanceStatusSet><item><instanceId>{instance}</instanceId><availabilityZone>us-east-1a</availabilityZone><instanceState><code>16</code><name>running</name></instanceState><eventsSet><item><code>instance-retirement</code><description>The instance is running on degraded hardware</description><notBefore>2030-01-01T00:00:00.000Z</notBefore></item></eventsSet></item></instanceStatusSet></DescribeInstanceStatusResponse>"#
    )
}

/// An AWS Health retirement of `instance` starting at `start` (seconds since the epoch), published
/// just now from moto's account and region.
pub(crate) fn retirement(instance: &str, start: i64) -> String {
    let time = k8s_openapi::jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ");
    let start = k8s_openapi::jiff::Timestamp::from_second(start)
        .unwrap()
        .strftime("%a, %d %b %Y %H:%M:%S GMT");
    let code = "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED";
    format!(
        r#"{{"version":"0","id":"7fb65329","detail-type":"AWS Health Event","source":"aws.health","account":"123456789012","time":"{time}","region":"{REGION}","resources":["{instance}"],"detail":{{"eventArn":"arn:aws:health:{REGION}::event/EC2/{code}/x","service":"EC2","eventTypeCode":"{code}","eventTypeCategory":"scheduledChange","startTime":"{start}","affectedEntities":[{{"entityValue":"{instance}"}}]}}}}"#
    )
}

/// `pool` on moto behind the fault proxy with three running instances, a node and a pod on each;
/// returns the harness, the proxy and the instance ids.
async fn cluster(moto: &Moto) -> (Harness, FaultProxy, Vec<String>) {
    moto.group("pool", "m5.large", 0, 6, 3, &[]).await;
    let proxy = FaultProxy::start(&moto.url).await;
    let mut settings = moto.settings(&[], &["0:6:pool"]);
    settings.endpoint_url = Some(proxy.url.clone());
    settings.refresh_interval = Duration::ZERO;
    let mut ids: Vec<String> = moto
        .asg
        .describe_auto_scaling_groups()
        .auto_scaling_group_names("pool")
        .send()
        .await
        .unwrap()
        .auto_scaling_groups()[0]
        .instances()
        .iter()
        .map(|i| i.instance_id().unwrap().to_string())
        .collect();
    ids.sort();
    let api = KubeApi::start().await;
    for (k, id) in ids.iter().enumerate() {
        let name = format!("pool-{k}");
        api.put(
            NODES,
            node(&name, &format!("aws:///us-east-1a/{id}"), "2", "8Gi"),
        );
        api.put(PODS, pod(&format!("web-{k}"), "500m", Some(&name), "web"));
    }
    let cloud = AwsCloud::connect(settings, Default::default())
        .await
        .unwrap();
    let h = Harness::with_cloud(
        api,
        cloud,
        ferroscale::cli::flags::default_engine(),
        run_settings(),
    )
    .await;
    h.synced(3, 3).await;
    (h, proxy, ids)
}

/// Runs loops, none of which may take a node out, until the queue is empty.
async fn until_empty_moving_nothing(h: &mut Harness, queue: &Queue) {
    let started = Instant::now();
    while queue.left().await > 0 {
        let d = h.runner.run_once(now()).await.unwrap();
        assert!(d.disruptions.is_empty(), "{d:?}");
        assert!(started.elapsed() < PATIENCE, "messages left in the queue");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for _ in 0..3 {
        let d = h.runner.run_once(now()).await.unwrap();
        assert!(d.disruptions.is_empty(), "{d:?}");
    }
}

/// Nothing written to AWS, nothing asked of the cluster.
fn nothing_moved(h: &Harness, proxy: &FaultProxy) {
    for write in [
        "TerminateInstanceInAutoScalingGroup",
        "SetDesiredCapacity",
        "UpdateAutoScalingGroup",
    ] {
        assert_eq!(proxy.count(write), 0, "{write}");
    }
    assert_eq!(evictions(&h.api), 0);
    assert!(h.api.events("InterruptionNotice").is_empty());
    for k in 0..3 {
        let node = h.api.get(NODES, "", &format!("pool-{k}")).unwrap();
        assert!(node["spec"]["unschedulable"].is_null(), "{node}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_spot_warnings_for_healthy_spot_requests_terminate_nothing_and_a_genuine_one_does() {
    let moto = Moto::start().await;
    let (mut h, proxy, ids) = cluster(&moto).await;
    // Two instances run on healthy spot requests; the third is on-demand (no request at all).
    proxy.set(|f| {
        f.answers = vec![(
            "DescribeSpotInstanceRequests".into(),
            spot_requests(&[
                (&ids[0], "fulfilled"),
                (&ids[1], "request-canceled-and-instance-running"),
            ]),
        )]
    });
    // All three wait in the queue before the intake starts: they come in one receive.
    let queue = Queue::create_with(&moto, "30").await;
    for id in &ids {
        queue.send(&spot(id)).await;
    }
    intake(&mut h, &moto, &queue.url, IntakeSettings::default()).await;
    until_empty_moving_nothing(&mut h, &queue).await;
    let m = h.metrics.encode();
    assert_eq!(count(&m, "spot-interruption", "contradicted"), 3.0, "{m}");
    assert_eq!(count(&m, "spot-interruption", "handled"), 0.0, "{m}");
    nothing_moved(&h, &proxy);
    assert_eq!(
        proxy.count("DescribeSpotInstanceRequests"),
        1,
        "one call for the batch's three instances"
    );
    assert_eq!(moto.desired("pool").await, 3);

    // The check cannot be made: the warning stays in the queue, unverifiable, and moves nothing.
    proxy.set(|f| {
        f.failures = vec![Failure::new(
            "DescribeSpotInstanceRequests",
            500,
            "InternalFailure",
        )]
    });
    queue.send(&spot(&ids[0])).await;
    let started = Instant::now();
    while count(&h.metrics.encode(), "spot-interruption", "unverifiable") < 1.0 {
        let d = h.runner.run_once(now()).await.unwrap();
        assert!(d.disruptions.is_empty(), "{d:?}");
        assert!(started.elapsed() < PATIENCE, "never checked");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(queue.left().await, 1, "left in the queue");
    nothing_moved(&h, &proxy);

    // EC2 answers again, the request of the first instance marked for termination: the warning it
    // left in the queue is genuine and takes that node out, and only that one.
    proxy.set(|f| {
        f.failures.clear();
        f.answers = vec![(
            "DescribeSpotInstanceRequests".into(),
            spot_requests(&[(&ids[0], "marked-for-termination"), (&ids[1], "fulfilled")]),
        )]
    });
    // Back at once rather than after its 30 s visibility timeout.
    queue.send(&spot(&ids[0])).await;
    let d = loop {
        let d = h.runner.run_once(now()).await.unwrap();
        if !d.disruptions.is_empty() {
            break d;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "the genuine warning never acted on"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(d.disruptions.len(), 1, "{d:?}");
    assert_eq!(d.disruptions[0].node, "pool-0");
    assert_eq!(d.disruptions[0].reason, DisruptionReason::SpotInterruption);
    while proxy.count("TerminateInstanceInAutoScalingGroup") == 0 {
        assert!(started.elapsed() < PATIENCE, "never terminated");
        h.runner.run_once(now()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let m = h.metrics.encode();
    assert_eq!(count(&m, "spot-interruption", "handled"), 1.0, "{m}");
    assert_eq!(count(&m, "spot-interruption", "contradicted"), 3.0, "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_state_change_or_scheduled_change_moves_nothing_and_a_real_event_is_held() {
    let moto = Moto::start().await;
    let (mut h, proxy, ids) = cluster(&moto).await;
    let queue = Queue::create_with(&moto, "30").await;
    // Moto's instances all run, and have no scheduled event.
    queue
        .send(&event(
            "EC2 Instance State-change Notification",
            &ids[0],
            r#""state":"stopping""#,
        ))
        .await;
    queue.send(&retirement(&ids[1], now() + 3 * 3600)).await;
    // Both in one receive: one call of each kind.
    intake(&mut h, &moto, &queue.url, IntakeSettings::default()).await;
    until_empty_moving_nothing(&mut h, &queue).await;
    let m = h.metrics.encode();
    assert_eq!(count(&m, "state-change", "contradicted"), 1.0, "{m}");
    assert_eq!(count(&m, "scheduled-change", "contradicted"), 1.0, "{m}");
    assert_eq!(count(&m, "state-change", "handled"), 0.0, "{m}");
    assert_eq!(count(&m, "scheduled-change", "handled"), 0.0, "{m}");
    assert_eq!(proxy.count("DescribeInstances"), 1);
    assert_eq!(proxy.count("DescribeInstanceStatus"), 1);
    nothing_moved(&h, &proxy);

    // EC2 has a retirement scheduled for the third instance: its notice is taken and held (its start
    // is three hours away, its node goes from two hours before).
    proxy.set(|f| f.answers = vec![("DescribeInstanceStatus".into(), retiring(&ids[2]))]);
    queue.send(&retirement(&ids[2], now() + 3 * 3600)).await;
    let started = Instant::now();
    while count(&h.metrics.encode(), "scheduled-change", "handled") < 1.0 {
        let d = h.runner.run_once(now()).await.unwrap();
        assert!(d.disruptions.is_empty(), "not due yet: {d:?}");
        assert!(started.elapsed() < PATIENCE, "never handled");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(queue.left().await, 1, "held until its node is gone");
}
