//! Cluster state, upstream's clean-ups: instances whose launch failed are deleted and back their group
//! off; instances without a node after the group's `maxNodeProvisionTime` (15m) are deleted too (kept in a
//! group at min size unless `--force-delete-unregistered-nodes`, and never while the state is in doubt);
//! capacity asked for but not delivered is given up when the cloud says the launch failed (backing the
//! group off at once, so the pods go to another group in this very loop) or after the provision time.

use std::collections::{HashMap, HashSet};

use super::context::Ctx;
use super::decisions::{CancelCapacity, Decisions, DeleteInstance};
use super::memory::Memory;
use super::reasons::{Cancel, InstanceFault};
use crate::model::duration::secs;
use crate::model::{ErrorClass, InstanceState, NodeGroup};

/// Upstream's error code for capacity not delivered in time.
pub const TIMEOUT: &str = "timeout";

/// Records a failed launch of `g`: out of capacity or quota backs off every group of its type in its
/// zone, anything else the group alone. A group already backed off is not pushed further back.
fn launch_failed(
    memory: &mut Memory,
    g: &NodeGroup,
    out_of_resources: bool,
    reason: &str,
    now: i64,
) {
    if memory.backed_off(&g.id, now).is_some() {
        return;
    }
    if out_of_resources {
        memory.capacity_exhausted(g, reason, now);
    } else {
        memory.scale_up_failed(&g.id, reason, now);
    }
}

