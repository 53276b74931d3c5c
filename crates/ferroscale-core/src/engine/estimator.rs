//! How many new nodes of one template the pending pods need (pure): upstream's binpacking estimator.
//! Pods are grouped into equivalence groups (same requests and constraints), groups are taken in
//! decreasing order of `cpu / allocatable cpu + memory / allocatable memory`, and each pod goes to the
//! first new node it fits (first-fit decreasing), a new node being added when none fits, up to a limit.
//!
//! Inter-pod constraints (topology spread, pod affinity and anti-affinity) count the pods already in the
//! cluster: the estimate runs against the cluster's nodes (`base`, see [`super::topology::relevant`])
//! plus the new ones, and only new nodes receive pods.
//!
//! Fast path: within a group of identical pods whose placement can only get harder as nodes fill
//! (no pod affinity, no spread constraint), a node one pod did not fit is never tried again by the next,
//! so a group costs O(pods + nodes) checks instead of O(pods × nodes).

use crate::labels;

use super::equivalence::equivalence_groups;
use super::predicates::{
    fits_among, fits_in, repelling, Cluster, NodeInfo, Repel, SpreadMemo, Unfit,
};
use crate::clock::Deadline;
use crate::model::workload::{Node, Pod};

/// What the estimate found.
#[derive(Debug, Clone)]
pub struct Estimate {
    /// New nodes needed.
    pub nodes: usize,
    /// Indices (into the pods given) of the pods placed on them.
    pub scheduled: Vec<usize>,
    /// Pods not placed, with why: they fit no empty template node, or the node limit was reached.
    pub unplaced: Vec<(usize, Unplaced)>,
    /// The new nodes with their pods (only their sums when no pod has inter-pod constraints).
    pub placements: Vec<NodeInfo>,
}

/// Why a pod was left out of an estimate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unplaced {
    /// It does not fit even an empty node of the template.
    NoFit(Unfit),
    /// The node limit (max size, `--max-nodes-per-scaleup`, ...) was reached first.
    Limit,
    /// The time budget (`--max-nodegroup-binpacking-duration`) ran out first.
    TimeBudget,
}

/// Pods between two reads of the clock inside one equivalence group.
const CLOCK_EVERY: usize = 256;

/// A new node of the template, with a hostname of its own (per-node topology must tell them apart).
fn new_node(template: &Node, n: usize) -> NodeInfo {
    let mut node = template.clone();
    node.name = format!("{}-new-{n}", template.name);
    node.labels
        .insert(labels::HOSTNAME.to_string(), node.name.clone());
    NodeInfo::new(node)
}

/// Estimates the new nodes of `template` that `pods` need, adding at most `max_nodes`.
pub fn estimate(pods: &[&Pod], template: &Node, max_nodes: usize) -> Estimate {
    estimate_within(pods, template, max_nodes, &[], None)
}

/// [`estimate`] in a cluster whose nodes (`base`) inter-pod constraints count, stopping at `deadline`:
/// pods not looked at by then are [`Unplaced::TimeBudget`], so one pathological group cannot stall the
/// loop (upstream's `--max-nodegroup-binpacking-duration`).
pub fn estimate_within(
    pods: &[&Pod],
    template: &Node,
    max_nodes: usize,
    base: &[NodeInfo],
    deadline: Option<Deadline<'_>>,
) -> Estimate {
    estimate_shaped(
        pods,
        equivalence_groups(pods),
        template,
        max_nodes,
        base,
        deadline,
    )
}

