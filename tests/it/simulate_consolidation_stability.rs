//! Consolidation through `simulate` when things do not go to plan or there is nothing to gain: new
//! nodes that never become ready leave the old ones in place, an optimal cluster is left alone for a
//! hundred loops, a replacement completes without scale-down's waits, and on random small clusters
//! every pod keeps a place, every group stays within its bounds and the hourly cost only goes down
//! (during a surge it is up by the plan's new nodes at most).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ferroscale::cloud::Cloud;
use ferroscale::simulate::{parse_events, LoopReport, Pacing, Simulation};

use crate::simulate_consolidation::{cluster, groups, OPTED_IN};
use crate::support::fixtures::dump::pod;
use crate::support::simulate_harness::{pacing, quick_scale_down, sim};

/// A Ready node `name` of `group` with `cpu` cores and 4 GiB a core, adopted by its label.
fn node(name: &str, group: &str, cpu: u32) -> String {
    let memory = cpu * 4;
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  creationTimestamp: \"2026-01-01T00:00:00Z\"\n  labels: {{ferroscale.io/node-group: {group}, kubernetes.io/hostname: {name}}}\n\
         status:\n  allocatable: {{cpu: \"{cpu}\", memory: {memory}Gi, pods: \"110\"}}\n  conditions: [{{type: Ready, status: \"True\"}}]\n"
    )
}

/// The nodes by name, each with its pods (`namespace/name`), and the pods bound to no node.
fn placement(s: &Simulation) -> (BTreeMap<String, BTreeSet<String>>, BTreeSet<String>) {
    let state = s.cluster().state();
    let mut nodes: BTreeMap<String, BTreeSet<String>> = state
        .nodes
        .iter()
        .map(|n| (n.name.clone(), BTreeSet::new()))
        .collect();
    let mut unbound = BTreeSet::new();
    for p in &state.pods {
        match p.node_name.as_ref().and_then(|n| nodes.get_mut(n)) {
            Some(on) => on.insert(p.key()),
            None => unbound.insert(p.key()),
        };
    }
    (nodes, unbound)
}

/// A group's min, target and max sizes and its nodes registered.
type Sizes = (i32, i32, i32, usize);

/// The groups' hourly cost as the cloud bills it (each group's target size times its price), and
/// each group's (min, target, max, nodes registered).
fn cost_and_sizes(s: &Simulation) -> (f64, BTreeMap<String, Sizes>) {
    let snapshot = s.cloud().snapshot();
    let state = s.cluster().state();
    let mut cost = 0.0;
    let mut sizes = BTreeMap::new();
    for g in snapshot.groups() {
        cost += f64::from(g.target_size) * g.price_per_hour.unwrap_or(0.0);
        let nodes = state.node_groups.values().filter(|x| **x == g.id).count();
        sizes.insert(g.id.clone(), (g.min_size, g.target_size, g.max_size, nodes));
    }
    (cost, sizes)
}

