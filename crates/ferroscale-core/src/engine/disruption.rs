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
    use std::collections::{BTreeMap, HashMap};
    use std::sync::Arc;

    use crate::clock::FixedClock;
    use crate::engine::{run_once, Memory, Settings, World};
    use crate::labels;
    use crate::model::lifecycle::DisruptionReason;
    use crate::model::workload::{Node, Pod, PodMeta};
    use crate::model::{NodeGroup, Resources, TemplateNode};

    const GIB: i64 = 1 << 30;

    fn resources(cpu_milli: i64) -> Resources {
        Resources {
            cpu_milli,
            memory: 16 * GIB,
            pods: 110,
            ..Default::default()
        }
    }

    fn spot_labels(zone: &str) -> BTreeMap<String, String> {
        [
            (labels::INSTANCE_TYPE.to_string(), "m5.xlarge".to_string()),
            (labels::ZONE.to_string(), zone.to_string()),
        ]
        .into()
    }

    /// A group of 4-cpu m5.xlarge nodes in `zone`, at `target` of 10.
    fn group(id: &str, zone: &str, target: i32) -> Arc<NodeGroup> {
        let template = TemplateNode {
            name: format!("{id}-template"),
            labels: spot_labels(zone),
            capacity: resources(4000),
            allocatable: resources(4000),
            ..Default::default()
        };
        Arc::new(NodeGroup {
            min_size: 0,
            max_size: 10,
            target_size: target,
            ..NodeGroup::new(id, template, format!("aws:///{zone}/"))
        })
    }

    fn node(name: &str, zone: &str) -> Node {
        let mut labels = spot_labels(zone);
        labels.insert(labels::HOSTNAME.into(), name.into());
        Node {
            name: name.into(),
            labels,
            capacity: resources(4000),
            allocatable: resources(4000),
            provider_id: format!("aws:///{zone}/{name}"),
            ready: true,
            ..Default::default()
        }
    }

    fn pod(name: &str, node: &str, controller: &str) -> Arc<Pod> {
        Arc::new(Pod {
            namespace: "shop".into(),
            name: name.into(),
            node_name: Some(node.into()),
            requests: Resources {
                cpu_milli: 1500,
                memory: GIB,
                pods: 1,
                ..Default::default()
            },
            meta: PodMeta {
                controller: Some(controller.into()),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    #[test]
    fn an_interrupted_nodes_pods_get_a_new_node_now_and_its_type_and_zone_are_avoided() {
        // Two full nodes in zone a; a second group of the same type in zone a and one in zone b.
        let nodes = [node("a-1", "us-east-1a"), node("a-2", "us-east-1a")];
        let pods = vec![
            pod("web-1", "a-1", "ReplicaSet"),
            pod("web-2", "a-1", "ReplicaSet"),
            pod("agent", "a-1", "DaemonSet"),
            pod("web-3", "a-2", "ReplicaSet"),
            pod("web-4", "a-2", "ReplicaSet"),
        ];
        let groups = [
            group("spot-a", "us-east-1a", 2),
            group("spot-a2", "us-east-1a", 0),
            group("spot-b", "us-east-1b", 0),
        ];
        let node_groups: HashMap<String, String> = nodes
            .iter()
            .map(|n| (n.name.clone(), "spot-a".to_string()))
            .collect();
        let interrupted = HashMap::from([("a-1".to_string(), DisruptionReason::SpotInterruption)]);
        let world = World {
            nodes: &nodes,
            node_groups: &node_groups,
            pods: &pods,
            pdbs: &[],
            daemon_pods: &[],
            groups: &groups,
            removing: &HashMap::new(),
            doubts: &[],
            interrupted: &interrupted,
        };
        let mut memory = Memory::default();
        let d = run_once(
            &world,
            &Settings::upstream(),
            &mut memory,
            1_000,
            &FixedClock::default(),
        );
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
        let interrupted = HashMap::from([("a-1".to_string(), DisruptionReason::Rebalance)]);
        let world = World {
            interrupted: &interrupted,
            ..world
        };
        let mut memory = Memory::default();
        let d = run_once(
            &world,
            &Settings::upstream(),
            &mut memory,
            1_000,
            &FixedClock::default(),
        );
        assert_eq!(d.replacements.len(), 1, "{d:?}");
        assert!(memory.out_of_capacity.is_empty());
    }
}
