//! The simulation's kept answers (per pod shape, per node version) and spread counts change nothing:
//! on random small clusters and proposals, the plan is the one a simulation asking every node each
//! time makes, eviction for eviction and reason for reason.

use proptest::prelude::{any, prop, prop_assert_eq, proptest, ProptestConfig};

use super::*;
use crate::deschedule::fixtures::{DeschedulerPod, Fixture};
use crate::fixtures::{no_schedule, node, pod, resources};
use crate::labels;
use crate::model::workload::{
    HostPort, LabelSelector, PodAffinityTerm, Requirement, SelectorOp, SpreadConstraint, Toleration,
};

const GI: i64 = 1 << 30;
const NOW: i64 = 1_800_000_000;
const ZONES: [&str; 3] = ["a", "b", "c"];

/// A node: its cpu (in 1,000s), pod slots, zone (none past the list), tainted, ready, being removed.
type NodeCase = (u8, u8, u8, bool, bool, bool);
/// A pod: its node, app, cpu (in 100s), kind of constraint, namespace, priority.
type PodCase = (u8, u8, u8, u8, bool, u8);

fn build_node(i: usize, (cpu, slots, zone, tainted, ready, _): NodeCase) -> Node {
    let mut n = node(format!("n{i}"))
        .allocatable(resources(
            1000 * i64::from(cpu),
            8 * GI,
            [2, 4, 110][slots as usize % 3],
        ))
        .hostname();
    if let Some(z) = ZONES.get(zone as usize) {
        n = n.label("topology.kubernetes.io/zone", z);
    }
    if tainted {
        n = n.taint(no_schedule("dedicated", "db"));
    }
    if ready {
        n = n.ready();
    }
    n.build()
}

fn term(app: &str, key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        selector: LabelSelector {
            match_labels: [("app".to_string(), app.to_string())].into(),
            requirements: vec![],
        },
        topology_key: key.into(),
        ..Default::default()
    }
}

fn build_pod(i: usize, nodes: usize, (on, app, cpu, kind, ns, prio): PodCase) -> Pod {
    // Few apps and sizes, so that many pods share a shape.
    let app = format!("app-{}", app % 3);
    let zone = "topology.kubernetes.io/zone";
    pod(
        if ns || !i.is_multiple_of(4) { "a" } else { "b" },
        format!("p{i}"),
    )
    .requests(resources(100 * [1, 3, 7, 15][cpu as usize % 4], GI / 4, 1))
    .label("app", &app)
    .on(&format!("n{}", on as usize % nodes))
    .owner("ReplicaSet", &format!("{app}-{}", i % 3))
    .priority(i32::from(prio % 3))
    .with(|p| match kind % 10 {
        // Away from app-0's pods, whatever its own app: many pods are kept off many nodes.
        0 => p.anti_affinity = thin_vec::thin_vec![term("app-0", labels::HOSTNAME)],
        1 => p.anti_affinity = thin_vec::thin_vec![term("app-0", zone)],
        2 => {
            p.spread = thin_vec::thin_vec![SpreadConstraint {
                max_skew: 1,
                topology_key: zone.into(),
                selector: term(&app, zone).selector,
                ..Default::default()
            }]
        }
        3 => {
            p.node_affinity = vec![vec![Requirement {
                key: zone.into(),
                op: SelectorOp::In,
                values: vec!["a".into(), "b".into()],
            }]]
        }
        4 => p.affinity = thin_vec::thin_vec![term(&app, zone)],
        5 => {
            *p.tolerations = vec![Toleration {
                key: "dedicated".into(),
                value: None,
                effect: None,
            }]
        }
        6 => {
            p.host_ports = thin_vec::thin_vec![HostPort {
                protocol: "TCP".into(),
                ip: String::new(),
                port: 80,
            }]
        }
        7 => p.node_selector = [(zone.to_string(), "c".to_string())].into(),
        _ => {}
    })
    .build()
}

const STRATEGIES: [Strategy; 4] = [
    Strategy::RemoveDuplicates,
    Strategy::HighNodeUtilization,
    Strategy::LowNodeUtilization,
    Strategy::RemovePodsViolatingNodeTaints,
];

