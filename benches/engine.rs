//! The engine at the sizes where peers are slow (issue: CA takes 15 minutes for 3,000 pending pods,
//! Karpenter 33 for 40,000). divan's allocation profiler reports the bytes each run allocates.
//!
//! * `estimate_51000`: upstream's biggest binpacking case, 50,000 pods of 50m/100B plus 1,000 of 95m/190B
//!   onto 1000m/5000Mi/100-pod nodes → 2,595 nodes.
//! * `loop_50000_pending`: one `run_once` with 1,000 full nodes × 50 pods and 50,000 pending pods of five
//!   deployments over five groups.
//! * `anti_affinity_5000`: 5,000 pending replicas with hostname anti-affinity (one per node).
//! * `scale_down_2000`: scale-down evaluation of 2,000 lightly used nodes.
//! * `spread_500_in_2000`: one `run_once` where 500 pending pods spread by zone (maxSkew 1) over three
//!   zonal groups, against 2,000 full nodes holding 20,000 pods, 2,000 of the same app: the estimate
//!   counts the cluster's pods. `spread_5000_in_1000`: 5,000 such pods against 1,000 nodes.
//! * `loop_5000x30_10000_pending`: one loop with 5,000 full nodes × 30 pods and 10,000 pending pods.
//! * `scale_down_5000`: scale-down evaluation of 5,000 lightly used nodes.
//! * `steady_loop_5000x30_10000_pending`, `steady_scale_down_5000`: the same two as steady loops, the
//!   pods' placement (and what each node's pod list keeps) carried from the loop before, as `run` and a
//!   replay carry them.
//! * `convert_51000`: what `ferroscale run` does first every loop, turning the watch caches' Kubernetes
//!   objects (1,000 nodes, 51,000 pods) into the engine's model.
//!
//! * `reconcile_intents_5000`: what a new leader does before its first loop on 5,000 nodes, 500 of them
//!   with an intent (decoded from their annotations, then reconciled).
//!
//! Run with `cargo bench --bench engine`.

use ferroscale::labels;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use ferroscale::model::shared::Interner;
use std::hint::black_box;
use std::sync::Arc;

use ferroscale::cloud::memory::{MemoryCloud, MemoryConfig};
use ferroscale::cloud::Cloud;
use ferroscale::engine::estimator::estimate;
use ferroscale::engine::{run_once_kept, Memory, Placement, World};
use ferroscale::model::workload::{
    LabelSelector, Node, Pod, PodAffinityTerm, PodMeta, SpreadConstraint,
};
use ferroscale::model::{NodeGroup, Resources};

#[global_allocator]
static ALLOC: divan::AllocProfiler = divan::AllocProfiler::system();

fn main() {
    divan::main();
}

const MIB: i64 = 1 << 20;
const GIB: i64 = 1 << 30;

