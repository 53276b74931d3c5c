//! serve's operations listener: go-grpc-prometheus's RPC metrics by method and code, `/healthz` and
//! `/readyz`.

use ferroscale::proto::externalgrpc as pb;

use crate::support::fixtures::grpc::GROUPS;
use crate::support::server::TestServer;

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
