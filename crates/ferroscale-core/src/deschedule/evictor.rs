//! The descheduler's `DefaultEvictor`: which pods a strategy may propose at all (`filter`, its `Filter`
//! with the constraints it builds from its arguments) and which of those are worth moving
//! (`pre_evict`, its `PreEvictionFilter`: `nodeFit` and `namespaceLabelSelector`), with ferroscale's own
//! protections (do-not-disrupt, `safe-to-evict: "false"`) on top.

use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

use super::View;
use crate::engine::predicates::{fits_among, repelling, Cluster, NodeInfo, Overlay, Repel};
use crate::model::workload::{LabelSelector, Pod, PodPhase, SafeToEvict};

mod config;
mod noted;
#[cfg(test)]
mod tests;

pub use config::{
    EvictorArgs, NoEvictionPolicy, PodProtections, Protection, Protections, ProtectionsConfig,
    PvcProtection, StorageClassName, SYSTEM_CRITICAL_PRIORITY,
};

/// Why the evictor keeps a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// A static pod or its mirror.
    Mirror,
    /// Owned by a DaemonSet.
    DaemonSet,
    /// Being deleted already.
    Terminating,
    /// Annotated do-not-disrupt (`karpenter.sh/` or `ferroscale.io/do-not-disrupt`).
    DoNotDisrupt,
    /// Annotated `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"` (or `"on-completion"`).
    NotSafeToEvict,
    /// Annotated `descheduler.alpha.kubernetes.io/prefer-no-eviction`, under `noEvictionPolicy:
    /// Mandatory`.
    PreferNoEviction,
    /// Has `spec.resourceClaims`, protected by `PodsWithResourceClaims`.
    ResourceClaims,
    /// No owner: nothing would recreate it.
    BarePod,
    /// No owner and not failed (`evictFailedBarePods` lets failed bare pods go).
    BarePodNotFailed,
    /// System-critical priority.
    SystemCritical { priority: i32 },
    /// Priority at or above `priorityThreshold`.
    Priority { priority: i32, threshold: i32 },
    /// `priorityThreshold.name` names no PriorityClass: the descheduler would not start.
    UnknownPriorityClass(String),
    /// An emptyDir or hostPath volume.
    LocalStorage,
    /// A PersistentVolumeClaim, protected by `PodsWithPVC`.
    Pvc,
    /// A claim of a protected storage class.
    ProtectedStorageClass(String),
    /// A claim whose storage class is not known, under `protectedStorageClasses`.
    UnknownStorageClass(String),
    /// No PodDisruptionBudget covers it (`PodsWithoutPDB`).
    WithoutPdb,
    /// The evictor's `labelSelector` does not match it.
    LabelSelector,
    /// Its owner has fewer pods than `minReplicas`.
    MinReplicas { have: usize, want: u32 },
    /// Younger than `minPodAge` (or its age is not known).
    MinPodAge { age: Option<i64>, min: i64 },
    /// No other ready node (within `nodeSelector`) would take it (`nodeFit`).
    NoOtherNode,
    /// Its namespace's labels do not match `namespaceLabelSelector`.
    Namespace,
    /// The evictor's arguments are wrong (the policy refuses them before this).
    Misconfigured(String),
}

