//! Plans the real scheduler keeps (issue #41), through `simulate` on the memory cloud, each beside its
//! contrast: a placement the scheduler's queue order (priority, then age) would strand is no plan,
//! while the same pods in another order are consolidated and all run; a PodDisruptionBudget allowing
//! one across a three-node plan lets the plan go, one node a loop, where without the budget the three
//! go at once; and twenty replaceable nodes are replaced within thirty simulated minutes, as a
//! consolidation's own surge does not hold the next plan for `--scale-down-delay-after-add` (a
//! scale-up for pending pods still does).

use std::time::Duration;

use crate::support::simulate_harness::sim;
use ferroscale::simulate::{LoopReport, Pacing, Simulation};

/// Loops of `scan` seconds; new instances run after `provision` and are Ready `ready` later.
fn pace(scan: u64, provision: u64, ready: u64) -> Pacing {
    Pacing {
        loops: 1,
        scan_interval: Duration::from_secs(scan),
        provision_delay: Duration::from_secs(provision),
        node_ready_delay: Duration::from_secs(ready),
        by_group: Default::default(),
    }
}

/// A ready node `name` of `group` with `cpu` cores, on instance `memory:///{group}/{id}`.
fn node(name: &str, group: &str, id: &str, cpu: u32) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  creationTimestamp: \"2026-01-01T00:00:00Z\"\n  \
         labels: {{ferroscale.io/node-group: {group}, kubernetes.io/hostname: {name}}}\n\
         spec: {{providerID: \"memory:///{group}/{id}\"}}\n\
         status:\n  allocatable: {{cpu: \"{cpu}\", memory: 64Gi, pods: \"110\"}}\n  conditions: [{{type: Ready, status: \"True\"}}]\n"
    )
}

/// A ReplicaSet pod `shop/name` labelled `app: {app}` of `cpu` cores at `priority`, bound to `node`
/// (pending when None).
fn pod(name: &str, app: &str, cpu: u32, priority: i32, node: Option<&str>) -> String {
    let bound = node
        .map(|n| format!("  nodeName: {n}\n"))
        .unwrap_or_default();
    let status = if node.is_some() {
        "status: {phase: Running}\n"
    } else {
        "status: {phase: Pending, conditions: [{type: PodScheduled, status: \"False\", reason: Unschedulable}]}\n"
    };
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: shop\n  labels: {{app: {app}}}\n  \
         creationTimestamp: \"2026-01-01T00:00:00Z\"\n  \
         ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: u, controller: true}}]\n\
         spec:\n{bound}  priority: {priority}\n  containers: [{{name: c, resources: {{requests: {{cpu: \"{cpu}\", memory: 1Gi}}}}}}]\n{status}"
    )
}

/// The consolidations of a run's loops: (nodes, pods evicted) per plan.
fn plans(reports: &[LoopReport]) -> Vec<(Vec<String>, Vec<String>)> {
    reports
        .iter()
        .flat_map(|r| &r.consolidations)
        .map(|p| (p.nodes.clone(), p.pods_evicted.clone()))
        .collect()
}

/// The nodes of group `group` in the simulated cluster now.
fn nodes_of(s: &Simulation, group: &str) -> usize {
    let state = s.cluster().state();
    state.node_groups.values().filter(|g| *g == group).count()
}

/// `loops` loops at `pacing`, each checked: no pod is ever left pending.
fn run(s: &mut Simulation, loops: usize, pacing: &Pacing) -> Vec<LoopReport> {
    let settings = ferroscale::cli::flags::default_engine();
    (0..loops)
        .map(|_| {
            let r = s.step(&settings, pacing);
            assert!(r.pending.is_empty(), "a pod left pending: {r:#?}");
            r
        })
        .collect()
}

/// Group `a`: one 32-core node ($2/h), opted in; group `b`: 10-core nodes ($0.5/h), none yet.
const TWO_GROUPS: &str = r#"
nodeGroups:
  - {name: a, minSize: 0, maxSize: 4, capacity: {cpu: 32, memory: 64Gi, pods: 110}, pricePerHour: 2.0,
     disruptionBudget: "100%", consolidation: {policy: WhenEmptyOrUnderutilized, after: 0s},
     instances: [{id: i-0}]}
  - {name: b, minSize: 0, maxSize: 6, capacity: {cpu: 10, memory: 64Gi, pods: 110}, pricePerHour: 0.5}
"#;