/// The three m5 nodes of `cluster()` stay while the group `big` they would move to never delivers a
/// Ready node: the replacement is given up after `maxNodeProvisionTime` (15m), the never-ready node
/// it brought is removed as any unready node (`--scale-down-unready-time`, 20m), and the m5 nodes are
/// no candidates again until their `after` (30m) has passed since.
#[test]
fn new_nodes_never_ready_leave_the_old_ones_in_place() {
    const AFTER: i64 = 30 * 60;
    let mut s = sim(
        &cluster(),
        &groups(
            "disruptionBudget: \"100%\", consolidation: {policy: WhenEmptyOrUnderutilized, after: 30m},",
        ),
    );
    s.set_events(parse_events("- {at: 0s, neverReady: big}").unwrap(), false);
    let settings = ferroscale::cli::flags::default_engine();
    let minute = Pacing {
        scan_interval: Duration::from_secs(60),
        ..pacing()
    };
    let old = ["m5-0", "m5-1", "m5-2"];
    let (start, _) = placement(&s);
    let mut plans: Vec<i64> = Vec::new();
    let mut given_up: Option<i64> = None;
    let mut surge: Option<String> = None;
    let mut surge_removed: Option<i64> = None;
    for _ in 0..80 {
        let r = s.step(&settings, &minute);
        let t = r.time;
        // The old nodes are never disrupted, keep their pods, and no pod is left without a place.
        let taken: Vec<&str> = r
            .disruptions
            .iter()
            .map(|x| x.node.as_str())
            .chain(r.scale_down.iter().map(|x| x.node.as_str()))
            .collect();
        assert!(!taken.iter().any(|n| old.contains(n)), "+{t}s: {r:#?}");
        let (now, unbound) = placement(&s);
        for n in old {
            assert_eq!(now.get(n), start.get(n), "+{t}s: {n} keeps its pods");
        }
        assert!(unbound.is_empty() && r.pending.is_empty(), "+{t}s: {r:#?}");
        for c in &r.consolidations {
            assert_eq!(c.action, "replace");
            assert_eq!(c.nodes, old);
            assert_eq!((c.into[0].group.as_str(), c.into[0].count), ("big", 1));
            plans.push(t);
        }
        let kept: Vec<&str> = r
            .consolidation_declined
            .iter()
            .filter(|x| x.reason.contains("not ready within maxNodeProvisionTime"))
            .filter_map(|x| x.node.as_deref())
            .collect();
        if !kept.is_empty() {
            assert_eq!(kept, old, "+{t}s: the whole plan is given up");
            assert!(given_up.is_none(), "given up once: {r:#?}");
            given_up = Some(t);
        }
        let state = s.cluster().state();
        let big: Vec<&ferroscale::model::workload::Node> = state
            .nodes
            .iter()
            .filter(|n| state.node_groups.get(&n.name).map(String::as_str) == Some("big"))
            .collect();
        if plans.len() == 1 && surge.is_none() {
            if let Some(n) = big.first() {
                surge = Some(n.name.clone());
            }
        }
        assert!(big.iter().all(|n| !n.ready), "+{t}s: never Ready");
        drop(state);
        for x in &r.scale_down {
            if Some(&x.node) == surge.as_ref() {
                assert!(x.reason.contains("unready"), "{x:?}");
                surge_removed = Some(t);
            }
        }
    }
    // Planned once `after` has passed since the pods' last change, given up once the new node has
    // not been ready for maxNodeProvisionTime (15m), tried again only `after` later.
    let first = plans[0];
    assert_eq!(first, AFTER, "{plans:?}");
    let given_up = given_up.expect("the replacement is given up");
    assert!(
        given_up > first + 15 * 60 && given_up <= first + 16 * 60,
        "given up at +{given_up}s"
    );
    assert_eq!(
        plans,
        [first, given_up + AFTER],
        "no candidates again for `after`"
    );
    // The surge node is left to scale-down, which removes it as unready after 20m of being unneeded.
    let surge = surge.expect("the surge node joined, NotReady");
    let removed = surge_removed.unwrap_or_else(|| panic!("{surge} is never removed"));
    assert!(
        removed > given_up && removed <= given_up + 21 * 60,
        "{surge} removed at +{removed}s"
    );
}

/// Groups `a` (16 cores, $0.768/h) and `b` (8 cores, $0.384/h: the same price a core) and `small`
/// (`small_cpu` cores at $0.04/h, far cheaper a core), all opted in without waiting.
fn optimal_groups(small_cpu: u32) -> String {
    let small_memory = small_cpu * 4;
    format!(
        r#"
nodeGroups:
  - {{name: a, {OPTED_IN} minSize: 0, maxSize: 4, capacity: {{cpu: 16, memory: 64Gi, pods: 110}}, pricePerHour: 0.768}}
  - {{name: b, {OPTED_IN} minSize: 0, maxSize: 4, capacity: {{cpu: 8, memory: 32Gi, pods: 110}}, pricePerHour: 0.384}}
  - {{name: small, {OPTED_IN} minSize: 0, maxSize: 8, capacity: {{cpu: {small_cpu}, memory: {small_memory}Gi, pods: 110}}, pricePerHour: 0.04}}
"#
    )
}

