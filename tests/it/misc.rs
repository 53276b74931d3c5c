//! GPULabel, GetAvailableGPUTypes, Refresh, Cleanup, the 16 MiB request limit and the HTTP endpoints.

use ferroscale::proto::externalgrpc as pb;

use crate::common::{node, TestServer, GROUPS};

#[tokio::test]
async fn gpu_label_types_refresh_and_cleanup() {
    let s = TestServer::start(GROUPS).await;
    let mut c = s.client.clone();
    let label = c
        .gpu_label(pb::GpuLabelRequest {})
        .await
        .unwrap()
        .into_inner()
        .label;
    assert_eq!(label, "k8s.amazonaws.com/accelerator");
    let types = c
        .get_available_gpu_types(pb::GetAvailableGpuTypesRequest {})
        .await
        .unwrap()
        .into_inner()
        .gpu_types;
    assert_eq!(types.keys().collect::<Vec<_>>(), vec!["nvidia-tesla-t4"]);
    c.refresh(pb::RefreshRequest {}).await.unwrap();
    c.cleanup(pb::CleanupRequest {}).await.unwrap();
    s.stop().await;
}

#[tokio::test]
async fn accepts_requests_up_to_16_mib() {
    let s = TestServer::start(GROUPS).await;
    let mut big = node("aws:///us-east-1a/i-0123456789abcdef0");
    big.annotations.insert("blob".into(), "x".repeat(12 << 20));
    let e = s
        .client
        .clone()
        .node_group_delete_nodes(pb::NodeGroupDeleteNodesRequest {
            nodes: vec![big],
            id: "ghost".into(),
        })
        .await
        .unwrap_err();
    // Decoded and answered by the handler, not refused for its size.
    assert_eq!(e.code(), tonic::Code::NotFound, "{e:?}");
    s.stop().await;
}

#[tokio::test]
async fn metrics_count_rpcs_by_method_and_code() {
    let s = TestServer::start(GROUPS).await;
    let mut c = s.client.clone();
    for _ in 0..3 {
        c.node_groups(pb::NodeGroupsRequest {}).await.unwrap();
    }
    c.node_group_target_size(pb::NodeGroupTargetSizeRequest { id: "ghost".into() })
        .await
        .unwrap_err();
    let (status, body) = s.get("/metrics").await;
    assert_eq!(status, 200);
    let line = |method: &str, code: &str| {
        body.lines()
            .find(|l| {
                l.starts_with("grpc_server_handled_total{")
                    && l.contains(&format!("grpc_method=\"{method}\""))
                    && l.contains(&format!("grpc_code=\"{code}\""))
            })
            .unwrap_or_else(|| panic!("no counter for {method} {code} in\n{body}"))
            .to_string()
    };
    assert!(
        line("NodeGroups", "OK").ends_with(" 3"),
        "{}",
        line("NodeGroups", "OK")
    );
    assert!(line("NodeGroupTargetSize", "NotFound").ends_with(" 1"));
    assert!(
        line("NodeGroups", "OK").contains("grpc_type=\"unary\""),
        "go-grpc-prometheus's labels"
    );
    // go-grpc-prometheus's other counters: started and received for every call, sent for answers.
    let unary = |metric: &str, method: &str| {
        let prefix = format!(
            "{metric}{{grpc_type=\"unary\",grpc_service=\"clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider\",grpc_method=\"{method}\"}} "
        );
        body.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no {prefix} in\n{body}"))
            .trim()
            .parse::<u64>()
            .unwrap()
    };
    assert_eq!(unary("grpc_server_started_total", "NodeGroupTargetSize"), 1);
    assert_eq!(
        unary("grpc_server_msg_received_total", "NodeGroupTargetSize"),
        1
    );
    assert_eq!(unary("grpc_server_msg_sent_total", "NodeGroups"), 3);
    assert!(
        body.lines()
            .any(|l| l.starts_with("grpc_server_handling_seconds_bucket{")
                && l.contains("grpc_type=\"unary\"")
                && !l.contains("grpc_code")),
        "the histogram has go-grpc-prometheus's labels: {body}"
    );
    assert_eq!(s.get("/healthz").await.0, 200);
    let (status, ready) = s.get("/readyz").await;
    assert_eq!(status, 200);
    assert!(ready.contains("3 node groups"), "{ready}");
    s.stop().await;
}
