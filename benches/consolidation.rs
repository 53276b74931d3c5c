//! Consolidation's step at the sizes issue #29 names: one `run_once` over 1,000 nodes × 50 pods in 10
//! groups, every group opted in (`WhenEmptyOrUnderutilized`), against the same loop with consolidation
//! off (`Never`): the difference is the consolidation step. The search is bounded by
//! `--consolidation-search-time` (1 s by default) on the monotonic clock, and by the candidate and set
//! counts; `consolidation_5000x50` is the same at 5,000 nodes.
//!
//! Run with `cargo bench --bench consolidation`.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

use ferroscale::cloud::memory::{MemoryCloud, MemoryConfig};
use ferroscale::cloud::Cloud;
use ferroscale::engine::{run_once, Memory, World};
use ferroscale::labels;
use ferroscale::model::consolidation::{Consolidation, ConsolidationPolicy};
use ferroscale::model::workload::{Node, Pod, PodMeta};
use ferroscale::model::{NodeGroup, Resources};

fn main() {
    divan::main();
}

const GIB: i64 = 1 << 30;

struct Cluster {
    nodes: Vec<Node>,
    node_groups: HashMap<String, String>,
    pods: Vec<Arc<Pod>>,
    groups: Vec<Arc<NodeGroup>>,
}

/// Ten groups (4 to 32 cores, prices per core from $0.036 to $0.054 an hour); `nodes` nodes spread over
/// them, each with `per_node` replicas filling about 40% of it.
fn cluster(nodes: usize, per_node: usize) -> Cluster {
    let shapes: Vec<(String, i64, f64)> = (0..10)
        .map(|i| {
            let cpu = [4, 8, 16, 32][i % 4];
            let per_core = 0.036 + 0.002 * i as f64;
            (format!("g{i}"), cpu, per_core * cpu as f64)
        })
        .collect();
    let mut yaml = String::from("nodeGroups:\n");
    for (name, cpu, price) in &shapes {
        yaml.push_str(&format!(
            "  - {{name: {name}, minSize: 0, maxSize: 100000, capacity: {{cpu: {cpu}, memory: {}Gi, pods: 110}}, pricePerHour: {price}}}\n",
            cpu * 4
        ));
    }
    let cloud = MemoryCloud::new(&MemoryConfig::parse(&yaml).unwrap()).unwrap();
    let mut groups: Vec<Arc<NodeGroup>> = cloud.snapshot().groups().cloned().collect();
    groups.sort_by(|a, b| a.id.cmp(&b.id));
    let mut out = Cluster {
        nodes: Vec::new(),
        node_groups: HashMap::new(),
        pods: Vec::new(),
        groups,
    };
    for n in 0..nodes {
        let g = n % shapes.len();
        let (id, cpu, _) = &shapes[g];
        Arc::make_mut(&mut out.groups[g]).target_size += 1;
        let name = format!("node-{n}");
        let r = Resources {
            cpu_milli: cpu * 1000,
            memory: cpu * 4 * GIB,
            pods: 110,
            ..Default::default()
        };
        let mut node = Node {
            name: name.clone(),
            allocatable: r.clone(),
            capacity: r,
            ready: true,
            ..Default::default()
        };
        node.labels.insert(labels::HOSTNAME.into(), name.clone());
        out.node_groups.insert(name.clone(), id.clone());
        out.nodes.push(node);
        let each = cpu * 1000 * 4 / 10 / per_node as i64;
        for k in 0..per_node {
            out.pods.push(Arc::new(Pod {
                namespace: "default".into(),
                name: format!("web-{n}-{k}"),
                node_name: Some(name.clone()),
                requests: Resources {
                    cpu_milli: each.max(1),
                    memory: 64 << 20,
                    pods: 1,
                    ..Default::default()
                },
                meta: PodMeta {
                    controller: Some("ReplicaSet".into()),
                    ..Default::default()
                },
                ..Default::default()
            }));
        }
    }
    out
}

fn run(c: &Cluster, policy: ConsolidationPolicy) -> usize {
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
    let mut settings = ferroscale::cli::flags::default_engine();
    settings.scale_down_enabled = false;
    settings.consolidation = Consolidation {
        policy,
        after: std::time::Duration::ZERO,
    };
    let d = run_once(
        &world,
        &settings,
        &mut Memory::default(),
        1_000_000,
        &ferroscale::time::MONOTONIC,
    );
    d.consolidations.len()
}

#[divan::bench(sample_count = 5, args = [ConsolidationPolicy::Never, ConsolidationPolicy::WhenEmptyOrUnderutilized])]
fn consolidation_1000x50(bencher: divan::Bencher, policy: ConsolidationPolicy) {
    let c = cluster(1_000, 50);
    bencher.bench_local(|| black_box(run(black_box(&c), policy)));
}

#[divan::bench(sample_count = 3, args = [ConsolidationPolicy::Never, ConsolidationPolicy::WhenEmptyOrUnderutilized])]
fn consolidation_5000x50(bencher: divan::Bencher, policy: ConsolidationPolicy) {
    let c = cluster(5_000, 50);
    bencher.bench_local(|| black_box(run(black_box(&c), policy)));
}
