//! One conductor for every disruption (issue #37), through `simulate` on the memory cloud: every method
//! takes from one ledger per loop, so an action evicts only the pods of the nodes it removes, a
//! PodDisruptionBudget is counted down across methods and nodes, a surge obeys what scale-up obeys,
//! and a node that can never go is neither a candidate nor soft-tainted. Each scenario beside its
//! contrast, where the same cluster does act.

use std::collections::HashMap;

use crate::support::simulate_harness::{flags, pacing, sim};
use ferroscale::simulate::{parse_events, LoopReport, Pacing, Simulation};

/// A ready node `name` of `group` with `cpu` cores, on instance `memory:///{group}/{name}` (instance
/// ids are unique across groups).
fn node(name: &str, group: &str, cpu: u32) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  creationTimestamp: \"2026-01-01T00:00:00Z\"\n  \
         labels: {{ferroscale.io/node-group: {group}, kubernetes.io/hostname: {name}}}\n\
         spec: {{providerID: \"memory:///{group}/{name}\"}}\n\
         status:\n  allocatable: {{cpu: \"{cpu}\", memory: 64Gi, pods: \"110\"}}\n  conditions: [{{type: Ready, status: \"True\"}}]\n"
    )
}

/// A ReplicaSet's pod `name` on `node`, asking for `cpu` cores, labelled `tier: {tier}`.
fn pod(name: &str, node: &str, cpu: &str, tier: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: shop\n  labels: {{app: {name}, tier: {tier}}}\n  \
         creationTimestamp: \"2026-01-01T00:00:00Z\"\n  \
         ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: rs-{name}, uid: u-{name}, controller: true}}]\n\
         spec:\n  nodeName: {node}\n  containers: [{{name: c, resources: {{requests: {{cpu: \"{cpu}\", memory: 1Gi}}}}}}]\n\
         status: {{phase: Running}}\n"
    )
}

/// A PodDisruptionBudget over the pods of `tier` allowing `allowed`.
fn pdb(tier: &str, allowed: i32) -> String {
    format!(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: {tier}, namespace: shop}}\n\
         spec: {{selector: {{matchLabels: {{tier: {tier}}}}}}}\nstatus: {{disruptionsAllowed: {allowed}}}\n"
    )
}

/// Where each pod is bound as the next loop's engine sees it (the kubelet and the scheduler run first).
pub(crate) fn placement(s: &Simulation) -> HashMap<String, String> {
    s.cluster_moves(s.memory(), &pacing(), &Default::default());
    s.cluster()
        .state()
        .pods
        .iter()
        .filter_map(|p| Some((p.key(), p.node_name.clone()?)))
        .collect()
}

/// The conductor's first rule, checked on one loop: every pod an action evicts (or plans to evict) was
/// bound, at the loop's start, to a node that same action removes.
fn evicts_only_its_own(before: &HashMap<String, String>, r: &LoopReport) {
    for d in &r.scale_down {
        for p in &d.evicted {
            assert_eq!(
                before.get(p),
                Some(&d.node),
                "+{}s: removing {} evicts {p}, bound elsewhere: {r:#?}",
                r.time,
                d.node
            );
        }
    }
    for c in &r.consolidations {
        for p in &c.pods_evicted {
            assert!(
                before.get(p).is_some_and(|n| c.nodes.contains(n)),
                "+{}s: consolidation of {:?} evicts {p}, bound to {:?}: {r:#?}",
                r.time,
                c.nodes,
                before.get(p)
            );
        }
    }
    for e in &r.evictions {
        assert_eq!(before.get(&e.pod), Some(&e.node), "+{}s: {r:#?}", r.time);
    }
}

