//! EKS managed node groups. An Auto Scaling group EKS created for a managed node group carries the tags
//! `eks:cluster-name` and `eks:nodegroup-name`; as upstream's AWS provider, its template gets what
//! `eks:DescribeNodegroup` says of the node group: its labels (with `eks.amazonaws.com/nodegroup`,
//! `eks.amazonaws.com/capacityType`, `amiType`, `diskSize` and `k8sVersion`), its taints and its
//! `node-template/resources/*` tags, so pods that select or tolerate them scale the group up from zero.
//! Answers, failed ones included, are cached for [`ttl::EKS_NODEGROUP_TTL`] less a random jitter. A failed
//! read (no `eks:DescribeNodegroup` permission, throttling) never fails the refresh: the template keeps
//! the node group's last good answer, else goes without it, and a warning says why.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use parking_lot::Mutex;

use super::api::{Api, RawGroup};
use super::ttl;
use crate::error::Result;
use crate::model::{Taint, TaintEffect};

/// The ASG tag naming the EKS cluster of a managed node group.
pub const CLUSTER_TAG: &str = "eks:cluster-name";
/// The ASG tag naming the managed node group.
pub const NODEGROUP_TAG: &str = "eks:nodegroup-name";
/// DescribeNodegroup calls made at once by one refresh.
const CONCURRENT_CALLS: usize = 4;

/// (cluster, node group).
type Identity = (String, String);

/// What a managed node group adds to its Auto Scaling group's template.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManagedNodegroup {
    /// Labels, winning over the ASG's (upstream's precedence).
    pub labels: BTreeMap<String, String>,
    /// Taints, added to the ASG's taint tags.
    pub taints: Vec<Taint>,
    /// The node group's tags: its `node-template/resources/*` tags win over the ASG's.
    pub tags: BTreeMap<String, String>,
}

/// The managed node group named by an ASG's tags, if both are set.
pub fn identity(tags: &BTreeMap<String, String>) -> Option<Identity> {
    let cluster = tags.get(CLUSTER_TAG).filter(|v| !v.is_empty())?;
    let nodegroup = tags.get(NODEGROUP_TAG).filter(|v| !v.is_empty())?;
    Some((cluster.clone(), nodegroup.clone()))
}

/// Each entry lives the TTL less up to the jitter, at random (upstream's jitter clock).
struct Jittered {
    ttl: Duration,
    jitter: Duration,
}

impl moka::Expiry<Identity, Option<Arc<ManagedNodegroup>>> for Jittered {
    fn expire_after_create(
        &self,
        key: &Identity,
        _: &Option<Arc<ManagedNodegroup>>,
        _: Instant,
    ) -> Option<Duration> {
        let jitter = u64::try_from(self.jitter.as_millis()).unwrap_or(u64::MAX);
        let random = std::collections::hash_map::RandomState::new().hash_one(key);
        Some(
            self.ttl
                .saturating_sub(Duration::from_millis(random % jitter.max(1))),
        )
    }
}

/// Cached DescribeNodegroup answers (`None`: the read failed), and the last good one of each node group.
pub struct ManagedNodegroups {
    cache: moka::future::Cache<Identity, Option<Arc<ManagedNodegroup>>>,
    last_good: Mutex<HashMap<Identity, Arc<ManagedNodegroup>>>,
}

impl Default for ManagedNodegroups {
    fn default() -> Self {
        ManagedNodegroups::with_ttl(ttl::EKS_NODEGROUP_TTL, ttl::EKS_NODEGROUP_TTL_JITTER)
    }
}

impl ManagedNodegroups {
    fn with_ttl(ttl: Duration, jitter: Duration) -> Self {
        ManagedNodegroups {
            cache: moka::future::Cache::builder()
                .expire_after(Jittered { ttl, jitter })
                .build(),
            last_good: Mutex::default(),
        }
    }

