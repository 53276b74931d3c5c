//! Nodes whose instance is going away (`World::interrupted`): their pods are placed again in the same
//! loop, on other nodes or on new ones asked for now, before the instance dies; a spot interruption also
//! marks its instance type in its zone short of capacity.

use std::collections::HashMap;
use std::sync::Arc;

use super::context::Ctx;
use super::decisions::{Decisions, Disruption, NoticeDrain, Replacement};
use super::drainability::drain;
use super::ledger::{Kind, Ledger};
use super::memory::Memory;
use super::predicates::NodeInfo;
use super::reasons::Unremovable;
use crate::labels;
use crate::model::lifecycle::DisruptionReason;
use crate::model::workload::Pod;
use crate::model::{InstanceState, NodeGroup};

/// The nodes whose instance is going away. Each is a disruption; a spot interruption also marks its
/// instance type in its zone short of capacity. An involuntary notice (within
/// `--max-interruptions-per-minute`) takes its node out whatever its pods (the ledger records it); any
/// other drains as a scale-down would, under the drainability rules and the ledger, or keeps the node
/// (in `kept`, with why) until a later loop. A node whose instance is already gone is done: its
/// pods are placed again, nothing is drained or counted. Returns the pods of the nodes taken out that a
/// controller recreates (not DaemonSet or mirror pods, not those already terminating), unbound, to be
/// placed.
pub(super) fn displace(
    ctx: &Ctx,
    infos: &[NodeInfo],
    memory: &mut Memory,
    ledger: &mut Ledger,
    disruptions: &mut Vec<Disruption>,
    kept: &mut Vec<(String, Unremovable)>,
) -> Vec<(Arc<Pod>, String)> {
    let world = ctx.world;
    let now = ctx.now;
    // A node taken out counts against the cap for a minute, gone or not.
    memory
        .involuntary
        .retain(|n, t| world.interrupted.contains_key(n) || now - *t < 60);
    // Each notice keeps since when it was first acted on, for its intent.
    memory
        .noticed
        .retain(|n, _| world.interrupted.contains_key(n));
    for (n, reason) in world.interrupted {
        let e = memory.noticed.entry(n.clone()).or_insert((*reason, now));
        e.0 = *reason;
    }
    let mut displaced = Vec::new();
    let noticed: Vec<(&NodeInfo, DisruptionReason)> = infos
        .iter()
        .filter_map(|i| Some((i, *world.interrupted.get(&i.node.name)?)))
        .collect();
    if noticed.is_empty() {
        return displaced;
    }
    // A share is of the cluster's nodes, whatever their group.
    let cap = ctx
        .settings
        .max_interruptions_per_minute
        .allowed(world.nodes.len());
    let mut recent = memory
        .involuntary
        .values()
        .filter(|t| now - **t < 60)
        .count();
    // Each node with whether its instance is gone and whether it goes involuntarily; involuntary ones
    // first: they go whatever the budgets, and use them up for the rest.
    let mut order: Vec<(&NodeInfo, DisruptionReason, bool, bool)> = Vec::new();
    for (info, reason) in noticed {
        let name = &info.node.name;
        let gone = world
            .node_groups
            .get(name)
            .and_then(|g| ctx.groups.get(g.as_str()))
            .is_none_or(|g| {
                g.instances
                    .iter()
                    .any(|i| i.id == info.node.provider_id && i.state == InstanceState::Deleting)
            });
        let involuntary = !gone
            && reason.involuntary()
            && (memory.involuntary.contains_key(name) || recent < cap);
        if involuntary && !memory.involuntary.contains_key(name) {
            memory.involuntary.insert(name.clone(), now);
            recent += 1;
        }
        order.push((info, reason, gone, involuntary));
    }
    order.sort_by_key(|&(_, _, _, involuntary)| !involuntary);
    for (info, reason, gone, involuntary) in order {
        let name = &info.node.name;
        let group = world.node_groups.get(name);
        let g = group.and_then(|g| ctx.groups.get(g.as_str()).copied());
        if !gone {
            let notice = if involuntary {
                let evict: Vec<Arc<Pod>> = info
                    .pods
                    .iter()
                    .filter(|p| !p.node_bound())
                    .cloned()
                    .collect();
                // Never declined: the cloud takes the instance whatever the ledger says.
                let _ = ledger.take_removal(ctx, &info.node, g, &evict, Kind::Involuntary);
                NoticeDrain::Involuntary
            } else {
                match voluntary(ctx, info, g, ledger) {
                    Ok(drain) => drain,
                    Err(why) => {
                        kept.push((name.clone(), why));
                        continue;
                    }
                }
            };
            disruptions.push(Disruption {
                node: name.clone(),
                group: group.cloned(),
                reason,
                notice: Some(notice),
            });
        }
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
                displaced.push((unbound, name.clone()));
            }
        }
    }
    displaced
}

/// A voluntary notice's drain of `info`, as a scale-down's: not while a pod may not be evicted or runs
/// to completion, nor unless the ledger admits it (the group's budget, the caps, the PDBs); a node
/// already being removed has its place.
fn voluntary(
    ctx: &Ctx,
    info: &NodeInfo,
    group: Option<&NodeGroup>,
    ledger: &mut Ledger,
) -> Result<NoticeDrain, Unremovable> {
    let drained = drain(&info.pods, ledger.pdbs(), ctx).map_err(Unremovable::Blocked)?;
    if let Some(pod) = drained.waits_for {
        return Err(Unremovable::OnCompletion { pod });
    }
    if !ctx.world.removing.contains_key(&info.node.name) {
        ledger.take_removal(ctx, &info.node, group, &drained.movable, Kind::Notice)?;
    }
    Ok(NoticeDrain::Voluntary {
        evict: drained.movable.iter().map(|p| p.key()).collect(),
        left: drained.left,
    })
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
    use crate::model::{InstanceState, NodeGroup};

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

    #[test]
    fn a_node_whose_instance_is_already_going_is_neither_drained_nor_counted_again() {
        let mut world = TestWorld::default()
            .group(
                group("pool")
                    .sizes(0, 10, 1)
                    .prefix("test:///pool/")
                    .instance("a-1", InstanceState::Deleting)
                    .build(),
            )
            .node_of(
                "pool",
                node("a-1")
                    .provider_id("test:///pool/a-1")
                    .sized(resources(4000, 16 * GIB, 110))
                    .ready()
                    .build(),
            );
        world
            .interrupted
            .insert("a-1".into(), DisruptionReason::SpotInterruption);
        let mut memory = Memory::default();
        let d = world.run_once(&Settings::upstream(), &mut memory, 1_000);
        assert!(d.disruptions.is_empty(), "{d:?}");
        assert!(memory.involuntary.is_empty(), "not counted against the cap");
        // The same node with its instance still running goes.
        world.group_mut("pool").instances[0].state = InstanceState::Running;
        let d = world.run_once(&Settings::upstream(), &mut memory, 1_010);
        assert_eq!(d.disruptions.len(), 1, "{d:?}");
    }
}
