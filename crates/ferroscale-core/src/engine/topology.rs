//! The part of the cluster that pending pods' inter-pod constraints can see, for the estimator: the
//! kube-scheduler counts pods on every node for topology spread and pod (anti-)affinity, so a scale-up
//! judged on new nodes alone would pile a zone-spread deployment into one zone.

use super::equivalence::equivalence_groups;
use super::predicates::{NodeInfo, Repel};
use crate::model::workload::Pod;

/// Whether a pod's placement depends on pods elsewhere.
pub fn constrained(p: &Pod) -> bool {
    p.inter_pod()
}

/// The nodes of `nodes` an estimate for `pods` must count: each node holding a pod some pod's affinity,
/// anti-affinity or spread constraint selects (or that uses a `ReadWriteOncePod` claim some pod mounts), or a pod whose anti-affinity reaches beyond its node,
/// with only those pods; and when a pod spreads, every other node without pods (a domain holding none
/// of the selected pods still counts, as zero). Empty when no pod is constrained and no placed pod
/// repels beyond its node, so the common case copies nothing.
pub fn relevant(pods: &[&Pod], nodes: &[NodeInfo]) -> Vec<NodeInfo> {
    // One pod per equivalence group: replicas share their constraints.
    let shapes: Vec<&Pod> = equivalence_groups(pods)
        .iter()
        .map(|g| pods[g[0]])
        .filter(|p| constrained(p))
        .collect();
    let repels = |o: &Pod| Repel::of(o) == Repel::Anywhere;
    if shapes.is_empty() && !nodes.iter().any(|n| n.pods.repel() == Repel::Anywhere) {
        return Vec::new();
    }
    let spreads = shapes.iter().any(|p| !p.spread.is_empty());
    let selected = |o: &Pod| {
        repels(o)
            || shapes.iter().any(|p| {
                p.affinity
                    .iter()
                    .chain(&p.anti_affinity)
                    .any(|t| p.term_selects(t, o))
                    || p.spread
                        .iter()
                        .any(|c| o.namespace == p.namespace && c.selector.matches(&o.labels))
                    || p.claims
                        .iter()
                        .filter(|c| c.exclusive)
                        .any(|c| o.claims.iter().any(|oc| oc.key == c.key))
            })
    };
    let mut out = Vec::new();
    for n in nodes {
        let mut info = NodeInfo::new(n.node.clone());
        for o in n.pods.iter().filter(|o| selected(o)) {
            info.pods.push(o.clone());
        }
        if spreads || !info.pods.is_empty() {
            out.push(info);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{node, pod, selector};
    use crate::labels;
    use crate::model::workload::SpreadConstraint;

    #[test]
    fn unconstrained_pods_see_nothing_and_spread_sees_every_domain() {
        let app = |name: &str, app: &str| pod("shop", name).label("app", app).build();
        let cluster = [
            node("a").info_with([app("web-1", "web"), app("db-1", "db")]),
            node("b").info_with([app("db-2", "db")]),
        ];
        let plain = app("web-2", "web");
        assert!(relevant(&[&plain], &cluster).is_empty());
        let mut spread = app("web-3", "web");
        spread.spread.push(SpreadConstraint {
            max_skew: 1,
            topology_key: labels::ZONE.into(),
            selector: selector(&[("app", "web")]),
            ..Default::default()
        });
        let seen = relevant(&[&plain, &spread], &cluster);
        let names: Vec<(&str, Vec<&str>)> = seen
            .iter()
            .map(|n| {
                (
                    n.node.name.as_str(),
                    n.pods.iter().map(|p| p.name.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(names, vec![("a", vec!["web-1"]), ("b", vec![])]);
    }
}