/// A replica as `run`'s conversion hands it to the engine: the replicas of one app share their label
/// map and namespace (`model::shared`).
fn pod(name: String, app: &str, cpu_milli: i64, memory: i64) -> Pod {
    type Tables = (Interner<String>, Interner<BTreeMap<String, String>>);
    thread_local! {
        static SHARED: RefCell<Tables> = RefCell::default();
    }
    let (namespace, labels) = SHARED.with_borrow_mut(|(names, labels)| {
        (
            names.intern_ref("default"),
            labels.intern(BTreeMap::from([("app".to_string(), app.to_string())])),
        )
    });
    Pod {
        namespace,
        name,
        labels,
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
                selector: LabelSelector {
                    match_labels: [("app".to_string(), "db".to_string())].into(),
                    requirements: vec![],
                },
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

/// A cluster of `nodes` nodes in group `general` with `per_node` pods each of `cpu` millicores, plus
/// `pending` pods over five deployments, and five groups.
struct Cluster {
    nodes: Vec<Node>,
    node_groups: HashMap<String, String>,
    pods: Vec<std::sync::Arc<Pod>>,
    groups: Vec<Arc<NodeGroup>>,
}

fn cluster(nodes: usize, per_node: usize, cpu: i64, pending: usize) -> Cluster {
    let mut yaml = String::from("nodeGroups:\n");
    for (name, cpu, mem, price) in [
        ("general", 4, 16, 0.192),
        ("large", 8, 32, 0.384),
        ("xlarge", 16, 64, 0.768),
        ("memory", 4, 32, 0.252),
        ("compute", 8, 16, 0.34),
    ] {
        yaml.push_str(&format!(
            "  - {{name: {name}, minSize: 0, maxSize: 100000, capacity: {{cpu: {cpu}, memory: {mem}Gi, pods: 110}}, pricePerHour: {price}}}\n"
        ));
    }
    let cloud = MemoryCloud::new(&MemoryConfig::parse(&yaml).unwrap()).unwrap();
    let snapshot = cloud.snapshot();
    let mut groups: Vec<Arc<NodeGroup>> = snapshot.groups().cloned().collect();
    let general = groups.iter().position(|g| g.id == "general").unwrap();
    Arc::make_mut(&mut groups[general]).target_size = nodes as i32;
    let mut out = Cluster {
        nodes: Vec::new(),
        node_groups: HashMap::new(),
        pods: Vec::new(),
        groups,
    };
    for n in 0..nodes {
        let name = format!("node-{n}");
        let mut node = template(4000, 16 * GIB, 110);
        node.name = name.clone();
        node.labels.insert(labels::HOSTNAME.into(), name.clone());
        out.node_groups.insert(name.clone(), "general".into());
        out.nodes.push(node);
        for k in 0..per_node {
            let mut p = pod(format!("bound-{n}-{k}"), "bound", cpu, 64 * MIB);
            p.node_name = Some(name.clone());
            p.meta.unschedulable = false;
            out.pods.push(p.into());
        }
    }
    for i in 0..pending {
        let app = format!("web-{}", i % 5);
        out.pods.push(
            pod(
                format!("{app}-{i}"),
                &app,
                250 * (1 + (i % 5) as i64),
                512 * MIB,
            )
            .into(),
        );
    }
    out
}

fn run(c: &Cluster) -> usize {
    run_kept(c, &mut Placement::default())
}

/// [`run`] with the placement of earlier loops on the same cluster: a steady loop of `run` or of a
/// replay, where nothing changed since the last.
fn run_kept(c: &Cluster, placement: &mut Placement) -> usize {
    let world = World {
        nodes: &c.nodes,
        node_groups: &c.node_groups,
        pods: &c.pods,
        pdbs: &[],
        daemon_pods: &[],
        groups: &c.groups,
        removing: &Default::default(),
        doubts: &[],
        interrupted: &HashMap::new(),
    };
    let mut memory = Memory::default();
    let mut settings = ferroscale::cli::flags::default_engine();
    settings.defaults.scale_down_unneeded_time = std::time::Duration::ZERO;
    settings.scale_down_delay_after_add = std::time::Duration::ZERO;
    let d = run_once_kept(
        &world,
        &settings,
        &mut memory,
        0,
        &ferroscale::time::MONOTONIC,
        placement,
    );
    d.scale_up.iter().map(|u| u.delta as usize).sum::<usize>() + d.scale_down.len()
}

#[divan::bench(sample_count = 10)]
fn loop_50000_pending(bencher: divan::Bencher) {
    // 50 pods × 80m fill the 4-core nodes: no pending pod fits an existing node.
    let c = cluster(1_000, 50, 80, 50_000);
    assert!(run(&c) > 0);
    bencher.bench_local(|| black_box(run(black_box(&c))));
}

#[divan::bench(sample_count = 10)]
fn scale_down_2000(bencher: divan::Bencher) {
    // 5 pods × 100m: every node is under the threshold; their pods fit elsewhere.
    let c = cluster(2_000, 5, 100, 0);
    assert!(run(&c) > 0);
    bencher.bench_local(|| black_box(run(black_box(&c))));
}

/// `nodes` full nodes (10 pods × 400m, one in ten of app `web`) over three zones, three zonal groups, and
/// `pending` web pods spread by zone (maxSkew 1).
fn zoned_spread(nodes: usize, pending: usize) -> Cluster {
    let mut c = cluster(nodes, 10, 400, 0);
    let zone = |i: usize| format!("zone-{}", i % 3);
    for (i, n) in c.nodes.iter_mut().enumerate() {
        n.labels.insert(labels::ZONE.into(), zone(i));
    }
    for (i, g) in c.groups.iter_mut().enumerate() {
        let t = Arc::make_mut(&mut Arc::make_mut(g).template);
        t.labels.insert(labels::ZONE.into(), zone(i));
    }
    let spread = SpreadConstraint {
        max_skew: 1,
        topology_key: labels::ZONE.into(),
        selector: LabelSelector {
            match_labels: [("app".to_string(), "web".to_string())].into(),
            requirements: vec![],
        },
        ..Default::default()
    };
    for p in c.pods.iter_mut().filter(|p| p.name.ends_with("-0")) {
        std::sync::Arc::make_mut(p)
            .labels
            .insert("app".into(), "web".into());
    }
    for i in 0..pending {
        let mut p = pod(format!("web-{i}"), "web", 500, 512 * MIB);
        p.spread.push(spread.clone());
        c.pods.push(p.into());
    }
    c
}

#[divan::bench(sample_count = 10)]
fn spread_500_in_2000(bencher: divan::Bencher) {
    let c = zoned_spread(2_000, 500);
    assert!(run(&c) > 0);
    bencher.bench_local(|| black_box(run(black_box(&c))));
}

#[divan::bench(sample_count = 3)]
fn spread_5000_in_1000(bencher: divan::Bencher) {
    let c = zoned_spread(1_000, 5_000);
    assert!(run(&c) > 0);
    bencher.bench_local(|| black_box(run(black_box(&c))));
}

#[divan::bench(sample_count = 5)]
fn loop_5000x30_10000_pending(bencher: divan::Bencher) {
    // 30 pods × 130m fill the 4-core nodes.
    let c = cluster(5_000, 30, 130, 10_000);
    assert!(run(&c) > 0);
    bencher.bench_local(|| black_box(run(black_box(&c))));
}

#[divan::bench(sample_count = 5)]
fn scale_down_5000(bencher: divan::Bencher) {
    let c = cluster(5_000, 5, 100, 0);
    assert!(run(&c) > 0);
    bencher.bench_local(|| black_box(run(black_box(&c))));
}

/// `loop_5000x30_10000_pending` as a steady loop: the placement kept from the loop before.
#[divan::bench(sample_count = 5)]
fn steady_loop_5000x30_10000_pending(bencher: divan::Bencher) {
    let c = cluster(5_000, 30, 130, 10_000);
    let mut kept = Placement::default();
    assert!(run_kept(&c, &mut kept) > 0);
    bencher.bench_local(|| black_box(run_kept(black_box(&c), &mut kept)));
}

/// `scale_down_5000` as a steady loop: the placement kept from the loop before.
#[divan::bench(sample_count = 5)]
fn steady_scale_down_5000(bencher: divan::Bencher) {
    let c = cluster(5_000, 5, 100, 0);
    let mut kept = Placement::default();
    assert!(run_kept(&c, &mut kept) > 0);
    bencher.bench_local(|| black_box(run_kept(black_box(&c), &mut kept)));
}

#[divan::bench(sample_count = 10)]
fn convert_51000(bencher: divan::Bencher) {
    use k8s_openapi::api::core::v1 as core;
    let nodes: Vec<core::Node> = (0..1_000)
        .map(|i| {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": format!("n-{i}"), "labels": {"kubernetes.io/hostname": format!("n-{i}")}},
                "spec": {"providerID": format!("aws:///us-east-1a/i-{i:017x}")},
                "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                           "conditions": [{"type": "Ready", "status": "True"}]},
            }))
            .unwrap()
        })
        .collect();
    let pods: Vec<core::Pod> = (0..51_000)
        .map(|i| {
            let bound = i < 50_000;
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": format!("p-{i}"), "namespace": "default",
                    "labels": {"app": format!("app-{}", i % 50)},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                        "uid": "u", "controller": true}]},
                "spec": {"nodeName": if bound { Some(format!("n-{}", i % 1_000)) } else { None },
                    "containers": [{"name": "c", "image": "app",
                        "resources": {"requests": {"cpu": "50m", "memory": "100Mi"}}}]},
                "status": if bound { serde_json::json!({"phase": "Running"}) } else {
                    serde_json::json!({"phase": "Pending", "conditions": [{"type": "PodScheduled",
                        "status": "False", "reason": "Unschedulable"}]}) },
            }))
            .unwrap()
        })
        .collect();
    bencher.bench(|| {
        ferroscale::k8s::objects::Inputs::convert(
            black_box(&nodes),
            black_box(&pods),
            [],
            [],
            &Default::default(),
            Err,
        )
        .unwrap()
    });
}