/// Adds the instances to delete and the capacity to give up to `d`, and remembers since when instances
/// have had no node and groups undelivered capacity.
pub(super) fn cleanup_instances(ctx: &Ctx, memory: &mut Memory, d: &mut Decisions) {
    let now = ctx.now;
    let doubtful = !ctx.world.doubts.is_empty();
    let registered: HashSet<&str> = ctx
        .world
        .nodes
        .iter()
        .map(|n| n.provider_id.as_str())
        .filter(|p| !p.is_empty())
        .collect();
    let mut still: HashMap<String, i64> = HashMap::new();
    let mut unfulfilled: HashMap<String, i64> = HashMap::new();
    for g in ctx.world.groups {
        let limit = secs(ctx.settings.options_of(g).max_node_provision_time);
        // Upstream's error code of the first failure: the launch error's code, or `timeout`.
        let mut failed: Option<String> = None;
        let mut out_of_resources = false;
        let mut deleting = 0;
        for i in &g.instances {
            if registered.contains(i.id.as_str()) || i.state == InstanceState::Deleting {
                continue;
            }
            if let Some(e) = &i.error {
                failed.get_or_insert_with(|| e.code.clone());
                out_of_resources |= e.class == ErrorClass::OutOfResources;
                deleting += 1;
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
            let at_min = g.target_size - deleting <= g.min_size;
            let keep = doubtful || (at_min && !ctx.settings.force_delete_unregistered_nodes);
            if now - since >= limit && !keep {
                failed.get_or_insert_with(|| TIMEOUT.to_string());
                deleting += 1;
                d.delete_instances.push(DeleteInstance {
                    group: g.id.clone(),
                    instance: i.id.clone(),
                    reason: InstanceFault::NotRegistered { within_secs: limit },
                });
            } else {
                still.insert(i.id.clone(), since);
            }
        }
        // Upstream's overrideNodesToDeleteForZeroOrMax: an atomic group with an instance that failed to
        // launch or to register goes whole, its other instances with those.
        let atomic = ctx.settings.options_of(g).zero_or_max_node_scaling;
        if let Some(code) = failed.clone().filter(|_| atomic) {
            for i in &g.instances {
                let going = d.delete_instances.iter().any(|x| x.instance == i.id);
                if going || i.state == InstanceState::Deleting {
                    continue;
                }
                still.remove(&i.id);
                d.delete_instances.push(DeleteInstance {
                    group: g.id.clone(),
                    instance: i.id.clone(),
                    reason: InstanceFault::AtomicGroupFailed { code: code.clone() },
                });
            }
        }
        // Capacity asked for that the cloud has not launched (placeholders).
        let undelivered = g.placeholder_count() as i32;
        if undelivered > 0 {
            let since = *memory.unfulfilled_since.get(&g.id).unwrap_or(&now);
            let reason = match &g.launch_error {
                Some(e) => {
                    let out = e.class == ErrorClass::OutOfResources;
                    launch_failed(memory, g, out, &e.code, now);
                    Some(Cancel::LaunchFailed {
                        code: e.code.clone(),
                    })
                }
                None if now - since >= limit => {
                    launch_failed(memory, g, false, TIMEOUT, now);
                    Some(Cancel::NotDelivered { within_secs: limit })
                }
                None => None,
            };
            match reason {
                Some(reason) => d.cancel.push(CancelCapacity {
                    group: g.id.clone(),
                    count: undelivered,
                    reason,
                }),
                None => {
                    unfulfilled.insert(g.id.clone(), since);
                }
            }
        }
        if let Some(reason) = failed {
            launch_failed(memory, g, out_of_resources, &reason, now);
        }
    }
    memory.unregistered_since = still;
    memory.unfulfilled_since = unfulfilled;
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::engine::reasons::{Cancel, Doubt};
    use crate::engine::{Decisions, Memory, Settings};
    use crate::fixtures::{group, TestWorld};
    use crate::model::{ErrorClass, InstanceError, InstanceState, NodeGroup};

    fn settings() -> Settings {
        Settings::upstream()
    }

    /// One loop at `now` on `groups`, with `doubts`.
    fn decide(
        groups: &[Arc<NodeGroup>],
        s: &Settings,
        memory: &mut Memory,
        now: i64,
        doubts: &[Doubt],
    ) -> Decisions {
        let world = TestWorld {
            groups: groups.to_vec(),
            doubts: doubts.to_vec(),
            ..Default::default()
        };
        world.run_once(s, memory, now)
    }

    #[test]
    fn unregistered_instances_of_a_group_at_min_stay_unless_forced() {
        let groups = [group("g")
            .sizes(1, 10, 1)
            .instance("i-1", InstanceState::Running)
            .arc()];
        let mut memory = Memory::default();
        let s = settings();
        decide(&groups, &s, &mut memory, 0, &[]);
        let d = decide(&groups, &s, &mut memory, 10_000, &[]);
        assert!(d.delete_instances.is_empty(), "at min size: {d:?}");
        let forced = Settings {
            force_delete_unregistered_nodes: true,
            ..settings()
        };
        let d = decide(&groups, &forced, &mut memory, 10_001, &[]);
        assert_eq!(d.delete_instances.len(), 1);
    }

    #[test]
    fn nothing_unregistered_is_deleted_while_the_state_is_in_doubt() {
        let groups = [group("g")
            .sizes(0, 10, 1)
            .instance("i-1", InstanceState::Running)
            .arc()];
        let mut memory = Memory::default();
        let s = settings();
        decide(&groups, &s, &mut memory, 0, &[]);
        let doubt = [Doubt::WatchFailing {
            kind: "nodes".into(),
        }];
        let d = decide(&groups, &s, &mut memory, 10_000, &doubt);
        assert!(d.delete_instances.is_empty(), "{d:?}");
        assert_eq!(d.held_back, doubt);
        let d = decide(&groups, &s, &mut memory, 10_001, &[]);
        assert_eq!(d.delete_instances.len(), 1, "once the doubt is gone");
    }

    #[test]
    fn undelivered_capacity_is_given_up_on_a_launch_error_at_once_else_after_the_provision_time() {
        let s = settings();
        let mut failed = group("g").sizes(0, 10, 2).build();
        failed.launch_error = Some(InstanceError {
            code: "InsufficientInstanceCapacity".into(),
            message: "no capacity".into(),
            class: ErrorClass::OutOfResources,
        });
        let mut memory = Memory::default();
        let d = decide(&[Arc::new(failed)], &s, &mut memory, 100, &[]);
        assert_eq!(d.cancel.len(), 1);
        assert_eq!(d.cancel[0].count, 2);
        assert!(matches!(d.cancel[0].reason, Cancel::LaunchFailed { .. }));
        assert_eq!(
            memory.backoff_of("g", 100).map(|b| b.reason.as_str()),
            Some("InsufficientInstanceCapacity"),
            "the backoff carries the cloud's code"
        );

        let quiet = [group("g").sizes(0, 10, 1).arc()];
        let mut memory = Memory::default();
        let d = decide(&quiet, &s, &mut memory, 0, &[]);
        assert!(d.cancel.is_empty(), "still within the provision time");
        let d = decide(&quiet, &s, &mut memory, 900, &[]);
        assert_eq!(
            d.cancel[0].reason,
            Cancel::NotDelivered { within_secs: 900 }
        );
        assert_eq!(
            memory.backoff_of("g", 900).map(|b| b.reason.as_str()),
            Some("timeout")
        );
        assert!(memory.backoff_of("g", 900 + 300).is_none(), "5 minutes");
    }
}
