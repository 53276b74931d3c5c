//! Tests of the predicates.

use super::*;
use crate::model::workload::{
    LabelSelector, Requirement, SelectorOp, SpreadConstraint, Toleration,
};
use crate::model::Taint;

fn node(name: &str, cpu: i64, labels: &[(&str, &str)]) -> NodeInfo {
    let mut l: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    l.insert(labels::HOSTNAME.into(), name.into());
    NodeInfo::new(Node {
        name: name.into(),
        labels: l,
        taints: vec![],
        allocatable: Resources {
            cpu_milli: cpu,
            memory: 8 << 30,
            pods: 110,
            ..Default::default()
        },
        unschedulable: false,
        ..Default::default()
    })
}

fn pod(name: &str, cpu: i64) -> Pod {
    Pod {
        namespace: "default".into(),
        name: name.into(),
        labels: [("app".to_string(), "web".to_string())].into(),
        requests: Resources {
            cpu_milli: cpu,
            memory: 1 << 30,
            pods: 1,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn web() -> LabelSelector {
    LabelSelector {
        match_labels: [("app".to_string(), "web".to_string())].into(),
        requirements: vec![],
    }
}

#[test]
fn resources_name_the_short_one() {
    let mut n = node("n", 1000, &[]);
    n.add(pod("a", 800));
    assert_eq!(
        fits_node(&pod("b", 300), &n),
        Err(Unfit::Insufficient("cpu".into()))
    );
    let mut gpu = pod("g", 100);
    gpu.requests.extended.insert("nvidia.com/gpu".into(), 1);
    assert_eq!(
        fits_node(&gpu, &n).unwrap_err().to_string(),
        "insufficient nvidia.com/gpu"
    );
    n.node.allocatable.pods = 1;
    assert_eq!(
        fits_node(&pod("c", 1), &n),
        Err(Unfit::Insufficient("pods".into()))
    );
}

#[test]
fn selectors_affinity_taints_cordons_and_names() {
    let mut n = node("n", 4000, &[("zone", "a"), ("cores", "4")]);
    let mut p = pod("p", 100);
    p.node_selector.insert("zone".into(), "b".into());
    assert_eq!(fits_node(&p, &n), Err(Unfit::NodeSelector));
    p.node_selector.clear();
    p.node_affinity = vec![
        vec![Requirement {
            key: "cores".into(),
            op: SelectorOp::Gt,
            values: vec!["8".into()],
        }],
        vec![Requirement {
            key: "zone".into(),
            op: SelectorOp::In,
            values: vec!["a".into()],
        }],
    ];
    assert_eq!(fits_node(&p, &n), Ok(()), "terms are OR-ed");
    n.node.taints.push(Taint {
        key: "dedicated".into(),
        value: "gpu".into(),
        effect: TaintEffect::NoSchedule,
    });
    assert_eq!(
        fits_node(&p, &n).unwrap_err().to_string(),
        "taint dedicated=gpu:NoSchedule not tolerated"
    );
    p.tolerations.push(Toleration {
        key: "dedicated".into(),
        value: None,
        effect: None,
    });
    assert_eq!(fits_node(&p, &n), Ok(()));
    p.node_name = Some("other".into());
    assert_eq!(fits_node(&p, &n), Err(Unfit::NodeName));
    p.node_name = None;
    n.node.unschedulable = true;
    assert_eq!(fits_node(&p, &n), Err(Unfit::Unschedulable));
}

#[test]
fn host_ports_block_a_second_pod() {
    let mut p = pod("p", 100);
    p.host_ports.push(HostPort {
        protocol: "TCP".into(),
        ip: String::new(),
        port: 5555,
    });
    let mut n = node("n", 4000, &[]);
    n.add(&p);
    assert_eq!(fits_node(&p, &n), Err(Unfit::HostPort(5555)));
}

#[test]
fn anti_affinity_by_hostname_and_zone() {
    let mut p = pod("p", 100);
    p.anti_affinity.push(PodAffinityTerm {
        selector: web(),
        namespaces: vec![],
        topology_key: labels::HOSTNAME.into(),
    });
    let mut a = node("a", 4000, &[("zone", "z1")]);
    a.add(&p);
    let b = node("b", 4000, &[("zone", "z1")]);
    let nodes = vec![a.clone(), b.clone()];
    assert_eq!(fits(&p, &nodes, &a), Err(Unfit::PodAntiAffinity));
    assert_eq!(fits(&p, &nodes, &b), Ok(()));
    // By zone: b shares a's zone.
    p.anti_affinity[0].topology_key = "zone".into();
    let mut a = node("a", 4000, &[("zone", "z1")]);
    a.add(&p);
    let nodes = vec![a, b.clone()];
    assert_eq!(fits(&p, &nodes, &b), Err(Unfit::PodAntiAffinity));
    // A pod without anti-affinity is still repelled by the one there.
    let plain = pod("q", 100);
    assert_eq!(fits(&plain, &nodes, &b), Err(Unfit::ExistingAntiAffinity));
}

#[test]
fn affinity_needs_a_matching_pod_in_the_domain_except_for_the_first() {
    let mut p = pod("p", 100);
    p.affinity.push(PodAffinityTerm {
        selector: web(),
        namespaces: vec![],
        topology_key: "zone".into(),
    });
    let a = node("a", 4000, &[("zone", "z1")]);
    let b = node("b", 4000, &[("zone", "z2")]);
    assert_eq!(
        fits(&p, &[a.clone(), b.clone()], &a),
        Ok(()),
        "first of its kind"
    );
    let mut a2 = a.clone();
    a2.add(&p);
    let nodes = vec![a2.clone(), b.clone()];
    assert_eq!(fits(&p, &nodes, &b), Err(Unfit::PodAffinity));
    assert_eq!(fits(&p, &nodes, &a2), Ok(()));
}

#[test]
fn topology_spread_limits_skew() {
    let mut p = pod("p", 100);
    p.spread.push(SpreadConstraint {
        max_skew: 1,
        topology_key: "zone".into(),
        selector: web(),
    });
    let mut a = node("a", 4000, &[("zone", "z1")]);
    a.add(&p);
    let b = node("b", 4000, &[("zone", "z2")]);
    let nodes = vec![a.clone(), b.clone()];
    assert_eq!(
        fits(&p, &nodes, &a),
        Err(Unfit::TopologySpread("zone".into())),
        "z1 would have 2, z2 0"
    );
    assert_eq!(fits(&p, &nodes, &b), Ok(()));
    let unlabelled = node("c", 4000, &[]);
    assert!(fits(&p, &nodes, &unlabelled).is_err());
}
