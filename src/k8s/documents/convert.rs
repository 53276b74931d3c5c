//! The sink that converts a dump as it is read: nodes and pods become the model's at once and their
//! Kubernetes objects are dropped; the few kinds pods and nodes depend on (storage, owners, namespaces)
//! and the PDBs and DaemonSets are kept, and resolved once the read is done.

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{Object, Objects, Sink};
use crate::error::Result;
use crate::k8s::objects::{
    daemonset_pod, node, pdb, pod, pod_finished_bound, pod_terminal, Inputs,
};
use crate::model::workload::{Node, Pod};

/// A dump being converted.
#[derive(Default)]
pub(super) struct Converting {
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    /// Failed pods still bound (`Inputs::failed`); one that does not convert is left out, as before.
    failed: Vec<Pod>,
    /// Pods that mount claims: their index in `pods`, and what of the pod resolving them reads (its
    /// name, namespace and uid, and its claim volumes).
    claims: Vec<(usize, core::Pod)>,
    /// Every other object, kept.
    rest: Objects,
}

impl Sink for Converting {
    fn add(&mut self, object: Object) -> Result<()> {
        match object {
            Object::Node(n) => self.nodes.push(node(&n)?),
            Object::Pod(p) if pod_finished_bound(&p) => self.failed.extend(pod(&p).ok()),
            Object::Pod(p) if pod_terminal(&p) => {}
            Object::Pod(p) => {
                let model = pod(&p)?;
                if let Some(claims) = claims_of(*p) {
                    self.claims.push((self.pods.len(), claims));
                }
                self.pods.push(model);
            }
            other => self.rest.add(other)?,
        }
        Ok(())
    }
}

/// The part of `p` that [`crate::k8s::volumes::Storage::claims_of`] reads (None: the pod mounts no
/// claim).
fn claims_of(p: core::Pod) -> Option<core::Pod> {
    let volumes: Vec<core::Volume> = p
        .spec?
        .volumes?
        .into_iter()
        .filter(|v| v.persistent_volume_claim.is_some() || v.ephemeral.is_some())
        .collect();
    if volumes.is_empty() {
        return None;
    }
    Some(core::Pod {
        metadata: ObjectMeta {
            name: p.metadata.name,
            namespace: p.metadata.namespace,
            uid: p.metadata.uid,
            ..Default::default()
        },
        spec: Some(core::PodSpec {
            volumes: Some(volumes),
            ..Default::default()
        }),
        status: None,
    })
}

impl Converting {
    /// The model, once every object is read: attach limits and claims resolved with the storage
    /// objects, PDBs and DaemonSets' pods converted, owners' replicas and namespaces' labels set.
    pub(super) fn finish(self) -> Result<Inputs> {
        let Converting {
            mut nodes,
            mut pods,
            failed,
            claims,
            rest,
        } = self;
        let storage = rest.storage();
        for n in &mut nodes {
            n.volume_limits = storage.limits_of(&n.name);
        }
        for (i, p) in &claims {
            pods[*i].claims = storage.claims_of(p)?;
        }
        let pdbs = rest.pdbs.iter().map(pdb).collect::<Result<_>>()?;
        let daemon_pods = rest
            .daemonsets
            .iter()
            .map(daemonset_pod)
            .collect::<Result<_>>()?;
        rest.set_pods_context(&mut pods);
        let priority_classes = rest.priority_values();
        let usage = rest.usage()?;
        Ok(Inputs {
            nodes,
            pods,
            pdbs,
            daemon_pods,
            failed,
            priority_classes,
            usage,
        })
    }
}