/// Every eviction and declined proposal, in order, as text.
fn outcome(plan: &Plan) -> Vec<String> {
    let evicted = plan
        .evictions
        .iter()
        .map(|e| format!("evict {} {} {} -> {}", e.pod.name, e.node, e.strategy, e.to));
    let declined = plan.declined.iter().map(|d| {
        format!(
            "decline {} {} {}: {:?}",
            d.pod.name, d.node, d.strategy, d.why
        )
    });
    evicted.chain(declined).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn kept_answers_plan_as_asking_every_node(
        node_cases in prop::collection::vec(
            (1u8..5, 0u8..3, 0u8..4, prop::bool::weighted(0.2), prop::bool::weighted(0.9),
             prop::bool::weighted(0.1)),
            1..7,
        ),
        pod_cases in prop::collection::vec(
            (any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>(), any::<bool>(), any::<u8>()),
            0..30,
        ),
        proposal_cases in prop::collection::vec((any::<u8>(), 0u8..4, any::<u8>()), 0..60),
        undone in prop::collection::vec((any::<u8>(), any::<u8>()), 0..3),
    ) {
        let nodes: Vec<Node> =
            node_cases.iter().enumerate().map(|(i, &c)| build_node(i, c)).collect();
        let pods: Vec<Pod> = pod_cases
            .iter()
            .enumerate()
            .map(|(i, &c)| build_pod(i, nodes.len(), c))
            .collect();
        let mut f = Fixture::new(nodes.clone(), pods.clone());
        f.now = NOW;
        for (i, c) in node_cases.iter().enumerate() {
            if c.5 {
                f.removing.insert(format!("n{i}"));
            }
        }
        let proposals: Vec<Proposal> = if pods.is_empty() {
            Vec::new()
        } else {
            proposal_cases
                .iter()
                .map(|&(k, s, mask)| {
                    let p = &f.pods[k as usize % pods.len()];
                    let onto = (mask % 4 == 0).then(|| {
                        nodes
                            .iter()
                            .enumerate()
                            .filter(|(j, _)| mask & (1 << (j % 8)) != 0)
                            .map(|(_, n)| n.name.clone())
                            .collect()
                    });
                    Proposal { onto, ..Proposal::anywhere(p, STRATEGIES[s as usize]) }
                })
                .collect()
        };
        // Workloads an earlier cycle moved, long enough ago for no cooldown: going back is undoing.
        let mut history = History::default();
        if !pods.is_empty() {
            let earlier = Plan {
                evictions: undone
                    .iter()
                    .map(|&(k, from)| Eviction {
                        pod: f.pods[k as usize % pods.len()].clone(),
                        node: format!("n{}", from as usize % nodes.len()),
                        strategy: Strategy::RemoveDuplicates,
                        profile: "default".into(),
                        to: "elsewhere".into(),
                    })
                    .collect(),
                ..Plan::default()
            };
            history.record(&earlier, NOW - 7200);
        }
        let cluster = f.cluster();
        let policy = Policy::default();
        let settings = Settings::default();
        let mut kept = Planner::new(&policy, &cluster, &history, &settings);
        let mut forgetful = Planner::new(&policy, &cluster, &history, &settings);
        forgetful.sim = Sim::forgetful(cluster.nodes, cluster.pods);
        for p in proposals {
            kept.consider(p.clone(), "default");
            forgetful.consider(p, "default");
        }
        prop_assert_eq!(outcome(&kept.out), outcome(&forgetful.out));
    }
}

#[test]
fn a_pod_goes_to_a_zone_a_moved_pod_no_longer_repels_it_from() {
    let zone = "topology.kubernetes.io/zone";
    let n = |name: &str, z: &str| {
        node(name)
            .allocatable(resources(4000, 8 * GI, 110))
            .label(zone, z)
            .hostname()
            .ready()
    };
    let nodes = vec![
        n("n0", "a").build(),
        n("n1", "a").build(),
        n("n2", "b").build(),
        n("n3", "c").build(),
        n("n4", "d").taint(no_schedule("dedicated", "db")).build(),
    ];
    let web = |name: &str, on: &str| {
        pod("shop", name)
            .requests(resources(500, GI, 1))
            .label("app", "web")
            .on(on)
            .owner("ReplicaSet", "web")
            .build()
    };
    // Keeps web out of zone a until it moves to n4.
    let guard = pod("shop", "guard")
        .requests(resources(500, GI, 1))
        .label("app", "guard")
        .on("n1")
        .owner("ReplicaSet", "guard")
        .with(|p| {
            p.anti_affinity = thin_vec::thin_vec![term("web", zone)];
            *p.tolerations = vec![Toleration {
                key: "dedicated".into(),
                value: None,
                effect: None,
            }];
        })
        .build();
    let pods = vec![web("w1", "n2"), web("w2", "n3"), guard];
    let f = Fixture::new(nodes, pods);
    let cluster = f.cluster();
    let (policy, history, settings) = (Policy::default(), History::default(), Settings::default());
    let mut planner = Planner::new(&policy, &cluster, &history, &settings);
    let [w1, w2, guard] = [0, 1, 2].map(|i| f.pods[i].clone());
    planner.consider(
        Proposal::anywhere(&w1, Strategy::RemoveDuplicates),
        "default",
    );
    planner.consider(
        Proposal {
            onto: Some(vec!["n4".to_string()].into()),
            ..Proposal::anywhere(&guard, Strategy::RemoveDuplicates)
        },
        "default",
    );
    planner.consider(
        Proposal::anywhere(&w2, Strategy::RemoveDuplicates),
        "default",
    );
    let moves: Vec<(&str, &str)> = planner
        .out
        .evictions
        .iter()
        .map(|e| (e.pod.name.as_str(), e.to.as_str()))
        .collect();
    // w1 could not go to zone a; once the guard has left it, w2 goes to its first empty node.
    assert_eq!(moves, [("w1", "n3"), ("guard", "n4"), ("w2", "n0")]);
}
