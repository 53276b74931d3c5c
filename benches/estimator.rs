//! The binpacking estimator alone, at the sizes where its placement rules cost (the first two as in
//! the `engine` bench, which runs more besides):
//!
//! * `estimate_51000`: upstream's biggest binpacking case, 50,000 pods of 50m/100B plus 1,000 of
//!   95m/190B onto 1000m/5000Mi/100-pod nodes → 2,595 nodes.
//! * `anti_affinity_5000`: 5,000 replicas with hostname anti-affinity (one per node).
//! * `hostname_spread_3000`: 3,000 replicas spread over hostnames (maxSkew 1), 30 to a node by room:
//!   every pod after the first misses the last node and tries the others.
//!
//! Run with `cargo bench --bench estimator`.

use std::hint::black_box;

use ferroscale::engine::estimator::estimate;
use ferroscale::labels;
use ferroscale::model::workload::{
    LabelSelector, Node, Pod, PodAffinityTerm, PodMeta, SpreadConstraint,
};
use ferroscale::model::Resources;

fn main() {
    divan::main();
}

const MIB: i64 = 1 << 20;
const GIB: i64 = 1 << 30;

fn pod(name: String, app: &str, cpu_milli: i64, memory: i64) -> Pod {
    Pod {
        namespace: "default".into(),
        name,
        labels: [("app".to_string(), app.to_string())].into_iter().collect(),
        requests: Resources {
            cpu_milli,
            memory,
            pods: 1,
            ..Default::default()
        },
        meta: PodMeta {
            controller: Some("ReplicaSet".into()),
            unschedulable: true,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn template(cpu_milli: i64, memory: i64, pods: i64) -> Node {
    Node {
        name: "t".into(),
        allocatable: Resources {
            cpu_milli,
            memory,
            pods,
            ..Default::default()
        },
        ready: true,
        ..Default::default()
    }
}

fn app(name: &str) -> LabelSelector {
    LabelSelector {
        match_labels: [("app".to_string(), name.to_string())].into(),
        requirements: vec![],
    }
}

#[divan::bench(sample_count = 20)]
fn estimate_51000(bencher: divan::Bencher) {
    let mut pods: Vec<Pod> = (0..50_000)
        .map(|i| pod(format!("a-{i}"), "a", 50, 100))
        .collect();
    pods.extend((0..1_000).map(|i| pod(format!("b-{i}"), "b", 95, 190)));
    let refs: Vec<&Pod> = pods.iter().collect();
    let t = template(1000, 5000 * MIB, 100);
    assert_eq!(estimate(&refs, &t, 3000).nodes, 2595);
    bencher.bench_local(|| black_box(estimate(black_box(&refs), &t, 3000)));
}

#[divan::bench(sample_count = 20)]
fn anti_affinity_5000(bencher: divan::Bencher) {
    let pods: Vec<Pod> = (0..5_000)
        .map(|i| {
            let mut p = pod(format!("db-{i}"), "db", 500, GIB);
            p.anti_affinity.push(PodAffinityTerm {
                selector: app("db"),
                namespaces: vec![],
                topology_key: labels::HOSTNAME.into(),
                ..Default::default()
            });
            p
        })
        .collect();
    let refs: Vec<&Pod> = pods.iter().collect();
    let t = template(4000, 16 * GIB, 110);
    assert_eq!(estimate(&refs, &t, 5000).nodes, 5000);
    bencher.bench_local(|| black_box(estimate(black_box(&refs), &t, 5000)));
}

#[divan::bench(sample_count = 10)]
fn hostname_spread_3000(bencher: divan::Bencher) {
    let pods: Vec<Pod> = (0..3_000)
        .map(|i| {
            let mut p = pod(format!("web-{i}"), "web", 100, 100 * MIB);
            p.spread.push(SpreadConstraint {
                max_skew: 1,
                topology_key: labels::HOSTNAME.into(),
                selector: app("web"),
                min_domains: None,
                ignore_node_affinity: false,
                honor_taints: false,
            });
            p
        })
        .collect();
    let refs: Vec<&Pod> = pods.iter().collect();
    let t = template(3000, 16 * GIB, 110);
    let nodes = estimate(&refs, &t, 1000).nodes;
    assert!(nodes >= 100, "{nodes} nodes");
    bencher.bench_local(|| black_box(estimate(black_box(&refs), &t, 1000)));
}
