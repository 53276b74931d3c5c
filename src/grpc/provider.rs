//! The `externalgrpc` CloudProvider service: cluster-autoscaler's view of the [`Cloud`].
//! Reads are answered from the cloud's snapshot; responses fill both protocol generations' fields and
//! requests are read from either (the bytes generation wins when both are set).

use crate::labels;
use std::collections::BTreeMap;
use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::options::Generation;
use super::{bounded, convert, detached, instrument, write_guard};
use crate::cloud::Cloud;
use crate::error::{DomainError, Error, Result};
use crate::metrics::Metrics;
use crate::pricing;
use crate::proto::externalgrpc as pb;
use crate::proto::externalgrpc::cloud_provider_server::{CloudProvider, CloudProviderServer};

const SERVICE: &str = "clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider";

/// Serves one [`Cloud`] to cluster-autoscaler.
#[derive(Clone)]
pub struct CloudProviderService {
    cloud: Arc<dyn Cloud>,
    metrics: Arc<Metrics>,
}

impl CloudProviderService {
    pub fn new(cloud: Arc<dyn Cloud>, metrics: Arc<Metrics>) -> Self {
        CloudProviderService { cloud, metrics }
    }

    /// The tonic server for this service, accepting requests up to [`super::MAX_MESSAGE_BYTES`].
    pub fn into_server(self) -> CloudProviderServer<Self> {
        CloudProviderServer::new(self)
            .max_decoding_message_size(super::MAX_MESSAGE_BYTES)
            .max_encoding_message_size(super::MAX_MESSAGE_BYTES)
    }
}

type Reply<T> = std::result::Result<Response<T>, Status>;

#[tonic::async_trait]
impl CloudProvider for CloudProviderService {
    async fn node_groups(
        &self,
        _: Request<pb::NodeGroupsRequest>,
    ) -> Reply<pb::NodeGroupsResponse> {
        instrument(&self.metrics, SERVICE, "NodeGroups", async {
            let s = self.cloud.snapshot();
            Ok(pb::NodeGroupsResponse {
                node_groups: s.groups().map(|g| convert::node_group(g)).collect(),
            })
        })
        .await
    }

    async fn node_group_for_node(
        &self,
        req: Request<pb::NodeGroupForNodeRequest>,
    ) -> Reply<pb::NodeGroupForNodeResponse> {
        instrument(&self.metrics, SERVICE, "NodeGroupForNode", async {
            let node = req.into_inner().node.unwrap_or_default();
            bounded("node.providerID", &node.provider_id)?;
            let s = self.cloud.snapshot();
            // An unmanaged or foreign node is not an error: an empty id tells CA to leave it alone.
            let group = s
                .group_for_provider_id(&node.provider_id)
                .map(|g| convert::node_group(g))
                .unwrap_or_default();
            Ok(pb::NodeGroupForNodeResponse {
                node_group: Some(group),
            })
        })
        .await
    }

    #[allow(deprecated)]
    async fn pricing_node_price(
        &self,
        req: Request<pb::PricingNodePriceRequest>,
    ) -> Reply<pb::PricingNodePriceResponse> {
        instrument(&self.metrics, SERVICE, "PricingNodePrice", async {
            let r = req.into_inner();
            let node = r
                .node
                .ok_or_else(|| Error::invalid("node", "is required"))?;
            bounded("node.providerID", &node.provider_id)?;
            bounded("node.name", &node.name)?;
            let start = convert::seconds(
                r.start_timestamp.as_ref(),
                r.start_time.as_ref(),
                "startTimestamp",
            )?;
            let end = convert::seconds(
                r.end_timestamp.as_ref(),
                r.end_time.as_ref(),
                "endTimestamp",
            )?;
            let hours = convert::period_hours(start, end)?;
            let labels: BTreeMap<_, _> = node.labels.into_iter().collect();
            let hourly = pricing::node_price_per_hour(
                &self.cloud.snapshot(),
                &node.provider_id,
                &labels,
                &node.name,
            )?;
            Ok(pb::PricingNodePriceResponse {
                price: hourly * hours,
            })
        })
        .await
    }