/// A new leader reading back 500 intents (replacements, half of them draining) among 5,000 nodes.
#[divan::bench(sample_count = 10)]
fn reconcile_intents_5000(bencher: divan::Bencher) {
    use ferroscale::engine::intents::{reconcile, GroupFacts, Intent, NodeFacts};
    use ferroscale::engine::memory::Replacing;
    use ferroscale::model::lifecycle::DisruptionReason;
    let now = 1_790_000_000;
    let mut m = Memory::default();
    for i in 0..500 {
        m.replacing.insert(
            format!("node-{i}"),
            Replacing {
                group: "pool".into(),
                reason: DisruptionReason::Drift,
                since: now - 60,
            },
        );
    }
    let wanted = ferroscale::engine::intents::desired(&m);
    let texts: Vec<Option<String>> = (0..5000)
        .map(|i| {
            wanted
                .get(&format!("node-{i}"))
                .map(|x| x.clone().draining(false).encode())
        })
        .collect();
    let groups = HashMap::from([("pool".to_string(), GroupFacts { target_size: 5100 })]);
    bencher.bench(|| {
        let nodes: Vec<NodeFacts> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| NodeFacts {
                name: format!("node-{i}"),
                group: Some("pool".into()),
                created: now - 3600,
                terminating: false,
                intent: t.as_deref().map(Intent::decode),
            })
            .collect();
        let mut memory = Memory::default();
        black_box(reconcile(&nodes, &groups, &mut memory, now).len())
    });
}
