//! Cluster state: failed launches are deleted at once and back their group off; instances without a node
//! after the group's `maxNodeProvisionTime` (15m) are deleted too (upstream's unregistered-node cleanup).

use std::collections::{HashMap, HashSet};

use super::context::Ctx;
use super::decisions::{Decisions, DeleteInstance};
use super::memory::Memory;
use super::reasons::InstanceFault;
use crate::model::{ErrorClass, InstanceState};

/// Adds the instances to delete to `d` and remembers when the others were first seen without a node.
pub(super) fn cleanup_instances(ctx: &Ctx, memory: &mut Memory, d: &mut Decisions) {
    let now = ctx.now;
    let registered: HashSet<&str> = ctx
        .world
        .nodes
        .iter()
        .map(|n| n.provider_id.as_str())
        .filter(|p| !p.is_empty())
        .collect();
    let mut still: HashMap<String, i64> = HashMap::new();
    for g in ctx.world.groups {
        let limit = ctx.settings.options_of(g).max_node_provision_time.as_secs() as i64;
        let mut failed = false;
        let mut out_of_resources = false;
        for i in &g.instances {
            if registered.contains(i.id.as_str()) || i.state == InstanceState::Deleting {
                continue;
            }
            if let Some(e) = &i.error {
                failed = true;
                out_of_resources |= e.class == ErrorClass::OutOfResources;
                d.delete_instances.push(DeleteInstance {
                    group: g.id.clone(),
                    instance: i.id.clone(),
                    reason: InstanceFault::LaunchFailed {
                        code: e.code.clone(),
                    },
                });
                continue;
            }
            let since = *memory.unregistered_since.get(&i.id).unwrap_or(&now);
            if now - since >= limit {
                failed = true;
                d.delete_instances.push(DeleteInstance {
                    group: g.id.clone(),
                    instance: i.id.clone(),
                    reason: InstanceFault::NotRegistered { within_secs: limit },
                });
            } else {
                still.insert(i.id.clone(), since);
            }
        }
        if out_of_resources {
            memory.capacity_exhausted(g, now);
        } else if failed {
            memory.scale_up_failed(&g.id, now);
        }
    }
    memory.unregistered_since = still;
}
