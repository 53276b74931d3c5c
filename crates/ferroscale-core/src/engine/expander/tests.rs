//! Tests of the expander.

use super::*;
use crate::fixtures::{node, resources};

fn option(
    group: &str,
    cpu: i64,
    mem_gib: i64,
    gpus: i64,
    nodes: i32,
    pods: usize,
    price: f64,
) -> ExpansionOption {
    let mut capacity = resources(cpu * 1000, mem_gib << 30, 110);
    if gpus > 0 {
        capacity.extended.insert("nvidia.com/gpu".into(), gpus);
    }
    ExpansionOption {
        group: group.into(),
        node_count: nodes,
        pods: vec![resources(500, 1 << 30, 1); pods],
        template: node(format!("{group}-template")).sized(capacity).template(),
        price_per_hour: Some(price),
    }
}

/// The groups of the options the decision kept, best first.
fn kept(d: &Decision, options: &[ExpansionOption]) -> Vec<String> {
    d.kept.iter().map(|&i| options[i].group.clone()).collect()
}

#[test]
fn least_waste_by_hand() {
    // 4 pods of 0.5 cpu / 1 GiB: on 1 × (2 cpu, 4 GiB) waste 0 + 0 = 0; on 1 × (4, 16): 0.5 + 0.75.
    let options = vec![
        option("big", 4, 16, 0, 1, 4, 0.2),
        option("fit", 2, 4, 0, 1, 4, 0.1),
    ];
    let d = choose(&[Strategy::LeastWaste], &options, &Context::default());
    assert_eq!(kept(&d, &options), vec!["fit"]);
    assert!(
        d.explanation[0].contains("big=1.2500"),
        "{:?}",
        d.explanation
    );
}

#[test]
fn ties_go_to_the_next_strategy() {
    let options = vec![
        option("a", 2, 4, 0, 2, 4, 0.1),
        option("b", 2, 4, 0, 1, 4, 0.1),
        option("c", 2, 4, 0, 1, 3, 0.1),
    ];
    let d = choose(
        &[Strategy::MostPods, Strategy::LeastNodes],
        &options,
        &Context::default(),
    );
    assert_eq!(kept(&d, &options), vec!["b"]);
    assert_eq!(
        d.runner_up,
        Some(0),
        "a lost to b on node count, the deciding step"
    );
    let d = choose(&[Strategy::MostPods], &options, &Context::default());
    assert_eq!(d.runner_up, Some(2), "c is the only one dropped");
    assert_eq!(kept(&d, &options), vec!["a", "b"]);
    let d = choose(
        &[Strategy::MostPods, Strategy::Random],
        &options,
        &Context::default(),
    );
    assert_eq!(d.kept.len(), 1);
    assert!(d.kept[0] <= 1);
}

#[test]
fn price_prefers_cheaper_and_penalises_unneeded_gpus() {
    let ctx = Context {
        cluster_nodes: 10,
        ..Default::default()
    };
    // Same shape, different price: cheaper wins.
    let options = vec![
        option("od", 4, 16, 0, 1, 6, 0.192),
        option("spot", 4, 16, 0, 1, 6, 0.07),
    ];
    assert_eq!(
        kept(&choose(&[Strategy::Price], &options, &ctx), &options),
        vec!["spot"]
    );
    // A GPU node, even cheaper, loses for pods that need no GPU.
    let options = vec![
        option("gpu", 4, 16, 1, 1, 6, 0.05),
        option("cpu", 4, 16, 0, 1, 6, 0.192),
    ];
    assert_eq!(
        kept(&choose(&[Strategy::Price], &options, &ctx), &options),
        vec!["cpu"]
    );
}