/// Groups: `ca` (not opted in, an underutilized node), `pin` (at its min size, not opted in) and `cons`
/// (opted in, two nodes, one of which its pods can leave), each node priced.
const PHANTOM_GROUPS: &str = r#"
nodeGroups:
  - {name: ca, minSize: 0, maxSize: 4, capacity: {cpu: 8, memory: 64Gi, pods: 110}, pricePerHour: 0.4,
     instances: [{id: ca-0}]}
  - {name: pin, minSize: 1, maxSize: 4, capacity: {cpu: 8, memory: 64Gi, pods: 110}, pricePerHour: 0.4,
     instances: [{id: pin-0}]}
  - {name: cons, minSize: 0, maxSize: 4, capacity: {cpu: 8, memory: 64Gi, pods: 110}, pricePerHour: 0.4,
     disruptionBudget: "100%", consolidation: {policy: WhenEmptyOrUnderutilized, after: 0s},
     instances: [{id: cons-0}, {id: cons-1}]}
"#;

fn phantom_cluster() -> Vec<String> {
    vec![
        node("ca-0", "ca", 8),
        pod("ca-web-0", "ca-0", "1", "ca"),
        node("pin-0", "pin", 8),
        pod("pin-web-0", "pin-0", "1", "pin"),
        node("cons-0", "cons", 8),
        pod("cons-web-0", "cons-0", "1", "cons"),
        node("cons-1", "cons", 8),
        pod("cons-web-1", "cons-1", "5", "cons"),
    ]
}

#[test]
fn a_consolidation_beside_a_scale_down_evicts_only_the_pods_of_its_own_node() {
    let mut s = sim(&phantom_cluster(), PHANTOM_GROUPS);
    // Scale-down at once, drains in parallel: scale-down acts in the first loop, beside which
    // consolidation finds a deletion on what scale-down's removals leave and holds it for
    // validation; 15 seconds later it finds it again and acts.
    let settings = flags(&["--max-drain-parallelism=10"]);
    let quarter = Pacing {
        scan_interval: std::time::Duration::from_secs(15),
        ..pacing()
    };
    let before = placement(&s);
    let first = s.step(&settings, &quarter);
    evicts_only_its_own(&before, &first);
    assert!(first.consolidations.is_empty(), "held first: {first:#?}");
    let before = placement(&s);
    let second = s.step(&settings, &quarter);
    evicts_only_its_own(&before, &second);
    // The contrast: scale-down does remove nodes and consolidation does delete one, and no pod is
    // evicted by two of them.
    assert!(
        first.scale_down.iter().any(|d| d.reason != "consolidated"),
        "{first:#?}"
    );
    assert!(
        second.consolidations.iter().any(|c| c.action == "delete"),
        "{second:#?}"
    );
    let mut evicted: Vec<&String> = [&first, &second]
        .iter()
        .flat_map(|r| r.scale_down.iter().flat_map(|d| &d.evicted))
        .collect();
    let all = evicted.len();
    evicted.sort();
    evicted.dedup();
    assert_eq!(evicted.len(), all, "a pod evicted twice: {second:#?}");
    assert!(
        !evicted.contains(&&"shop/pin-web-0".to_string()),
        "{second:#?}"
    );
    // The min-size group's node is never a candidate: its pod stays where it is, loop after loop.
    for _ in 0..6 {
        let before = placement(&s);
        let r = s.step(&settings, &pacing());
        evicts_only_its_own(&before, &r);
        assert!(r.pending.is_empty(), "every pod keeps a place: {r:#?}");
    }
    assert_eq!(
        placement(&s).get("shop/pin-web-0").map(String::as_str),
        Some("pin-0")
    );
}

/// Three opted-in nodes whose pods (one each, of tier `web`) all fit on `keep`, and the PDB over them.
fn pdb_cluster(allowed: i32) -> (Vec<String>, &'static str) {
    let mut c = vec![
        node("keep-0", "keep", 32),
        pod("db-0", "keep-0", "20", "db"),
    ];
    for k in 0..3 {
        c.push(node(&format!("m-{k}"), "m", 8));
        c.push(pod(&format!("web-{k}"), &format!("m-{k}"), "2", "web"));
    }
    c.push(pdb("web", allowed));
    let groups = r#"
nodeGroups:
  - {name: keep, minSize: 1, maxSize: 1, capacity: {cpu: 32, memory: 64Gi, pods: 110}, pricePerHour: 1.0,
     instances: [{id: keep-0}]}
  - {name: m, minSize: 0, maxSize: 4, capacity: {cpu: 8, memory: 64Gi, pods: 110}, pricePerHour: 0.4,
     disruptionBudget: "100%", consolidation: {policy: WhenEmptyOrUnderutilized, after: 0s},
     instances: [{id: m-0}, {id: m-1}, {id: m-2}]}
"#;
    (c, groups)
}

