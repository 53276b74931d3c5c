//! The CloudProvider's cluster-wide RPCs: GPULabel and GetAvailableGPUTypes from the groups' templates,
//! Refresh and Cleanup answered.

use ferroscale::proto::externalgrpc as pb;

use crate::support::fixtures::grpc::GROUPS;
use crate::support::server::TestServer;

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