    #[allow(deprecated)]
    async fn pricing_pod_price(
        &self,
        req: Request<pb::PricingPodPriceRequest>,
    ) -> Reply<pb::PricingPodPriceResponse> {
        instrument(&self.metrics, SERVICE, "PricingPodPrice", async {
            let r = req.into_inner();
            let pod = convert::pod(&r.pod_bytes, r.pod.as_ref(), "pod_bytes")?;
            let start = convert::seconds(
                r.start_timestamp.as_ref(),
                r.start_time.as_ref(),
                "startTimestamp",
            )?;
            let end = convert::seconds(
                r.end_timestamp.as_ref(),
                r.end_time.as_ref(),
                "endTimestamp",
            )?;
            let hours = convert::period_hours(start, end)?;
            let requests = convert::pod_requests(&pod)?;
            let meta = pod.metadata.unwrap_or_default();
            let name = crate::model::workload::pod_key(
                meta.namespace.as_deref().unwrap_or_default(),
                meta.name.as_deref().unwrap_or_default(),
            );
            let hourly = pricing::pod_price_per_hour(&self.cloud.snapshot(), &requests, &name)?;
            Ok(pb::PricingPodPriceResponse {
                price: hourly * hours,
            })
        })
        .await
    }

    async fn gpu_label(&self, _: Request<pb::GpuLabelRequest>) -> Reply<pb::GpuLabelResponse> {
        instrument(&self.metrics, SERVICE, "GPULabel", async {
            Ok(pb::GpuLabelResponse {
                label: labels::GPU.to_string(),
            })
        })
        .await
    }

    async fn get_available_gpu_types(
        &self,
        _: Request<pb::GetAvailableGpuTypesRequest>,
    ) -> Reply<pb::GetAvailableGpuTypesResponse> {
        instrument(&self.metrics, SERVICE, "GetAvailableGPUTypes", async {
            Ok(pb::GetAvailableGpuTypesResponse {
                gpu_types: self
                    .cloud
                    .snapshot()
                    .gpu_types()
                    .into_iter()
                    .map(|t| (t, prost_types::Any::default()))
                    .collect(),
            })
        })
        .await
    }

    async fn cleanup(&self, _: Request<pb::CleanupRequest>) -> Reply<pb::CleanupResponse> {
        instrument(&self.metrics, SERVICE, "Cleanup", async {
            self.cloud.cleanup().await?;
            Ok(pb::CleanupResponse {})
        })
        .await
    }

    async fn refresh(&self, _: Request<pb::RefreshRequest>) -> Reply<pb::RefreshResponse> {
        instrument(&self.metrics, SERVICE, "Refresh", async {
            // Run the refresh as its own task: when CA's deadline cancels this call, the refresh still
            // completes and the next call finds the snapshot up to date instead of starting over.
            let cloud = self.cloud.clone();
            tokio::spawn(async move { cloud.refresh().await })
                .await
                .map_err(|e| Error::task("the refresh task", e))??;
            Ok(pb::RefreshResponse {})
        })
        .await
    }

    async fn node_group_target_size(
        &self,
        req: Request<pb::NodeGroupTargetSizeRequest>,
    ) -> Reply<pb::NodeGroupTargetSizeResponse> {
        instrument(&self.metrics, SERVICE, "NodeGroupTargetSize", async {
            bounded("id", &req.get_ref().id)?;
            let s = self.cloud.snapshot();
            Ok(pb::NodeGroupTargetSizeResponse {
                target_size: s.group(&req.get_ref().id)?.target_size,
            })
        })
        .await
    }

    async fn node_group_increase_size(
        &self,
        req: Request<pb::NodeGroupIncreaseSizeRequest>,
    ) -> Reply<pb::NodeGroupIncreaseSizeResponse> {
        instrument(&self.metrics, SERVICE, "NodeGroupIncreaseSize", async {
            let (guard, caller) = write_guard(req.metadata());
            let r = req.into_inner();
            bounded("id", &r.id)?;
            let cloud = self.cloud.clone();
            detached(caller, async move {
                cloud.increase_size(&r.id, r.delta, &guard).await?;
                tracing::info!(group = %r.id, delta = r.delta, "increased node group size");
                Ok(())
            })
            .await?;
            Ok(pb::NodeGroupIncreaseSizeResponse {})
        })
        .await
    }

