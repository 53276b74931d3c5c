//! One autoscaling loop, upstream's RunOnce, as a pure function of the world, the settings, what the
//! autoscaler remembers and the time: which groups grow, which nodes go, and a reason a person can read
//! for every pod left pending and every node kept. Shared by `ferroscale run` and `ferroscale simulate`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use super::estimator::{estimate_within, Unplaced};
use super::expander::{self, Context, ExpansionOption, Priorities, Strategy};
use super::predicates::{first_fit, fits, fits_in, repelling, NodeInfo, Repel, Unfit};
use crate::model::workload::{Node, Pdb, Pod, HOSTNAME_LABEL, ZONE_LABEL};
use crate::model::{InstanceState, NodeGroup, OptionValues, TemplateNode, NODE_GROUP_LABEL};

/// Upstream's flags of the loop, with upstream's defaults.
#[derive(Debug, Clone)]
pub struct Settings {
    pub expander: Vec<Strategy>,
    pub priorities: Priorities,
    /// `--max-nodes-total` (0: no limit).
    pub max_nodes_total: usize,
    /// `--cores-total` min:max.
    pub cores_total: (i64, i64),
    /// `--memory-total` min:max, in GiB.
    pub memory_total_gib: (i64, i64),
    /// `--max-nodes-per-scaleup`.
    pub max_nodes_per_scaleup: usize,
    /// `--max-nodegroup-binpacking-duration`: time budget of one group's estimate.
    pub max_nodegroup_binpacking_duration: Duration,
    /// `--new-pod-scale-up-delay`.
    pub new_pod_scale_up_delay: Duration,
    /// `--expendable-pods-priority-cutoff`: pods below it never trigger a scale-up.
    pub expendable_pods_priority_cutoff: i32,
    /// `--scale-down-enabled`.
    pub scale_down_enabled: bool,
    /// `--scale-down-delay-after-add`.
    pub scale_down_delay_after_add: Duration,
    /// `--scale-down-delay-after-delete`: after a node was removed, the next removal waits this long.
    pub scale_down_delay_after_delete: Duration,
    /// `--scale-down-delay-after-failure`: after a removal failed, scale-down waits this long.
    pub scale_down_delay_after_failure: Duration,
    /// `--skip-nodes-with-local-storage`.
    pub skip_nodes_with_local_storage: bool,
    /// `--skip-nodes-with-system-pods`.
    pub skip_nodes_with_system_pods: bool,
    /// `--max-empty-bulk-delete`.
    pub max_empty_bulk_delete: usize,
    /// `--balance-similar-node-groups`.
    pub balance_similar_node_groups: bool,
    /// Per-group option defaults (`--scale-down-utilization-threshold`, `--scale-down-unneeded-time`, ...).
    pub defaults: OptionValues,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            expander: vec![Strategy::LeastWaste],
            priorities: Priorities::default(),
            max_nodes_total: 0,
            cores_total: (0, 320_000),
            memory_total_gib: (0, 6_400_000),
            max_nodes_per_scaleup: 1000,
            max_nodegroup_binpacking_duration: Duration::from_secs(10),
            new_pod_scale_up_delay: Duration::ZERO,
            expendable_pods_priority_cutoff: -10,
            scale_down_enabled: true,
            scale_down_delay_after_add: Duration::from_secs(600),
            scale_down_delay_after_delete: Duration::ZERO,
            scale_down_delay_after_failure: Duration::from_secs(180),
            skip_nodes_with_local_storage: true,
            skip_nodes_with_system_pods: true,
            max_empty_bulk_delete: 10,
            balance_similar_node_groups: false,
            defaults: OptionValues::default(),
        }
    }
}

impl Settings {
    /// A group's options: its own overrides on top of the flags' defaults.
    pub fn options_of(&self, g: &NodeGroup) -> OptionValues {
        match &g.options {
            Some(o) => o.apply_to(&self.defaults),
            None => self.defaults.clone(),
        }
    }
}