impl fmt::Display for Kept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kept::Mirror => f.write_str("a static pod"),
            Kept::DaemonSet => f.write_str("a DaemonSet pod"),
            Kept::Terminating => f.write_str("already terminating"),
            Kept::DoNotDisrupt => f.write_str("annotated do-not-disrupt"),
            Kept::NotSafeToEvict => f.write_str("annotated not safe to evict"),
            Kept::PreferNoEviction => {
                f.write_str("annotated prefer-no-eviction (noEvictionPolicy: Mandatory)")
            }
            Kept::ResourceClaims => f.write_str("has resource claims"),
            Kept::BarePod => f.write_str("has no owner to recreate it"),
            Kept::BarePodNotFailed => f.write_str("has no owner to recreate it and has not failed"),
            Kept::SystemCritical { priority } => {
                write!(f, "system-critical (priority {priority})")
            }
            Kept::Priority {
                priority,
                threshold,
            } => write!(
                f,
                "priority {priority} is not below the evictor's threshold {threshold}"
            ),
            Kept::UnknownPriorityClass(name) => {
                write!(
                    f,
                    "the evictor's priorityThreshold names no PriorityClass {name:?}"
                )
            }
            Kept::LocalStorage => f.write_str("has local storage (emptyDir or hostPath)"),
            Kept::Pvc => f.write_str("has a PersistentVolumeClaim"),
            Kept::ProtectedStorageClass(c) => {
                write!(f, "has a claim of protected storage class {c:?}")
            }
            Kept::UnknownStorageClass(claim) => {
                write!(f, "the storage class of its claim {claim} is not known")
            }
            Kept::WithoutPdb => f.write_str("no PodDisruptionBudget covers it"),
            Kept::LabelSelector => f.write_str("not matched by the evictor's labelSelector"),
            Kept::MinReplicas { have, want } => {
                write!(
                    f,
                    "its owner has {have} pods, fewer than minReplicas {want}"
                )
            }
            Kept::MinPodAge {
                age: Some(age),
                min,
            } => {
                write!(f, "{age}s old, younger than minPodAge {min}s")
            }
            Kept::MinPodAge { age: None, min } => {
                write!(f, "its age is not known (minPodAge {min}s)")
            }
            Kept::NoOtherNode => f.write_str("no other node would take it (nodeFit)"),
            Kept::Namespace => {
                f.write_str("its namespace is not matched by the evictor's namespaceLabelSelector")
            }
            Kept::Misconfigured(e) => write!(f, "the evictor is misconfigured: {e}"),
        }
    }
}

/// The evictor's arguments, read once per cycle.
struct Compiled {
    protections: Protections,
    /// Pods at or above it are kept; None: no threshold.
    threshold: Result<Option<i32>, Kept>,
    label_selector: Result<Option<LabelSelector>, Kept>,
    namespace_selector: Result<Option<LabelSelector>, Kept>,
    min_age: Result<Option<i64>, Kept>,
    node_selector: Result<LabelSelector, Kept>,
    protected_classes: Vec<String>,
}

/// A profile's evictor for one cycle.
pub struct Evictor<'a> {
    pub args: &'a EvictorArgs,
    pub view: &'a View<'a>,
    compiled: Compiled,
    /// The nodes `nodeFit` places on, with their pods, built at the first need.
    fit: OnceLock<(Vec<NodeInfo>, Repel)>,
    /// Pods per owner (namespace, kind, name), for `minReplicas`, built at the first need.
    owners: OnceLock<HashMap<(String, String, String), usize>>,
    /// The pods a strategy considered and this evictor kept, with why (`noted`).
    kept: std::sync::Mutex<Vec<(std::sync::Arc<Pod>, Kept)>>,
}

impl<'a> Evictor<'a> {
    pub fn new(args: &'a EvictorArgs, view: &'a View<'a>) -> Self {
        let bad = |e: String| Kept::Misconfigured(e);
        let selector = |field: &str, s: &Option<super::args::Selector>| {
            s.as_ref()
                .map(|s| s.to_selector().map_err(|e| bad(format!("{field}: {e}"))))
                .transpose()
                .map(|s| s.filter(|s| *s != LabelSelector::default()))
        };
        let threshold = match &args.priority_threshold {
            Some(t) if t.value.is_some() => Ok(t.value),
            Some(t) if !t.name.is_empty() => match view.cluster.priority_classes.get(&t.name) {
                Some(v) => Ok(Some(*v)),
                None => Err(Kept::UnknownPriorityClass(t.name.clone())),
            },
            _ => Ok(None),
        };
        let compiled = Compiled {
            protections: args.protections(),
            threshold,
            label_selector: selector("labelSelector", &args.label_selector),
            namespace_selector: selector("namespaceLabelSelector", &args.namespace_label_selector),
            min_age: args.min_pod_age_secs().map_err(bad),
            node_selector: args.node_selector().map_err(bad),
            protected_classes: args
                .protected_storage_classes()
                .into_iter()
                .map(String::from)
                .collect(),
        };
        Evictor {
            args,
            view,
            compiled,
            fit: OnceLock::new(),
            owners: OnceLock::new(),
            kept: Default::default(),
        }
    }

