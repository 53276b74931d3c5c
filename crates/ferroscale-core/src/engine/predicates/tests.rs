//! Tests of the predicates.

use super::*;
use crate::fixtures::{node, pod, req, resources, selector, NodeBuilder, PodBuilder};
use crate::labels;
use crate::model::volumes::{Claim, ClaimState};
use crate::model::workload::{
    PodAffinityTerm, Requirement, SelectorOp, SpreadConstraint, Toleration, FIELD_NODE_NAME,
};
use crate::model::Taint;

/// A node of `cpu` millicores, 8 GiB and 110 pod slots, labelled with its hostname.
fn sized(name: &str, cpu: i64) -> NodeBuilder {
    node(name)
        .hostname()
        .allocatable(resources(cpu, 8 << 30, 110))
}

/// A pod `default/<name>` of app `web` requesting `cpu` millicores and 1 GiB.
fn web(name: &str, cpu: i64) -> PodBuilder {
    pod("default", name)
        .label("app", "web")
        .requests(resources(cpu, 1 << 30, 1))
}

#[test]
fn resources_name_the_short_one() {
    let mut n = sized("n", 1000).info();
    n.add(web("a", 800).build());
    assert_eq!(
        fits_node(&web("b", 300).build(), &n),
        Err(Unfit::Insufficient("cpu".into()))
    );
    let mut gpu = web("g", 100).build();
    gpu.requests.extended.insert("nvidia.com/gpu".into(), 1);
    assert_eq!(
        fits_node(&gpu, &n).unwrap_err().to_string(),
        "insufficient nvidia.com/gpu"
    );
    n.node.allocatable.pods = 1;
    assert_eq!(
        fits_node(&web("c", 1).build(), &n),
        Err(Unfit::Insufficient("pods".into()))
    );
}

#[test]
fn selectors_affinity_taints_cordons_and_names() {
    let mut n = sized("n", 4000)
        .labels(&[("zone", "a"), ("cores", "4")])
        .info();
    let mut p = web("p", 100).build();
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
    let mut p = web("p", 100).build();
    p.host_ports.push(HostPort {
        protocol: "TCP".into(),
        ip: String::new(),
        port: 5555,
    });
    let mut n = sized("n", 4000).info();
    n.add(&p);
    assert_eq!(fits_node(&p, &n), Err(Unfit::HostPort(5555)));
}

#[test]
fn anti_affinity_by_hostname_and_zone() {
    let mut p = web("p", 100).build();
    p.anti_affinity.push(PodAffinityTerm {
        selector: selector(&[("app", "web")]),
        namespaces: vec![],
        topology_key: labels::HOSTNAME.into(),
        ..Default::default()
    });
    let mut a = sized("a", 4000).label("zone", "z1").info();
    a.add(&p);
    let b = sized("b", 4000).label("zone", "z1").info();
    let nodes = vec![a.clone(), b.clone()];
    assert_eq!(fits(&p, &nodes, &a), Err(Unfit::PodAntiAffinity));
    assert_eq!(fits(&p, &nodes, &b), Ok(()));
    // By zone: b shares a's zone.
    p.anti_affinity[0].topology_key = "zone".into();
    let mut a = sized("a", 4000).label("zone", "z1").info();
    a.add(&p);
    let nodes = vec![a, b.clone()];
    assert_eq!(fits(&p, &nodes, &b), Err(Unfit::PodAntiAffinity));
    // A pod without anti-affinity is still repelled by the one there.
    let plain = web("q", 100).build();
    assert_eq!(fits(&plain, &nodes, &b), Err(Unfit::ExistingAntiAffinity));
}