/// What the loop sees.
pub struct World<'a> {
    pub nodes: &'a [Node],
    /// Node name → id of the group it belongs to (nodes of no group are kept and never scaled).
    pub node_groups: &'a HashMap<String, String>,
    /// Every live pod, bound or pending.
    pub pods: &'a [Pod],
    pub pdbs: &'a [Pdb],
    /// The pods DaemonSets would start on a new node.
    pub daemon_pods: &'a [Pod],
    pub groups: &'a [Arc<NodeGroup>],
}

/// What the autoscaler remembers between loops.
#[derive(Debug, Clone, Default)]
pub struct Memory {
    /// Node → when it was first seen unneeded (seconds).
    pub unneeded_since: HashMap<String, i64>,
    pub last_scale_up: Option<i64>,
    /// When a node was last removed, and when a removal last failed (set by whoever carries them out).
    pub last_scale_down_delete: Option<i64>,
    pub last_scale_down_failure: Option<i64>,
    /// Group → (backed off until, current backoff, last failure).
    pub backoff: HashMap<String, (i64, i64, i64)>,
    /// Instance (provider id) → when it was first seen without a node.
    pub unregistered_since: HashMap<String, i64>,
    /// (instance type, zone) → until when it is taken as out of capacity: a launch that failed for lack
    /// of capacity keeps every group of that type in that zone out, not only the group that tried.
    pub out_of_capacity: HashMap<(String, String), i64>,
}

const INSTANCE_TYPE_LABEL: &str = "node.kubernetes.io/instance-type";

/// The (instance type, zone) of a template, when its labels say.
fn type_and_zone(t: &TemplateNode) -> Option<(String, String)> {
    Some((
        t.labels.get(INSTANCE_TYPE_LABEL)?.clone(),
        t.labels.get(ZONE_LABEL)?.clone(),
    ))
}

/// First backoff after a failed scale-up, doubled per failure up to the max; forgotten after the reset.
const BACKOFF_INITIAL: i64 = 300;
const BACKOFF_MAX: i64 = 1800;
const BACKOFF_RESET: i64 = 3 * 3600;

impl Memory {
    /// Records that a scale-up of `group` failed at `now`: it is skipped for 5m, 10m, ... up to 30m.
    pub fn scale_up_failed(&mut self, group: &str, now: i64) {
        let next = match self.backoff.get(group) {
            Some(&(_, d, last)) if now - last < BACKOFF_RESET => (d * 2).min(BACKOFF_MAX),
            _ => BACKOFF_INITIAL,
        };
        self.backoff
            .insert(group.to_string(), (now + next, next, now));
    }

    /// Records that `group` could not launch for lack of capacity: it backs off, and its instance type
    /// in its zone is avoided by every group for as long.
    pub fn capacity_exhausted(&mut self, group: &NodeGroup, now: i64) {
        self.scale_up_failed(&group.id, now);
        if let (Some(key), Some(&(until, _, _))) =
            (type_and_zone(&group.template), self.backoff.get(&group.id))
        {
            self.out_of_capacity.insert(key, until);
        }
    }

    /// Until when a template's instance type and zone are out of capacity, if they are.
    fn capacity_out(&self, t: &TemplateNode, now: i64) -> Option<(String, String, i64)> {
        let (ty, zone) = type_and_zone(t)?;
        let until = *self.out_of_capacity.get(&(ty.clone(), zone.clone()))?;
        (now < until).then_some((ty, zone, until))
    }

    /// Until when `group` is backed off after failed scale-ups, if it is at `now`.
    pub fn backed_off(&self, group: &str, now: i64) -> Option<i64> {
        self.backoff
            .get(group)
            .map(|&(until, _, _)| until)
            .filter(|until| now < *until)
    }
}

/// A group to grow.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleUp {
    pub group: String,
    pub delta: i32,
    /// Pods (`namespace/name`) the new nodes are for.
    pub pods: Vec<String>,
}

/// A node to remove.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleDown {
    pub node: String,
    pub group: String,
    pub reason: String,
    /// Pods to evict first (none for an empty node).
    pub evict: Vec<String>,
}

