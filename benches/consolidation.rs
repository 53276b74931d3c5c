//! Consolidation's step at the sizes issue #29 names: one `run_once` over 1,000 nodes × 50 pods in 10
//! groups, every group opted in (`WhenEmptyOrUnderutilized`), against the same loop with consolidation
//! off (`off`): the difference is the consolidation step. `on` is the default bounds (50 candidates,
//! sets of up to 10, `--consolidation-search-time` 1 s on the monotonic clock); `counts` lifts the time
//! bound (1 h), so the whole count-bounded search is measured rather than cut at 1 s.
//! `consolidation_5000x50` is the same at 5,000 nodes.
//!
//! `CONSOLIDATION_PROBE=1` prints, once each, the step's time and the plan found under several bounds,
//! on the bench's cluster and on `SETS` m5-like nodes that are only worth replacing together.
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
    if std::env::var("CONSOLIDATION_PROBE").is_ok() {
        return probe();
    }
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

/// The search's bounds: candidates alone, largest set, time.
#[derive(Clone, Copy, Debug)]
struct Bounds(usize, usize, std::time::Duration);

/// Consolidation off, on with the default bounds, on with the time bound lifted.
const MODES: [&str; 3] = ["off", "on", "counts"];

fn bounds(mode: &str) -> Option<Bounds> {
    let s = ferroscale::cli::flags::default_engine();
    let b = Bounds(
        s.consolidation_max_candidates,
        s.consolidation_max_set,
        s.consolidation_search_time,
    );
    match mode {
        "off" => None,
        "on" => Some(b),
        _ => Some(Bounds(b.0, b.1, std::time::Duration::from_secs(3600))),
    }
}

/// One loop; its consolidation plans.
fn run(c: &Cluster, bounds: Option<Bounds>) -> Vec<ferroscale::engine::ConsolidationPlan> {
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
    let policy = match bounds {
        None => ConsolidationPolicy::Never,
        Some(Bounds(candidates, set, time)) => {
            settings.consolidation_max_candidates = candidates;
            settings.consolidation_max_set = set;
            settings.consolidation_search_time = time;
            ConsolidationPolicy::WhenEmptyOrUnderutilized
        }
    };
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
    d.consolidations
}

#[divan::bench(sample_count = 5, args = MODES)]
fn consolidation_1000x50(bencher: divan::Bencher, mode: &str) {
    let c = cluster(1_000, 50);
    let b = bounds(mode);
    bencher.bench_local(|| black_box(run(black_box(&c), b)).len());
}

#[divan::bench(sample_count = 3, args = MODES)]
fn consolidation_5000x50(bencher: divan::Bencher, mode: &str) {
    let c = cluster(5_000, 50);
    let b = bounds(mode);
    bencher.bench_local(|| black_box(run(black_box(&c), b)).len());
}

/// `n` nodes of group `m5` (16 cores, $0.768/h), each running one 9-core replica that fits on no other
/// of them, and group `big` (32 cores, $1.224/h) with none: three of them go onto one big node, so a
/// node is only worth replacing with others.
fn sets(n: usize) -> Cluster {
    let yaml = "nodeGroups:
  - {name: big, minSize: 0, maxSize: 100000, capacity: {cpu: 32, memory: 128Gi, pods: 110}, pricePerHour: 1.224}
  - {name: m5, minSize: 0, maxSize: 100000, capacity: {cpu: 16, memory: 64Gi, pods: 110}, pricePerHour: 0.768,
     disruptionBudget: \"100%\"}
";
    let cloud = MemoryCloud::new(&MemoryConfig::parse(yaml).unwrap()).unwrap();
    let mut groups: Vec<Arc<NodeGroup>> = cloud.snapshot().groups().cloned().collect();
    groups.sort_by(|a, b| a.id.cmp(&b.id));
    let mut out = Cluster {
        nodes: Vec::new(),
        node_groups: HashMap::new(),
        pods: Vec::new(),
        groups,
    };
    for k in 0..n {
        Arc::make_mut(&mut out.groups[1]).target_size += 1;
        let name = format!("m5-{k}");
        let r = Resources {
            cpu_milli: 16_000,
            memory: 64 * GIB,
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
        out.node_groups.insert(name.clone(), "m5".into());
        out.nodes.push(node);
        out.pods.push(Arc::new(Pod {
            namespace: "default".into(),
            name: format!("web-{k}"),
            node_name: Some(name),
            requests: Resources {
                cpu_milli: 9_000,
                memory: GIB,
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
    out
}

/// Each bound's time and plan, once.
fn probe() {
    use std::time::{Duration, Instant};
    let hour = Duration::from_secs(3600);
    let time = |c: &Cluster, b: Option<Bounds>| {
        let t = Instant::now();
        let plans = run(c, b);
        (t.elapsed(), plans)
    };
    for (name, c) in [
        ("1000x50", cluster(1_000, 50)),
        ("5000x50", cluster(5_000, 50)),
        ("sets of m5 x 30", sets(30)),
    ] {
        let (off, _) = time(&c, None);
        println!("{name}: loop without consolidation {off:.2?}");
        for b in [
            Bounds(10, 3, hour),
            Bounds(50, 10, Duration::from_secs(1)),
            Bounds(50, 10, hour),
            Bounds(200, 30, hour),
        ] {
            let (took, plans) = time(&c, Some(b));
            let found: Vec<String> = plans
                .iter()
                .map(|p| {
                    format!(
                        "{} {} node(s) into {:?}, saving ${:.3}/h of ${:.3}/h",
                        p.action,
                        p.nodes.len(),
                        p.into
                            .iter()
                            .map(|n| (&n.group, n.count))
                            .collect::<Vec<_>>(),
                        p.savings_per_hour,
                        p.price_per_hour
                    )
                })
                .collect();
            println!(
                "  candidates {} set {} time {:?}: step {:.2?}; {}",
                b.0,
                b.1,
                b.2,
                took.saturating_sub(off),
                if found.is_empty() {
                    "no plan".to_string()
                } else {
                    found.join("; ")
                }
            );
        }
    }
}