#[test]
fn affinity_needs_a_matching_pod_in_the_domain_except_for_the_first() {
    let mut p = web("p", 100).build();
    p.affinity.push(PodAffinityTerm {
        selector: selector(&[("app", "web")]),
        namespaces: vec![],
        topology_key: "zone".into(),
        ..Default::default()
    });
    let a = sized("a", 4000).label("zone", "z1").info();
    let b = sized("b", 4000).label("zone", "z2").info();
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
    let mut p = web("p", 100).build();
    p.spread.push(SpreadConstraint {
        max_skew: 1,
        topology_key: "zone".into(),
        selector: selector(&[("app", "web")]),
        ..Default::default()
    });
    let mut a = sized("a", 4000).label("zone", "z1").info();
    a.add(&p);
    let b = sized("b", 4000).label("zone", "z2").info();
    let nodes = vec![a.clone(), b.clone()];
    assert_eq!(
        fits(&p, &nodes, &a),
        Err(Unfit::TopologySpread("zone".into())),
        "z1 would have 2, z2 0"
    );
    assert_eq!(fits(&p, &nodes, &b), Ok(()));
    let unlabelled = sized("c", 4000).info();
    assert!(fits(&p, &nodes, &unlabelled).is_err());
}

/// Upstream: kubernetes pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go (TestNodeAffinity,
/// "Pod with matchFields using In operator ..." and "... matchFields and matchExpressions in one term")
/// and cluster-autoscaler's template nodes (named after no real node).
#[test]
fn match_fields_select_by_node_name_and_all_of_a_term_must_match() {
    let n = sized("node-1", 4000).labels(&[("zone", "a")]).info();
    let mut p = web("p", 100).build();
    p.node_affinity = vec![vec![req(FIELD_NODE_NAME, SelectorOp::In, &["node-2"])]];
    assert_eq!(
        fits_node(&p, &n),
        Err(Unfit::NodeAffinity),
        "a term of only matchFields naming another node"
    );
    p.node_affinity = vec![vec![req(FIELD_NODE_NAME, SelectorOp::In, &["node-1"])]];
    assert_eq!(fits_node(&p, &n), Ok(()));
    p.node_affinity = vec![vec![req(FIELD_NODE_NAME, SelectorOp::NotIn, &["node-1"])]];
    assert_eq!(fits_node(&p, &n), Err(Unfit::NodeAffinity));
    // Both kinds in one term: AND.
    p.node_affinity = vec![vec![
        req("zone", SelectorOp::In, &["a"]),
        req(FIELD_NODE_NAME, SelectorOp::In, &["node-2"]),
    ]];
    assert_eq!(fits_node(&p, &n), Err(Unfit::NodeAffinity));
    // A template (a node that does not exist yet) matches no name requirement, In or NotIn.
    let mut t = sized("node-1", 4000).info();
    t.node.template = true;
    for op in [SelectorOp::In, SelectorOp::NotIn] {
        p.node_affinity = vec![vec![req(FIELD_NODE_NAME, op, &["node-1"])]];
        assert_eq!(fits_node(&p, &t), Err(Unfit::NodeAffinity), "{op:?}");
    }
}

/// Upstream: kubernetes pkg/scheduler/framework/plugins/volumerestrictions (ReadWriteOncePod): a claim
/// another pod uses, on any node, keeps the pod off every node; a shared claim without the mode does not.
#[test]
fn a_read_write_once_pod_claim_in_use_blocks_every_node() {
    let claim = |exclusive| Claim {
        key: "default/data".into(),
        state: ClaimState::Bound {
            volume: "pv".into(),
            node_affinity: vec![],
            zones: vec![],
            driver: None,
        },
        exclusive,
        ephemeral: false,
        class: None,
    };
    let mut user = web("user", 100).build();
    user.claims = vec![claim(true)];
    let mut a = sized("a", 4000).info();
    a.add(&user);
    let b = sized("b", 4000).info();
    let mut taker = web("taker", 100).build();
    taker.claims = vec![claim(true)];
    let nodes = vec![a, b.clone()];
    assert_eq!(
        fits(&taker, &nodes, &b),
        Err(Unfit::ClaimInUse("default/data".into()))
    );
    taker.claims = vec![claim(false)];
    assert_eq!(fits(&taker, &nodes, &b), Ok(()));
}
