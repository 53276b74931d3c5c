//! One descheduling cycle with every strategy (issue: under 1 s at 1,000 nodes × 50 pods): the policy of
//! `POLICY` planned on a cluster where each strategy has work — duplicates everywhere (50 pods of 20
//! ReplicaSets per node), a tenth of the nodes underused, tainted nodes, pods outside their required
//! zone, an imbalanced zone spread, hostname anti-affinity broken, restarting, old and failed pods.
//!
//! * `cycle_1000x50`, `cycle_5000x50`: `deschedule::plan` on 1,000 and 5,000 such nodes.
//!
//! Run with `cargo bench --bench deschedule`.

use std::collections::{BTreeMap, HashSet};
use std::hint::black_box;
use std::sync::Arc;

use ferroscale::deschedule::{plan, Cluster, History, Policy, Settings};
use ferroscale::model::shared::Shared;
use ferroscale::model::workload::{
    ContainerState, LabelSelector, Node, Owner, Pod, PodAffinityTerm, PodMeta, PodPhase,
    Requirement, SelectorOp, SpreadConstraint,
};
use ferroscale::model::{Resources, Taint, TaintEffect};

fn main() {
    // `DESCHEDULE_PROBE=<nodes>`: each strategy's proposals and time, then the plan's, once.
    if let Some(n) = std::env::var("DESCHEDULE_PROBE")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return probe(n);
    }
    divan::main();
}

fn probe(nodes: usize) {
    use ferroscale::deschedule::{strategies, Evictor, View};
    let (policy, _) = Policy::parse(POLICY).expect("the bench's policy parses");
    let w = world(nodes);
    let cluster = w.cluster();
    let view = View::new(&cluster);
    for profile in &policy.profiles {
        let evictor = Evictor::new(&profile.evictor, &view);
        for args in &profile.strategies {
            let t = std::time::Instant::now();
            let n = strategies::propose(args, &view, &evictor).len();
            eprintln!("{}: {n} proposals in {:?}", args.strategy(), t.elapsed());
        }
    }
    let t = std::time::Instant::now();
    let p = plan(
        &policy,
        &cluster,
        &History::default(),
        &Settings::default(),
        &ferroscale::time::MONOTONIC,
    );
    eprintln!(
        "plan: {} evictions, {} declined in {:?}",
        p.evictions.len(),
        p.declined.len(),
        t.elapsed()
    );
}

const GIB: i64 = 1 << 30;
const DAY: i64 = 86_400;
const NOW: i64 = 1_800_000_000;

/// Every strategy, in one profile, with the descheduler README's example arguments.
const POLICY: &str = r#"
apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
maxNoOfPodsToEvictPerNode: 10
profiles:
  - name: all
    pluginConfig:
      - name: "DefaultEvictor"
        args:
          evictLocalStoragePods: true
      - name: "RemoveDuplicates"
      - name: "LowNodeUtilization"
        args:
          thresholds: {cpu: 20, memory: 20}
          targetThresholds: {cpu: 50, memory: 50}
      - name: "RemovePodsViolatingInterPodAntiAffinity"
      - name: "RemovePodsViolatingNodeAffinity"
        args:
          nodeAffinityType: ["requiredDuringSchedulingIgnoredDuringExecution"]
      - name: "RemovePodsViolatingNodeTaints"
      - name: "RemovePodsViolatingTopologySpreadConstraint"
      - name: "RemovePodsHavingTooManyRestarts"
        args:
          podRestartThreshold: 100
          includingInitContainers: true
      - name: "PodLifeTime"
        args:
          maxPodLifeTimeSeconds: 604800
      - name: "RemoveFailedPods"
        args:
          reasons: ["OutOfcpu", "CreateContainerConfigError"]
          includingInitContainers: true
          excludeOwnerKinds: ["Job"]
          minPodLifetimeSeconds: 3600
    plugins:
      deschedule:
        enabled:
          - "RemovePodsViolatingInterPodAntiAffinity"
          - "RemovePodsViolatingNodeAffinity"
          - "RemovePodsViolatingNodeTaints"
          - "RemovePodsHavingTooManyRestarts"
          - "PodLifeTime"
          - "RemoveFailedPods"
      balance:
        enabled:
          - "RemoveDuplicates"
          - "LowNodeUtilization"
          - "RemovePodsViolatingTopologySpreadConstraint"
"#;

const ZONES: [&str; 3] = ["a", "b", "c"];

fn node(i: usize) -> Node {
    let name = format!("n{i}");
    let zone = ZONES[i % 3];
    let mut labels = BTreeMap::from([
        ("kubernetes.io/hostname".to_string(), name.clone()),
        ("topology.kubernetes.io/zone".to_string(), zone.to_string()),
    ]);
    labels.insert("pool".into(), "general".into());
    Node {
        name,
        labels: labels.into(),
        // One node in 20 was tainted after its pods landed.
        taints: if i % 20 == 7 {
            vec![Taint {
                key: "dedicated".into(),
                value: "db".into(),
                effect: TaintEffect::NoSchedule,
            }]
        } else {
            vec![]
        },
        allocatable: Resources {
            cpu_milli: 16_000,
            memory: 64 * GIB,
            pods: 110,
            ..Default::default()
        },
        ready: true,
        created: NOW - 30 * DAY,
        ..Default::default()
    }
}