/// [`estimate_within`] with the pods' equivalence groups already made (`equivalence_groups(pods)`):
/// scale-up estimates the same pods for every group and groups them once.
pub fn estimate_shaped(
    pods: &[&Pod],
    mut groups: Vec<Vec<usize>>,
    template: &Node,
    max_nodes: usize,
    base: &[NodeInfo],
    deadline: Option<Deadline<'_>>,
) -> Estimate {
    let out_of_time = || deadline.is_some_and(|d| d.passed());
    let alloc = &template.allocatable;
    let score = |p: &Pod| {
        let share = |want: i64, have: i64| {
            if have > 0 {
                want as f64 / have as f64
            } else {
                0.0
            }
        };
        share(p.requests.cpu_milli, alloc.cpu_milli) + share(p.requests.memory, alloc.memory)
    };
    groups.sort_by(|a, b| score(pods[b[0]]).total_cmp(&score(pods[a[0]])));

    let mut nodes: Vec<NodeInfo> = Vec::with_capacity(max_nodes.min(pods.len()));
    let mut scheduled = Vec::with_capacity(pods.len());
    let mut unplaced = Vec::new();
    let mut limit_hit = false;
    // Whether any placed pod has anti-affinity, which every later pod must then be checked against.
    let mut any_anti = repelling(base);
    // Without inter-pod constraints no check reads the pods on a node: only their sum is kept.
    let keep_pods = pods.iter().any(|p| p.inter_pod());
    let empty = new_node(template, 0);
    // Spread counts, kept as nodes are added and pods placed.
    let memo = SpreadMemo::default();
    let mut time_up = false;
    for group in groups {
        if limit_hit {
            unplaced.extend(group.iter().map(|&i| (i, Unplaced::Limit)));
            continue;
        }
        time_up = time_up || out_of_time();
        if time_up {
            unplaced.extend(group.iter().map(|&i| (i, Unplaced::TimeBudget)));
            continue;
        }
        let first = pods[group[0]];
        if let Err(why) = fits_in(first, &[], &empty, Repel::None) {
            // Refused by the node alone: no neighbour is to blame.
            unplaced.extend(group.iter().map(|&i| (i, Unplaced::NoFit(why.clone()))));
            continue;
        }
        let monotone = first.affinity.is_empty() && first.spread.is_empty();
        let mut start = 0;
        for (k, &i) in group.iter().enumerate() {
            if k > 0 && k % CLOCK_EVERY == 0 && out_of_time() {
                time_up = true;
                unplaced.extend(group[k..].iter().map(|&i| (i, Unplaced::TimeBudget)));
                break;
            }
            let pod = pods[i];
            let from = if monotone { start } else { 0 };
            let cluster = Cluster {
                base,
                added: &nodes,
                memo: Some(&memo),
                overlay: None,
            };
            let found = (from..nodes.len()).find(|&n| {
                nodes[n].has_room_for(pod) && fits_among(pod, cluster, &nodes[n], any_anti).is_ok()
            });
            let n = match found {
                Some(n) => n,
                None if nodes.len() < max_nodes => {
                    let node = new_node(template, nodes.len());
                    if let Err(why) = fits_among(pod, cluster, &node, any_anti) {
                        // Only neighbours (spread, anti-affinity) can refuse an empty node.
                        unplaced.push((i, Unplaced::NoFit(why)));
                        continue;
                    }
                    nodes.push(node);
                    memo.node_added(&nodes[nodes.len() - 1]);
                    nodes.len() - 1
                }
                None => {
                    limit_hit = true;
                    unplaced.extend(group[k..].iter().map(|&i| (i, Unplaced::Limit)));
                    break;
                }
            };
            if keep_pods {
                nodes[n].add(pod.clone());
                memo.pod_placed(&nodes[n], pod);
            } else {
                nodes[n].add_counted(pod);
            }
            any_anti = any_anti.max(Repel::of(pod));
            scheduled.push(i);
            start = n;
        }
    }
    Estimate {
        nodes: nodes.len(),
        scheduled,
        unplaced,
        placements: nodes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{node, pod, resources, MIB};
    use crate::model::workload::{HostPort, LabelSelector, PodAffinityTerm};

    fn template(cpu_milli: i64, memory: i64, pods: i64) -> Node {
        node("t")
            .allocatable(resources(cpu_milli, memory, pods))
            .build()
    }

    fn refs(p: &[Pod]) -> Vec<&Pod> {
        p.iter().collect()
    }

    // Upstream's binpacking cases (cluster-autoscaler estimator tests).

    #[test]
    fn ten_pods_of_350m_need_five_nodes() {
        let p = pod("default", "p-350")
            .requests(resources(350, 1000, 1))
            .copies(10);
        let e = estimate(&refs(&p), &template(1000, 2000 * MIB, 10), 1000);
        assert_eq!((e.nodes, e.scheduled.len()), (5, 10));
    }

    #[test]
    fn pod_slots_limit_small_pods() {
        let p = pod("default", "p-10")
            .requests(resources(10, 100, 1))
            .copies(20);
        let e = estimate(&refs(&p), &template(10_000, 20_000 * MIB, 10), 1000);
        assert_eq!((e.nodes, e.scheduled.len()), (2, 20));
    }

    #[test]
    fn one_host_port_one_node() {
        let mut p = pod("default", "p-200")
            .requests(resources(200, 1000, 1))
            .copies(8);
        for x in &mut p {
            x.host_ports.push(HostPort {
                protocol: "TCP".into(),
                ip: String::new(),
                port: 5555,
            });
        }
        let e = estimate(&refs(&p), &template(1000, 5000 * MIB, 10), 1000);
        assert_eq!((e.nodes, e.scheduled.len()), (8, 8));
    }

    #[test]
    fn the_time_budget_stops_the_estimate() {
        let p = pod("default", "p-500")
            .requests(resources(500, 100, 1))
            .copies(20);
        let clock = crate::clock::FixedClock::default();
        let spent = Deadline::after(&clock, std::time::Duration::ZERO);
        let e = estimate_within(
            &refs(&p),
            &template(1000, 5000 * MIB, 10),
            1000,
            &[],
            Some(spent),
        );
        assert_eq!(e.nodes, 0);
        assert_eq!(e.unplaced.len(), 20);
        assert!(e
            .unplaced
            .iter()
            .all(|(_, why)| *why == Unplaced::TimeBudget));
        let later = Deadline::after(&clock, std::time::Duration::from_secs(60));
        clock.advance(std::time::Duration::from_secs(59));
        let e = estimate_within(
            &refs(&p),
            &template(1000, 5000 * MIB, 10),
            1000,
            &[],
            Some(later),
        );
        assert_eq!((e.nodes, e.unplaced.len()), (10, 0));
    }

    #[test]
    fn the_limit_stops_the_estimate() {
        let p = pod("default", "p-500")
            .requests(resources(500, 1000, 1))
            .copies(20);
        let e = estimate(&refs(&p), &template(1000, 5000 * MIB, 10), 5);
        assert_eq!((e.nodes, e.scheduled.len()), (5, 10));
        assert_eq!(e.unplaced.len(), 10);
        assert!(e.unplaced.iter().all(|(_, why)| *why == Unplaced::Limit));
    }

    #[test]
    fn fifty_one_thousand_pods() {
        let mut p = pod("default", "p-50")
            .requests(resources(50, 100, 1))
            .copies(50_000);
        p.extend(
            pod("default", "p-95")
                .requests(resources(95, 190, 1))
                .copies(1_000),
        );
        let e = estimate(&refs(&p), &template(1000, 5000 * MIB, 100), 3000);
        assert_eq!((e.nodes, e.scheduled.len()), (2595, 51_000));
    }

    #[test]
    fn a_pod_too_big_for_the_template_says_why() {
        let mut p = pod("default", "p-100")
            .requests(resources(100, 1000, 1))
            .copies(2);
        p.extend(
            pod("default", "p-4000")
                .requests(resources(4000, 1000, 1))
                .copies(1),
        );
        let e = estimate(&refs(&p), &template(1000, 5000 * MIB, 10), 10);
        assert_eq!(e.nodes, 1);
        assert_eq!(
            e.unplaced,
            vec![(2, Unplaced::NoFit(Unfit::Insufficient("cpu".into())))]
        );
    }

    #[test]
    fn hostname_anti_affinity_spreads_one_per_node() {
        let mut p = pod("default", "p-100")
            .requests(resources(100, 1000, 1))
            .copies(4);
        for x in &mut p {
            x.labels.insert("app".into(), "db".into());
            x.anti_affinity.push(PodAffinityTerm {
                selector: LabelSelector {
                    match_labels: [("app".to_string(), "db".to_string())].into(),
                    requirements: vec![],
                },
                namespaces: vec![],
                topology_key: labels::HOSTNAME.into(),
                ..Default::default()
            });
        }
        let e = estimate(&refs(&p), &template(4000, 8000 * MIB, 110), 100);
        assert_eq!((e.nodes, e.scheduled.len()), (4, 4));
    }
}
