use super::*;
use crate::deschedule::fixtures::{DeschedulerPod, Fixture};
use crate::engine::predicates::Unfit;
use crate::fixtures::{node, pod, resources};
use crate::model::workload::{LabelSelector, Pdb, PodPhase};

const GI: i64 = 1 << 30;

/// A ready node of 4 cpus, 8 GiB.
fn n(name: &str) -> Node {
    node(name)
        .allocatable(resources(4000, 8 * GI, 110))
        .ready()
        .build()
}

/// A web replica of `cpu` millicores on `on`.
fn web(name: &str, on: &str, cpu: i64) -> Pod {
    pod("shop", name)
        .requests(resources(cpu, GI, 1))
        .label("app", "web")
        .on(on)
        .owner("ReplicaSet", "web")
        .build()
}

fn propose(p: &Pod, strategy: Strategy) -> Proposal {
    Proposal::anywhere(&Arc::new(p.clone()), strategy)
}

fn run(f: &Fixture, policy: &Policy, history: &History, proposals: Vec<Proposal>) -> Plan {
    let cluster = f.cluster();
    let settings = Settings::default();
    let mut planner = Planner::new(policy, &cluster, history, &settings);
    for p in proposals {
        planner.consider(p, "default");
    }
    planner.out
}

fn moved(plan: &Plan) -> Vec<(String, String)> {
    plan.evictions
        .iter()
        .map(|e| (e.pod.name.clone(), e.to.clone()))
        .collect()
}

#[test]
fn a_policy_without_profiles_evicts_nothing() {
    let f = Fixture::new(vec![n("a")], vec![web("w", "a", 100)]);
    let p = plan(
        &Policy::default(),
        &f.cluster(),
        &History::default(),
        &Settings::default(),
        &crate::clock::FixedClock::default(),
    );
    assert!(p.evictions.is_empty() && p.declined.is_empty());
}

#[test]
fn a_pod_moves_to_the_node_the_scheduler_would_pick_never_its_own_nor_one_being_removed() {
    let pods = vec![web("w", "a", 1000), web("x", "b", 3000), web("y", "c", 500)];
    let mut f = Fixture::new(vec![n("a"), n("b"), n("c"), n("d")], pods.clone());
    f.removing.insert("d".into());
    let plan = run(
        &f,
        &Policy::default(),
        &History::default(),
        vec![propose(&pods[0], Strategy::RemoveDuplicates)],
    );
    // d is empty but going; of b and c, c has more left free (LeastAllocated).
    assert_eq!(moved(&plan), [("w".into(), "c".into())]);
}

#[test]
fn a_pod_that_would_go_pending_or_land_back_is_declined_with_why() {
    let pods = vec![web("w", "a", 1000), web("full", "b", 4000)];
    let f = Fixture::new(vec![n("a"), n("b")], pods.clone());
    let plan = run(
        &f,
        &Policy::default(),
        &History::default(),
        vec![propose(&pods[0], Strategy::PodLifeTime)],
    );
    assert!(plan.evictions.is_empty());
    assert_eq!(
        plan.declined[0].why,
        Why::NoPlace(Blocked(vec![(Unfit::Insufficient("cpu".into()), 1)]))
    );
}

#[test]
fn a_declined_pod_names_what_blocks_it_on_each_kind_of_node() {
    // w may only run in zone z1 (as a zonal volume pins it): three nodes are in z2, one in z1 is
    // tainted.
    let zoned = |name: &str, zone: &str| {
        node(name)
            .allocatable(resources(4000, 8 * GI, 110))
            .label("zone", zone)
            .ready()
    };
    let nodes = vec![
        zoned("a", "z1").build(),
        zoned("b", "z2").build(),
        zoned("c", "z2").build(),
        zoned("d", "z2").build(),
        zoned("e", "z1")
            .taint(crate::fixtures::no_schedule("dedicated", "batch"))
            .build(),
    ];
    let w = pod("shop", "w")
        .requests(resources(100, GI, 1))
        .on("a")
        .owner("ReplicaSet", "web")
        .with(|p| {
            p.node_selector.insert("zone".into(), "z1".into());
        })
        .build();
    let f = Fixture::new(nodes, vec![w.clone()]);
    let plan = run(
        &f,
        &Policy::default(),
        &History::default(),
        vec![propose(&w, Strategy::PodLifeTime)],
    );
    let Why::NoPlace(blocked) = &plan.declined[0].why else {
        panic!("{plan:?}");
    };
    assert_eq!(blocked.filters(), ["NodeAffinity", "TaintToleration"]);
    assert_eq!(
        plan.declined[0].why.to_string(),
        "no other node can take it: node selector not matched on 3 nodes (NodeAffinity); \
         taint dedicated=batch:NoSchedule not tolerated on 1 node (TaintToleration)"
    );
}

