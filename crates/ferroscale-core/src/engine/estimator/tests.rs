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
fn past_the_limit_later_pods_still_fill_the_new_nodes() {
    // Upstream: the limiter stops new nodes, not the estimate: a smaller pod of a later group
    // still goes onto the room the first group left.
    let mut p = pod("default", "big")
        .requests(resources(600, 1000, 1))
        .copies(2);
    p.extend(
        pod("default", "small")
            .requests(resources(300, 1000, 1))
            .copies(1),
    );
    let e = estimate(&refs(&p), &template(1000, 5000 * MIB, 10), 1);
    assert_eq!((e.nodes, e.scheduled.clone()), (1, vec![0, 2]));
    assert_eq!(e.unplaced, vec![(1, Unplaced::Limit)]);
}

#[test]
fn a_fresh_node_that_refuses_a_pod_ends_its_group() {
    // Pods that want a pod of their own app on their node: the first two share a node; the
    // third fits neither it nor a fresh one (no web pod there), and the group ends, its fresh
    // node holding nothing and not counted.
    let mut web = pod("default", "web")
        .requests(resources(400, 1000, 1))
        .copies(3);
    for x in &mut web {
        x.labels.insert("app".into(), "web".into());
        x.affinity.push(PodAffinityTerm {
            selector: LabelSelector {
                match_labels: [("app".to_string(), "web".to_string())].into(),
                requirements: vec![],
            },
            namespaces: vec![],
            topology_key: labels::HOSTNAME.into(),
            ..Default::default()
        });
    }
    let e = estimate(&refs(&web), &template(1000, 5000 * MIB, 10), 10);
    assert_eq!((e.nodes, e.scheduled.len()), (1, 2));
    assert_eq!(e.unplaced, vec![(2, Unplaced::NoFit(Unfit::PodAffinity))]);
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