/// A cloud instance to delete because it never became a usable node.
#[derive(Debug, Clone, PartialEq)]
pub struct DeleteInstance {
    pub group: String,
    /// Provider id.
    pub instance: String,
    pub reason: String,
}

/// The loop's decisions and explanations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decisions {
    /// Instances that failed to launch or never registered within `--max-node-provision-time`.
    pub delete_instances: Vec<DeleteInstance>,
    pub scale_up: Vec<ScaleUp>,
    pub scale_down: Vec<ScaleDown>,
    /// Pods left pending, with why.
    pub pending: Vec<(String, String)>,
    /// Nodes kept, with why.
    pub unremovable: Vec<(String, String)>,
    /// The expander's scores, when it chose.
    pub expander: Vec<String>,
}

/// The end of the reason of a pending pod that existing or upcoming capacity will take.
const NO_SCALE_UP_NEEDED: &str = "no scale-up needed";

/// The reason of a pod waiting out `--new-pod-scale-up-delay`.
const TOO_NEW: &str = "younger than --new-pod-scale-up-delay";

impl Decisions {
    /// Pending pods no existing or upcoming node will take (upstream's unschedulable pods).
    pub fn unschedulable(&self) -> impl Iterator<Item = &(String, String)> {
        self.pending
            .iter()
            .filter(|(_, why)| !why.ends_with(NO_SCALE_UP_NEEDED))
    }

    /// Of those, the pods that could have triggered a scale-up and did not (upstream's
    /// NotTriggerScaleUp), leaving out those only too new to count yet.
    pub fn not_triggered(&self) -> impl Iterator<Item = &(String, String)> {
        self.unschedulable().filter(|(_, why)| why != TOO_NEW)
    }
}

/// A node of a template, for simulations.
pub fn template_node(t: &TemplateNode, name: &str, group: &str) -> Node {
    let mut labels = t.labels.clone();
    labels.insert(HOSTNAME_LABEL.into(), name.into());
    labels.insert(NODE_GROUP_LABEL.into(), group.into());
    Node {
        name: name.into(),
        labels,
        taints: t.taints.clone(),
        allocatable: t.allocatable.clone(),
        ready: true,
        ..Default::default()
    }
}

/// A new node of a group with the DaemonSet pods that would start on it.
fn new_node(group: &NodeGroup, name: &str, daemon_pods: &[Pod]) -> NodeInfo {
    let mut info = NodeInfo::new(template_node(&group.template, name, &group.id));
    for d in daemon_pods {
        if fits(d, &[], &info).is_ok() {
            info.add(d);
        }
    }
    info
}