/// How many pods of tier `web` one loop evicts, over every method.
fn web_evictions(r: &LoopReport) -> usize {
    r.scale_down
        .iter()
        .flat_map(|d| &d.evicted)
        .filter(|p| p.starts_with("shop/web-"))
        .count()
}

#[test]
fn a_pdb_allowing_one_loses_one_pod_a_loop_over_three_consolidatable_nodes() {
    // Drains in parallel allowed: only the PDB holds the plan back.
    let settings = flags(&["--max-drain-parallelism=10"]);
    let (c, groups) = pdb_cluster(1);
    let mut s = sim(&c, groups);
    let mut per_loop = Vec::new();
    for _ in 0..3 {
        let before = placement(&s);
        let r = s.step(&settings, &pacing());
        evicts_only_its_own(&before, &r);
        per_loop.push(web_evictions(&r));
    }
    assert!(per_loop.iter().all(|&n| n <= 1), "{per_loop:?}");
    assert_eq!(per_loop[0], 1, "{per_loop:?}");

    // The contrast: a PDB allowing three lets the three go together.
    let (c, groups) = pdb_cluster(3);
    let mut s = sim(&c, groups);
    let r = s.step(&settings, &pacing());
    assert_eq!(web_evictions(&r), 3, "{r:#?}");
}

/// `pool` at `max` nodes of which every one is drifted, and `--max-nodes-total` of `total`.
fn drifted(total: u32) -> (Vec<String>, String, ferroscale::engine::Settings) {
    let c = vec![
        node("pool-0", "pool", 4),
        pod("web-0", "pool-0", "3", "web"),
        node("pool-1", "pool", 4),
        pod("web-1", "pool-1", "3", "web"),
    ];
    let groups = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 6, capacity: {cpu: 4, memory: 16Gi, pods: 20}, revision: "lt:2", drift: Replace,
     disruptionBudget: "100%", instances: [{id: pool-0, revision: "lt:1"}, {id: pool-1, revision: "lt:1"}]}
"#
    .to_string();
    (c, groups, flags(&[&format!("--max-nodes-total={total}")]))
}

#[test]
fn drift_at_max_nodes_total_asks_for_no_node_past_it() {
    let (c, groups, settings) = drifted(2);
    let mut s = sim(&c, &groups);
    for _ in 0..5 {
        let r = s.step(&settings, &pacing());
        assert!(r.replacements.is_empty() && r.scale_up.is_empty(), "{r:#?}");
        assert!(r.nodes["pool"] <= 2, "{r:#?}");
        let why: Vec<&str> = r
            .unremovable
            .iter()
            .filter(|n| n.node.as_deref().is_some_and(|n| n.starts_with("pool-")))
            .map(|n| n.reason.as_str())
            .collect();
        assert!(
            why.iter()
                .any(|w| w.contains("due for replacement") && w.contains("max-nodes-total")),
            "{why:?}"
        );
    }
    // The contrast: one node of room, one surge at a time.
    let (c, groups, settings) = drifted(3);
    let mut s = sim(&c, &groups);
    let r = s.step(&settings, &pacing());
    assert_eq!(r.replacements.len(), 1, "{r:#?}");
    assert_eq!(r.replacements[0].for_nodes.len(), 1, "{r:#?}");
}

