//! Voluntary replacements through `simulate`: drifted nodes (launched from another revision than their
//! group's) and expired ones are replaced surge first (the group grows by one, then the old node goes once
//! the new one has joined), one at a time with a budget of one, never while a pod may not be evicted.

use std::time::Duration;

use crate::support::fixtures::dump::pod;
use crate::support::simulate_harness::{pacing, sim};
use ferroscale::engine::Settings;
use ferroscale::simulate::LoopReport;

/// Three nodes of `pool` on instances i-0..i-2 launched from `lt-1:1`; the group now launches
/// `revision` and allows `budget`.
fn groups(revision: &str, budget: &str) -> String {
    format!(
        r#"
nodeGroups:
  - {{name: pool, minSize: 0, maxSize: 6, capacity: {{cpu: 4, memory: 16Gi, pods: 20}},
     revision: "{revision}", drift: Replace, disruptionBudget: "{budget}",
     instances: [{{id: i-0, revision: "lt-1:1"}}, {{id: i-1, revision: "lt-1:1"}}, {{id: i-2, revision: "lt-1:1"}}]}}
"#
    )
}

pub(crate) fn node(k: usize, created: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: pool-{k}\n  creationTimestamp: \"{created}\"\n  labels: {{ferroscale.io/node-group: pool, kubernetes.io/hostname: pool-{k}}}\n\
         spec: {{providerID: \"memory:///pool/i-{k}\"}}\n\
         status:\n  allocatable: {{cpu: \"4\", memory: 16Gi, pods: \"20\"}}\n  conditions: [{{type: Ready, status: \"True\"}}]\n"
    )
}

/// Three nodes created a minute apart, each running one 3-cpu replica (none is unneeded).
pub(crate) fn cluster() -> Vec<String> {
    let mut c = Vec::new();
    for k in 0..3 {
        c.push(node(k, &format!("2026-01-01T00:0{k}:00Z")));
        c.push(pod(
            "shop",
            &format!("web-{k}"),
            "3",
            "1Gi",
            Some(&format!("pool-{k}")),
            "",
        ));
    }
    c
}

fn settings() -> Settings {
    ferroscale::cli::flags::default_engine()
}

/// A surge: (group, delta, nodes it replaces).
type Surge = (String, i32, Vec<String>);

/// (surges, retired nodes with why) of one loop.
fn what(r: &LoopReport) -> (Vec<Surge>, Vec<(String, String)>) {
    (
        r.replacements
            .iter()
            .map(|x| (x.group.clone(), x.delta, x.for_nodes.clone()))
            .collect(),
        r.disruptions
            .iter()
            .map(|x| (x.node.clone(), x.reason.clone()))
            .collect(),
    )
}

#[test]
fn drifted_nodes_are_replaced_surge_first_one_at_a_time_under_a_budget_of_one() {
    let mut s = sim(&cluster(), &groups("lt-1:2", "1"));
    let p = pacing();
    let mut log = Vec::new();
    for _ in 0..7 {
        let r = s.step(&settings(), &p);
        log.push((what(&r), r.nodes["pool"], r.scale_down.len()));
    }
    let pool = |k: usize| format!("pool-{k}");
    let surge = |k: usize| vec![("pool".to_string(), 1, vec![pool(k)])];
    let retired = |k: usize| vec![(pool(k), "drift".to_string())];
    // Loop 1 asks for the surge of the oldest; loop 2 (the surge joined) retires it; and so on.
    assert_eq!(log[0].0, (surge(0), vec![]), "{log:#?}");
    assert_eq!(log[1].0, (vec![], retired(0)), "{log:#?}");
    assert_eq!(log[2].0, (surge(1), vec![]), "{log:#?}");
    assert_eq!(log[3].0, (vec![], retired(1)), "{log:#?}");
    assert_eq!(log[4].0, (surge(2), vec![]), "{log:#?}");
    assert_eq!(log[5].0, (vec![], retired(2)), "{log:#?}");
    assert_eq!(
        log[6].0,
        (vec![], vec![]),
        "nothing drifted is left: {log:#?}"
    );
    // Never fewer than three nodes, never more than four.
    assert!(log.iter().all(|(_, n, _)| (3..=4).contains(n)), "{log:#?}");
}

#[test]
fn a_wider_budget_replaces_more_at_once_and_no_drift_means_no_replacement() {
    let mut s = sim(&cluster(), &groups("lt-1:2", "100%"));
    let r = s.step(&settings(), &pacing());
    assert_eq!(r.replacements.len(), 1);
    assert_eq!(r.replacements[0].delta, 3, "{r:?}");
    let mut same = sim(&cluster(), &groups("lt-1:1", "100%"));
    assert!(same.step(&settings(), &pacing()).replacements.is_empty());
}

#[test]
fn nodes_past_their_lifetime_are_replaced_the_same_way() {
    let mut s = sim(&cluster(), &groups("lt-1:1", "1"));
    let mut expiring = settings();
    // The clock starts at the newest node's creation: pool-0 is two minutes old, pool-1 one.
    expiring.node_max_lifetime = Some(Duration::from_secs(90));
    let r = s.step(&expiring, &pacing());
    assert_eq!(
        what(&r).0,
        vec![("pool".to_string(), 1, vec!["pool-0".to_string()])]
    );
    let r = s.step(&expiring, &pacing());
    assert_eq!(
        what(&r).1,
        vec![("pool-0".to_string(), "expired".to_string())]
    );
    assert!(
        r.scale_down[0].reason.contains("replaced (expired)"),
        "{r:?}"
    );
}