/// Two `a` and two `b` nodes running 40.5 of their 48 cores in pods of 3 to 10 cores: no pod fits
/// in another node's free core, removing any node leaves less room than the pods need, `a` and `b`
/// cost the same a core, and no pod fits on a 2-core `small` node. `b-1` is under half used, so
/// scale-down looks at it too.
fn optimal_cluster() -> Vec<String> {
    let mut c = Vec::new();
    // Each node: its name, group and cores, and its pods' cpu and memory.
    type Layout<'a> = (&'a str, &'a str, u32, &'a [(&'a str, &'a str)]);
    let layout: [Layout; 4] = [
        ("a-0", "a", 16, &[("9", "8Gi"), ("6", "2Gi")]),
        ("a-1", "a", 16, &[("10", "4Gi"), ("5", "16Gi")]),
        ("b-0", "b", 8, &[("4", "1Gi"), ("3", "6Gi")]),
        ("b-1", "b", 8, &[("3500m", "4Gi")]),
    ];
    for (name, group, cpu, pods) in layout {
        c.push(node(name, group, cpu));
        for (k, (cpu, memory)) in pods.iter().enumerate() {
            c.push(pod(
                "shop",
                &format!("{name}-app-{k}"),
                cpu,
                memory,
                Some(name),
                "",
            ));
        }
    }
    c
}

/// What a loop changed: consolidations, disruptions, scale-ups or scale-downs, cancelled capacity.
fn churn(r: &LoopReport) -> bool {
    !(r.consolidations.is_empty()
        && r.disruptions.is_empty()
        && r.replacements.is_empty()
        && r.scale_up.is_empty()
        && r.scale_down.is_empty()
        && r.delete_instances.is_empty()
        && r.cancel.is_empty())
}

/// Opted in, `WhenEmptyOrUnderutilized` after 0s, scale-down without waiting: a cluster with nothing
/// cheaper to move to is left exactly as it is for 100 loops. The same cluster with `small` nodes big
/// enough for its smaller pods is consolidated at once, so only the cluster's being optimal keeps
/// it still.
#[test]
fn an_optimal_cluster_does_nothing_for_a_hundred_loops() {
    let settings = quick_scale_down();
    let mut s = sim(&optimal_cluster(), &optimal_groups(2));
    let start = placement(&s);
    let (cost, _) = cost_and_sizes(&s);
    assert!((cost - 2.304).abs() < 1e-9, "{cost}");
    for k in 0..100 {
        let r = s.step(&settings, &pacing());
        assert!(!churn(&r) && r.pending.is_empty(), "loop {k}: {r:#?}");
        assert_eq!(
            placement(&s),
            start,
            "loop {k}: the same nodes, each with its pods"
        );
    }
    let mut roomier = sim(&optimal_cluster(), &optimal_groups(4));
    let r = roomier.step(&settings, &pacing());
    assert!(
        r.consolidations
            .iter()
            .any(|c| c.into.iter().any(|n| n.group == "small")),
        "{r:#?}"
    );
}

/// A group of the property test: its node size (an index into [`CORES`]), its price a core (in
/// cent steps above 3 cents), its nodes, how far its min is below them and its max above.
type GroupSpec = (usize, u8, usize, usize, usize);

/// The pods of the property test: one shape a case (cpu in quarters of a core, memory in quarters
/// of a GiB), and how many go on each node (as many as fit). One shape, so that where the simulated
/// scheduler binds the evicted pods cannot matter: a node takes as many as its room allows in any
/// order, and a plan's placement is every scheduler's (with pods of several sizes the scheduler may
/// fill the room differently than the plan, as kube-scheduler may after any scale-down, and a pod
/// then waits for a new node).
type PodSpec = ((u16, u8), Vec<usize>);

