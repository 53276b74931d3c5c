//! Pods and nodes as the scheduling simulation sees them: only the fields the kube-scheduler's filters
//! read, already parsed (quantities to integers, selectors to typed requirements). Built from Kubernetes
//! objects by the adapters; the engine never sees a Kubernetes type.

use std::collections::BTreeMap;

pub use super::pod_meta::{
    ContainerState, Owner, PodCondition, PodMeta, PodPhase, Qos, SafeToEvict,
};
pub use super::selector::{
    LabelSelector, Requirement, SelectorOp, SpreadConstraint, FIELD_NODE_NAME,
};
use thin_vec::ThinVec;

use super::shared::{Labels, Shared, SharedName};
use super::volumes::Claim;
use super::{Resources, Taint, TaintEffect};

/// The owner kind of DaemonSet pods (`ownerReferences[].kind`), as [`PodMeta::controller`] holds it.
pub const DAEMON_SET: &str = "DaemonSet";

/// How a pod is known in decisions, events and reports: `namespace/name`. The one place it is built.
pub fn pod_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// A toleration, as in Kubernetes (`operator: Exists` when `value` is None).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Toleration {
    /// Empty with `Exists` tolerates every taint.
    pub key: String,
    pub value: Option<TolerationValue>,
    /// None tolerates every effect.
    pub effect: Option<TaintEffect>,
}

/// What a toleration asks of a taint's value: its operator with its value. `Gt` and `Lt` compare the
/// taint's value, an integer, with the toleration's (the TaintTolerationComparisonOperators feature).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TolerationValue {
    /// `operator: Equal` (or none).
    Equal(String),
    /// The taint's value is greater.
    Gt(String),
    /// The taint's value is less.
    Lt(String),
}

impl Toleration {
    pub fn tolerates(&self, t: &Taint) -> bool {
        let key = self.key.is_empty() && self.value.is_none() || self.key == t.key;
        let value = match &self.value {
            None => true,
            Some(TolerationValue::Equal(v)) => *v == t.value,
            Some(TolerationValue::Gt(v)) => {
                matches!((integer(&t.value), integer(v)), (Some(a), Some(b)) if a > b)
            }
            Some(TolerationValue::Lt(v)) => {
                matches!((integer(&t.value), integer(v)), (Some(a), Some(b)) if a < b)
            }
        };
        let effect = self.effect.is_none_or(|e| e == t.effect);
        key && value && effect
    }
}

/// A taint or toleration value as the numeric operators read it: a 64-bit integer written plainly (an
/// optional `-`, no `+`, no leading zero, no space); anything else compares as neither greater nor less.
fn integer(v: &str) -> Option<i64> {
    let digits = v.strip_prefix('-').unwrap_or(v);
    let plain = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    plain.then(|| v.parse().ok()).flatten()
}

/// A pod (anti-)affinity term: pods matching `selector` (its `matchLabelKeys` and `mismatchLabelKeys`
/// merged in by the adapter) in the same `topology_key` domain, from the namespaces `namespaces` names
/// or whose labels `namespace_selector` matches (neither: the pod's own namespace).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodAffinityTerm {
    pub selector: LabelSelector,
    pub namespaces: Vec<String>,
    /// `namespaceSelector`: None when not set (matches no namespace); an empty one matches them all.
    pub namespace_selector: Option<LabelSelector>,
    pub topology_key: String,
}

/// A host port a container binds: (protocol, host IP, port).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostPort {
    pub protocol: String,
    pub ip: String,
    pub port: u16,
}

impl HostPort {
    /// Two bindings conflict on the same port and protocol when either takes every address.
    pub fn conflicts(&self, other: &HostPort) -> bool {
        let any = |ip: &str| ip.is_empty() || ip == "0.0.0.0";
        self.port == other.port
            && self.protocol == other.protocol
            && (any(&self.ip) || any(&other.ip) || self.ip == other.ip)
    }
}

