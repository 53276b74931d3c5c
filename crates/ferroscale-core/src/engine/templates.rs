//! What a new node of a group looks like in the loop's simulations, as upstream builds it
//! (`MixedTemplateNodeInfoProvider`): a sanitised copy of one of the group's real nodes when it has a good
//! one (ready for a minute, schedulable, not being removed), carrying that node's DaemonSet and mirror
//! pods; else the last such copy remembered (a group scaled to zero keeps it); else the cloud's template,
//! with the pods the DaemonSets would start there.
//!
//! A real node knows what the cloud's template can only guess: labels the kubelet adds
//! (`--node-labels`), its true allocatable, its taints and the DaemonSet pods that really run.

use std::sync::Arc;

use super::readiness::is_ready;
use super::taints::TaintConfig;
use crate::labels;
use crate::model::workload::{Node, Pod};
use crate::model::{NodeGroup, Resources, Taint, TemplateNode};

/// How long a node's readiness must have held before it serves as a template (upstream's
/// stabilization delay), in seconds.
pub const STABILIZATION_DELAY: i64 = 60;

/// A group's template for one loop.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupTemplate {
    /// Labels, taints, capacity and allocatable of a new node (`template_node` makes nodes of it).
    pub node: Arc<TemplateNode>,
    /// The pods that start with a new node: the real node's DaemonSet and mirror pods (bound to no node
    /// here), or `None` for the cloud's template, whose DaemonSet pods are guessed from the DaemonSets.
    pub pods: Option<Arc<[Pod]>>,
    /// The real node it was copied from; `None` for the cloud's template.
    pub copied_from: Option<String>,
}

impl GroupTemplate {
    /// The cloud's template of `g`, its passing taints (start-up, status, conditions) left out as
    /// upstream's `TemplateNodeInfoFromNodeGroupTemplate` sanitises them: a new node loses them once
    /// started, and the pods waiting for it do not tolerate them.
    pub fn cloud(g: &NodeGroup, taints: &TaintConfig) -> Self {
        let node = if g.template.taints.iter().any(|t| transient(t, taints)) {
            Arc::new(TemplateNode {
                taints: sanitize_taints(&g.template.taints, taints),
                ..(*g.template).clone()
            })
        } else {
            g.template.clone()
        };
        GroupTemplate {
            node,
            pods: None,
            copied_from: None,
        }
    }

    /// A sanitised copy of `node`, a node of `group`, with the pods of `bound` that stay with their node
    /// (DaemonSet and mirror pods): its own name (also its hostname) and the group's label, its taints
    /// without the autoscaler's and the passing ones, its capacity and allocatable.
    pub fn from_node<'a>(
        node: &Node,
        bound: impl IntoIterator<Item = &'a Pod>,
        group: &str,
        taints: &TaintConfig,
    ) -> Self {
        let name = format!("template-node-for-{group}");
        let mut node_labels = (*node.labels).clone();
        node_labels.insert(labels::HOSTNAME.into(), name.clone());
        node_labels.insert(labels::NODE_GROUP.into(), group.into());
        // A node whose capacity was not reported promises what it can allocate.
        let capacity = if node.capacity == Resources::default() {
            node.allocatable.clone()
        } else {
            node.capacity.clone()
        };
        let pods: Vec<Pod> = bound
            .into_iter()
            .filter(|p| p.node_bound())
            .map(|p| Pod {
                node_name: None,
                ..p.clone()
            })
            .collect();
        GroupTemplate {
            node: Arc::new(TemplateNode {
                name,
                labels: node_labels,
                taints: sanitize_taints(&node.taints, taints),
                capacity,
                allocatable: node.allocatable.clone(),
                volume_limits: node.volume_limits.clone(),
            }),
            pods: Some(pods.into()),
            copied_from: Some(node.name.clone()),
        }
    }
}

/// Whether a taint belongs to the node's moment rather than to its group: the autoscaler's own
/// (ToBeDeleted, DeletionCandidate, disrupted), node conditions, cloud initialisation, start-up and status taints.
fn transient(t: &Taint, taints: &TaintConfig) -> bool {
    t.key == labels::TO_BE_DELETED
        || t.key == labels::DELETION_CANDIDATE
        || t.key == labels::DISRUPTED
        || labels::NODE_CONDITION_TAINTS.contains(&t.key.as_str())
        || taints.is_startup(t)
        || taints.is_status(t)
}

/// The taints a new node of the group would have, from a real node's (upstream's `SanitizeTaints`).
pub fn sanitize_taints(taints: &[Taint], config: &TaintConfig) -> Vec<Taint> {
    taints
        .iter()
        .filter(|t| !transient(t, config))
        .cloned()
        .collect()
}