const CORES: [u32; 4] = [2, 4, 8, 16];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

    /// Random small clusters of 2–3 priced groups, every group opted in, with the binary's
    /// defaults or without scale-down's waits (`quick`): after every loop every pod still has a
    /// place, every group is within its bounds, and the hourly cost is no more than before the
    /// running replacement plus its new nodes; once a replacement completes, it is the cost before
    /// less the plan's saving, at most; and every replacement completes.
    #[test]
    fn consolidation_keeps_pods_placed_groups_in_bounds_and_cost_down(
        groups in proptest::collection::vec((0usize..4, 0u8..8, 0usize..4, 0usize..3, 0usize..3), 2..=3),
        pods in ((1u16..=16, 1u8..=16), proptest::collection::vec(0usize..=4, 9)),
        quick in proptest::bool::ANY,
    ) {
        check(&groups, &pods, quick);
    }
}

/// A replacement under way: its old nodes, the price of its new nodes, the cost before it and its
/// saving (USD an hour).
struct InFlight {
    nodes: Vec<String>,
    new_nodes: f64,
    before: f64,
    saving: f64,
}

fn check(specs: &[GroupSpec], pods: &PodSpec, quick: bool) {
    let mut yaml = String::from("nodeGroups:\n");
    let mut cluster = Vec::new();
    // Each node's name and room left (millicores, quarters of a GiB).
    let mut room: Vec<(String, u32, u32)> = Vec::new();
    let mut prices = BTreeMap::new();
    for (i, &(size, step, nodes, below, above)) in specs.iter().enumerate() {
        let (name, cpu) = (format!("g{i}"), CORES[size]);
        let nodes = if i == 0 { nodes.max(1) } else { nodes };
        let price = f64::from(cpu) * (0.03 + 0.01 * f64::from(step));
        prices.insert(name.clone(), price);
        let (min, max) = (nodes.saturating_sub(below), (nodes + above).max(1));
        yaml.push_str(&format!(
            "  - {{name: {name}, {OPTED_IN} minSize: {min}, maxSize: {max}, capacity: {{cpu: {cpu}, memory: {}Gi, pods: 110}}, pricePerHour: {price}}}\n",
            cpu * 4
        ));
        for k in 0..nodes {
            let n = format!("{name}-{k}");
            cluster.push(node(&n, &name, cpu));
            room.push((n, cpu * 1000, cpu * 16));
        }
    }
    let ((quarters, memory), per_node) = pods;
    let (cpu, memory) = (u32::from(*quarters) * 250, u32::from(*memory));
    let mut made = 0;
    for ((on, cpu_left, memory_left), &n) in room.iter_mut().zip(per_node.iter().cycle()) {
        for _ in 0..n {
            if cpu > *cpu_left || memory > *memory_left {
                break;
            }
            *cpu_left -= cpu;
            *memory_left -= memory;
            let request = (format!("{cpu}m"), format!("{}Mi", memory * 256));
            cluster.push(pod(
                "shop",
                &format!("p-{made}"),
                &request.0,
                &request.1,
                Some(on),
                "",
            ));
            made += 1;
        }
    }
    let mut s = sim(&cluster, &yaml);
    // Two minutes a loop: scale-down's waits (10m by default) pass within the run.
    let settings = if quick {
        quick_scale_down()
    } else {
        ferroscale::cli::flags::default_engine()
    };
    let paced = Pacing {
        scan_interval: Duration::from_secs(120),
        ..pacing()
    };
    let (pods_before, unbound) = placement(&s);
    assert!(unbound.is_empty());
    let pod_count: usize = pods_before.values().map(BTreeSet::len).sum();
    let (mut ceiling, _) = cost_and_sizes(&s);
    let mut flying: Vec<InFlight> = Vec::new();
    let mut k = 0;
    // Pods a loop's drains evicted, bound again (or not) by the next loop.
    let mut moving = 0;
    while k < 12 || !flying.is_empty() || moving > 0 {
        assert!(k < 40, "a replacement never completes\n{yaml}");
        k += 1;
        let r = s.step(&settings, &paced);
        let why = || format!("loop {k}:\n{yaml}\n{r:#?}");
        // A pod with no place would be pending, or asked a new node for.
        let asked = r.scale_up.iter().any(|u| !u.pods.is_empty());
        assert!(
            r.pending.is_empty() && !asked,
            "a pod lost its place: {}",
            why()
        );
        // Given up (the new nodes did not stay): the old nodes stay, the new ones are gone.
        let given_up: BTreeSet<&str> = r
            .consolidation_declined
            .iter()
            .filter(|x| x.reason.contains("not ready within maxNodeProvisionTime"))
            .filter_map(|x| x.node.as_deref())
            .collect();
        flying.retain(|f| !f.nodes.iter().all(|n| given_up.contains(n.as_str())));
        for c in r.consolidations.iter().filter(|c| c.action == "replace") {
            let new_nodes = c
                .into
                .iter()
                .map(|n| f64::from(n.count) * prices[&n.group])
                .sum();
            flying.push(InFlight {
                nodes: c.nodes.clone(),
                new_nodes,
                before: ceiling,
                saving: c.savings_per_hour,
            });
        }
        let (nodes, unbound) = placement(&s);
        let bound: usize = nodes.values().map(BTreeSet::len).sum();
        assert_eq!(
            bound + unbound.len(),
            pod_count,
            "no pod is lost: {}",
            why()
        );
        moving = unbound.len();
        let (cost, sizes) = cost_and_sizes(&s);
        for (g, &(min, target, max, registered)) in &sizes {
            assert!(
                min <= target && target <= max && registered as i32 <= max,
                "{g} out of [{min}, {max}]: target {target}, {registered} nodes: {}",
                why()
            );
        }
        let surge: f64 = flying.iter().map(|f| f.new_nodes).sum();
        assert!(
            cost <= ceiling + surge + 1e-6,
            "${cost}/h above ${ceiling}/h + ${surge}/h of new nodes: {}",
            why()
        );
        flying.retain(|f| {
            let done = f.nodes.iter().all(|n| !nodes.contains_key(n));
            if done {
                assert!(
                    cost <= f.before - f.saving + 1e-6,
                    "${cost}/h after a replacement of ${}/h saving ${}/h: {}",
                    f.before,
                    f.saving,
                    why()
                );
            }
            !done
        });
        if flying.is_empty() {
            ceiling = cost;
        }
    }
}

