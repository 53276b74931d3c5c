//! The `grpc` expander service (`grpcplugin.Expander/BestOptions`) for CA's `--expander=grpc`: keeps the
//! best of CA's scale-up options by the configured strategy chain, with prices from the cloud's groups.
//! Both generations are read (`nodeBytesMap`/`podBytes` win over `nodeMap`/`pod`); the answer holds only
//! options of the request, unchanged except `debug`, which carries the scores that decided.

use std::sync::Arc;

use parking_lot::RwLock;
use tonic::{Request, Response, Status};

use super::budget::ByteBudget;
use super::{convert, instrument};
use crate::cloud::Cloud;
use crate::engine::expander::{self, Context, ExpansionOption, Priorities, Strategy};
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::proto::expander as pb;
use crate::proto::expander::expander_server::{Expander, ExpanderServer};

const SERVICE: &str = "grpcplugin.Expander";

/// The strategy chain and priority tiers of the expander.
pub struct ExpanderSettings {
    pub chain: Vec<Strategy>,
    /// Tiers for the `priority` strategy; replaced when the priority file changes.
    pub priorities: Arc<RwLock<Priorities>>,
}

/// Serves the expander protocol.
#[derive(Clone)]
pub struct ExpanderService {
    cloud: Arc<dyn Cloud>,
    metrics: Arc<Metrics>,
    settings: Arc<ExpanderSettings>,
    /// BestOptions answers being computed; the rest wait their turn.
    workers: Arc<tokio::sync::Semaphore>,
}

/// BestOptions answers computed at once: all CPUs but one, so that decoding and scoring a flood of
/// 100 MB requests always leaves a core to the async workers answering CA's CloudProvider calls.
fn expander_workers() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_sub(1)
        .max(1)
}

impl ExpanderService {
    pub fn new(
        cloud: Arc<dyn Cloud>,
        metrics: Arc<Metrics>,
        settings: Arc<ExpanderSettings>,
    ) -> Self {
        ExpanderService {
            cloud,
            metrics,
            settings,
            workers: Arc::new(tokio::sync::Semaphore::new(expander_workers())),
        }
    }

    /// The tonic server, accepting requests up to [`super::MAX_EXPANDER_MESSAGE_BYTES`] (CA sends every
    /// option's pods and templates), at most [`super::MAX_EXPANDER_INFLIGHT_BYTES`] of them at once.
    pub fn into_server(self) -> ByteBudget<ExpanderServer<Self>> {
        let metrics = self.metrics.clone();
        let server = ExpanderServer::new(self)
            .max_decoding_message_size(super::MAX_EXPANDER_MESSAGE_BYTES)
            .max_encoding_message_size(super::MAX_EXPANDER_MESSAGE_BYTES);
        ByteBudget::new(
            server,
            super::MAX_EXPANDER_INFLIGHT_BYTES,
            metrics,
            SERVICE,
            "BestOptions",
        )
    }

    /// The answer to one BestOptions request (the whole handler but the transport; public for benchmarks).
    #[allow(deprecated)]
    pub fn answer(&self, req: pb::BestOptionsRequest) -> Result<pb::BestOptionsResponse> {
        let snapshot = self.cloud.snapshot();
        let mut candidates = Vec::new();
        let mut originals = Vec::new();
        // CA sends the same pending pods in every option: each distinct pod is decoded once.
        let mut decoded: std::collections::HashMap<&[u8], crate::model::Resources> =
            std::collections::HashMap::new();
        for (i, o) in req.options.iter().enumerate() {
            let id = &o.node_group_id;
            let bytes = req.node_bytes_map.get(id).map(Vec::as_slice);
            let Ok(node) = convert::node(
                bytes,
                req.node_map.get(id),
                &format!("nodeBytesMap[{id:?}]"),
            ) else {
                tracing::debug!(group = %id, "option without a template node skipped");
                continue;
            };
            let template = convert::template_from_node(&node, &format!("nodeBytesMap[{id:?}]"))?;
            let pods = if o.pod_bytes.is_empty() {
                o.pod
                    .iter()
                    .map(convert::pod_requests)
                    .collect::<Result<Vec<_>>>()?
            } else {
                o.pod_bytes
                    .iter()
                    .enumerate()
                    .map(|(k, b)| {
                        if let Some(r) = decoded.get(b.as_slice()) {
                            return Ok(r.clone());
                        }
                        let r = convert::pod_requests(&convert::pod(
                            b,
                            None,
                            &format!("options[{i}].podBytes[{k}]"),
                        )?)?;
                        decoded.insert(b.as_slice(), r.clone());
                        Ok(r)
                    })
                    .collect::<Result<Vec<_>>>()?
            };
            candidates.push(ExpansionOption {
                group: id.clone(),
                node_count: o.node_count,
                pods,
                template,
                price_per_hour: snapshot.group(id).ok().and_then(|g| g.price_per_hour),
            });
            originals.push(o);
        }
        if candidates.is_empty() {
            return Ok(pb::BestOptionsResponse { options: vec![] });
        }
        let ctx = Context {
            cluster_nodes: snapshot.instance_count(),
            priorities: self.settings.priorities.read().clone(),
            // CA itself breaks the ties it is sent back: fresh randomness, as upstream's.
            seed: None,
        };
        let decision = expander::choose(&self.settings.chain, &candidates, &ctx);
        let scores = decision.explanation.join("; ");
        let chosen: Vec<&str> = decision
            .kept
            .iter()
            .map(|&i| candidates[i].group.as_str())
            .collect();
        let price = decision
            .kept
            .first()
            .and_then(|&i| candidates[i].price_per_hour);
        let runner_up = decision.runner_up.map(|i| &candidates[i]);
        tracing::info!(
            chosen = ?chosen,
            price_per_hour = ?price,
            runner_up = runner_up.map(|o| o.group.as_str()).unwrap_or("-"),
            runner_up_price_per_hour = ?runner_up.and_then(|o| o.price_per_hour),
            %scores,
            "expander decision"
        );
        Ok(pb::BestOptionsResponse {
            options: decision
                .kept
                .iter()
                .map(|&i| pb::Option {
                    debug: scores.clone(),
                    ..originals[i].clone()
                })
                .collect(),
        })
    }
}

#[tonic::async_trait]
impl Expander for ExpanderService {
    async fn best_options(
        &self,
        req: Request<pb::BestOptionsRequest>,
    ) -> std::result::Result<Response<pb::BestOptionsResponse>, Status> {
        instrument(&self.metrics, SERVICE, "BestOptions", async {
            // Decoding and scoring take CPU for as long as the request is big: on a blocking thread,
            // behind the worker limit, never on the async workers.
            let permit = self
                .workers
                .clone()
                .acquire_owned()
                .await
                .map_err(|e| Error::task("the expander's workers", e))?;
            let me = self.clone();
            let req = req.into_inner();
            tokio::task::spawn_blocking(move || {
                let _permit = permit;
                me.answer(req)
            })
            .await
            .map_err(|e| Error::task("the BestOptions task", e))?
        })
        .await
    }
}