/// "2 insufficient memory, 1 taint ... not tolerated": how many groups refused for each reason.
fn summarize(reasons: &BTreeMap<String, usize>) -> String {
    let mut v: Vec<(&String, &usize)> = reasons.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(r, n)| format!("{n} {r}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Groups whose templates differ only in zone, hostname and group labels and whose allocatable cpu and
/// memory are within 5% (upstream's `--balance-similar-node-groups` comparison).
fn similar(a: &TemplateNode, b: &TemplateNode) -> bool {
    let strip = |t: &TemplateNode| {
        let mut l = t.labels.clone();
        for k in [
            ZONE_LABEL,
            HOSTNAME_LABEL,
            NODE_GROUP_LABEL,
            "topology.kubernetes.io/region",
            // Per-group names on EKS, which upstream ignores too.
            "eks.amazonaws.com/nodegroup",
            "alpha.eksctl.io/nodegroup-name",
        ] {
            l.remove(k);
        }
        l
    };
    let close = |x: i64, y: i64| {
        let (x, y) = (x as f64, y as f64);
        x.max(y) == 0.0 || (x - y).abs() / x.max(y) <= 0.05
    };
    strip(a) == strip(b)
        && a.taints == b.taints
        && close(a.allocatable.cpu_milli, b.allocatable.cpu_milli)
        && close(a.allocatable.memory, b.allocatable.memory)
        && a.allocatable.extended == b.allocatable.extended
}

/// Splits `delta` new nodes across similar groups so their sizes even out, within each one's max.
fn balance(groups: &[&NodeGroup], delta: i32) -> Vec<(String, i32)> {
    let mut sizes: Vec<(String, i32, i32)> = groups
        .iter()
        .map(|g| (g.id.clone(), g.target_size, g.max_size))
        .collect();
    let mut added: BTreeMap<String, i32> = BTreeMap::new();
    for _ in 0..delta {
        let Some(g) = sizes
            .iter_mut()
            .filter(|(_, size, max)| size < max)
            .min_by_key(|(id, size, _)| (*size, id.clone()))
        else {
            break;
        };
        g.1 += 1;
        *added.entry(g.0.clone()).or_default() += 1;
    }
    added.into_iter().collect()
}

/// One loop at `now` (seconds since the epoch).
pub fn run_once(world: &World, settings: &Settings, memory: &mut Memory, now: i64) -> Decisions {
    let mut d = Decisions::default();
    let group_by_id: HashMap<&str, &NodeGroup> = world
        .groups
        .iter()
        .map(|g| (g.id.as_str(), g.as_ref()))
        .collect();
    let options_of = |g: &NodeGroup| settings.options_of(g);

    // Cluster state: instances that failed or never registered go, and their group backs off.
    cleanup_instances(world, &options_of, memory, now, &mut d);
    let deleting: HashMap<&str, i32> =
        d.delete_instances.iter().fold(HashMap::new(), |mut m, x| {
            *m.entry(x.group.as_str()).or_default() += 1;
            m
        });

    // Existing nodes with their pods, then the nodes asked for but not registered yet.
    let mut infos: Vec<NodeInfo> = world.nodes.iter().cloned().map(NodeInfo::new).collect();
    let index: HashMap<&str, usize> = world
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    for p in world.pods {
        if let Some(&i) = p.node_name.as_deref().and_then(|n| index.get(n)) {
            infos[i].add(p);
        }
    }
    let existing = infos.len();
    let mut registered: HashMap<&str, i32> = HashMap::new();
    for g in world.node_groups.values() {
        *registered.entry(g.as_str()).or_default() += 1;
    }
    for g in world.groups {
        let upcoming = g.target_size
            - registered.get(g.id.as_str()).copied().unwrap_or(0)
            - deleting.get(g.id.as_str()).copied().unwrap_or(0);
        for k in 0..upcoming.max(0) {
            infos.push(new_node(
                g,
                &format!("{}-upcoming-{k}", g.id),
                world.daemon_pods,
            ));
        }
    }

    // Pods that need a scale-up: unschedulable, old enough, not expendable, and fitting nowhere now.
    let mut waiting: Vec<&Pod> = Vec::new();
    for p in world
        .pods
        .iter()
        .filter(|p| p.node_name.is_none() && p.meta.unschedulable)
    {
        if p.meta.priority < settings.expendable_pods_priority_cutoff {
            d.pending.push((
                p.key(),
                "expendable: priority below --expendable-pods-priority-cutoff".into(),
            ));
            continue;
        }
        if now - p.meta.created < settings.new_pod_scale_up_delay.as_secs() as i64 {
            d.pending.push((p.key(), TOO_NEW.into()));
            continue;
        }
        waiting.push(p);
    }
    let mut candidates: Vec<&Pod> = Vec::new();
    for (p, placed) in waiting
        .iter()
        .zip(first_fit(&waiting, &mut infos, |_| true))
    {
        match placed {
            Some(i) => {
                let what = if i < existing {
                    format!("fits on node {}", infos[i].node.name)
                } else {
                    format!(
                        "fits on an upcoming node of {}",
                        infos[i].node.labels[NODE_GROUP_LABEL]
                    )
                };
                d.pending
                    .push((p.key(), format!("{what}; {NO_SCALE_UP_NEEDED}")));
            }
            None => candidates.push(p),
        }
    }

    // Scale-up: the expander picks the best option for the pods still waiting; the pods it does not
    // place get another round with the groups not chosen yet, so one loop serves every kind of pod.
    let mut cores = 0i64;
    let mut memory_gib = 0i64;
    for i in &infos {
        cores += i.node.allocatable.cpu_milli / 1000;
        memory_gib += i.node.allocatable.memory >> 30;
    }
    let mut state = Budget {
        nodes: infos.len(),
        cores,
        memory_gib,
    };
    let mut refusals: Vec<BTreeMap<String, usize>> = vec![BTreeMap::new(); candidates.len()];
    let mut helped = vec![false; candidates.len()];
    let mut chosen_groups: Vec<String> = Vec::new();
    let mut first_round = true;
    loop {
        let waiting: Vec<usize> = (0..candidates.len()).filter(|&k| !helped[k]).collect();
        if waiting.is_empty() {
            break;
        }
        let pods: Vec<&Pod> = waiting.iter().map(|&k| candidates[k]).collect();
        let groups: Vec<&NodeGroup> = world
            .groups
            .iter()
            .map(|g| g.as_ref())
            .filter(|g| !chosen_groups.contains(&g.id))
            .collect();
        let round = options_for(&pods, &groups, world, settings, memory, now, &state);
        if first_round {
            for (w, r) in round.refusals.into_iter().enumerate() {
                refusals[waiting[w]] = r;
            }
            first_round = false;
        }
        if round.options.is_empty() {
            break;
        }
        let ctx = Context {
            cluster_nodes: existing,
            priorities: settings.priorities.clone(),
        };
        let decision = expander::choose(&settings.expander, &round.options, &ctx);
        d.expander.extend(decision.explanation.iter().cloned());
        let Some(&best) = decision.kept.first() else {
            break;
        };
        let option = &round.options[best];
        let scheduled = &round.scheduled[best];
        let keys: Vec<String> = scheduled.iter().map(|&w| pods[w].key()).collect();
        for &w in scheduled {
            helped[waiting[w]] = true;
        }
        let chosen = group_by_id[option.group.as_str()];
        let split = if settings.balance_similar_node_groups {
            let peers: Vec<&NodeGroup> = groups
                .iter()
                .copied()
                .filter(|g| {
                    g.id == chosen.id
                        || (similar(&g.template, &chosen.template)
                            && memory.backed_off(&g.id, now).is_none()
                            && memory.capacity_out(&g.template, now).is_none())
                })
                .collect();
            balance(&peers, option.node_count)
        } else {
            vec![(chosen.id.clone(), option.node_count)]
        };
        for (group, delta) in split {
            let g = group_by_id[group.as_str()];
            state.nodes += delta as usize;
            state.cores += i64::from(delta) * g.template.allocatable.cpu_milli / 1000;
            state.memory_gib += i64::from(delta) * (g.template.allocatable.memory >> 30);
            chosen_groups.push(group.clone());
            d.scale_up.push(ScaleUp {
                group,
                delta,
                pods: keys.clone(),
            });
        }
        memory.last_scale_up = Some(now);
    }
    for (k, p) in candidates.iter().enumerate() {
        if helped[k] {
            continue;
        }
        let reason = if refusals[k].is_empty() {
            "no node group".to_string()
        } else {
            format!("no group fits: {}", summarize(&refusals[k]))
        };
        d.pending.push((p.key(), reason));
    }

    if settings.scale_down_enabled && d.scale_up.is_empty() {
        scale_down(
            world,
            settings,
            memory,
            now,
            &group_by_id,
            &options_of,
            &mut infos,
            existing,
            &mut d,
        );
    }
    d
}

/// Failed launches are deleted at once and back their group off; instances without a node after the
/// group's `maxNodeProvisionTime` (15m) are deleted too (upstream's unregistered-node cleanup).
fn cleanup_instances(
    world: &World,
    options_of: &dyn Fn(&NodeGroup) -> OptionValues,
    memory: &mut Memory,
    now: i64,
    d: &mut Decisions,
) {
    let registered: std::collections::HashSet<&str> = world
        .nodes
        .iter()
        .map(|n| n.provider_id.as_str())
        .filter(|p| !p.is_empty())
        .collect();
    let mut still: HashMap<String, i64> = HashMap::new();
    for g in world.groups {
        let limit = options_of(g).max_node_provision_time.as_secs() as i64;
        let mut failed = false;
        let mut out_of_resources = false;
        for i in &g.instances {
            if registered.contains(i.id.as_str()) || i.state == InstanceState::Deleting {
                continue;
            }
            if let Some(e) = &i.error {
                failed = true;
                out_of_resources |= e.class == crate::model::ErrorClass::OutOfResources;
                d.delete_instances.push(DeleteInstance {
                    group: g.id.clone(),
                    instance: i.id.clone(),
                    reason: format!("launch failed: {}", e.code),
                });
                continue;
            }
            let since = *memory.unregistered_since.get(&i.id).unwrap_or(&now);
            if now - since >= limit {
                failed = true;
                d.delete_instances.push(DeleteInstance {
                    group: g.id.clone(),
                    instance: i.id.clone(),
                    reason: format!("no node registered within {limit}s"),
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

/// Nodes, cores and memory the cluster has, counting this loop's scale-ups.
struct Budget {
    nodes: usize,
    cores: i64,
    memory_gib: i64,
}

/// The scale-up options for some pods: one per group that can hold any, with the pods it holds, and per
/// pod the groups' reasons for refusing it.
struct Round {
    options: Vec<ExpansionOption>,
    /// Per option, indices (into the pods given) of the pods it places.
    scheduled: Vec<Vec<usize>>,
    refusals: Vec<BTreeMap<String, usize>>,
}

fn options_for(
    pods: &[&Pod],
    groups: &[&NodeGroup],
    world: &World,
    settings: &Settings,
    memory: &Memory,
    now: i64,
    budget: &Budget,
) -> Round {
    let mut round = Round {
        options: Vec::new(),
        scheduled: Vec::new(),
        refusals: vec![BTreeMap::new(); pods.len()],
    };
    for g in groups {
        let room = (g.max_size - g.target_size).max(0) as usize;
        let mut why_not = None;
        if let Some(until) = memory.backed_off(&g.id, now) {
            why_not = Some(format!("group {} backed off for {}s", g.id, until - now));
        } else if let Some((ty, zone, until)) = memory.capacity_out(&g.template, now) {
            why_not = Some(format!(
                "group {}: {ty} in {zone} out of capacity for {}s",
                g.id,
                until - now
            ));
        } else if room == 0 {
            why_not = Some(format!("group {} at max size", g.id));
        }
        let mut limit = room.min(settings.max_nodes_per_scaleup);
        if settings.max_nodes_total > 0 {
            limit = limit.min(settings.max_nodes_total.saturating_sub(budget.nodes));
            if limit == 0 && why_not.is_none() {
                why_not = Some("--max-nodes-total reached".into());
            }
        }
        let t = &g.template.allocatable;
        let per_node_cores = (t.cpu_milli / 1000).max(1);
        let per_node_gib = (t.memory >> 30).max(1);
        let by_cores = ((settings.cores_total.1 - budget.cores).max(0) / per_node_cores) as usize;
        let by_memory =
            ((settings.memory_total_gib.1 - budget.memory_gib).max(0) / per_node_gib) as usize;
        limit = limit.min(by_cores).min(by_memory);
        if limit == 0 && why_not.is_none() {
            why_not = Some("--cores-total or --memory-total reached".into());
        }
        let template = new_node(g, &format!("{}-template", g.id), world.daemon_pods);
        if let Some(why) = why_not {
            for (k, p) in pods.iter().enumerate() {
                // Only groups the pod would fit are worth naming.
                if fits(p, &[], &template).is_ok() {
                    *round.refusals[k].entry(why.clone()).or_default() += 1;
                }
            }
            continue;
        }
        let mut node = template.node.clone();
        // Pods pack onto what a node has left after its DaemonSet pods.
        node.allocatable.cpu_milli -= template.requested.cpu_milli;
        node.allocatable.memory -= template.requested.memory;
        node.allocatable.pods -= template.requested.pods;
        let deadline = std::time::Instant::now() + settings.max_nodegroup_binpacking_duration;
        let e = estimate_within(pods, &node, limit, Some(deadline));
        for (k, why) in &e.unplaced {
            let reason = match why {
                Unplaced::NoFit(u) => u.to_string(),
                Unplaced::Limit => format!("group {} would exceed a limit", g.id),
                Unplaced::TimeBudget => format!(
                    "group {}: binpacking ran out of --max-nodegroup-binpacking-duration",
                    g.id
                ),
            };
            *round.refusals[*k].entry(reason).or_default() += 1;
        }
        if e.nodes > 0 {
            round.options.push(ExpansionOption {
                group: g.id.clone(),
                node_count: e.nodes as i32,
                pods: e
                    .scheduled
                    .iter()
                    .map(|&k| pods[k].requests.clone())
                    .collect(),
                template: (*g.template).clone(),
                price_per_hour: g.price_per_hour,
            });
            round.scheduled.push(e.scheduled);
        }
    }
    round
}

/// Why a pod keeps its node, if it does.
fn blocker(p: &Pod, pdbs: &[Pdb], settings: &Settings) -> Option<String> {
    let safe = p.meta.safe_to_evict;
    if safe == Some(false) {
        return Some(format!("pod {} is annotated safe-to-evict=false", p.key()));
    }
    let pdb = pdbs.iter().find(|b| b.covers(p));
    if let Some(b) = pdb.filter(|b| b.disruptions_allowed < 1) {
        return Some(format!(
            "pod {}: PodDisruptionBudget {}/{} allows no disruption",
            p.key(),
            b.namespace,
            b.name
        ));
    }
    if safe == Some(true) {
        return None;
    }
    if p.meta.controller.is_none() {
        return Some(format!("pod {} has no controller", p.key()));
    }
    if settings.skip_nodes_with_local_storage && p.meta.local_storage {
        return Some(format!("pod {} has local storage", p.key()));
    }
    if settings.skip_nodes_with_system_pods && p.namespace == "kube-system" && pdb.is_none() {
        return Some(format!(
            "kube-system pod {} has no PodDisruptionBudget",
            p.key()
        ));
    }
    None
}

#[allow(clippy::too_many_arguments)]
fn scale_down(
    world: &World,
    settings: &Settings,
    memory: &mut Memory,
    now: i64,
    groups: &HashMap<&str, &NodeGroup>,
    options_of: &dyn Fn(&NodeGroup) -> OptionValues,
    infos: &mut [NodeInfo],
    existing: usize,
    d: &mut Decisions,
) {
    let within = |t: Option<i64>, d: Duration| t.is_some_and(|t| now - t < d.as_secs() as i64);
    let paused = if within(memory.last_scale_up, settings.scale_down_delay_after_add) {
        Some("unneeded, but a scale-up happened within --scale-down-delay-after-add")
    } else if within(
        memory.last_scale_down_failure,
        settings.scale_down_delay_after_failure,
    ) {
        Some("unneeded, but a removal failed within --scale-down-delay-after-failure")
    } else if within(
        memory.last_scale_down_delete,
        settings.scale_down_delay_after_delete,
    ) {
        Some("unneeded, but a node was removed within --scale-down-delay-after-delete")
    } else {
        None
    };
    let mut removed: Vec<usize> = Vec::new();
    let mut removed_per_group: HashMap<String, i32> = HashMap::new();
    let mut non_empty_removed = false;
    let mut still_unneeded: HashMap<String, i64> = HashMap::new();
    let any_repelling = repelling(&infos[..existing]);
    for i in 0..existing {
        let node = infos[i].node.clone();
        let Some(group) = world
            .node_groups
            .get(&node.name)
            .and_then(|g| groups.get(g.as_str()))
        else {
            continue;
        };
        if node.scale_down_disabled {
            d.unremovable.push((
                node.name.clone(),
                "scale-down disabled by annotation".into(),
            ));
            continue;
        }
        let opts = options_of(group);
        let util = infos[i].utilization();
        if util >= opts.scale_down_utilization_threshold {
            d.unremovable.push((
                node.name.clone(),
                format!(
                    "utilization {:.2} not below threshold {:.2}",
                    util, opts.scale_down_utilization_threshold
                ),
            ));
            continue;
        }
        // The pods that would move, unbound from this node.
        let movable: Vec<Pod> = infos[i]
            .pods
            .iter()
            .filter(|p| !p.node_bound())
            .map(|p| Pod {
                node_name: None,
                ..p.clone()
            })
            .collect();
        if let Some(why) = movable
            .iter()
            .find_map(|p| blocker(p, world.pdbs, settings))
        {
            d.unremovable.push((node.name.clone(), why));
            continue;
        }
        // Every pod must fit somewhere else (not on nodes going away this loop); only the nodes that
        // receive pods are copied.
        let mut changed: HashMap<usize, NodeInfo> = HashMap::new();
        let repels = movable
            .iter()
            .map(Repel::of)
            .fold(any_repelling, Repel::max);
        let mut no_room = None;
        for p in &movable {
            let others = (0..existing).filter(|&j| j != i && !removed.contains(&j));
            let mut last = None;
            let target = others.clone().find(|&j| {
                let n = changed.get(&j).unwrap_or(&infos[j]);
                match fits_in(p, &infos[..existing], n, repels) {
                    Ok(()) => true,
                    Err(u) => {
                        last.get_or_insert(u);
                        false
                    }
                }
            });
            match target {
                Some(j) => changed.entry(j).or_insert_with(|| infos[j].clone()).add(p),
                None => {
                    let why = last
                        .map(|u: Unfit| u.to_string())
                        .unwrap_or_else(|| "no other node".into());
                    no_room = Some(format!("pod {} fits no other node: {why}", p.key()));
                    break;
                }
            }
        }
        if let Some(why) = no_room {
            d.unremovable.push((node.name.clone(), why));
            continue;
        }
        let since = *memory.unneeded_since.get(&node.name).unwrap_or(&now);
        still_unneeded.insert(node.name.clone(), since);
        let waited = now - since;
        let needed = opts.scale_down_unneeded_time.as_secs() as i64;
        if waited < needed {
            d.unremovable.push((
                node.name.clone(),
                format!("unneeded for {waited}s of {needed}s"),
            ));
            continue;
        }
        if let Some(why) = paused {
            d.unremovable.push((node.name.clone(), why.into()));
            continue;
        }
        let going = removed_per_group.get(&group.id).copied().unwrap_or(0);
        if group.target_size - going <= group.min_size {
            d.unremovable
                .push((node.name.clone(), format!("group {} at min size", group.id)));
            continue;
        }
        let empty = movable.is_empty();
        let empties = d.scale_down.iter().filter(|s| s.evict.is_empty()).count();
        if (empty && empties >= settings.max_empty_bulk_delete) || (!empty && non_empty_removed) {
            d.unremovable.push((
                node.name.clone(),
                "unneeded; waits for the next loop".into(),
            ));
            continue;
        }
        if !empty {
            non_empty_removed = true;
            for (j, n) in changed {
                infos[j] = n;
            }
        }
        removed.push(i);
        *removed_per_group.entry(group.id.clone()).or_default() += 1;
        d.scale_down.push(ScaleDown {
            node: node.name.clone(),
            group: group.id.clone(),
            reason: format!(
                "utilization {:.2} below {:.2} for {waited}s{}",
                util,
                opts.scale_down_utilization_threshold,
                if empty {
                    ", empty"
                } else {
                    ", its pods fit elsewhere"
                }
            ),
            evict: movable.iter().map(Pod::key).collect(),
        });
    }
    memory.unneeded_since = still_unneeded;
}