/// Without scale-down's waits (`--scale-down-unneeded-time 0 --scale-down-delay-after-add 0`), the
/// new node of a replacement is still empty in the loop it joins: scale-down waits while it is on its
/// way rather than take it (and the old node with its pods, with nowhere left to run), and the
/// replacement completes.
#[test]
fn without_scale_down_waits_a_replacement_still_completes() {
    let mut cluster = vec![node("g0-0", "g0", 16)];
    for (k, cpu) in ["200m", "6", "1900m"].into_iter().enumerate() {
        cluster.push(pod(
            "shop",
            &format!("p-{k}"),
            cpu,
            "256Mi",
            Some("g0-0"),
            "",
        ));
    }
    let groups = format!(
        "nodeGroups:\n  - {{name: g0, {OPTED_IN} minSize: 0, maxSize: 1, capacity: {{cpu: 16, memory: 64Gi, pods: 110}}, pricePerHour: 0.72}}\n  \
         - {{name: g1, {OPTED_IN} minSize: 0, maxSize: 1, capacity: {{cpu: 16, memory: 64Gi, pods: 110}}, pricePerHour: 0.48}}\n"
    );
    let mut s = sim(&cluster, &groups);
    let settings = quick_scale_down();
    let first = s.step(&settings, &pacing());
    assert_eq!(first.replacements.len(), 1, "{first:#?}");
    let next = s.step(&settings, &pacing());
    let gone: Vec<(&str, &str)> = next
        .scale_down
        .iter()
        .map(|x| (x.node.as_str(), x.reason.as_str()))
        .collect();
    assert_eq!(gone, [("g0-0", "consolidated")], "{next:#?}");
    for k in 3..6 {
        let r = s.step(&settings, &pacing());
        assert!(
            r.scale_up.is_empty() && r.scale_down.is_empty(),
            "loop {k}: {r:#?}"
        );
        let (nodes, unbound) = placement(&s);
        assert!(unbound.is_empty(), "loop {k}: {unbound:?}");
        assert_eq!(nodes.len(), 1, "loop {k}: {nodes:?}");
        assert_eq!(cost_and_sizes(&s).0, 0.48);
    }
}