/// A copy of a pod shared from here on (places that keep pods hold them as `Arc`s, so sharing one
/// never copies it again).
impl From<&Pod> for std::sync::Arc<Pod> {
    fn from(p: &Pod) -> Self {
        std::sync::Arc::new(p.clone())
    }
}

/// What a pod asks of the node it lands on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pod {
    /// Shared by the pods converted together (see `model::shared`).
    pub namespace: SharedName,
    pub name: String,
    /// Shared by the replicas converted together (see `model::shared`).
    pub labels: Labels,
    /// Requests as the scheduler counts them (containers, sidecars, init peak, overhead; pods = 1).
    pub requests: Resources,
    /// `spec.nodeName`, if bound or pinned.
    pub node_name: Option<String>,
    pub node_selector: BTreeMap<String, String>,
    /// Required node affinity: OR of terms, each an AND of requirements (empty: no constraint).
    pub node_affinity: Vec<Vec<Requirement>>,
    /// Shared by the pods converted alike (admission gives most pods the same two).
    pub tolerations: Shared<Vec<Toleration>>,
    pub host_ports: ThinVec<HostPort>,
    pub affinity: ThinVec<PodAffinityTerm>,
    pub anti_affinity: ThinVec<PodAffinityTerm>,
    pub spread: ThinVec<SpreadConstraint>,
    /// The PersistentVolumeClaims it mounts, resolved to where their volumes can be used.
    pub claims: Vec<Claim>,
    /// In-tree volumes written in the pod itself (`awsElasticBlockStore`), as the CSI driver that
    /// attaches them and the volume id: they count toward attach limits as claims' volumes do.
    pub inline_volumes: ThinVec<(String, String)>,
    /// Labels of its namespace (from the dump's Namespace objects; empty when not known), which the
    /// `namespaceSelector` of affinity terms reads.
    pub namespace_labels: Labels,
    /// Facts scale-up and scale-down rules read, not the scheduler.
    pub meta: PodMeta,
}

impl Pod {
    /// `namespace/name`, how pods are named in reasons.
    pub fn key(&self) -> String {
        pod_key(&self.namespace, &self.name)
    }

    /// Whether an affinity term of this pod selects `other` (namespace and labels): `other` is in a
    /// namespace the term names or whose labels its namespace selector matches; with neither, in this
    /// pod's namespace (upstream's AffinityTerm.Matches).
    pub fn term_selects(&self, term: &PodAffinityTerm, other: &Pod) -> bool {
        let ns_ok = match &term.namespace_selector {
            None if term.namespaces.is_empty() => other.namespace == self.namespace,
            None => term.namespaces.contains(&other.namespace),
            Some(sel) => {
                term.namespaces.contains(&other.namespace) || sel.matches(&other.namespace_labels)
            }
        };
        ns_ok && term.selector.matches(&other.labels)
    }

    /// The volumes it attaches to its node, as (CSI driver, volume id): its claims' and its inline ones.
    pub fn attachments(&self) -> impl Iterator<Item = (&str, &str)> {
        self.claims.iter().filter_map(|c| c.attachment()).chain(
            self.inline_volumes
                .iter()
                .map(|(d, id)| (d.as_str(), id.as_str())),
        )
    }

    /// Whether its placement depends on pods elsewhere: pod (anti-)affinity, topology spread, or a
    /// claim no other pod may use (`ReadWriteOncePod`).
    pub fn inter_pod(&self) -> bool {
        !self.affinity.is_empty()
            || !self.anti_affinity.is_empty()
            || !self.spread.is_empty()
            || self.claims.iter().any(|c| c.exclusive)
    }

    /// Two pods with equal scheduling constraints and requests are interchangeable for binpacking.
    pub fn same_shape(&self, other: &Pod) -> bool {
        self.requests == other.requests
            && self.node_selector == other.node_selector
            && self.node_affinity == other.node_affinity
            && self.tolerations == other.tolerations
            && self.host_ports == other.host_ports
            && self.affinity == other.affinity
            && self.anti_affinity == other.anti_affinity
            && self.spread == other.spread
            && self.claims == other.claims
            && self.inline_volumes == other.inline_volumes
            && self.namespace == other.namespace
            && self.namespace_labels == other.namespace_labels
            && self.labels == other.labels
            && self.node_name == other.node_name
    }