#[test]
fn a_pod_that_may_not_be_evicted_keeps_its_drifted_node() {
    let mut c = cluster();
    c.push(
        pod("shop", "pinned", "100m", "64Mi", Some("pool-0"), "")
            .replace("  labels: {app: pinned}\n", "  labels: {app: pinned}\n  annotations: {cluster-autoscaler.kubernetes.io/safe-to-evict: \"false\"}\n"),
    );
    let mut s = sim(&c, &groups("lt-1:2", "1"));
    let r = s.step(&settings(), &pacing());
    assert_eq!(
        what(&r).0,
        vec![("pool".to_string(), 1, vec!["pool-1".to_string()])],
        "pool-0 is skipped"
    );
}

#[test]
fn nothing_voluntary_happens_while_the_groups_window_is_closed() {
    // The simulation's clock starts at 00:02 UTC (the newest node's creation).
    let with_window = |schedule: &str| {
        groups("lt-1:2", "1").replace(
            "disruptionBudget: \"1\",",
            &format!("disruptionBudget: \"1\", disruptionWindow: {{schedule: \"{schedule}\", duration: 1h}},"),
        )
    };
    let mut idle = cluster();
    idle.push(node(3, "2026-01-01T00:00:00Z"));
    let mut closed = sim(&idle, &with_window("0 12 * * *"));
    // pool-3 is idle and could go at once, were the window open.
    let r = closed.step(
        &crate::support::simulate_harness::quick_scale_down(),
        &pacing(),
    );
    assert!(r.replacements.is_empty(), "{r:?}");
    assert!(r.scale_down.is_empty(), "{r:?}");
    let kept = r
        .unremovable
        .iter()
        .find(|u| u.node.as_deref() == Some("pool-3"))
        .map(|u| u.reason.as_str());
    assert!(
        kept.is_some_and(|k| k.contains("disruption window is closed")),
        "{r:?}"
    );
    let mut open = sim(&cluster(), &with_window("0 0 * * *"));
    assert_eq!(open.step(&settings(), &pacing()).replacements.len(), 1);
    let config = ferroscale::cloud::memory::MemoryConfig::parse(&with_window("nightly")).unwrap();
    let bad = ferroscale::cloud::memory::MemoryCloud::new(&config)
        .err()
        .expect("a bad schedule is refused");
    assert!(
        bad.to_string().contains("disruptionWindow.schedule"),
        "{bad}"
    );
}

#[test]
fn a_surge_the_cloud_cannot_launch_leaves_the_old_node_in_place() {
    // No capacity: the surge fails to launch and is given up; no node joins.
    let groups = groups("lt-1:2", "1").replace("maxSize: 6,", "maxSize: 6, launchCapacity: 0,");
    let mut s = sim(&cluster(), &groups);
    let first = s.step(&settings(), &pacing());
    assert_eq!(first.replacements.len(), 1, "{first:?}");
    for _ in 0..4 {
        let r = s.step(&settings(), &pacing());
        assert!(
            r.disruptions.is_empty(),
            "nothing retired without its surge: {r:?}"
        );
        assert_eq!(r.nodes["pool"], 3, "{r:?}");
    }
}

#[test]
fn one_new_node_lets_one_old_node_go() {
    // A budget of two surges two nodes; the cloud launches only one of them.
    let groups = groups("lt-1:2", "2").replace("maxSize: 6,", "maxSize: 6, launchCapacity: 1,");
    let mut s = sim(&cluster(), &groups);
    let first = s.step(&settings(), &pacing());
    assert_eq!(first.replacements[0].delta, 2, "{first:?}");
    let mut retired = Vec::new();
    for _ in 0..5 {
        let r = s.step(&settings(), &pacing());
        retired.extend(r.disruptions.iter().map(|x| x.node.clone()));
        assert!(r.nodes["pool"] >= 3, "never below the three nodes: {r:?}");
    }
    assert_eq!(retired, vec!["pool-0"], "one joined, one went");
}

#[test]
fn a_surge_never_takes_the_room_a_scale_up_of_the_same_loop_needs() {
    // Max size 4 with three nodes: a pending pod takes the last slot, so no surge this loop.
    let groups = groups("lt-1:2", "1").replace("maxSize: 6,", "maxSize: 4,");
    let mut c = cluster();
    c.push(pod("shop", "waiting", "3", "1Gi", None, ""));
    let mut s = sim(&c, &groups);
    let r = s.step(&settings(), &pacing());
    assert_eq!(r.scale_up.len(), 1, "{r:?}");
    assert!(r.replacements.is_empty(), "{r:?}");
}

#[test]
fn a_surge_that_joined_is_not_asked_again_while_the_group_is_not_all_ready() {
    // A fourth node that never becomes ready: the group is never all ready, so pool-0 waits; past the
    // provision time its joined surge is not given up and asked again (that would add a node each time).
    let mut c = cluster();
    c.push(node(3, "2026-01-01T00:00:00Z").replace(
        "{type: Ready, status: \"True\"}",
        "{type: Ready, status: \"False\"}",
    ));
    let mut s = sim(&c, &groups("lt-1:2", "1"));
    let mut surged = 0;
    for _ in 0..100 {
        let r = s.step(&settings(), &pacing());
        surged += r.replacements.iter().map(|x| x.delta).sum::<i32>();
        assert!(r.disruptions.is_empty(), "{r:?}");
    }
    assert_eq!(surged, 1, "one surge in 1,000 s");
}
