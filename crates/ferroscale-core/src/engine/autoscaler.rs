//! One autoscaling loop, upstream's RunOnce, as a pure function of the world, the settings, what the
//! autoscaler remembers, the time and a clock for time budgets: which groups grow (`scale_up`), which nodes
//! go (`scale_down`), which instances are given up (`cleanup`), and a typed reason for every pod left
//! pending and every node kept (`reasons`). Shared by `ferroscale run` and `ferroscale simulate`.

use std::collections::HashMap;
use std::sync::Arc;

use super::cleanup::cleanup_instances;
use super::context::{group_templates, new_node, Ctx, World};
use super::decisions::Decisions;
use super::disruption::replacements;
use super::health::{unhealthy, NodeReadiness};
use super::ledger::Ledger;
use super::limits::Amount;
use super::memory::Memory;
use super::methods::{after_scale_up, Method, Notices, Turn};
use super::min_size::to_min_size;
use super::placement::{Placed, Placement};
use super::predicates::first_fit;
use super::reasons::Pending;
use super::scale_up::scale_up;
use super::settings::Settings;
use crate::clock::Clock;
use crate::labels;
use crate::model::duration::secs;
use crate::model::volumes::ClaimState;
use crate::model::workload::Pod;

/// One loop at `now` (seconds since the epoch); time budgets are measured on `clock`.
pub fn run_once(
    world: &World,
    settings: &Settings,
    memory: &mut Memory,
    now: i64,
    clock: &dyn Clock,
) -> Decisions {
    // The scheduler profile's arguments, applied to every pod once: each simulation below then sees
    // the pods as the scheduler does.
    let profiled: Vec<Arc<Pod>>;
    let as_scheduled;
    let world = if settings.scheduler.is_default() {
        world
    } else {
        profiled = world
            .pods
            .iter()
            .map(|p| Arc::new(settings.scheduler.apply(p)))
            .collect();
        as_scheduled = World {
            pods: &profiled,
            ..*world
        };
        &as_scheduled
    };
    let cutoff = settings.expendable_pods_priority_cutoff;
    let placed = Placed::fresh(world.nodes, world.pods, cutoff);
    run_placed(world, settings, memory, now, clock, placed)
}

/// [`run_once`] with the pods' placement kept from the caller's last loop: the loop then reads only
/// the pods that changed since, where a fresh one reads every pod (`simulate`'s replay runs thousands
/// of loops over one cluster). A scheduler profile that changes the pods makes new ones each loop:
/// nothing is kept of them.
pub fn run_once_kept(
    world: &World,
    settings: &Settings,
    memory: &mut Memory,
    now: i64,
    clock: &dyn Clock,
    placement: &mut Placement,
) -> Decisions {
    if !settings.scheduler.is_default() {
        return run_once(world, settings, memory, now, clock);
    }
    placement.update(world.pods, settings.expendable_pods_priority_cutoff);
    let placed = placement.placed(world.nodes);
    run_placed(world, settings, memory, now, clock, placed)
}

