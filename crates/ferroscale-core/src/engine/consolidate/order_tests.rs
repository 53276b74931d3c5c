//! Plans the scheduler keeps (issue #41): a deletion validated again before it is acted on, pods
//! placed in the scheduler's queue order, a multi-node plan within each PodDisruptionBudget node after
//! node, and every node kept saying why with its figures.

use std::time::Duration;

use super::tests::{app, consolidating, declined, machine, priced, NOW};
use super::Declined;
use crate::engine::decisions::ConsolidationAction;
use crate::engine::{Memory, Settings};
use crate::fixtures::{pdb, pod, resources, TestWorld, GIB};
use crate::model::consolidation::{Consolidation, ConsolidationPolicy};

#[test]
fn when_empty_deletes_only_nodes_with_nothing_to_evict() {
    let world = TestWorld::default()
        .group(priced("a", "m5.4xlarge", 16, 1.0, 2))
        .node_of("a", machine("a-1", "m5.4xlarge", 16))
        .node_of("a", machine("a-2", "m5.4xlarge", 16))
        .pod(app("web", "a-1", 2));
    let settings = Settings {
        consolidation: Consolidation {
            policy: ConsolidationPolicy::WhenEmpty,
            after: Duration::from_secs(600),
        },
        // Scale-down off: what goes, consolidation takes.
        scale_down_enabled: false,
        ..consolidating()
    };
    let mut memory = Memory::default();
    // Found, then held for validation: acted on once found again 15 seconds later.
    for t in [NOW, NOW + 10] {
        let d = world.run_once(&settings, &mut memory, t);
        assert!(
            d.consolidations.is_empty() && d.scale_down.is_empty(),
            "{d:#?}"
        );
        assert_eq!(
            d.consolidation_waits,
            Some(super::Waits::Validating {
                nodes: vec!["a-2".into()],
                until: NOW + super::VALIDATION,
            })
        );
    }
    let d = world.run_once(&settings, &mut memory, NOW + super::VALIDATION);
    assert_eq!(d.consolidations.len(), 1, "{d:#?}");
    assert_eq!(d.consolidations[0].action, ConsolidationAction::Delete);
    assert_eq!(d.consolidations[0].nodes, ["a-2"]);
    assert_eq!(d.scale_down.len(), 1);
    assert_eq!(d.scale_down[0].node, "a-2");
    assert!(memory.validating.is_none());
}

#[test]
fn a_deletion_no_longer_valid_after_the_wait_is_not_acted_on() {
    let world = TestWorld::default()
        .group(priced("a", "m5.4xlarge", 16, 1.0, 2))
        .node_of("a", machine("a-1", "m5.4xlarge", 16))
        .node_of("a", machine("a-2", "m5.4xlarge", 16))
        .pod(app("web", "a-1", 2));
    let settings = Settings {
        consolidation: Consolidation {
            policy: ConsolidationPolicy::WhenEmpty,
            after: Duration::ZERO,
        },
        scale_down_enabled: false,
        ..consolidating()
    };
    let mut memory = Memory::default();
    let d = world.run_once(&settings, &mut memory, NOW);
    assert!(d.consolidations.is_empty(), "{d:#?}");
    // A pod was bound to a-2 meanwhile: a-2 is no longer empty, a-1 no longer either.
    let world = world.pod(app("api", "a-2", 2));
    let d = world.run_once(&settings, &mut memory, NOW + super::VALIDATION);
    assert!(
        d.consolidations.is_empty() && d.scale_down.is_empty(),
        "{d:#?}"
    );
    assert!(memory.validating.is_none(), "{memory:?}");
}

/// One 32-core node ($2/h) with four pods of 3, 3, 7 and 7 cores, and group `b` of 10-core nodes
/// ($0.5/h): two b nodes take them packed largest first (7+3, 7+3), three in the order given.
fn four_pods(priorities: [i32; 4]) -> TestWorld {
    let mut w = TestWorld::default()
        .group(priced("a", "m5.8xlarge", 32, 2.0, 1))
        .group(priced("b", "c6a.2xlarge", 10, 0.5, 0))
        .node_of("a", machine("a-1", "m5.8xlarge", 32));
    for (k, (cpus, prio)) in [3, 3, 7, 7].into_iter().zip(priorities).enumerate() {
        w = w.pod(
            pod("shop", format!("p{k}"))
                .on("a-1")
                .requests(resources(cpus * 1000, GIB, 1))
                .controller("ReplicaSet")
                .priority(prio)
                .build(),
        );
    }
    w
}