#[test]
fn each_eviction_sees_the_cluster_as_the_ones_before_leave_it() {
    // One free 2-cpu slot on b: the first pod takes it, the second has nowhere to go.
    let pods = vec![
        web("w1", "a", 2000),
        web("w2", "a", 2000),
        web("big", "b", 2000),
    ];
    let f = Fixture::new(vec![n("a"), n("b")], pods.clone());
    let plan = run(
        &f,
        &Policy::default(),
        &History::default(),
        vec![
            propose(&pods[0], Strategy::RemoveDuplicates),
            propose(&pods[1], Strategy::RemoveDuplicates),
        ],
    );
    assert_eq!(moved(&plan), [("w1".into(), "b".into())]);
    assert_eq!(plan.declined.len(), 1);
}

#[test]
fn budgets_limits_and_contested_workloads_decline_what_is_left() {
    let pods: Vec<Pod> = (0..4).map(|i| web(&format!("w{i}"), "a", 100)).collect();
    let mut f = Fixture::new(vec![n("a"), n("b")], pods.clone());
    f.pdbs.push(Pdb {
        namespace: "shop".into(),
        name: "web".into(),
        selector: LabelSelector {
            match_labels: [("app".to_string(), "web".to_string())].into(),
            requirements: vec![],
        },
        disruptions_allowed: 2,
    });
    let all = |s| pods.iter().map(|p| propose(p, s)).collect::<Vec<_>>();
    let plan = run(
        &f,
        &Policy::default(),
        &History::default(),
        all(Strategy::RemoveDuplicates),
    );
    assert_eq!(plan.evictions.len(), 2);
    assert!(matches!(&plan.declined[0].why, Why::Budget { pdb } if pdb == "shop/web"));

    f.pdbs.clear();
    let policy = Policy {
        max_per_node: Some(3),
        ..Policy::default()
    };
    let mut props = all(Strategy::RemoveDuplicates);
    props.insert(1, propose(&pods[3], Strategy::LowNodeUtilization));
    let plan = run(&f, &policy, &History::default(), props);
    assert_eq!(plan.evictions.len(), 3);
    let whys: Vec<String> = plan.declined.iter().map(|d| d.why.to_string()).collect();
    assert_eq!(
        whys,
        [
            "RemoveDuplicates moves its workload this cycle",
            "maxNoOfPodsToEvictPerNode (3) reached"
        ]
    );
}

#[test]
fn a_workload_moved_within_the_cooldown_stays_and_no_cycle_undoes_an_earlier_one() {
    // An earlier cycle moved web from c to a; c is still the only place with room.
    let pods = vec![web("w", "a", 1000), web("big", "b", 4000)];
    let mut f = Fixture::new(vec![n("a"), n("b"), n("c")], pods.clone());
    let mut history = History::default();
    let earlier = Plan {
        evictions: vec![Eviction {
            pod: Arc::new(pods[0].clone()),
            node: "c".into(),
            strategy: Strategy::RemoveDuplicates,
            profile: "default".into(),
            to: "a".into(),
        }],
        ..Plan::default()
    };
    history.record(&earlier, 1_000);
    f.now = 1_000 + 600;
    let plan = run(
        &f,
        &Policy::default(),
        &history,
        vec![propose(&pods[0], Strategy::LowNodeUtilization)],
    );
    assert_eq!(
        plan.declined[0].why,
        Why::Cooldown {
            until: 1_000 + 1_800
        }
    );

    f.now = 1_000 + 3_600;
    let plan = run(
        &f,
        &Policy::default(),
        &history,
        vec![propose(&pods[0], Strategy::LowNodeUtilization)],
    );
    assert_eq!(plan.declined[0].why, Why::WouldUndo { node: "c".into() });

    // With another place, it goes there instead.
    f.nodes.push(n("d"));
    let plan = run(
        &f,
        &Policy::default(),
        &history,
        vec![propose(&pods[0], Strategy::LowNodeUtilization)],
    );
    assert_eq!(moved(&plan), [("w".into(), "d".into())]);
}

#[test]
fn a_failed_pod_needs_no_place_and_onto_restricts_where_others_go() {
    let failed = pod("shop", "done")
        .on("a")
        .owner("Job", "j")
        .phase(PodPhase::Failed)
        .build();
    let pods = vec![web("w", "a", 1000), failed.clone()];
    let f = Fixture::new(vec![n("a"), n("b"), n("c")], pods.clone());
    let mut to_b = propose(&pods[0], Strategy::LowNodeUtilization);
    to_b.onto = Some(vec!["b".to_string()].into());
    let plan = run(
        &f,
        &Policy::default(),
        &History::default(),
        vec![propose(&failed, Strategy::RemoveFailedPods), to_b],
    );
    assert_eq!(
        moved(&plan),
        [("done".into(), String::new()), ("w".into(), "b".into())]
    );
}