/// The loop on the world's nodes with their pods (`placed`).
fn run_placed(
    world: &World,
    settings: &Settings,
    memory: &mut Memory,
    now: i64,
    clock: &dyn Clock,
    placed: Placed,
) -> Decisions {
    // Existing nodes with their pods, then the nodes asked for but not registered or not started yet.
    // Upstream's snapshot leaves out expendable pods (priority below the cutoff): a pending pod may take
    // their place, as the scheduler would preempt them, so they neither hold room for the scale-up nor
    // ask for any. They are put back for scale-down, which lets them go down with their node.
    let Placed {
        mut infos,
        index,
        expendable,
        pending,
    } = placed;
    // Each group's template node's pods (expendable ones too), from the NodeInfos just built.
    let pods_on = |name: &str| -> Vec<&Pod> {
        let Some(&i) = index.get(name) else {
            return Vec::new();
        };
        let placed = infos[i].pods.iter().map(|p| &**p);
        let left_out = expendable.iter().filter(|(j, _)| *j == i);
        placed.chain(left_out.map(|(_, p)| &***p)).collect()
    };
    let templates = group_templates(world, pods_on, memory, now, &settings.taints);
    let ctx = Ctx {
        world,
        settings,
        now,
        clock,
        groups: world
            .groups
            .iter()
            .map(|g| (g.id.as_str(), g.as_ref()))
            .collect(),
        templates,
    };
    let mut d = Decisions::default();
    memory.backoff_policy = settings.node_group_backoff;

    // Upstream's cluster health: with too many unready nodes the loop only reports.
    if let Some(u) = unhealthy(&ctx) {
        d.unhealthy = Some(u);
        return d;
    }

    // Cluster state: instances that failed or never registered go, and their group backs off; capacity
    // that will not come is given up.
    cleanup_instances(&ctx, memory, &mut d);
    let mut deleting: HashMap<String, i32> = HashMap::new();
    for x in &d.delete_instances {
        *deleting.entry(x.group.clone()).or_default() += 1;
    }
    for c in &d.cancel {
        *deleting.entry(c.group.clone()).or_default() += c.count;
    }
    // Upstream's LongUnregistered: an instance kept without a node past its group's
    // maxNodeProvisionTime (a group at min size keeps it) is not on its way any more.
    for g in world.groups {
        let limit = crate::model::duration::secs(settings.options_of(g).max_node_provision_time);
        let long = g
            .instances
            .iter()
            .filter(|i| {
                memory
                    .unregistered_since
                    .get(&i.id)
                    .is_some_and(|since| now - since >= limit)
            })
            .count() as i32;
        if long > 0 {
            *deleting.entry(g.id.clone()).or_default() += long;
        }
    }

    let existing = infos.len();
    // One ledger for every method of the loop; the notices go first (the involuntary ones whatever
    // it says), their pods placed again by this loop's scale-up.
    let mut ledger = Ledger::new(&ctx, memory);
    let mut notices = Notices::default();
    notices.run(&mut Turn {
        ctx: &ctx,
        memory,
        ledger: &mut ledger,
        infos: &mut infos,
        existing,
        d: &mut d,
    });
    let Notices {
        displaced,
        disruptions,
        mut kept,
    } = notices;
    let leaving: std::collections::HashSet<String> = world
        .interrupted
        .keys()
        .filter(|n| !kept.iter().any(|(k, _)| k == *n))
        .cloned()
        .collect();
    // Upstream's GetUpcomingNodes: a group's target less its ready and unready nodes. A node still
    // starting (not ready, younger than the group's maxNodeStartupTime) counts as upcoming: its pods
    // go to a template copy of it, so a booting node does not ask for another one.
    let startup: HashMap<&str, std::time::Duration> = world
        .groups
        .iter()
        .map(|g| (g.id.as_str(), settings.options_of(g).max_node_startup_time))
        .collect();
    let mut registered: HashMap<&str, i32> = HashMap::new();
    // The nodes still starting: an upcoming copy stands for each, so the cluster maxima count the copy
    // and not the node as well (upstream counts its ready nodes and the upcoming ones).
    let mut starting = (0, Amount::default());
    for n in world.nodes {
        let Some(g) = world.node_groups.get(&n.name) else {
            continue;
        };
        let startup = startup
            .get(g.as_str())
            .copied()
            .unwrap_or(settings.defaults.max_node_startup_time);
        if NodeReadiness::of(n, startup, now, &settings.taints) != NodeReadiness::NotStarted {
            *registered.entry(g.as_str()).or_default() += 1;
        } else {
            starting.0 += 1;
            starting.1.add(&Amount::of_node(n), 1);
        }
    }
    for g in world.groups {
        let upcoming = g.target_size
            - registered.get(g.id.as_str()).copied().unwrap_or(0)
            - deleting.get(g.id.as_str()).copied().unwrap_or(0);
        for k in 0..upcoming.max(0) {
            infos.push(new_node(&ctx, g, &format!("{}-upcoming-{k}", g.id)));
        }
    }
    let mut upcoming = Amount::default();
    for i in &infos[existing..] {
        upcoming.add(&Amount::of_node(&i.node), 1);
    }
    ledger.count_upcoming(infos.len() - existing, &upcoming, &starting);

    // Pods that need a scale-up: unschedulable, old enough, not expendable, and fitting nowhere now.
    // DaemonSet pods never do: a new node would start its own copy (upstream's filter_out_daemon_sets).
    let mut waiting: Vec<&Pod> = Vec::new();
    for p in pending
        .iter()
        .map(|&k| &world.pods[k])
        .filter(|p| awaits_a_node(p, settings) && !p.is_daemon_set())
    {
        if p.meta.priority < settings.expendable_pods_priority_cutoff {
            d.pending.push((p.key(), Pending::Expendable));
            continue;
        }
        // Upstream's FilterOutExpendableAndSplit: a pod waiting for preemption on its nominated node
        // (while that node exists) is placed there whatever it fits, and asks for no node.
        if let Some((n, &i)) = p
            .meta
            .nominated_node
            .as_deref()
            .and_then(|n| index.get(n).map(|i| (n, i)))
        {
            infos[i].add(Arc::clone(p));
            d.pending.push((p.key(), Pending::Nominated(n.to_string())));
            continue;
        }
        if let Some((claim, wait)) = p.claims.iter().find_map(|c| match c.state {
            ClaimState::Waiting(w) => Some((c.key.clone(), w)),
            _ => None,
        }) {
            d.pending
                .push((p.key(), Pending::WaitsForVolume { claim, wait }));
            continue;
        }
        // A pod's own delay only lengthens the flag's (upstream's filterOutYoungPods).
        let delay = secs(settings.new_pod_scale_up_delay).max(p.meta.scale_up_delay.unwrap_or(0));
        if now - p.meta.created < delay {
            d.pending.push((p.key(), Pending::TooNew));
            continue;
        }
        waiting.push(p);
    }
    // Upstream's filter_out_schedulable tries the most important pods first: a high-priority pod takes
    // the room a lower one would, and the lower one asks for the node.
    waiting.sort_by_key(|p| std::cmp::Reverse(p.meta.priority));
    // Pods of nodes going away need a place now, whatever their age or priority.
    waiting.extend(displaced.iter().map(|(p, _)| p.as_ref()));
    // Nodes a notice takes out (or whose instance is already going) take no pods; a node a voluntary
    // notice could not take out yet still does, as the scheduler still binds pods to it.
    let gone: Vec<bool> = infos
        .iter()
        .map(|i| leaving.contains(i.node.name.as_str()))
        .collect();
    let mut candidates: Vec<&Pod> = Vec::new();
    for (p, placed) in waiting
        .iter()
        .zip(first_fit(&waiting, &mut infos, |i| !gone[i]))
    {
        match placed {
            Some(i) if i < existing => d
                .pending
                .push((p.key(), Pending::FitsOnNode(infos[i].node.name.clone()))),
            Some(i) => d.pending.push((
                p.key(),
                Pending::FitsOnUpcoming {
                    group: infos[i].node.labels[labels::NODE_GROUP].clone(),
                },
            )),
            None => candidates.push(p),
        }
    }

    scale_up(
        &ctx,
        memory,
        &candidates,
        &infos,
        existing,
        &starting,
        &mut d,
    );
    if settings.enforce_node_group_min_size {
        to_min_size(&ctx, memory, &infos, &starting, &mut d);
    }
    for s in &d.scale_up {
        if let Some(g) = ctx.groups.get(s.group.as_str()).copied() {
            ledger.count_scale_up(&ctx, g, s.delta);
        }
    }
    for (i, p) in expendable {
        infos[i].add(Arc::clone(p));
    }
    d.disruptions = disruptions;
    d.unremovable.append(&mut kept);
    d.replacements = replacements(&d, &displaced);
    if !world.doubts.is_empty() {
        d.held_back = world.doubts.to_vec();
    } else {
        for mut method in after_scale_up() {
            method.run(&mut Turn {
                ctx: &ctx,
                memory,
                ledger: &mut ledger,
                infos: &mut infos,
                existing,
                d: &mut d,
            });
        }
    }
    d.not_destinations = ledger.not_destinations(memory);
    d.pdbs_left = ledger.into_pdbs();
    d.intents = Some(super::intents::desired(memory));
    d
}

/// Whether a pod without a node waits for one: the scheduler marked it unschedulable, or its scheduler
/// is one of `--bypassed-scheduler-names`, whose pods upstream counts at once.
fn awaits_a_node(p: &Pod, settings: &Settings) -> bool {
    p.meta.unschedulable
        || p.meta
            .scheduler_name
            .as_ref()
            .is_some_and(|n| settings.bypassed_scheduler_names.contains(n))
}

#[cfg(test)]
mod tests;