#[test]
fn a_drift_surge_that_never_joins_backs_its_group_off() {
    let (c, groups, settings) = drifted(0);
    let groups = groups.replace("disruptionBudget: \"100%\"", "disruptionBudget: \"1\"");
    let mut s = sim(&c, &groups);
    s.set_events(parse_events("- {at: 0s, neverReady: pool}").unwrap(), false);
    let minute = Pacing {
        scan_interval: std::time::Duration::from_secs(60),
        ..pacing()
    };
    let mut surges = Vec::new();
    for _ in 0..120 {
        let r = s.step(&settings, &minute);
        if !r.replacements.is_empty() {
            surges.push(r.time);
        }
    }
    // Asked at once, given up after the provision time (15 minutes), then again only after the
    // group's backoff (5 minutes, doubling): 4 attempts in two hours, where one every provision time
    // would make 8.
    assert!(surges.len() >= 2, "{surges:?}");
    assert!(surges.len() <= 4, "{surges:?}");
    assert!(surges[1] - surges[0] >= 15 * 60 + 300, "{surges:?}");
    if surges.len() >= 3 {
        assert!(surges[2] - surges[1] > surges[1] - surges[0], "{surges:?}");
    }
}

/// Two nodes of `pool` (min size `min`), one of them idle.
fn soft_taint_cluster(min: u32) -> (Vec<String>, String) {
    let c = vec![
        node("pool-0", "pool", 8),
        pod("web-0", "pool-0", "6", "web"),
        node("pool-1", "pool", 8),
    ];
    let groups = format!(
        "nodeGroups:\n  - {{name: pool, minSize: {min}, maxSize: 4, capacity: {{cpu: 8, memory: 64Gi, pods: 110}},\n     instances: [{{id: pool-0}}, {{id: pool-1}}]}}\n"
    );
    (c, groups)
}

#[test]
fn a_node_of_a_group_at_min_size_is_no_candidate_and_gets_no_soft_taint() {
    let settings = ferroscale::cli::flags::default_engine();
    let (c, groups) = soft_taint_cluster(2);
    let mut s = sim(&c, &groups);
    let r = s.step(&settings, &pacing());
    let why = r
        .unremovable
        .iter()
        .find(|n| n.node.as_deref() == Some("pool-1"))
        .map(|n| n.reason.as_str());
    assert_eq!(why, Some("group pool at min size"), "{r:#?}");
    let tainted = s.cluster().state().nodes.iter().any(|n| {
        n.taints
            .iter()
            .any(|t| t.key == "DeletionCandidateOfClusterAutoscaler")
    });
    assert!(!tainted, "no soft taint on a node that can never go");

    // The contrast: above its min size, the idle node is unneeded and soft-tainted at once.
    let (c, groups) = soft_taint_cluster(0);
    let mut s = sim(&c, &groups);
    let r = s.step(&settings, &pacing());
    assert!(r.scale_down.is_empty(), "not for its unneeded time yet");
    let state = s.cluster().state();
    let idle = state.nodes.iter().find(|n| n.name == "pool-1").unwrap();
    assert!(
        idle.taints
            .iter()
            .any(|t| t.key == "DeletionCandidateOfClusterAutoscaler"),
        "{:?}",
        idle.taints
    );
}

/// A consolidation into a group whose new nodes never become Ready: the first attempt is given up
/// after `maxNodeProvisionTime` and its group backs off as after a failed scale-up, so consolidation
/// says so and makes no plan while it does; without `after`'s wait (0s) the plan would otherwise come
/// back every provision time. The contrast: a group whose node does become Ready completes it.
#[test]
fn a_consolidation_into_a_never_ready_group_is_tried_once_then_backs_off() {
    use crate::simulate_consolidation::{cluster, groups, OPTED_IN};
    let minute = Pacing {
        scan_interval: std::time::Duration::from_secs(60),
        ..pacing()
    };
    let settings = ferroscale::cli::flags::default_engine();
    let mut s = sim(&cluster(), &groups(OPTED_IN));
    s.set_events(parse_events("- {at: 0s, neverReady: big}").unwrap(), false);
    let (mut plans, mut backing_off) = (Vec::new(), 0);
    for _ in 0..40 {
        let r = s.step(&settings, &minute);
        if !r.consolidations.is_empty() {
            plans.push(r.time);
        }
        if r.consolidation_waits
            .as_deref()
            .is_some_and(|w| w.contains("group big backs off"))
        {
            backing_off += 1;
        }
    }
    // One plan at once, given up at 16 minutes; the group's backoff (5 minutes) and the scale-down
    // pause after the surge keep it from coming back before 21 minutes.
    assert_eq!(plans[0], 0, "{plans:?}");
    assert!(plans.len() <= 2, "{plans:?}");
    if let Some(second) = plans.get(1) {
        assert!(*second >= 16 * 60 + 300, "{plans:?}");
    }
    assert!(backing_off > 0, "consolidation says the group backs off");
    assert!(s.memory().backoff.contains_key("big"));

    // The contrast: the same plan into a group whose node comes up completes.
    let mut s = sim(&cluster(), &groups(OPTED_IN));
    let mut retired = 0;
    for _ in 0..10 {
        let r = s.step(&settings, &minute);
        retired += r
            .disruptions
            .iter()
            .filter(|d| d.reason == "consolidation")
            .count();
    }
    assert_eq!(retired, 3);
    assert!(!s.memory().backoff.contains_key("big"));
}