/// Whether `node` may serve as its group's template at `now` (upstream's good template candidate):
/// ready for at least [`STABILIZATION_DELAY`] (a start-up taint means not ready yet), not cordoned, not
/// tainted for deletion, and not being removed.
pub fn good_candidate(node: &Node, now: i64, being_removed: bool, taints: &TaintConfig) -> bool {
    is_ready(node, taints)
        && node.ready_since + STABILIZATION_DELAY < now
        && !node.unschedulable
        && !being_removed
        && !node.marked_for_deletion()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{no_schedule, node, pod, resources};

    fn taint(key: &str) -> Taint {
        no_schedule(key, "")
    }

    /// A real node of the group, with taints a template must and must not keep.
    fn real() -> Node {
        let taints = [
            "dedicated",
            labels::TO_BE_DELETED,
            labels::DELETION_CANDIDATE,
            labels::DISRUPTED,
            "node.kubernetes.io/not-ready",
            "node.cloudprovider.kubernetes.io/uninitialized",
            "startup-taint.cluster-autoscaler.kubernetes.io/cni",
            "status-taint.cluster-autoscaler.kubernetes.io/gpu-health",
        ];
        taints
            .into_iter()
            .fold(node("ip-10-0-0-1").hostname(), |n, key| n.taint(taint(key)))
            .label("team", "blue")
            .allocatable(resources(3900, 14 << 30, 58))
            .ready()
            .build()
    }

    #[test]
    fn a_real_node_is_sanitised_into_a_template() {
        let on_it = |name| pod("kube-system", name).on("ip-10-0-0-1");
        let pods = [
            on_it("agent").controller("DaemonSet").build(),
            on_it("kube-proxy").mirror().build(),
            on_it("web").controller("ReplicaSet").build(),
        ];
        let t = GroupTemplate::from_node(&real(), &pods, "g", &TaintConfig::default());
        assert_eq!(t.copied_from.as_deref(), Some("ip-10-0-0-1"));
        assert_eq!(t.node.name, "template-node-for-g");
        assert_eq!(t.node.labels[labels::HOSTNAME], "template-node-for-g");
        assert_eq!(t.node.labels[labels::NODE_GROUP], "g");
        assert_eq!(t.node.labels["team"], "blue");
        assert_eq!(t.node.taints, vec![taint("dedicated")]);
        assert_eq!(t.node.allocatable.memory, 14 << 30);
        assert_eq!(t.node.capacity, t.node.allocatable, "no capacity reported");
        let names: Vec<&str> = t
            .pods
            .iter()
            .flat_map(|p| p.iter())
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(names, vec!["agent", "kube-proxy"]);
        assert!(t.pods.unwrap().iter().all(|p| p.node_name.is_none()));
    }

    #[test]
    fn only_stable_ready_schedulable_nodes_not_being_removed_are_candidates() {
        let mut n = real();
        n.taints.retain(|t| t.key == "dedicated");
        n.ready_since = 1000;
        assert!(good_candidate(&n, 1061, false, &TaintConfig::default()));
        assert!(
            !good_candidate(&n, 1060, false, &TaintConfig::default()),
            "ready for only a minute"
        );
        assert!(
            !good_candidate(&n, 2000, true, &TaintConfig::default()),
            "being removed"
        );
        let cordoned = Node {
            unschedulable: true,
            ..n.clone()
        };
        assert!(!good_candidate(
            &cordoned,
            2000,
            false,
            &TaintConfig::default()
        ));
        let unready = Node {
            ready: false,
            ..n.clone()
        };
        assert!(!good_candidate(
            &unready,
            2000,
            false,
            &TaintConfig::default()
        ));
        assert!(
            !good_candidate(&real(), 2000, false, &TaintConfig::default()),
            "tainted for deletion"
        );
        let starting = Node {
            taints: vec![taint("startup-taint.cluster-autoscaler.kubernetes.io/cni")],
            ..n.clone()
        };
        assert!(
            !good_candidate(&starting, 2000, false, &TaintConfig::default()),
            "still starting"
        );
    }

    #[test]
    fn the_clouds_template_loses_its_startup_taints() {
        use crate::fixtures::group;
        let template = real()
            .taints
            .iter()
            .fold(node("t"), |n, t| n.taint(t.clone()));
        let g = group("g").template(template.template()).build();
        let t = GroupTemplate::cloud(&g, &TaintConfig::default());
        assert_eq!(t.node.taints, vec![taint("dedicated")]);
        assert_eq!(t.copied_from, None);
        // Nothing to leave out: the cloud's template as it is.
        let plain = group("g")
            .template(node("t").taint(taint("dedicated")).template())
            .build();
        assert!(Arc::ptr_eq(
            &GroupTemplate::cloud(&plain, &TaintConfig::default()).node,
            &plain.template
        ));
    }
}