    /// Controlled by a DaemonSet, or annotated as one (upstream's `pod.IsDaemonSetPod`): it runs on
    /// every node that fits, so it is neither moved nor counted as workload that needs a node.
    pub fn is_daemon_set(&self) -> bool {
        self.meta.controller.as_deref().map(String::as_str) == Some(DAEMON_SET)
            || self.meta.daemon_set_annotation
    }

    /// How its workload is known across incarnations (a replacement pod has a new name): its namespace
    /// and controlling owner, or the pod itself when it has none. What the cooldown between moves keys on.
    pub fn owner_key(&self) -> String {
        match (&self.meta.controller, &self.meta.controller_name) {
            (Some(kind), Some(name)) => format!("{}/{kind}/{name}", self.namespace),
            _ => format!("{}/Pod/{}", self.namespace, self.name),
        }
    }

    /// Any of its owners is a DaemonSet, controller or not (the descheduler's `IsDaemonsetPod`, which
    /// reads every owner reference where cluster-autoscaler reads the controller only).
    pub fn owned_by_daemon_set(&self) -> bool {
        self.is_daemon_set() || self.meta.owners.iter().any(|o| o.kind == DAEMON_SET)
    }

    /// Managed by a DaemonSet (or a mirror pod): it stays with its node and is not moved.
    pub fn node_bound(&self) -> bool {
        self.meta.mirror || self.is_daemon_set()
    }
}

/// A node as the scheduler filters it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Node {
    pub name: String,
    /// Shared with the node's other copies (the engine copies every node into its NodeInfos each loop;
    /// a write copies first).
    pub labels: Labels,
    pub taints: Vec<Taint>,
    pub allocatable: Resources,
    /// `status.capacity`: what `--cores-total` and `--memory-total` count and what a template copied
    /// from this node promises the expanders. Left empty, allocatable counts.
    pub capacity: Resources,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    pub provider_id: String,
    /// Its `Ready` condition is `True` (readiness as a whole: `engine::health::is_ready`).
    pub ready: bool,
    /// Its `DiskPressure` condition is `True`: upstream counts the node as not ready.
    pub disk_pressure: bool,
    /// Its `NetworkUnavailable` condition is `True`: upstream counts the node as not ready.
    pub network_unavailable: bool,
    /// When its readiness last changed (the latest transition of its Ready, DiskPressure and
    /// NetworkUnavailable conditions), seconds since the epoch; 0 when unknown.
    pub ready_since: i64,
    /// `cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"`.
    pub scale_down_disabled: bool,
    /// `karpenter.sh/do-not-disrupt` or `ferroscale.io/do-not-disrupt` `"true"` on the node: no voluntary
    /// method (scale-down, replacement, consolidation) takes it; notices and the descheduler still do.
    pub do_not_disrupt: bool,
    /// Creation time as the API server stamped it (`metadata.creationTimestamp`), seconds since the
    /// epoch: orders nodes by age and counts maximum lifetimes, which are days, not minutes.
    pub created: i64,
    /// When this process first saw the node, on the loop's clock (`run`'s index stamps it; a one-shot
    /// conversion, as `simulate`'s, takes `created`). Delays of minutes (still starting, a surge
    /// joined) count from here: the API server's clock may be skewed from the loop's by more.
    pub seen: i64,
    /// Volumes each CSI driver can attach to it, from its CSINode (a driver not named: no limit).
    pub volume_limits: BTreeMap<String, i64>,
    /// A copy of a group's template standing for a node that does not exist yet (scale-up's options,
    /// upcoming nodes): its name is made up, so a requirement on `metadata.name` matches it not.
    pub template: bool,
}

/// Upstream's `MaxCloudProviderNodeDeletionTime`: how long after its deletion taint was set a node
/// counts as being deleted.
pub const BEING_DELETED_SECS: i64 = 300;

