//! The size checks every write goes through, on arbitrary groups (proptest): an increase never goes above
//! max, a decrease never cancels an existing instance, a delete removes only members and never goes below
//! min, and concurrent increases add up.

use std::sync::Arc;

use ferroscale::cloud::memory::{MemoryCloud, MemoryConfig};
use ferroscale::cloud::{Cloud, WriteGuard};
use ferroscale::error::DomainError as Error;
use ferroscale::model::{Instance, InstanceState, NodeGroup, TemplateNode};
use proptest::prelude::*;

fn group(min: i32, max: i32, target: i32, states: &[InstanceState]) -> NodeGroup {
    NodeGroup {
        min_size: min,
        max_size: max,
        target_size: target,
        instances: states
            .iter()
            .enumerate()
            .map(|(n, &state)| Instance {
                id: format!("aws:///z/i-{n}"),
                state,
                error: None,
            })
            .collect(),
        ..NodeGroup::new("g", TemplateNode::default(), "aws:///z/")
    }
}

/// A group with 0 <= min <= instances <= target <= max, its instances in any state.
fn groups() -> impl Strategy<Value = NodeGroup> {
    (0i32..20, 0i32..20, 0i32..20, 0i32..20).prop_flat_map(|(a, b, c, d)| {
        let mut v = [a, b, c, d];
        v.sort();
        let [min, instances, target, max] = v;
        proptest::collection::vec(
            prop_oneof![
                Just(InstanceState::Running),
                Just(InstanceState::Creating),
                Just(InstanceState::Deleting)
            ],
            instances as usize,
        )
        .prop_map(move |states| group(min, max, target, &states))
    })
}
proptest! {
    #[test]
    fn increase_never_goes_above_max(g in groups(), delta in -30i32..30) {
        match g.plan_increase(delta) {
            Ok(t) => prop_assert!(delta > 0 && t == g.target_size + delta && t <= g.max_size),
            Err(_) => prop_assert!(delta <= 0 || g.target_size + delta > g.max_size),
        }
    }

    #[test]
    fn decrease_never_cancels_an_existing_instance(g in groups(), delta in -30i32..30) {
        match g.plan_decrease(delta) {
            Ok(t) => prop_assert!(delta < 0 && t == g.target_size + delta && t >= g.instances.len() as i32),
            Err(_) => prop_assert!(delta >= 0 || g.target_size + delta < g.instances.len() as i32),
        }
    }

    #[test]
    fn delete_removes_only_members_and_never_goes_below_min(
        g in groups(),
        picks in proptest::collection::vec(0usize..40, 0..12),
    ) {
        let all = g.instances_with_placeholders();
        // Indexes past the group's members name strangers.
        let ids: Vec<String> = picks
            .iter()
            .map(|&i| all.get(i).map_or_else(|| format!("aws:///z/i-stranger-{i}"), |x| x.id.clone()))
            .collect();
        match g.plan_delete(&ids) {
            Ok(plan) => {
                prop_assert!(plan.new_target >= g.min_size);
                for id in &plan.instances {
                    let i = g.instances.iter().find(|i| &i.id == id);
                    prop_assert!(i.is_some_and(|i| i.state != InstanceState::Deleting), "{id}");
                }
                for id in &plan.placeholders {
                    prop_assert!(g.is_placeholder(id));
                }
                let removed = (plan.instances.len() + plan.placeholders.len()) as i32;
                prop_assert_eq!(plan.new_target, g.target_size - removed);
            }
            Err(Error::NodeNotInGroup { node, .. }) => prop_assert!(node.contains("stranger")),
            Err(Error::BelowMinSize { .. }) | Err(Error::InvalidArgument { .. }) => {}
            Err(e) => prop_assert!(false, "unexpected refusal {e}"),
        }
    }

    /// Concurrent IncreaseSize calls on one group: the target is the start plus every accepted delta,
    /// never above max, whatever the interleaving.
    #[test]
    fn concurrent_increases_add_up(max in 1i32..40, deltas in proptest::collection::vec(1i32..6, 1..24)) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .unwrap();
        let config = format!(
            "nodeGroups:\n  - {{name: g, minSize: 0, maxSize: {max}, targetSize: 0, capacity: {{cpu: 2, memory: 4Gi}}}}\n"
        );
        let cloud = Arc::new(MemoryCloud::new(&MemoryConfig::parse(&config).unwrap()).unwrap());
        let accepted: i32 = runtime.block_on(async {
            let tasks: Vec<_> = deltas
                .iter()
                .map(|&d| {
                    let cloud = cloud.clone();
                    tokio::spawn(async move {
                        let always = WriteGuard::always();
                        cloud.increase_size("g", d, &always).await.map(|()| d)
                    })
                })
                .collect();
            let mut sum = 0;
            for t in tasks {
                sum += t.await.unwrap().unwrap_or(0);
            }
            sum
        });
        let target = cloud.snapshot().group("g").unwrap().target_size;
        prop_assert_eq!(target, accepted);
        prop_assert!(target <= max);
    }
}