    /// The managed node group of each ASG that names one, by ASG name (left out: none known).
    pub async fn of_groups(
        &self,
        api: &Api,
        raw: &BTreeMap<String, RawGroup>,
    ) -> HashMap<String, Arc<ManagedNodegroup>> {
        let wanted: BTreeSet<Identity> = raw
            .values()
            .filter_map(|g| identity(&g.info.tags))
            .collect();
        // Node groups no group names any more are forgotten.
        self.last_good.lock().retain(|id, _| wanted.contains(id));
        let found: HashMap<Identity, Arc<ManagedNodegroup>> = futures::stream::iter(wanted)
            .map(|id| async move {
                let ng = self.get(&id, || describe(api, &id.0, &id.1)).await;
                ng.map(|n| (id, n))
            })
            .buffer_unordered(CONCURRENT_CALLS)
            .filter_map(std::future::ready)
            .collect()
            .await;
        raw.iter()
            .filter_map(|(name, g)| {
                Some((name.clone(), found.get(&identity(&g.info.tags)?)?.clone()))
            })
            .collect()
    }

    /// The node group from the cache, else from `read` (cached, failure or not); a failed read gives the
    /// last good answer.
    async fn get<F, Fut>(&self, id: &Identity, read: F) -> Option<Arc<ManagedNodegroup>>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<ManagedNodegroup>>,
    {
        let answer = match self.cache.get(id).await {
            Some(cached) => cached,
            None => {
                let read = match read().await {
                    Ok(ng) => {
                        let ng = Arc::new(ng);
                        self.last_good.lock().insert(id.clone(), ng.clone());
                        Some(ng)
                    }
                    Err(e) => {
                        tracing::warn!(cluster = %id.0, nodegroup = %id.1, error = %e, "reading the EKS managed node group failed; its templates go without its labels, taints and tags (or keep the last ones read)");
                        None
                    }
                };
                self.cache.insert(id.clone(), read.clone()).await;
                read
            }
        };
        answer.or_else(|| self.last_good.lock().get(id).cloned())
    }
}

/// One DescribeNodegroup call, converted.
async fn describe(api: &Api, cluster: &str, nodegroup: &str) -> Result<ManagedNodegroup> {
    let out = api
        .call(
            "eks/DescribeNodegroup",
            api.eks
                .describe_nodegroup()
                .cluster_name(cluster)
                .nodegroup_name(nodegroup)
                .send(),
        )
        .await?;
    let ng = out.nodegroup().ok_or_else(|| {
        crate::error::Error::Unavailable(format!(
            "eks/DescribeNodegroup: no node group in the answer for {cluster}/{nodegroup}"
        ))
    })?;
    convert(ng).map_err(|reason| crate::error::Error::GroupData {
        group: format!("{cluster}/{nodegroup}"),
        reason,
    })
}

/// The node group as upstream reads it (`getManagedNodegroupInfo`); an unknown taint effect fails the
/// whole answer, as there.
fn convert(ng: &aws_sdk_eks::types::Nodegroup) -> std::result::Result<ManagedNodegroup, String> {
    let mut labels = BTreeMap::new();
    if let Some(size) = ng.disk_size() {
        labels.insert("diskSize".to_string(), size.to_string());
    }
    if let Some(ami) = ng.ami_type().filter(|a| !a.as_str().is_empty()) {
        labels.insert("amiType".to_string(), ami.as_str().to_string());
    }
    if let Some(c) = ng.capacity_type().filter(|c| !c.as_str().is_empty()) {
        labels.insert(
            crate::labels::EKS_CAPACITY_TYPE.to_string(),
            c.as_str().to_string(),
        );
    }
    if let Some(v) = ng.version().filter(|v| !v.is_empty()) {
        labels.insert("k8sVersion".to_string(), v.to_string());
    }
    if let Some(n) = ng.nodegroup_name().filter(|n| !n.is_empty()) {
        labels.insert(crate::labels::EKS_NODEGROUP.to_string(), n.to_string());
    }
    for (k, v) in ng.labels().into_iter().flatten() {
        labels.insert(k.clone(), v.clone());
    }
    let mut taints = Vec::new();
    for t in ng.taints() {
        // A taint without a value is a taint with an empty one (upstream drops it: see the differences).
        let Some(key) = t.key() else { continue };
        let effect = t.effect().and_then(effect).ok_or_else(|| {
            format!(
                "taint {key}: unknown effect {:?}",
                t.effect().map(|e| e.as_str())
            )
        })?;
        taints.push(Taint {
            key: key.to_string(),
            value: t.value().unwrap_or_default().to_string(),
            effect,
        });
    }
    let tags = ng
        .tags()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(ManagedNodegroup {
        labels,
        taints,
        tags,
    })
}