impl Node {
    /// Its name, as node affinity's `matchFields` reads it: None for a template.
    pub fn field_name(&self) -> Option<&str> {
        (!self.template).then_some(self.name.as_str())
    }

    /// Whether it carries the deletion taint (`ToBeDeletedByClusterAutoscaler`, the first step of a
    /// removal): some autoscaler, ours or another, is taking it. The one definition of "being removed"
    /// every reader of the taint uses.
    pub fn marked_for_deletion(&self) -> bool {
        self.taints
            .iter()
            .any(|t| t.key == crate::labels::TO_BE_DELETED)
    }

    /// Whether it is being deleted at `now`: its deletion taint was set (its value is the unix time)
    /// less than [`BEING_DELETED_SECS`] ago (upstream's `IsNodeBeingDeleted`); an older or unreadable
    /// one is stale, left by a removal that stopped.
    pub fn being_deleted(&self, now: i64) -> bool {
        self.taints.iter().any(|t| {
            t.key == crate::labels::TO_BE_DELETED
                && t.value
                    .parse::<i64>()
                    .is_ok_and(|at| now.saturating_sub(at) < BEING_DELETED_SECS)
        })
    }
}

/// A PodDisruptionBudget: how many of the pods it selects may be evicted now.
#[derive(Debug, Clone, PartialEq)]
pub struct Pdb {
    pub namespace: String,
    pub name: String,
    pub selector: LabelSelector,
    /// `status.disruptionsAllowed`.
    pub disruptions_allowed: i32,
}