#[test]
fn a_node_high_node_utilization_moves_every_pod_off_is_handed_to_removal() {
    let ds = pod("kube-system", "agent")
        .on("a")
        .owner("DaemonSet", "agent")
        .build();
    let pods = vec![
        web("w1", "a", 500),
        web("w2", "a", 500),
        ds,
        web("x", "b", 3000),
    ];
    let f = Fixture::new(vec![n("a"), n("b")], pods.clone());
    let cluster = f.cluster();
    let view = View::new(&cluster);
    let props = |names: &[&str]| {
        names
            .iter()
            .map(|n| {
                propose(
                    pods.iter().find(|p| p.name == *n).unwrap(),
                    Strategy::HighNodeUtilization,
                )
            })
            .collect::<Vec<_>>()
    };
    let plan = run(
        &f,
        &Policy::default(),
        &History::default(),
        props(&["w1", "w2"]),
    );
    // Packed onto b (MostAllocated), and a is left with its DaemonSet pod only.
    assert_eq!(
        moved(&plan),
        [("w1".into(), "b".into()), ("w2".into(), "b".into())]
    );
    assert_eq!(emptied(&plan, &view), ["a"]);
    // Handed to scale-down, a's pods are left to its drain.
    let mut handed = plan.clone();
    handed.emptied = emptied(&plan, &view);
    assert_eq!(handed.hand_over_emptied().len(), 2);
    assert!(handed.evictions.is_empty());
    let plan = run(&f, &Policy::default(), &History::default(), props(&["w1"]));
    assert!(emptied(&plan, &view).is_empty());
}

#[test]
fn pods_the_drain_moves_off_a_handed_over_node_are_in_the_cooldown_once_it_goes() {
    let handed = |node: &str| Eviction {
        pod: Arc::new(web("w", node, 1000)),
        node: node.into(),
        strategy: Strategy::HighNodeUtilization,
        profile: "default".into(),
        to: "b".into(),
    };
    let owner = owner_key(&web("w", "a", 1000));
    // Scale-down kept node a (no deletion taint): nothing is remembered, the next plan decides anew.
    let mut kept = History::default();
    kept.hand_over(vec![handed("a")]);
    kept.settle(&[n("a"), n("b")], 2_000);
    assert!(kept.last(&owner).is_none());
    // Node a is tainted for deletion (being drained), or gone: the move counts from the next cycle.
    let mut tainted_a = n("a");
    tainted_a.taints.push(crate::model::Taint {
        key: crate::labels::TO_BE_DELETED.into(),
        value: String::new(),
        effect: crate::model::TaintEffect::NoSchedule,
    });
    for nodes in [vec![tainted_a, n("b")], vec![n("b")]] {
        let mut taken = History::default();
        taken.hand_over(vec![handed("a")]);
        taken.settle(&nodes, 2_000);
        let m = taken.last(&owner).expect("remembered for the cooldown");
        assert_eq!((m.at, m.from.as_str(), m.to.as_str()), (2_000, "a", "b"));
        // Settled once: a later cycle does not count it again.
        taken.settle(&nodes, 9_000);
        assert_eq!(taken.last(&owner).unwrap().at, 2_000);
    }
}

#[test]
fn a_workload_another_methods_removal_moved_is_in_the_cooldown() {
    let w2 = web("w2", "a", 100);
    let f = Fixture::new(vec![n("a"), n("b")], vec![web("w1", "a", 100), w2.clone()]);
    let now = f.cluster().now;
    let owner = owner_key(&w2);
    // A scale-down's drain evicted w1 (same owner) from a a minute ago: no strategy, no target.
    let mut history = History::default();
    history.record_disruption(owner.clone(), "a", now - 60);
    let m = history.last(&owner).unwrap();
    assert_eq!(
        (m.strategy, m.from.as_str(), m.to.as_str()),
        (None, "a", "")
    );
    let plan = run(
        &f,
        &Policy::default(),
        &history,
        vec![propose(&w2, Strategy::RemoveDuplicates)],
    );
    assert!(plan.evictions.is_empty());
    assert!(
        matches!(plan.declined[0].why, Why::Cooldown { until } if until == now - 60 + 1800),
        "{:?}",
        plan.declined
    );
}