#[test]
fn a_free_group_is_the_cheapest_and_no_score_is_nan() {
    let ctx = Context {
        cluster_nodes: 10,
        ..Default::default()
    };
    let options = vec![
        option("on-demand", 4, 16, 0, 1, 6, 0.192),
        option("reserved", 4, 16, 0, 1, 6, 0.0),
        option("big", 16, 64, 0, 1, 6, 0.768),
    ];
    let d = choose(&[Strategy::Price], &options, &ctx);
    assert_eq!(kept(&d, &options), vec!["reserved"]);
    let scores = d.explanation.join(" ");
    assert!(
        !scores.contains("NaN") && !scores.contains("inf"),
        "{scores}"
    );
}

proptest::proptest! {
    /// Every strategy scores any non-negative prices and sizes with finite numbers, and keeps at
    /// least one option.
    #[test]
    fn scores_are_finite_and_something_is_kept(
        shapes in proptest::collection::vec(
            (0i64..200, 0i64..2000, 0i64..9, 0i32..1000, 0usize..50, proptest::option::of(0.0f64..1e6)),
            1..8,
        ),
        cluster_nodes in 0usize..100_000,
    ) {
        let options: Vec<ExpansionOption> = shapes
            .iter()
            .enumerate()
            .map(|(i, &(cpu, mem, gpus, nodes, pods, price))| {
                let mut o = option(&format!("g{i}"), cpu, mem, gpus, nodes, pods, 0.0);
                o.price_per_hour = price;
                o
            })
            .collect();
        let ctx = Context { cluster_nodes, ..Default::default() };
        for chain in [
            vec![Strategy::Price],
            vec![Strategy::LeastWaste],
            vec![Strategy::MostPods, Strategy::LeastNodes],
        ] {
            let d = choose(&chain, &options, &ctx);
            proptest::prop_assert!(!d.kept.is_empty());
            let r = rates(&options.iter().collect::<Vec<_>>());
            for o in &options {
                proptest::prop_assert!(waste(o).is_finite());
                if let Some(s) = price_score(o, &ctx, r) {
                    proptest::prop_assert!(s.is_finite() && s >= 0.0, "{s}");
                }
            }
        }
    }
}

#[test]
fn priority_tiers() {
    let ctx = Context {
        priorities: Priorities::parse("10:\n  - '.*spot.*'\n50:\n  - '^gpu$'\n1:\n  - '.*'\n")
            .unwrap(),
        ..Default::default()
    };
    let options = vec![
        option("od", 2, 4, 0, 1, 1, 0.1),
        option("spot-1", 2, 4, 0, 1, 1, 0.1),
    ];
    assert_eq!(
        kept(&choose(&[Strategy::Priority], &options, &ctx), &options),
        vec!["spot-1"]
    );
    let none = Context {
        priorities: Priorities::parse("5: ['^nothing$']").unwrap(),
        ..Default::default()
    };
    assert_eq!(
        choose(&[Strategy::Priority], &options, &none).kept,
        vec![0, 1],
        "nothing matched: all kept"
    );
    assert!(Priorities::parse("1: ['(']")
        .unwrap_err()
        .to_string()
        .contains("priorities[1]"));
    assert!(Strategy::parse_chain("price,bogus").is_err());
    assert_eq!(
        Strategy::parse_chain("priority,least-waste").unwrap(),
        vec![Strategy::Priority, Strategy::LeastWaste]
    );
}

#[test]
fn ties_are_broken_at_random_yet_the_same_seed_draws_the_same() {
    let kept = [0, 1, 2];
    let mut drawn = [0usize; 3];
    for now in 0..300 {
        let pick = tie_break(&kept, Some(now)).unwrap();
        assert_eq!(tie_break(&kept, Some(now)), Some(pick), "reproducible");
        drawn[pick] += 1;
    }
    assert!(
        drawn.iter().all(|&n| n > 50),
        "each tied option wins about a third of the draws: {drawn:?}"
    );
    assert_eq!(tie_break(&[4], Some(1)), Some(4));
    assert_eq!(tie_break(&[], Some(1)), None);
}