impl Pdb {
    pub fn covers(&self, pod: &Pod) -> bool {
        pod.namespace == self.namespace && self.selector.matches(&pod.labels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{labels, req};

    #[test]
    fn requirement_operators() {
        let l = labels(&[("zone", "a"), ("cores", "8")]);
        assert!(req("zone", SelectorOp::In, &["a", "b"]).matches(&l));
        assert!(!req("zone", SelectorOp::NotIn, &["a"]).matches(&l));
        assert!(
            req("gpu", SelectorOp::NotIn, &["x"]).matches(&l),
            "absent key is NotIn"
        );
        assert!(req("zone", SelectorOp::Exists, &[]).matches(&l));
        assert!(req("gpu", SelectorOp::DoesNotExist, &[]).matches(&l));
        assert!(req("cores", SelectorOp::Gt, &["4"]).matches(&l));
        assert!(!req("cores", SelectorOp::Lt, &["8"]).matches(&l));
        assert!(
            !req("zone", SelectorOp::Gt, &["1"]).matches(&l),
            "not a number"
        );
    }

    #[test]
    fn tolerations_match_key_value_and_effect() {
        let t = Taint {
            key: "dedicated".into(),
            value: "gpu".into(),
            effect: TaintEffect::NoSchedule,
        };
        let tol = |key: &str, value: Option<&str>, effect: Option<TaintEffect>| Toleration {
            key: key.into(),
            value: value.map(|v| TolerationValue::Equal(v.to_string())),
            effect,
        };
        assert!(tol("dedicated", Some("gpu"), Some(TaintEffect::NoSchedule)).tolerates(&t));
        assert!(tol("dedicated", None, None).tolerates(&t), "Exists");
        assert!(tol("", None, None).tolerates(&t), "tolerate everything");
        assert!(!tol("dedicated", Some("batch"), None).tolerates(&t));
        assert!(!tol("dedicated", None, Some(TaintEffect::NoExecute)).tolerates(&t));
    }

    #[test]
    fn numeric_tolerations_compare_plain_integers_only() {
        let taint = |value: &str| Taint {
            key: "sla".into(),
            value: value.into(),
            effect: TaintEffect::NoSchedule,
        };
        let tol = |value: TolerationValue| Toleration {
            key: "sla".into(),
            value: Some(value),
            effect: None,
        };
        let gt = |v: &str| tol(TolerationValue::Gt(v.into()));
        let lt = |v: &str| tol(TolerationValue::Lt(v.into()));
        assert!(gt("750").tolerates(&taint("950")));
        assert!(!gt("950").tolerates(&taint("950")));
        assert!(lt("0").tolerates(&taint("-9223372036854775808")));
        for bad in [
            "0200",
            "+200",
            " 200",
            "",
            "-",
            "2.5",
            "9223372036854775808",
        ] {
            assert!(!gt("100").tolerates(&taint(bad)), "{bad:?}");
            assert!(!lt(bad).tolerates(&taint("-5")), "{bad:?}");
        }
    }

    #[test]
    fn daemon_set_pods_are_told_by_their_controller() {
        let pod = |controller: Option<&str>, mirror| Pod {
            meta: PodMeta {
                controller: controller.map(Into::into),
                mirror,
                ..PodMeta::default()
            },
            ..Pod::default()
        };
        assert!(pod(Some(DAEMON_SET), false).is_daemon_set());
        assert!(!pod(Some("ReplicaSet"), false).is_daemon_set());
        assert!(!pod(None, true).is_daemon_set(), "a mirror pod is not");
        let mut annotated = pod(Some("ReplicaSet"), false);
        annotated.meta.daemon_set_annotation = true;
        assert!(annotated.is_daemon_set(), "the daemonset-pod annotation");
        assert!(pod(None, true).node_bound() && pod(Some(DAEMON_SET), false).node_bound());
        assert!(!pod(Some("ReplicaSet"), false).node_bound());
    }

    /// Upstream: kubernetes pkg/scheduler/framework/types.go (AffinityTerm.Matches): a term selects pods
    /// of the namespaces it names or whose labels its namespace selector matches (an empty selector:
    /// every namespace); with neither, of the pod's own namespace.
    #[test]
    fn affinity_terms_select_namespaces_by_name_or_labels() {
        let owner = Pod {
            namespace: "shop".into(),
            ..Pod::default()
        };
        let other = |ns: &str, team: &str| Pod {
            namespace: ns.into(),
            namespace_labels: labels(&[("team", team)]).into(),
            ..Pod::default()
        };
        let mut term = PodAffinityTerm::default();
        assert!(owner.term_selects(&term, &other("shop", "a")));
        assert!(!owner.term_selects(&term, &other("web", "a")));
        term.namespace_selector = Some(LabelSelector {
            match_labels: labels(&[("team", "a")]),
            requirements: vec![],
        });
        assert!(owner.term_selects(&term, &other("web", "a")));
        assert!(
            !owner.term_selects(&term, &other("shop", "b")),
            "only by labels now"
        );
        term.namespaces = vec!["shop".into()];
        assert!(owner.term_selects(&term, &other("shop", "b")), "or by name");
        term.namespace_selector = Some(LabelSelector::default());
        assert!(owner.term_selects(&term, &other("anything", "z")));
    }

    #[test]
    fn host_ports_conflict_on_shared_addresses() {
        let p = |ip: &str, port| HostPort {
            protocol: "TCP".into(),
            ip: ip.into(),
            port,
        };
        assert!(p("", 80).conflicts(&p("10.0.0.1", 80)));
        assert!(!p("10.0.0.1", 80).conflicts(&p("10.0.0.2", 80)));
        assert!(!p("", 80).conflicts(&p("", 81)));
    }

    /// Upstream: kubernetes pkg/controller/disruption/disruption.go (getPodsForPdb: a nil selector
    /// selects nothing) and the policy/v1 PodDisruptionBudgetSpec doc (an empty selector selects every
    /// pod of the namespace).
    #[test]
    fn a_null_pdb_selector_covers_no_pod_and_an_empty_one_every_pod_of_its_namespace() {
        let pdb = |selector| Pdb {
            namespace: "shop".into(),
            name: "b".into(),
            selector,
            disruptions_allowed: 0,
        };
        let mut web = Pod {
            namespace: "shop".into(),
            labels: labels(&[("app", "web")]).into(),
            ..Pod::default()
        };
        assert!(!pdb(LabelSelector::nothing()).covers(&web));
        assert!(pdb(LabelSelector::default()).covers(&web));
        web.namespace = "other".into();
        assert!(!pdb(LabelSelector::default()).covers(&web));
    }
}
