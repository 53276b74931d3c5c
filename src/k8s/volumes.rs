//! PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes turned into what the engine's
//! volume filters read: each claim of a pod resolved to where its volume can be used
//! ([`model::volumes::Claim`]), and each node's attach limits per CSI driver. Errors name the object
//! and the field.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::namespace_of;
use super::selectors::node_selector_terms;
use crate::error::Result;
use crate::model::quantity::parse_milli;
use crate::model::volumes::{volume_zones, Claim, ClaimState, Wait};
use crate::model::workload::{Requirement, SelectorOp};

/// The provisioner of classes whose volumes are made by hand (local volumes): they provision nothing.
const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// The annotation that makes a StorageClass the default for claims that name none.
const DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";

/// In-tree volume plugins and provisioners as the CSI drivers that replaced them (CSI migration), so
/// attach limits count them under the CSINode's driver.
fn csi_name(plugin: &str) -> &str {
    match plugin {
        "kubernetes.io/aws-ebs" => "ebs.csi.aws.com",
        "kubernetes.io/gce-pd" => "pd.csi.storage.gke.io",
        "kubernetes.io/azure-disk" => "disk.csi.azure.com",
        "kubernetes.io/cinder" => "cinder.csi.openstack.org",
        other => other,
    }
}

/// The in-tree volumes written in a pod (`awsElasticBlockStore`), as the CSI driver that attaches them
/// since CSI migration and their volume id, which attach limits count.
pub fn inline_volumes(spec: &core::PodSpec) -> Vec<(String, String)> {
    spec.volumes
        .iter()
        .flatten()
        .filter_map(|v| v.aws_elastic_block_store.as_ref())
        .map(|e| {
            (
                csi_name("kubernetes.io/aws-ebs").to_string(),
                e.volume_id.clone(),
            )
        })
        .collect()
}

/// The names of the claims a pod mounts, each once: `persistentVolumeClaim` volumes and generic
/// ephemeral volumes (whose claim is named `<pod>-<volume>`).
pub fn claim_names(pod: &core::Pod) -> Vec<String> {
    let pod_name = name_of(&pod.metadata);
    let mut out: Vec<String> = Vec::new();
    for v in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
        let claim = match (&v.persistent_volume_claim, &v.ephemeral) {
            (Some(c), _) => c.claim_name.clone(),
            (None, Some(_)) => format!("{pod_name}-{}", v.name),
            (None, None) => continue,
        };
        if !out.contains(&claim) {
            out.push(claim);
        }
    }
    out
}

/// The storage objects of a cluster, indexed for resolving pods' claims.
#[derive(Debug, Default)]
pub struct Storage<'a> {
    claims: HashMap<(&'a str, &'a str), &'a core::PersistentVolumeClaim>,
    volumes: HashMap<&'a str, &'a core::PersistentVolume>,
    classes: HashMap<&'a str, &'a StorageClass>,
    default_class: Option<&'a StorageClass>,
    limits: HashMap<&'a str, BTreeMap<String, i64>>,
}

