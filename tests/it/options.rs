//! NodeGroupGetOptions: the group's own options over CA's defaults, in both generations' fields.

use ferroscale::proto::externalgrpc as pb;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;

use crate::support::fixtures::grpc::GROUPS;
use crate::support::server::TestServer;

async fn options(
    s: &TestServer,
    id: &str,
    defaults: Option<pb::NodeGroupAutoscalingOptions>,
) -> Result<pb::NodeGroupAutoscalingOptions, tonic::Status> {
    s.client
        .clone()
        .node_group_get_options(pb::NodeGroupAutoscalingOptionsRequest {
            id: id.into(),
            defaults,
        })
        .await
        .map(|r| r.into_inner().node_group_autoscaling_options.unwrap())
}

fn secs(s: i64) -> Option<prost_types::Duration> {
    Some(prost_types::Duration {
        seconds: s,
        nanos: 0,
    })
}

fn nanos(s: i64) -> Option<meta::Duration> {
    Some(meta::Duration {
        duration: Some(s * 1_000_000_000),
    })
}

#[tokio::test]
#[allow(deprecated)]
async fn new_generation_defaults_are_merged_and_answered_in_both_fields() {
    let s = TestServer::start(GROUPS).await;
    let defaults = pb::NodeGroupAutoscalingOptions {
        scale_down_utilization_threshold: 0.5,
        scale_down_gpu_utilization_threshold: 0.6,
        scale_down_unneeded_duration: secs(600),
        scale_down_unready_duration: secs(1200),
        max_node_provision_duration: secs(900),
        max_node_startup_duration: secs(700),
        ignore_daemon_sets_utilization: true,
        ..Default::default()
    };
    let o = options(&s, "general", Some(defaults)).await.unwrap();
    // Group's own: threshold 0.4, unneeded 5m. The rest: the request's defaults.
    assert_eq!(o.scale_down_utilization_threshold, 0.4);
    assert_eq!(o.scale_down_gpu_utilization_threshold, 0.6);
    assert!(o.ignore_daemon_sets_utilization);
    assert_eq!(o.scale_down_unneeded_duration, secs(300));
    assert_eq!(o.scale_down_unneeded_time, nanos(300));
    assert_eq!(o.scale_down_unready_duration, secs(1200));
    assert_eq!(o.scale_down_unready_time, nanos(1200));
    assert_eq!(o.max_node_provision_duration, secs(900));
    assert_eq!(o.max_node_provision_time, nanos(900));
    assert_eq!(o.max_node_startup_duration, secs(700));
    s.stop().await;
}

#[tokio::test]
#[allow(deprecated)]
async fn old_generation_defaults_are_read() {
    let s = TestServer::start(GROUPS).await;
    let defaults = pb::NodeGroupAutoscalingOptions {
        scale_down_utilization_threshold: 0.5,
        scale_down_unready_time: nanos(1800),
        max_node_provision_time: nanos(1500),
        ..Default::default()
    };
    let o = options(&s, "general", Some(defaults)).await.unwrap();
    assert_eq!(o.scale_down_unready_duration, secs(1800));
    assert_eq!(o.scale_down_unready_time, nanos(1800));
    assert_eq!(o.max_node_provision_duration, secs(1500));
    s.stop().await;
}

#[tokio::test]
async fn durations_missing_from_the_request_are_never_zero() {
    let s = TestServer::start(GROUPS).await;
    let o = options(&s, "general", None).await.unwrap();
    assert_eq!(
        o.scale_down_unready_duration,
        secs(1200),
        "upstream default 20m"
    );
    assert_eq!(
        o.max_node_provision_duration,
        secs(900),
        "upstream default 15m"
    );
    assert_eq!(
        o.max_node_startup_duration,
        secs(900),
        "upstream default 15m"
    );
    s.stop().await;
}

#[tokio::test]
async fn group_without_options_is_unimplemented_so_ca_keeps_its_defaults() {
    let s = TestServer::start(GROUPS).await;
    let e = options(&s, "batch", None).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unimplemented);
    let e = options(&s, "ghost", None).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);
    s.stop().await;
}

/// Upstream's client (externalgrpc_node_group.go, GetOptions) reads no start-up time from an OK answer:
/// any OK answer costs the group CA's MaxNodeStartupTime. So options that change nothing the calling CA
/// reads are not answered: UNIMPLEMENTED, and CA keeps all its defaults.
#[tokio::test]
#[allow(deprecated)]
async fn options_the_calling_ca_would_not_read_differently_are_unimplemented() {
    let groups = r#"
nodeGroups:
  - {name: same, minSize: 0, maxSize: 3, capacity: {cpu: "4", memory: 16Gi, pods: "58"},
     options: {scaleDownUtilizationThreshold: 0.5}}
  - {name: daemons, minSize: 0, maxSize: 3, capacity: {cpu: "4", memory: 16Gi, pods: "58"},
     options: {ignoreDaemonSetsUtilization: true}}
"#;
    let s = TestServer::start(groups).await;
    let new = pb::NodeGroupAutoscalingOptions {
        scale_down_utilization_threshold: 0.5,
        scale_down_gpu_utilization_threshold: 0.5,
        scale_down_unneeded_duration: secs(600),
        scale_down_unready_duration: secs(1200),
        max_node_provision_duration: secs(900),
        ..Default::default()
    };
    let old = pb::NodeGroupAutoscalingOptions {
        scale_down_utilization_threshold: 0.5,
        scale_down_gpu_utilization_threshold: 0.5,
        scale_down_unneeded_time: nanos(600),
        scale_down_unready_time: nanos(1200),
        max_node_provision_time: nanos(900),
        ..Default::default()
    };
    // The group's threshold is CA's own: nothing to tell either generation.
    for defaults in [&new, &old] {
        let e = options(&s, "same", Some(*defaults)).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unimplemented, "{e:?}");
    }
    // ignoreDaemonSetsUtilization: read by CA >= 1.35 only.
    let o = options(&s, "daemons", Some(new)).await.unwrap();
    assert!(o.ignore_daemon_sets_utilization);
    let e = options(&s, "daemons", Some(old)).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unimplemented, "{e:?}");
    // A threshold of its own is read by both.
    let lower = pb::NodeGroupAutoscalingOptions {
        scale_down_utilization_threshold: 0.7,
        ..new
    };
    let o = options(&s, "same", Some(lower)).await.unwrap();
    assert_eq!(o.scale_down_utilization_threshold, 0.5);
    s.stop().await;
}