/// EKS's taint effect names as Kubernetes'.
fn effect(e: &aws_sdk_eks::types::TaintEffect) -> Option<TaintEffect> {
    use aws_sdk_eks::types::TaintEffect as Eks;
    match e {
        Eks::NoSchedule => Some(TaintEffect::NoSchedule),
        Eks::NoExecute => Some(TaintEffect::NoExecute),
        Eks::PreferNoSchedule => Some(TaintEffect::PreferNoSchedule),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_eks::types as eks;

    fn tags(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_failed_read_is_cached_and_gives_the_last_good_answer() {
        futures::executor::block_on(async {
            let id: Identity = ("prod".into(), "ng-1".into());
            let good = ManagedNodegroup {
                labels: tags(&[("team", "ml")]),
                ..Default::default()
            };
            let denied = || async { Err(crate::error::Error::Unavailable("AccessDenied".into())) };
            let ngs = ManagedNodegroups::with_ttl(Duration::from_secs(60), Duration::ZERO);
            assert_eq!(ngs.get(&id, denied).await, None, "nothing read yet");
            let never = || async { panic!("the failure is cached") };
            assert_eq!(ngs.get(&id, never).await, None);

            let ngs = ManagedNodegroups::with_ttl(Duration::ZERO, Duration::ZERO);
            let read = ngs.get(&id, || async { Ok(good.clone()) }).await;
            assert_eq!(read.as_deref(), Some(&good));
            let kept = ngs.get(&id, denied).await;
            assert_eq!(kept.as_deref(), Some(&good), "the last good answer");
        })
    }

    #[test]
    fn both_tags_name_a_managed_node_group() {
        assert_eq!(
            identity(&tags(&[(CLUSTER_TAG, "prod"), (NODEGROUP_TAG, "ng-1")])),
            Some(("prod".into(), "ng-1".into()))
        );
        assert_eq!(identity(&tags(&[(NODEGROUP_TAG, "ng-1")])), None);
        assert_eq!(
            identity(&tags(&[(CLUSTER_TAG, "prod"), (NODEGROUP_TAG, "")])),
            None
        );
    }

    #[test]
    fn labels_taints_and_tags_as_upstream_reads_them() {
        let ng = eks::Nodegroup::builder()
            .nodegroup_name("ng-1")
            .disk_size(80)
            .ami_type(eks::AmiTypes::Al2023X8664Standard)
            .capacity_type(eks::CapacityTypes::Spot)
            .version("1.33")
            .labels("team", "ml")
            .labels("eks.amazonaws.com/nodegroup", "overridden")
            .taints(
                eks::Taint::builder()
                    .key("gpu")
                    .value("true")
                    .effect(eks::TaintEffect::NoSchedule)
                    .build(),
            )
            .taints(
                eks::Taint::builder()
                    .key("dedicated")
                    .effect(eks::TaintEffect::PreferNoSchedule)
                    .build(),
            )
            .tags(
                "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage",
                "80Gi",
            )
            .build();
        let m = convert(&ng).unwrap();
        assert_eq!(m.labels["team"], "ml");
        assert_eq!(m.labels[crate::labels::EKS_CAPACITY_TYPE], "SPOT");
        assert_eq!(m.labels["amiType"], "AL2023_x86_64_STANDARD");
        assert_eq!(m.labels["diskSize"], "80");
        assert_eq!(m.labels["k8sVersion"], "1.33");
        assert_eq!(
            m.labels["eks.amazonaws.com/nodegroup"], "overridden",
            "the node group's own labels win"
        );
        assert_eq!(
            m.taints,
            vec![
                Taint {
                    key: "gpu".into(),
                    value: "true".into(),
                    effect: TaintEffect::NoSchedule
                },
                Taint {
                    key: "dedicated".into(),
                    value: String::new(),
                    effect: TaintEffect::PreferNoSchedule
                },
            ]
        );
        assert_eq!(m.tags.len(), 1);
        let odd = eks::Nodegroup::builder()
            .taints(
                eks::Taint::builder()
                    .key("k")
                    .effect(eks::TaintEffect::from("SOMETIMES"))
                    .build(),
            )
            .build();
        assert!(convert(&odd).is_err(), "an unknown effect fails the answer");
    }
}
