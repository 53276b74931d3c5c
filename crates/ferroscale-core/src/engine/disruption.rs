//! Nodes whose instance is going away (`World::interrupted`): their pods are placed again in the same
//! loop, on other nodes or on new ones asked for now, before the instance dies; a spot interruption also
//! marks its instance type in its zone short of capacity.

use std::collections::HashMap;
use std::sync::Arc;

use super::context::World;
use super::decisions::{Decisions, Disruption, Replacement};
use super::memory::Memory;
use super::predicates::NodeInfo;
use crate::labels;
use crate::model::lifecycle::DisruptionReason;
use crate::model::workload::Pod;

/// The nodes whose instance is going away: each is a disruption, its instance type in its zone is short
/// of spot capacity when the notice was a spot interruption, and its pods that a controller recreates
/// (not DaemonSet or mirror pods, not those already terminating) are returned, unbound, to be placed.
pub(super) fn displace(
    world: &World,
    infos: &[NodeInfo],
    memory: &mut Memory,
    now: i64,
    disruptions: &mut Vec<Disruption>,
) -> Vec<(Arc<Pod>, String)> {
    let mut displaced = Vec::new();
    for info in infos {
        let Some(&reason) = world.interrupted.get(&info.node.name) else {
            continue;
        };
        disruptions.push(Disruption {
            node: info.node.name.clone(),
            group: world.node_groups.get(&info.node.name).cloned(),
            reason,
        });
        if reason == DisruptionReason::SpotInterruption {
            let label = |k: &str| info.node.labels.get(k).cloned();
            if let (Some(ty), Some(zone)) = (label(labels::INSTANCE_TYPE), label(labels::ZONE)) {
                memory.capacity_lost(ty, zone, now);
            }
        }
        for p in &info.pods {
            let recreated = p.meta.controller.is_some() && !p.is_daemon_set();
            if recreated && !p.meta.mirror && p.meta.deleted.is_none() {
                let unbound = Arc::new(Pod {
                    node_name: None,
                    ..(**p).clone()
                });
                displaced.push((unbound, info.node.name.clone()));
            }
        }
    }
    displaced
}

/// The scale-ups that place pods of disrupted nodes, with those nodes.
pub(super) fn replacements(d: &Decisions, displaced: &[(Arc<Pod>, String)]) -> Vec<Replacement> {
    let from: HashMap<String, &str> = displaced
        .iter()
        .map(|(p, n)| (p.key(), n.as_str()))
        .collect();
    d.scale_up
        .iter()
        .filter_map(|s| {
            let mut nodes: Vec<String> = s
                .pods
                .iter()
                .filter_map(|k| from.get(k).map(|n| n.to_string()))
                .collect();
            nodes.sort();
            nodes.dedup();
            (!nodes.is_empty()).then(|| Replacement {
                group: s.group.clone(),
                delta: s.delta,
                for_nodes: nodes,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::engine::{Memory, Settings};
    use crate::fixtures::{group, node, pod, resources, NodeBuilder, TestWorld, GIB};
    use crate::labels;
    use crate::model::lifecycle::DisruptionReason;
    use crate::model::NodeGroup;

    /// A 4-cpu m5.xlarge in `zone`.
    fn m5_xlarge(name: &str, zone: &str) -> NodeBuilder {
        node(name)
            .labels(&[(labels::INSTANCE_TYPE, "m5.xlarge"), (labels::ZONE, zone)])
            .sized(resources(4000, 16 * GIB, 110))
    }

    /// A group of 4-cpu m5.xlarge nodes in `zone`, at `target` of 10.
    fn spot(id: &str, zone: &str, target: i32) -> NodeGroup {
        group(id)
            .sizes(0, 10, target)
            .prefix(format!("aws:///{zone}/"))
            .template(m5_xlarge(&format!("{id}-template"), zone).template())
            .build()
    }

    #[test]
    fn an_interrupted_nodes_pods_get_a_new_node_now_and_its_type_and_zone_are_avoided() {
        // Two full nodes in zone a; a second group of the same type in zone a and one in zone b.
        let in_a = |name: &str| {
            m5_xlarge(name, "us-east-1a")
                .hostname()
                .provider_id(format!("aws:///us-east-1a/{name}"))
                .ready()
                .build()
        };
        let shop = |name: &str, node: &str, controller: &str| {
            pod("shop", name)
                .on(node)
                .requests(resources(1500, GIB, 1))
                .controller(controller)
                .build()
        };
        let mut world = TestWorld::default()
            .group(spot("spot-a", "us-east-1a", 2))
            .group(spot("spot-a2", "us-east-1a", 0))
            .group(spot("spot-b", "us-east-1b", 0))
            .node_of("spot-a", in_a("a-1"))
            .node_of("spot-a", in_a("a-2"))
            .pod(shop("web-1", "a-1", "ReplicaSet"))
            .pod(shop("web-2", "a-1", "ReplicaSet"))
            .pod(shop("agent", "a-1", "DaemonSet"))
            .pod(shop("web-3", "a-2", "ReplicaSet"))
            .pod(shop("web-4", "a-2", "ReplicaSet"));
        world
            .interrupted
            .insert("a-1".into(), DisruptionReason::SpotInterruption);
        let mut memory = Memory::default();
        let d = world.run_once(&Settings::upstream(), &mut memory, 1_000);
        assert_eq!(d.disruptions.len(), 1);
        assert_eq!(d.disruptions[0].node, "a-1");
        assert_eq!(d.disruptions[0].group.as_deref(), Some("spot-a"));
        // web-1 and web-2 (not the DaemonSet pod) need 3 cores: a-2 is full, one new node takes both,
        // and only the zone without the interruption may give it.
        assert_eq!(d.scale_up.len(), 1, "{d:?}");
        assert_eq!(d.scale_up[0].group, "spot-b");
        assert_eq!(d.scale_up[0].delta, 1);
        assert_eq!(d.scale_up[0].pods, vec!["shop/web-1", "shop/web-2"]);
        assert_eq!(d.replacements.len(), 1);
        assert_eq!(d.replacements[0].for_nodes, vec!["a-1"]);
        assert!(d.scale_down.is_empty());

        // A rebalance recommendation moves the pods too but leaves the zone's capacity alone.
        world
            .interrupted
            .insert("a-1".into(), DisruptionReason::Rebalance);
        let mut memory = Memory::default();
        let d = world.run_once(&Settings::upstream(), &mut memory, 1_000);
        assert_eq!(d.replacements.len(), 1, "{d:?}");
        assert!(memory.out_of_capacity.is_empty());
    }
}