/// The `k`th pod of node `i`: ReplicaSet `app-{k % 20}`; a tenth of the nodes run small pods.
fn pod(i: usize, k: usize, nodes: usize) -> Pod {
    let app = format!("app-{}", k % 20);
    let small = i % 10 == 3;
    let mut meta = PodMeta {
        controller: Some("ReplicaSet".into()),
        controller_name: Some(app.as_str().into()),
        owners: vec![Owner {
            kind: "ReplicaSet".into(),
            name: app.clone(),
            controller: true,
        }]
        .into(),
        images: Shared::new(vec![format!("registry/{app}:1")]),
        phase: PodPhase::Running,
        created: NOW - DAY - ((i * 50 + k) % 1000) as i64 * 60,
        ..Default::default()
    };
    if (i + k).is_multiple_of(97) {
        meta.containers.push(ContainerState {
            restarts: 150,
            ..Default::default()
        });
    }
    if (i + k).is_multiple_of(53) {
        meta.created = NOW - 10 * DAY;
    }
    let mut p = Pod {
        namespace: "shop".into(),
        name: format!("{app}-{i}-{k}"),
        labels: BTreeMap::from([("app".to_string(), app.clone())]).into(),
        requests: Resources {
            cpu_milli: if small { 20 } else { 250 },
            memory: if small { 64 << 20 } else { GIB },
            pods: 1,
            ..Default::default()
        },
        node_name: Some(format!("n{i}")),
        meta,
        ..Default::default()
    };
    match k % 20 {
        // Required in zone a, wherever it runs.
        1 => {
            p.node_affinity = vec![vec![Requirement {
                key: "topology.kubernetes.io/zone".into(),
                op: SelectorOp::In,
                values: vec!["a".into()],
            }]]
        }
        // One per node.
        2 => {
            p.anti_affinity = ferroscale::model::thin_vec![PodAffinityTerm {
                selector: LabelSelector {
                    match_labels: BTreeMap::from([("app".to_string(), app.clone())]),
                    requirements: vec![],
                },
                topology_key: "kubernetes.io/hostname".into(),
                ..Default::default()
            }]
        }
        // Spread over zones, but placed mostly in the first nodes.
        3 if i < nodes / 2 => {
            p.spread = ferroscale::model::thin_vec![SpreadConstraint {
                max_skew: 1,
                topology_key: "topology.kubernetes.io/zone".into(),
                selector: LabelSelector {
                    match_labels: BTreeMap::from([("app".to_string(), app.clone())]),
                    requirements: vec![],
                },
                ..Default::default()
            }]
        }
        _ => {}
    }
    p
}

struct World {
    nodes: Vec<Node>,
    pods: Vec<Arc<Pod>>,
    failed: Vec<Arc<Pod>>,
    removing: HashSet<String>,
    classes: BTreeMap<String, i32>,
}

impl World {
    /// The cluster at `NOW`: no PDB, nothing being removed, no PriorityClass.
    fn cluster(&self) -> Cluster<'_> {
        Cluster {
            nodes: &self.nodes,
            pods: &self.pods,
            failed: &self.failed,
            pdbs: &[],
            removing: &self.removing,
            priority_classes: &self.classes,
            namespaces: None,
            usage: None,
            now: NOW,
        }
    }
}

fn world(nodes: usize) -> World {
    let mut pods = Vec::with_capacity(nodes * 50);
    let mut failed = Vec::new();
    for i in 0..nodes {
        for k in 0..50 {
            let p = pod(i, k, nodes);
            if (i * 50 + k).is_multiple_of(101) {
                let mut f = p;
                f.meta.phase = PodPhase::Failed;
                f.meta.status_reason = Some("OutOfcpu".into());
                f.meta.created = NOW - 2 * DAY;
                failed.push(Arc::new(f));
            } else {
                pods.push(Arc::new(p));
            }
        }
    }
    World {
        nodes: (0..nodes).map(node).collect(),
        pods,
        failed,
        removing: HashSet::new(),
        classes: BTreeMap::new(),
    }
}

fn cycle(bencher: divan::Bencher, nodes: usize) {
    let (policy, _) = Policy::parse(POLICY).expect("the bench's policy parses");
    let w = world(nodes);
    let cluster = w.cluster();
    let history = History::default();
    let settings = Settings::default();
    let p = plan(
        &policy,
        &cluster,
        &history,
        &settings,
        &ferroscale::time::MONOTONIC,
    );
    eprintln!(
        "{nodes} nodes: {} evictions, {} declined",
        p.evictions.len(),
        p.declined.len()
    );
    bencher.bench(|| {
        black_box(plan(
            &policy,
            &cluster,
            &history,
            &settings,
            &ferroscale::time::MONOTONIC,
        ))
    });
}

#[divan::bench(sample_count = 5)]
fn cycle_1000x50(bencher: divan::Bencher) {
    cycle(bencher, 1_000);
}

#[divan::bench(sample_count = 3)]
fn cycle_5000x50(bencher: divan::Bencher) {
    cycle(bencher, 5_000);
}