/// Node a-0 with pods of 3, 3, 6 and 6 cores at `priorities`: two b nodes (a little under 10 cores
/// allocatable each) take them packed largest first (6+3 each), three when the scheduler binds the
/// small ones first (3+3, then a 6 each, and the last 6 fits on neither).
fn four_pods(priorities: [i32; 4]) -> Vec<String> {
    let mut c = vec![node("a-0", "a", "i-0", 32)];
    for (k, (cpu, prio)) in [3, 3, 6, 6].into_iter().zip(priorities).enumerate() {
        c.push(pod(&format!("p{k}"), "p", cpu, prio, Some("a-0")));
    }
    c
}

#[test]
fn a_placement_the_schedulers_order_would_strand_is_no_plan_and_no_pod_pends() {
    // Large pods first in the queue: two b nodes for $1/h instead of $2/h, and every pod runs.
    let mut s = sim(&four_pods([1, 2, 30, 40]), TWO_GROUPS);
    let reports = run(&mut s, 30, &pace(10, 20, 10));
    let p = plans(&reports);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, ["a-0"]);
    assert_eq!((nodes_of(&s, "a"), nodes_of(&s, "b")), (0, 2));

    // Small pods first: the scheduler would fill the first b node with 3+3, then a 6 each, and the
    // last 6 would wait for a scale-up that takes the saving back. No plan, and it says why.
    let mut s = sim(&four_pods([40, 30, 20, 10]), TWO_GROUPS);
    let reports = run(&mut s, 30, &pace(10, 20, 10));
    assert!(plans(&reports).is_empty(), "{:#?}", reports.last());
    let why = &reports[0].consolidation_declined;
    assert_eq!(why.len(), 1, "{why:?}");
    assert_eq!(why[0].node.as_deref(), Some("a-0"));
    assert_eq!(
        why[0].reason,
        "bound in the scheduler's order (priority, then age), pod shop/p3 would fit on none of the \
         other nodes and 2 new node(s) of group b"
    );
    assert_eq!((nodes_of(&s, "a"), nodes_of(&s, "b")), (1, 0));
}

/// Group `m5`: three 16-core nodes ($0.768/h), opted in; group `big`: 32 cores for $1.224/h.
const THREE_INTO_ONE: &str = r#"
nodeGroups:
  - {name: m5, minSize: 0, maxSize: 6, capacity: {cpu: 16, memory: 64Gi, pods: 110}, pricePerHour: 0.768,
     disruptionBudget: "100%", consolidation: {policy: WhenEmptyOrUnderutilized, after: 0s},
     instances: [{id: i-0}, {id: i-1}, {id: i-2}]}
  - {name: big, minSize: 0, maxSize: 6, capacity: {cpu: 32, memory: 128Gi, pods: 110}, pricePerHour: 1.224}
"#;

/// Each m5 node runs one 9-core replica of `web` (which fits on no other of them); with `budget`, a
/// PodDisruptionBudget over `web` allowing that many disruptions.
fn three_replicas(budget: Option<i32>) -> Vec<String> {
    let mut c = Vec::new();
    for k in 0..3 {
        let name = format!("m5-{k}");
        c.push(node(&name, "m5", &format!("i-{k}"), 16));
        c.push(pod(&format!("web-{k}"), "web", 9, 0, Some(&name)));
    }
    if let Some(allowed) = budget {
        c.push(format!(
            "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: web, namespace: shop}}\n\
             spec: {{maxUnavailable: {allowed}, selector: {{matchLabels: {{app: web}}}}}}\n\
             status: {{disruptionsAllowed: {allowed}}}\n"
        ));
    }
    c
}

/// Per loop, the m5 nodes retired (their drain started).
fn retired_per_loop(reports: &[LoopReport]) -> Vec<Vec<String>> {
    reports
        .iter()
        .map(|r| {
            r.disruptions
                .iter()
                .filter(|d| d.reason == "consolidation")
                .map(|d| d.node.clone())
                .collect::<Vec<_>>()
        })
        .filter(|v| !v.is_empty())
        .collect()
}