#[test]
fn a_placement_the_schedulers_order_would_strand_is_no_plan() {
    // The scheduler binds the large pods first: two b nodes hold them all.
    let d = four_pods([1, 2, 30, 40]).run_once(&consolidating(), &mut Memory::default(), NOW);
    assert_eq!(d.consolidations.len(), 1, "{d:#?}");
    assert_eq!(d.consolidations[0].into[0].count, 2);
    // The small ones first (higher priority): 3+3 on the first b node, then a 7 each; the second
    // 7 finds no room on two nodes, so the plan would leave it pending.
    let d = four_pods([40, 30, 20, 10]).run_once(&consolidating(), &mut Memory::default(), NOW);
    assert!(d.consolidations.is_empty(), "{d:#?}");
    assert_eq!(
        declined(&d, "a-1"),
        [&Declined::Stranded {
            pod: "shop/p3".into(),
            group: "b".into(),
            count: 2,
        }]
    );
}

#[test]
fn no_cheaper_placement_says_what_the_cheapest_costs() {
    let d = super::tests::one_node(1.2).run_once(&consolidating(), &mut Memory::default(), NOW);
    assert!(d.consolidations.is_empty(), "{d:#?}");
    let why = declined(&d, "a-1");
    assert_eq!(
        why,
        [&Declined::NothingCheaper {
            price: 1.0,
            cheapest: Some(super::reasons::Placement {
                group: Some("a".into()),
                count: 1,
                cost: 1.0,
            }),
        }]
    );
    assert_eq!(
        why[0].to_string(),
        "no cheaper placement: 1 new node(s) of group a would cost $1.0000/h, not less than its $1.0000/h"
    );
}

/// Nodes a-1..a-3 ($1/h each), each with one 2-core replica of `web` (covered by a budget allowing
/// `allowed` disruptions when `allowed` is some), and o-1, not consolidated, with room for all three.
fn three_of_one_budget(allowed: Option<i32>) -> TestWorld {
    let mut w = TestWorld::default()
        .group(priced("a", "m5.4xlarge", 16, 1.0, 3))
        .group(priced("o", "m5.4xlarge", 16, 1.0, 1))
        .node_of("o", machine("o-1", "m5.4xlarge", 16))
        .pod(app("base", "o-1", 8));
    w.group_mut("o").lifecycle.consolidation = Some(Consolidation::default());
    for k in 1..=3 {
        let name = format!("a-{k}");
        let mut p = app(&format!("web-{k}"), &name, 2);
        p.labels.insert("app".into(), "web".into());
        w = w.node_of("a", machine(&name, "m5.4xlarge", 16)).pod(p);
    }
    if let Some(n) = allowed {
        w = w.pdb(pdb("shop", "web", "web", n));
    }
    w
}

#[test]
fn a_budget_of_one_across_a_three_node_plan_evicts_one_node_at_a_time() {
    // Drains in parallel allowed (upstream's default is one at a time, which hides the budgets).
    let s = Settings {
        scale_down_enabled: false,
        max_drain_parallelism: 10,
        ..consolidating()
    };
    let validated = |w: &TestWorld, memory: &mut Memory| {
        let d = w.run_once(&s, memory, NOW);
        assert!(d.consolidations.is_empty(), "held first: {d:#?}");
        w.run_once(&s, memory, NOW + super::VALIDATION)
    };
    // Without a budget the three go in one loop.
    let d = validated(&three_of_one_budget(None), &mut Memory::default());
    assert_eq!(d.consolidations[0].nodes, ["a-1", "a-2", "a-3"], "{d:#?}");
    let gone: Vec<&str> = d.scale_down.iter().map(|x| x.node.as_str()).collect();
    assert_eq!(gone, ["a-1", "a-2", "a-3"]);

    // A budget allowing one: the same plan, one node a loop, in its order.
    let mut memory = Memory::default();
    let w = three_of_one_budget(Some(1));
    let d = validated(&w, &mut memory);
    assert_eq!(d.consolidations.len(), 1, "{d:#?}");
    assert_eq!(d.consolidations[0].action, ConsolidationAction::Delete);
    assert_eq!(d.consolidations[0].nodes, ["a-1", "a-2", "a-3"]);
    assert_eq!(
        d.consolidations[0].pods_evicted,
        ["shop/web-1", "shop/web-2", "shop/web-3"]
    );
    let gone: Vec<&str> = d.scale_down.iter().map(|x| x.node.as_str()).collect();
    assert_eq!(gone, ["a-1"], "{d:#?}");
    assert_eq!(memory.consolidating[0].nodes, ["a-2", "a-3"]);
    // a-1 gone and web-1 running elsewhere: the budget allows one again, a-2 goes.
    let mut w = w;
    w.nodes.retain(|n| n.name != "a-1");
    w.pods.retain(|p| p.name != "web-1");
    let d = w.run_once(&s, &mut memory, NOW + super::VALIDATION + 10);
    let gone: Vec<&str> = d.scale_down.iter().map(|x| x.node.as_str()).collect();
    assert_eq!(gone, ["a-2"], "{d:#?}");
    assert!(d.consolidations.is_empty(), "no new plan meanwhile: {d:#?}");
}