    async fn node_group_delete_nodes(
        &self,
        req: Request<pb::NodeGroupDeleteNodesRequest>,
    ) -> Reply<pb::NodeGroupDeleteNodesResponse> {
        instrument(&self.metrics, SERVICE, "NodeGroupDeleteNodes", async {
            let (guard, caller) = write_guard(req.metadata());
            let r = req.into_inner();
            bounded("id", &r.id)?;
            let ids = r
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    bounded(&format!("nodes[{i}].providerID"), &n.provider_id)?;
                    bounded(&format!("nodes[{i}].name"), &n.name)?;
                    if n.provider_id.is_empty() {
                        Err(Error::invalid(
                            format!("nodes[{i}].providerID"),
                            format!("node {:?} has no providerID", n.name),
                        ))
                    } else {
                        Ok(n.provider_id.clone())
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            let cloud = self.cloud.clone();
            detached(caller, async move {
                let outcome = cloud.delete_nodes(&r.id, &ids, &guard).await;
                match &outcome {
                    Ok(()) => tracing::info!(group = %r.id, nodes = ?ids, "deleted nodes"),
                    Err(e @ Error::PartiallyDeleted { .. }) => {
                        tracing::warn!(group = %r.id, error = %e, "deleted some nodes")
                    }
                    Err(_) => {}
                }
                outcome
            })
            .await?;
            Ok(pb::NodeGroupDeleteNodesResponse {})
        })
        .await
    }

    async fn node_group_decrease_target_size(
        &self,
        req: Request<pb::NodeGroupDecreaseTargetSizeRequest>,
    ) -> Reply<pb::NodeGroupDecreaseTargetSizeResponse> {
        instrument(
            &self.metrics,
            SERVICE,
            "NodeGroupDecreaseTargetSize",
            async {
                let (guard, caller) = write_guard(req.metadata());
                let r = req.into_inner();
                bounded("id", &r.id)?;
                let cloud = self.cloud.clone();
                detached(caller, async move {
                    cloud.decrease_target_size(&r.id, r.delta, &guard).await?;
                    tracing::info!(group = %r.id, delta = r.delta, "decreased node group target size");
                    Ok(())
                })
                .await?;
                Ok(pb::NodeGroupDecreaseTargetSizeResponse {})
            },
        )
        .await
    }

    async fn node_group_nodes(
        &self,
        req: Request<pb::NodeGroupNodesRequest>,
    ) -> Reply<pb::NodeGroupNodesResponse> {
        instrument(&self.metrics, SERVICE, "NodeGroupNodes", async {
            bounded("id", &req.get_ref().id)?;
            let s = self.cloud.snapshot();
            let g = s.group(&req.get_ref().id)?;
            Ok(pb::NodeGroupNodesResponse {
                instances: g
                    .instances_with_placeholders()
                    .iter()
                    .map(convert::instance)
                    .collect(),
            })
        })
        .await
    }

    #[allow(deprecated)]
    async fn node_group_template_node_info(
        &self,
        req: Request<pb::NodeGroupTemplateNodeInfoRequest>,
    ) -> Reply<pb::NodeGroupTemplateNodeInfoResponse> {
        instrument(&self.metrics, SERVICE, "NodeGroupTemplateNodeInfo", async {
            bounded("id", &req.get_ref().id)?;
            let s = self.cloud.snapshot();
            let node = convert::template_node(&s.group(&req.get_ref().id)?.template);
            Ok(pb::NodeGroupTemplateNodeInfoResponse {
                node_bytes: convert::node_bytes(&node),
                node_info: Some(node),
                resource_slice_bytes: Vec::new(),
            })
        })
        .await
    }

    async fn node_group_get_options(
        &self,
        req: Request<pb::NodeGroupAutoscalingOptionsRequest>,
    ) -> Reply<pb::NodeGroupAutoscalingOptionsResponse> {
        instrument(&self.metrics, SERVICE, "NodeGroupGetOptions", async {
            let r = req.into_inner();
            bounded("id", &r.id)?;
            let s = self.cloud.snapshot();
            let g = s.group(&r.id)?;
            // No options of its own, or none the calling CA reads that differ from its defaults:
            // UNIMPLEMENTED makes CA keep its defaults. Any OK answer is taken literally, and no
            // released CA reads a start-up time from it (see `options`).
            let own = g
                .options
                .as_ref()
                .ok_or_else(|| DomainError::NotConfigured {
                    group: g.id.clone(),
                    what: "autoscaling options of its own",
                })?;
            let defaults = convert::option_values(r.defaults.as_ref());
            let merged = own.apply_to(&defaults);
            if !Generation::of(r.defaults.as_ref()).reads_a_change(&defaults, &merged) {
                return Err(DomainError::NotConfigured {
                    group: g.id.clone(),
                    what: "autoscaling options the calling cluster-autoscaler reads",
                }
                .into());
            }
            Ok(pb::NodeGroupAutoscalingOptionsResponse {
                node_group_autoscaling_options: Some(convert::options(&merged)),
            })
        })
        .await
    }
}
