//! Whatever the cluster, a consolidation plan leaves every evicted pod a place, keeps every group
//! within its bounds and never raises the hourly cost.

use std::collections::HashMap;
use std::sync::Arc;

use proptest::prelude::*;

use crate::engine::context::template_node;
use crate::engine::predicates::{first_fit, NodeInfo};
use crate::engine::{Memory, Settings};
use crate::fixtures::{group, node, pod, resources, TestWorld, GIB};
use crate::labels;
use crate::model::workload::Pod;

/// Per group: (cores a node, price, max size); per node: (group, pods' cores).
type Shape = (Vec<(i64, f64, i32)>, Vec<(usize, Vec<i64>)>);

fn shapes() -> impl Strategy<Value = Shape> {
    let groups = proptest::collection::vec(
        (
            prop::sample::select(vec![4i64, 8, 16, 32]),
            0.05f64..2.0,
            1i32..12,
        ),
        1..4,
    );
    let nodes =
        proptest::collection::vec((0usize..4, proptest::collection::vec(1i64..10, 0..5)), 1..8);
    (groups, nodes)
}

fn world(shape: &Shape) -> TestWorld {
    let (groups, nodes) = shape;
    let mut w = TestWorld::default();
    let mut count = vec![0i32; groups.len()];
    let mut placed = Vec::new();
    for (k, (g, pods)) in nodes.iter().enumerate() {
        let g = g % groups.len();
        let cores = groups[g].0;
        let name = format!("n-{k}");
        let mut used = 0;
        let mut on = Vec::new();
        for (j, &c) in pods.iter().enumerate() {
            if used + c <= cores {
                used += c;
                on.push(
                    pod("shop", format!("p-{k}-{j}"))
                        .on(&name)
                        .requests(resources(c * 1000, GIB, 1))
                        .controller("ReplicaSet")
                        .build(),
                );
            }
        }
        count[g] += 1;
        placed.push((g, name, on));
    }
    for (i, &(cores, price, max)) in groups.iter().enumerate() {
        let id = format!("g{i}");
        w = w.group(
            group(&id)
                .sizes(0, max.max(count[i]), count[i])
                .price(price)
                .template(
                    node(format!("{id}-template"))
                        .labels(&[
                            (labels::INSTANCE_TYPE, &format!("t{i}")),
                            (labels::ZONE, "z"),
                        ])
                        .sized(resources(cores * 1000, 64 * GIB, 110))
                        .template(),
                )
                .build(),
        );
    }
    for (g, name, on) in placed {
        let cores = groups[g].0;
        w = w.node_of(
            &format!("g{g}"),
            node(&name)
                .labels(&[
                    (labels::INSTANCE_TYPE, &format!("t{g}")),
                    (labels::ZONE, "z"),
                ])
                .hostname()
                .sized(resources(cores * 1000, 64 * GIB, 110))
                .ready()
                .build(),
        );
        for p in on {
            w = w.pod(p);
        }
    }
    w
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn a_plan_places_every_pod_keeps_bounds_and_never_costs_more(
        shape in shapes(),
        min_savings in 0.0f64..0.3,
    ) {
        let w = world(&shape);
        let settings = Settings {
            scale_down_enabled: false,
            consolidation_min_savings: min_savings,
            ..super::tests::consolidating()
        };
        let d = w.run_once(&settings, &mut Memory::default(), super::tests::NOW);
        prop_assert!(d.consolidations.len() <= 1);
        let groups: HashMap<&str, _> = w.groups.iter().map(|g| (g.id.as_str(), g)).collect();
        for plan in &d.consolidations {
            // The cost: the nodes' prices, less the new ones', is the saving, above 0.
            let price: f64 = plan.nodes.iter().map(|n| groups[w.node_groups[n].as_str()].price_per_hour.unwrap()).sum();
            let new: f64 = plan.into.iter().map(|i| groups[i.group.as_str()].price_per_hour.unwrap() * f64::from(i.count)).sum();
            prop_assert!((plan.price_per_hour - price).abs() < 1e-9);
            prop_assert!((plan.savings_per_hour - (price - new)).abs() < 1e-9);
            prop_assert!(plan.savings_per_hour > 0.0 && plan.savings_per_hour >= min_savings * price - 1e-12);
            // Bounds: the new nodes fit under max, the old ones' groups stay at or above min.
            for i in &plan.into {
                let g = groups[i.group.as_str()];
                prop_assert!(g.target_size + i.count <= g.max_size);
            }
            for (id, g) in &groups {
                let out = plan.nodes.iter().filter(|n| w.node_groups[*n] == *id).count() as i32;
                prop_assert!(g.target_size - out >= g.min_size);
            }
            // Every pod has a place: in the plan's order on the nodes left, the rest largest first on
            // the new ones (as the estimator packs them).
            let mut rest: Vec<NodeInfo> = w.nodes.iter().filter(|n| !plan.nodes.contains(&n.name)).cloned().map(NodeInfo::new).collect();
            for p in &w.pods {
                if let Some(i) = rest.iter().position(|r| Some(&r.node.name) == p.node_name.as_ref()) {
                    rest[i].add(Arc::clone(p));
                }
            }
            let by_key: HashMap<String, &Arc<Pod>> = w.pods.iter().map(|p| (p.key(), p)).collect();
            let moved: Vec<Pod> = plan.pods_evicted.iter()
                .map(|k| Pod { node_name: None, ..(**by_key[k]).clone() })
                .collect();
            prop_assert!(moved.iter().all(|p| by_key[&p.key()].node_name.as_ref().is_some_and(|n| plan.nodes.contains(n))));
            let refs: Vec<&Pod> = moved.iter().collect();
            let at = first_fit(&refs, &mut rest, |_| true);
            let mut left: Vec<&Pod> = refs.iter().zip(&at).filter(|(_, a)| a.is_none()).map(|(p, _)| *p).collect();
            left.sort_by_key(|p| std::cmp::Reverse(p.requests.cpu_milli));
            let mut new_nodes = Vec::new();
            for i in &plan.into {
                let t = &groups[i.group.as_str()].template;
                for k in 0..i.count {
                    let mut n = template_node(t, &format!("new-{k}"), &i.group);
                    n.template = true;
                    new_nodes.push(NodeInfo::new(n));
                }
            }
            let at = first_fit(&left, &mut new_nodes, |_| true);
            prop_assert!(at.iter().all(Option::is_some), "{plan:?}");
            let on_nodes: usize = w.pods.iter().filter(|p| p.node_name.as_ref().is_some_and(|n| plan.nodes.contains(n))).count();
            prop_assert_eq!(plan.pods_evicted.len(), on_nodes);
        }
    }
}