/// `hot-0` (7 of 8 cores asked, above LowNodeUtilization's target) and two idle nodes of `pin`, whose
/// min size is `min`.
fn lnu_cluster(min: u32) -> (Vec<String>, String) {
    let mut c = vec![
        node("hot-0", "hot", 8),
        node("pin-0", "pin", 8),
        node("pin-1", "pin", 8),
        pod("idle-0", "pin-0", "500m", "idle"),
        pod("idle-1", "pin-1", "500m", "idle"),
    ];
    for k in 0..7 {
        c.push(pod(&format!("busy-{k}"), "hot-0", "1", "busy"));
    }
    let groups = format!(
        "nodeGroups:\n\
         \x20 - {{name: hot, minSize: 1, maxSize: 4, capacity: {{cpu: 8, memory: 64Gi, pods: 110}}, instances: [{{id: hot-0}}]}}\n\
         \x20 - {{name: pin, minSize: {min}, maxSize: 4, capacity: {{cpu: 8, memory: 64Gi, pods: 110}}, instances: [{{id: pin-0}}, {{id: pin-1}}]}}\n"
    );
    (c, groups)
}

pub(crate) const LNU: &str =
    "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: balance\n  \
    pluginConfig:\n  - name: LowNodeUtilization\n    args:\n      thresholds: {cpu: 20}\n      \
    targetThresholds: {cpu: 50}\n  plugins:\n    balance:\n      enabled: [LowNodeUtilization]\n";

/// The pods the loop's descheduling evicted, with the node the plan placed each on.
fn moved(r: &LoopReport) -> Vec<(String, Option<String>)> {
    r.evictions
        .iter()
        .map(|e| (e.pod.clone(), e.to.clone()))
        .collect()
}

#[test]
fn low_node_utilization_moves_pods_onto_the_nodes_of_a_group_at_min_size_and_not_onto_unneeded_ones(
) {
    let settings = ferroscale::cli::flags::default_engine();
    let policy = || {
        ferroscale::deschedule::Policy::parse(LNU)
            .expect("the policy reads")
            .0
    };
    // `pin` at its min size: its nodes can never go, get no soft taint, and take the pods.
    let (c, groups) = lnu_cluster(2);
    let mut s = sim(&c, &groups);
    s.set_descheduler(
        policy(),
        std::time::Duration::from_secs(300),
        ferroscale::deschedule::Settings::default(),
    );
    let before = placement(&s);
    let r = s.step(&settings, &pacing());
    evicts_only_its_own(&before, &r);
    let to = moved(&r);
    assert!(!to.is_empty(), "{r:#?}");
    assert!(
        to.iter()
            .all(|(_, n)| n.as_deref().is_some_and(|n| n.starts_with("pin-"))),
        "{to:?}"
    );
    // The contrast: `pin` above its min size, its idle nodes are unneeded (scale-down will take them):
    // no pod is sent there to be moved again when they go.
    let (c, groups) = lnu_cluster(0);
    let mut s = sim(&c, &groups);
    s.set_descheduler(
        policy(),
        std::time::Duration::from_secs(300),
        ferroscale::deschedule::Settings::default(),
    );
    let r = s.step(&settings, &pacing());
    assert!(
        moved(&r)
            .iter()
            .all(|(_, n)| !n.as_deref().is_some_and(|n| n.starts_with("pin-"))),
        "{r:#?}"
    );
}