    /// Whether a strategy may propose the pod (the descheduler's `Filter`), else why not.
    pub fn filter(&self, pod: &Pod) -> Result<(), Kept> {
        if pod.meta.do_not_disrupt {
            return Err(Kept::DoNotDisrupt);
        }
        if matches!(
            pod.meta.safe_to_evict,
            Some(SafeToEvict::No | SafeToEvict::OnCompletion)
        ) {
            return Err(Kept::NotSafeToEvict);
        }
        if pod.meta.evict_annotation {
            return Ok(());
        }
        if self.args.no_eviction_policy == Some(NoEvictionPolicy::Mandatory)
            && pod.meta.prefer_no_eviction
        {
            return Err(Kept::PreferNoEviction);
        }
        if pod.meta.mirror {
            return Err(Kept::Mirror);
        }
        if pod.meta.deleted.is_some() {
            return Err(Kept::Terminating);
        }
        let c = &self.compiled;
        let p = c.protections;
        // A pod with no priority is neither system-critical nor at the threshold, as upstream reads
        // a nil `spec.priority`.
        if p.system_critical && !pod.meta.no_priority {
            if pod.meta.priority >= SYSTEM_CRITICAL_PRIORITY {
                return Err(Kept::SystemCritical {
                    priority: pod.meta.priority,
                });
            }
            if let Some(threshold) = c.threshold.clone()? {
                if pod.meta.priority >= threshold {
                    return Err(Kept::Priority {
                        priority: pod.meta.priority,
                        threshold,
                    });
                }
            }
        }
        let owned = !pod.meta.owners.is_empty() || pod.meta.controller.is_some();
        if !owned && p.failed_bare {
            return Err(Kept::BarePod);
        }
        if !owned && pod.meta.phase != PodPhase::Failed {
            return Err(Kept::BarePodNotFailed);
        }
        if p.local_storage && !pod.meta.local_volumes.is_empty() {
            return Err(Kept::LocalStorage);
        }
        if p.daemon_set && pod.owned_by_daemon_set() {
            return Err(Kept::DaemonSet);
        }
        if p.pvc {
            self.check_claims(pod)?;
        }
        if p.resource_claims && pod.meta.has_resource_claims {
            return Err(Kept::ResourceClaims);
        }
        if p.without_pdb && !self.view.cluster.pdbs.iter().any(|b| b.covers(pod)) {
            return Err(Kept::WithoutPdb);
        }
        if let Some(s) = c.label_selector.clone()? {
            if !s.matches(&pod.labels) {
                return Err(Kept::LabelSelector);
            }
        }
        self.check_min_replicas(pod)?;
        if let Some(min) = c.min_age.clone()? {
            let age = (pod.meta.created > 0).then(|| self.view.now() - pod.meta.created);
            if age.is_none_or(|a| a < min) {
                return Err(Kept::MinPodAge { age, min });
            }
        }
        Ok(())
    }

    /// Whether a pod the filter admits is worth evicting (the descheduler's `PreEvictionFilter`):
    /// with `nodeFit`, some other ready node within `nodeSelector` takes it by every scheduler filter
    /// (not the subset the descheduler checks); its namespace matches `namespaceLabelSelector`.
    pub fn pre_evict(&self, pod: &Pod) -> Result<(), Kept> {
        if self.args.node_fit && !self.fits_elsewhere(pod)? {
            return Err(Kept::NoOtherNode);
        }
        if let Some(s) = self.compiled.namespace_selector.clone()? {
            let labels = match self.view.cluster.namespaces {
                Some(all) => all.get(pod.namespace.as_str()),
                None => Some(&*pod.namespace_labels),
            };
            if !labels.is_some_and(|l| s.matches(l)) {
                return Err(Kept::Namespace);
            }
        }
        Ok(())
    }

    /// `filter` then `pre_evict`, as the descheduler's deschedule strategies combine them.
    pub fn admits(&self, pod: &Pod) -> Result<(), Kept> {
        self.filter(pod)?;
        self.pre_evict(pod)
    }

