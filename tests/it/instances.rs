//! NodeGroupNodes: instance ids equal provider ids, states map to CA's, launch failures carry errorInfo.

use ferroscale::proto::externalgrpc as pb;
use pb::instance_status::InstanceState;

use crate::support::fixtures::grpc::GROUPS;
use crate::support::server::TestServer;

const STATES: &str = r#"
nodeGroups:
  - name: mixed
    minSize: 0
    maxSize: 10
    targetSize: 5
    capacity: {cpu: 2, memory: 8Gi}
    labels: {topology.kubernetes.io/zone: eu-west-1c}
    launchCapacity: 0
    instances:
      - {id: i-0aaaaaaaaaaaaaaa1}
      - {id: i-0aaaaaaaaaaaaaaa2, state: creating}
      - {id: i-0aaaaaaaaaaaaaaa3, state: deleting}
      - id: i-0aaaaaaaaaaaaaaa4
        state: creating
        error: {code: InvalidAMIID.NotFound, message: "The image id does not exist", class: other}
"#;

fn state(i: &pb::Instance) -> InstanceState {
    InstanceState::try_from(i.status.as_ref().unwrap().instance_state).unwrap()
}

#[tokio::test]
async fn states_errors_and_placeholders() {
    let s = TestServer::start(STATES).await;
    let got = s.instances("mixed").await;
    let ids: Vec<&str> = got.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(
        ids,
        vec![
            "aws:///eu-west-1c/i-0aaaaaaaaaaaaaaa1",
            "aws:///eu-west-1c/i-0aaaaaaaaaaaaaaa2",
            "aws:///eu-west-1c/i-0aaaaaaaaaaaaaaa3",
            "aws:///eu-west-1c/i-0aaaaaaaaaaaaaaa4",
            "aws:///eu-west-1c/i-placeholder-mixed-0",
        ]
    );
    let states: Vec<InstanceState> = got.iter().map(state).collect();
    assert_eq!(
        states,
        vec![
            InstanceState::InstanceRunning,
            InstanceState::InstanceCreating,
            InstanceState::InstanceDeleting,
            InstanceState::InstanceCreating,
            InstanceState::InstanceCreating,
        ]
    );
    assert!(got[0].status.as_ref().unwrap().error_info.is_none());
    let other = got[3].status.as_ref().unwrap().error_info.as_ref().unwrap();
    assert_eq!(
        (other.error_code.as_str(), other.instance_error_class),
        ("InvalidAMIID.NotFound", 99)
    );
    // launchCapacity 0: the fifth slot could not be launched: out of resources (class 1).
    let oor = got[4].status.as_ref().unwrap().error_info.as_ref().unwrap();
    assert_eq!(oor.error_code, "InsufficientInstanceCapacity");
    assert_eq!(oor.instance_error_class, 1);
    assert!(!oor.error_message.is_empty());
    s.stop().await;
}

#[tokio::test]
async fn unknown_group_is_not_found() {
    let s = TestServer::start(GROUPS).await;
    let e = s
        .client
        .clone()
        .node_group_nodes(pb::NodeGroupNodesRequest { id: "ghost".into() })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);
    assert!(e.message().contains("\"ghost\""), "{}", e.message());
    let e = s
        .client
        .clone()
        .node_group_target_size(pb::NodeGroupTargetSizeRequest { id: "ghost".into() })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);
    s.stop().await;
}