fn name_of(m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> &str {
    m.name.as_deref().unwrap_or_default()
}

impl<'a> Storage<'a> {
    pub fn new(
        claims: impl IntoIterator<Item = &'a core::PersistentVolumeClaim>,
        volumes: impl IntoIterator<Item = &'a core::PersistentVolume>,
        classes: impl IntoIterator<Item = &'a StorageClass>,
        csinodes: impl IntoIterator<Item = &'a CSINode>,
    ) -> Self {
        let mut s = Storage {
            claims: claims
                .into_iter()
                .map(|c| {
                    let ns = namespace_of(&c.metadata);
                    ((ns, name_of(&c.metadata)), c)
                })
                .collect(),
            volumes: volumes
                .into_iter()
                .map(|v| (name_of(&v.metadata), v))
                .collect(),
            ..Default::default()
        };
        for c in classes {
            let default = c
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(DEFAULT_CLASS))
                .is_some_and(|v| v == "true");
            // Of several defaults, the newest wins, as the API server's admission picks it.
            if default
                && s.default_class
                    .is_none_or(|d| d.metadata.creation_timestamp <= c.metadata.creation_timestamp)
            {
                s.default_class = Some(c);
            }
            s.classes.insert(name_of(&c.metadata), c);
        }
        for n in csinodes {
            let limits = n
                .spec
                .drivers
                .iter()
                .filter_map(|d| {
                    let count = d.allocatable.as_ref()?.count?;
                    Some((d.name.clone(), i64::from(count)))
                })
                .collect();
            s.limits.insert(name_of(&n.metadata), limits);
        }
        s
    }

    /// Attach limits of a node per CSI driver, from its CSINode (none known: no limit).
    pub fn limits_of(&self, node: &str) -> BTreeMap<String, i64> {
        self.limits.get(node).cloned().unwrap_or_default()
    }

    /// The claims a pod mounts (`persistentVolumeClaim` volumes and generic ephemeral volumes, whose
    /// claim is named `<pod>-<volume>`), resolved.
    pub fn claims_of(&self, pod: &core::Pod) -> Result<Vec<Claim>> {
        let ns = namespace_of(&pod.metadata);
        let mut claims = self.resolve_claims(ns, &claim_names(pod))?;
        // A generic ephemeral volume's claim serves only the pod that controls it.
        let pod_name = name_of(&pod.metadata);
        for v in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
            if v.ephemeral.is_none() || v.persistent_volume_claim.is_some() {
                continue;
            }
            let name = format!("{pod_name}-{}", v.name);
            let key = format!("{ns}/{name}");
            for c in claims.iter_mut().filter(|c| c.key == key) {
                c.ephemeral = true;
            }
            let Some(pvc) = self.claims.get(&(ns, name.as_str())) else {
                continue;
            };
            let owned = pvc.metadata.owner_references.iter().flatten().any(|o| {
                o.controller == Some(true)
                    && o.kind == "Pod"
                    && o.name == pod_name
                    && pod.metadata.uid.as_ref().is_none_or(|u| *u == o.uid)
            });
            if !owned {
                for c in claims.iter_mut().filter(|c| c.key == key) {
                    c.state = ClaimState::Waiting(Wait::NotOwned);
                }
            }
        }
        Ok(claims)
    }

    /// Claims of namespace `ns` by name ([`claim_names`]), resolved.
    pub fn resolve_claims(&self, ns: &str, names: &[String]) -> Result<Vec<Claim>> {
        names
            .iter()
            .map(|claim| {
                Ok(Claim {
                    key: format!("{ns}/{claim}"),
                    state: self.resolve(ns, claim)?,
                    exclusive: self.exclusive(ns, claim),
                    ephemeral: false,
                    class: self
                        .claims
                        .get(&(ns, claim.as_str()))
                        .and_then(|c| c.spec.as_ref())
                        .and_then(|s| s.storage_class_name.clone())
                        .filter(|c| !c.is_empty()),
                })
            })
            .collect()
    }

    /// Whether the claim asks for `ReadWriteOncePod` access: one pod at a time in the whole cluster.
    fn exclusive(&self, ns: &str, name: &str) -> bool {
        self.claims
            .get(&(ns, name))
            .and_then(|c| c.spec.as_ref())
            .and_then(|s| s.access_modes.as_ref())
            .is_some_and(|m| m.iter().any(|m| m == "ReadWriteOncePod"))
    }

    fn resolve(&self, ns: &str, name: &str) -> Result<ClaimState> {
        let Some(claim) = self.claims.get(&(ns, name)) else {
            return Ok(ClaimState::Waiting(Wait::Missing));
        };
        let spec = claim.spec.clone().unwrap_or_default();
        if let Some(volume) = spec.volume_name.as_deref().filter(|v| !v.is_empty()) {
            let Some(pv) = self.volumes.get(volume) else {
                return Ok(ClaimState::Waiting(Wait::Lost));
            };
            return bound(pv, volume);
        }
        let class = match spec.storage_class_name.as_deref() {
            // No class: only a pre-provisioned volume can bind it, by the volume controller.
            Some("") => return Ok(ClaimState::Waiting(Wait::Immediate)),
            Some(c) => self.classes.get(c).copied(),
            None => self.default_class,
        };
        let Some(class) = class else {
            return Ok(ClaimState::Waiting(Wait::NoClass));
        };
        if class.volume_binding_mode.as_deref() != Some("WaitForFirstConsumer") {
            return Ok(ClaimState::Waiting(Wait::Immediate));
        }
        let class_name = name_of(&class.metadata).to_string();
        let allowed = class
            .allowed_topologies
            .iter()
            .flatten()
            .map(|t| {
                t.match_label_expressions
                    .iter()
                    .flatten()
                    .map(|e| Requirement {
                        key: e.key.clone(),
                        op: SelectorOp::In,
                        values: e.values.clone(),
                    })
                    .collect()
            })
            .collect();
        let provisions = !matches!(class.provisioner.as_str(), "" | NO_PROVISIONER);
        let volumes = if provisions {
            None
        } else {
            Some(self.available(claim, ns, name, &class_name)?)
        };
        Ok(ClaimState::Delayed {
            driver: Some(csi_name(&class.provisioner).to_string()),
            class: class_name,
            allowed,
            volumes,
        })
    }

    /// The node affinities of the volumes an unbound claim of `class` could bind to (upstream's
    /// FindMatchingVolume): of its class, not being deleted, `Available` or already meant for this
    /// claim (`claimRef`), with room for the claim's request and every access mode it asks for.
    fn available(
        &self,
        claim: &core::PersistentVolumeClaim,
        ns: &str,
        name: &str,
        class: &str,
    ) -> Result<Vec<Vec<Vec<Requirement>>>> {
        let spec = claim.spec.clone().unwrap_or_default();
        let storage = |q: Option<&Quantity>| q.and_then(|q| parse_milli(&q.0).ok()).unwrap_or(0);
        let want = storage(
            spec.resources
                .as_ref()
                .and_then(|r| r.requests.as_ref())
                .and_then(|r| r.get("storage")),
        );
        let modes = spec.access_modes.clone().unwrap_or_default();
        let mut out = Vec::new();
        let mut names: Vec<&&str> = self.volumes.keys().collect();
        names.sort();
        for pv_name in names {
            let pv = self.volumes[*pv_name];
            let pv_spec = pv.spec.clone().unwrap_or_default();
            let mine = pv_spec
                .claim_ref
                .as_ref()
                .map(|r| r.namespace.as_deref() == Some(ns) && r.name.as_deref() == Some(name));
            let phase = pv.status.as_ref().and_then(|s| s.phase.as_deref());
            let has = pv_spec.access_modes.clone().unwrap_or_default();
            if pv_spec.storage_class_name.as_deref().unwrap_or_default() != class
                || pv.metadata.deletion_timestamp.is_some()
                || mine == Some(false)
                || (mine.is_none() && phase != Some("Available"))
                || storage(pv_spec.capacity.as_ref().and_then(|c| c.get("storage"))) < want
                || !modes.iter().all(|m| has.contains(m))
            {
                continue;
            }
            let at = format!("persistentvolume {pv_name}: spec.nodeAffinity.required");
            out.push(
                pv_spec
                    .node_affinity
                    .as_ref()
                    .and_then(|a| a.required.as_ref())
                    .map(|sel| node_selector_terms(sel, &at))
                    .transpose()?
                    .unwrap_or_default(),
            );
        }
        Ok(out)
    }
}

/// A bound volume: its required node affinity, its zone labels and the driver that attaches it.
fn bound(pv: &core::PersistentVolume, name: &str) -> Result<ClaimState> {
    let spec = pv.spec.clone().unwrap_or_default();
    let at = |field: &str| format!("persistentvolume {name}: {field}");
    let node_affinity = spec
        .node_affinity
        .as_ref()
        .and_then(|a| a.required.as_ref())
        .map(|sel| node_selector_terms(sel, &at("spec.nodeAffinity.required")))
        .transpose()?
        .unwrap_or_default();
    let driver = if let Some(csi) = &spec.csi {
        Some(csi.driver.clone())
    } else if spec.aws_elastic_block_store.is_some() {
        Some(csi_name("kubernetes.io/aws-ebs").to_string())
    } else {
        None
    };
    Ok(ClaimState::Bound {
        volume: name.to_string(),
        node_affinity,
        zones: volume_zones(&pv.metadata.labels.clone().unwrap_or_default()),
        driver,
    })
}