    /// `PodsWithPVC`, as the descheduler reads it: only `persistentVolumeClaim` volumes count (a
    /// generic ephemeral volume's claim does not); with `protectedStorageClasses`, only a claim of a
    /// listed class keeps the pod, and one whose class is not known (no claim, no class) keeps it too.
    fn check_claims(&self, pod: &Pod) -> Result<(), Kept> {
        let mut claims = pod.claims.iter().filter(|c| !c.ephemeral).peekable();
        if claims.peek().is_none() {
            return Ok(());
        }
        let protected = &self.compiled.protected_classes;
        if protected.is_empty() {
            return Err(Kept::Pvc);
        }
        for claim in claims {
            match &claim.class {
                Some(class) if protected.contains(class) => {
                    return Err(Kept::ProtectedStorageClass(class.clone()));
                }
                Some(_) => {}
                None => return Err(Kept::UnknownStorageClass(claim.key.clone())),
            }
        }
        Ok(())
    }

    fn check_min_replicas(&self, pod: &Pod) -> Result<(), Kept> {
        let want = self.args.min_replicas;
        if want <= 1 {
            return Ok(());
        }
        let owner = match (&pod.meta.owners[..], &pod.meta.controller_name) {
            ([o], _) => (o.kind.clone(), o.name.clone()),
            ([], Some(name)) => (
                pod.meta
                    .controller
                    .as_ref()
                    .map(|k| k.to_string())
                    .unwrap_or_default(),
                name.to_string(),
            ),
            // No owner, or several: the descheduler skips the check.
            _ => return Ok(()),
        };
        let counts = self.owners.get_or_init(|| {
            let mut counts = HashMap::new();
            let c = self.view.cluster;
            for p in c.pods.iter().chain(c.failed) {
                for o in owners_of(p) {
                    *counts
                        .entry((p.namespace.to_string(), o.0, o.1))
                        .or_default() += 1;
                }
            }
            counts
        });
        let have = counts
            .get(&(pod.namespace.to_string(), owner.0, owner.1))
            .copied()
            .unwrap_or(0);
        if have < want as usize {
            return Err(Kept::MinReplicas { have, want });
        }
        Ok(())
    }

    fn fits_elsewhere(&self, pod: &Pod) -> Result<bool, Kept> {
        let selector = self.compiled.node_selector.clone()?;
        let (nodes, repel) = self.fit.get_or_init(|| {
            let removing = self.view.cluster.removing;
            let nodes: Vec<NodeInfo> = self
                .view
                .nodes()
                .iter()
                .filter(|n| n.ready && selector.matches(&n.labels) && !removing.contains(&n.name))
                .map(|n| {
                    let mut info = NodeInfo::new(n.clone());
                    for p in self.view.pods_on(&n.name) {
                        info.add(p.clone());
                    }
                    info
                })
                .collect();
            let repel = repelling(&nodes);
            (nodes, repel)
        });
        let mut moved = pod.clone();
        moved.node_name = None;
        let here = pod.node_name.as_deref();
        let j = here.and_then(|h| nodes.iter().position(|n| n.node.name == h));
        // Where other pods count (anti-affinity, spread), the pod counts no more on the node it
        // leaves.
        let overlay = j
            .filter(|_| moved.inter_pod() || *repel > Repel::None)
            .map(|j| {
                let mut left = NodeInfo::new(nodes[j].node.clone());
                for p in &nodes[j].pods {
                    if !(p.namespace == pod.namespace && p.name == pod.name) {
                        left.add(p.clone());
                    }
                }
                let mut o = Overlay::default();
                o.changed.insert(j, left);
                o
            });
        let cluster = Cluster {
            base: nodes,
            added: &[],
            memo: None,
            overlay: overlay.as_ref(),
        };
        Ok(nodes
            .iter()
            .filter(|n| Some(n.node.name.as_str()) != here)
            .any(|n| fits_among(&moved, cluster, n, *repel).is_ok()))
    }
}

/// A pod's owners as (kind, name): its owner references, or its controller alone when only that is
/// known.
fn owners_of(p: &Pod) -> Vec<(String, String)> {
    if !p.meta.owners.is_empty() {
        return p
            .meta
            .owners
            .iter()
            .map(|o| (o.kind.clone(), o.name.clone()))
            .collect();
    }
    match (&p.meta.controller, &p.meta.controller_name) {
        (Some(k), Some(n)) => vec![(k.to_string(), n.to_string())],
        _ => Vec::new(),
    }
}