#[test]
fn a_budget_of_one_across_a_three_node_plan_evicts_one_node_a_loop_in_order() {
    let mut settings = ferroscale::cli::flags::default_engine();
    // Three drains at once allowed: only the budget holds them back.
    settings.max_drain_parallelism = 3;
    let go = |budget| {
        let mut s = sim(&three_replicas(budget), THREE_INTO_ONE);
        let reports: Vec<LoopReport> = (0..12)
            .map(|_| {
                let r = s.step(&settings, &pace(10, 0, 0));
                assert!(r.evictions_refused.is_empty(), "{r:#?}");
                assert!(r.pending.is_empty(), "{r:#?}");
                r
            })
            .collect();
        assert_eq!((nodes_of(&s, "m5"), nodes_of(&s, "big")), (0, 1));
        reports
    };
    let web = ["shop/web-0", "shop/web-1", "shop/web-2"];
    let old = ["m5-0", "m5-1", "m5-2"];

    // No budget: one plan, the three drained in one loop.
    let reports = go(None);
    assert_eq!(
        plans(&reports),
        [(
            old.map(String::from).to_vec(),
            web.map(String::from).to_vec()
        )]
    );
    assert_eq!(retired_per_loop(&reports), [old.map(String::from).to_vec()]);

    // A budget allowing one: the same plan, and its nodes drained one a loop, in its order.
    let reports = go(Some(1));
    assert_eq!(
        plans(&reports),
        [(
            old.map(String::from).to_vec(),
            web.map(String::from).to_vec()
        )]
    );
    assert_eq!(
        retired_per_loop(&reports),
        old.map(|n| vec![n.to_string()]).to_vec()
    );
}

/// Group `old`: twenty 16-core nodes ($0.8/h), opted in with a budget of `budget`; group `new`: 12-core
/// nodes ($0.4/h), none yet.
fn twenty_groups(budget: &str) -> String {
    let instances: Vec<String> = (0..20).map(|k| format!("{{id: i-{k}}}")).collect();
    format!(
        r#"
nodeGroups:
  - {{name: old, minSize: 0, maxSize: 20, capacity: {{cpu: 16, memory: 64Gi, pods: 110}}, pricePerHour: 0.8,
     disruptionBudget: "{budget}", consolidation: {{policy: WhenEmptyOrUnderutilized, after: 0s}},
     instances: [{}]}}
  - {{name: new, minSize: 0, maxSize: 30, capacity: {{cpu: 12, memory: 64Gi, pods: 110}}, pricePerHour: 0.4}}
"#,
        instances.join(", ")
    )
}

/// Twenty old nodes, each with one 10-core replica that fits on no other: each is worth replacing by
/// a new node at half the price. With `pending`, a pod no node has room for.
fn twenty(pending: bool) -> Vec<String> {
    let mut c = Vec::new();
    for k in 0..20 {
        let name = format!("old-{k}");
        c.push(node(&name, "old", &format!("i-{k}"), 16));
        c.push(pod(&format!("app-{k}"), "app", 10, 0, Some(&name)));
    }
    if pending {
        c.push(pod("late", "late", 10, 0, None));
    }
    c
}

#[test]
fn twenty_replaceable_nodes_are_replaced_within_thirty_minutes() {
    // Ten-second loops, new instances running after 30 s and Ready 30 s later; two nodes a plan
    // (a budget of 10%), each plan's new nodes asked for as soon as the last plan's old nodes went.
    let pacing = pace(10, 30, 30);
    let mut s = sim(&twenty(false), &twenty_groups("10%"));
    let reports = run(&mut s, 180, &pacing);
    let done = reports
        .iter()
        .position(|r| r.nodes.get("old").copied().unwrap_or(0) == 0)
        .expect("every old node replaced within 30 minutes");
    assert!(reports[done].time <= 1800, "{}", reports[done].time);
    assert_eq!(nodes_of(&s, "new"), 20);
    let replaced: usize = plans(&reports).iter().map(|(n, _)| n.len()).sum();
    assert_eq!(replaced, 20);
    assert!(
        reports
            .iter()
            .filter_map(|r| r.consolidation_waits.as_deref())
            .all(|w| !w.contains("--scale-down-delay-after-add")),
        "a plan held by its own surge"
    );

    // A scale-up for a pending pod does hold consolidation for --scale-down-delay-after-add (10m).
    let mut s = sim(&twenty(true), &twenty_groups("10%"));
    let settings = ferroscale::cli::flags::default_engine();
    let reports: Vec<LoopReport> = (0..55).map(|_| s.step(&settings, &pacing)).collect();
    assert_eq!(reports[0].scale_up.len(), 1, "{:#?}", reports[0]);
    assert!(plans(&reports).is_empty(), "{:#?}", reports.last());
    assert!(
        reports[1..].iter().all(|r| r
            .consolidation_waits
            .as_deref()
            .is_some_and(|w| w.contains("--scale-down-delay-after-add"))),
        "{:#?}",
        reports.last()
    );
}
