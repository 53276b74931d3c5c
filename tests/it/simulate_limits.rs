//! `simulate` under limits: --max-nodes-total, --cores-total and --memory-total (capacity, both ways),
//! a spent binpacking budget, and which groups balance a scale-up.

use ferroscale::engine::Settings;

use std::time::Duration;

use crate::support::fixtures::dump::{node, pod, GROUPS};
use crate::support::simulate_harness::{flags, pacing, reason_of, sim, unremovable, ups};

#[test]
fn limits_cap_the_scale_up() {
    let cluster: Vec<String> = (0..10)
        .map(|i| {
            pod(
                "a",
                &format!("p{i}"),
                "1500m",
                "1Gi",
                None,
                "  nodeSelector: {size: small}\n",
            )
        })
        .collect();
    let mut s = sim(&cluster, GROUPS);
    let settings = Settings {
        max_nodes_total: 4,
        ..ferroscale::cli::flags::default_engine()
    };
    let r = s.step(&settings, &pacing());
    assert_eq!(ups(&r), vec![("small", 4)]);
    assert_eq!(r.pending.len(), 6);
    assert!(
        reason_of(&r, "a/p9").contains("would exceed a limit"),
        "{r:?}"
    );
}

#[test]
fn a_spent_binpacking_budget_scales_nothing_and_says_so() {
    let cluster = vec![pod("a", "wide", "6", "4Gi", None, "")];
    let settings = Settings {
        max_nodegroup_binpacking_duration: Duration::ZERO,
        ..ferroscale::cli::flags::default_engine()
    };
    let r = sim(&cluster, GROUPS).step(&settings, &pacing());
    assert!(ups(&r).is_empty(), "{r:?}");
    let why = reason_of(&r, "a/wide");
    assert!(why.contains("--max-nodegroup-binpacking-duration"), "{why}");
}

/// `node` with a capacity of 2 cpu and 8Gi above its allocatable.
fn with_capacity(node: String) -> String {
    node.replace(
        "  conditions:",
        "  capacity: {cpu: \"2\", memory: 8Gi, pods: \"20\"}\n  conditions:",
    )
}

#[test]
fn cores_total_counts_node_capacity_not_allocatable() {
    // 2 cores of capacity (1.5 allocatable) now, 2 per new small node: a 4-core cap allows one more.
    let mut cluster = vec![
        with_capacity(node("n1", "small", "1500m", "7Gi")),
        pod("a", "full", "1400m", "1Gi", Some("n1"), ""),
    ];
    cluster.extend((0..3).map(|i| {
        pod(
            "a",
            &format!("p{i}"),
            "1500m",
            "1Gi",
            None,
            "  nodeSelector: {size: small}\n",
        )
    }));
    let r = sim(&cluster, GROUPS).step(&flags(&["--cores-total", "0:4"]), &pacing());
    assert_eq!(ups(&r), vec![("small", 1)], "{r:?}");
    assert!(
        reason_of(&r, "a/p2").contains("would exceed a limit"),
        "{r:?}"
    );
}

#[test]
fn the_cores_and_memory_minima_keep_idle_nodes() {
    let cluster: Vec<String> = (1..=3)
        .map(|i| with_capacity(node(&format!("idle-{i}"), "small", "1500m", "7Gi")))
        .collect();
    // Only the minima hold nodes back here.
    let removed = |args: &[&str]| {
        let args: Vec<&str> = args
            .iter()
            .copied()
            .chain(["--max-disruption", "100%"])
            .collect();
        let r = sim(&cluster, GROUPS).step(&flags(&args), &pacing());
        (r.scale_down.len(), r)
    };
    // 6 cores, at least 3: one node of 2 may go, a second would leave 2.
    let (n, r) = removed(&["--cores-total", "3:320000"]);
    assert_eq!(n, 1, "{r:?}");
    let kept = r.unremovable.iter().find(|u| u.reason.contains("minimum"));
    assert_eq!(
        kept.map(|u| u.reason.as_str()),
        Some("the cluster would go below the minimum of --cores-total"),
        "{r:?}"
    );
    // 24Gi of capacity, at least 17: none of 8Gi may go.
    let (n, r) = removed(&["--memory-total", "17:6400000"]);
    assert_eq!(n, 0, "{r:?}");
    assert_eq!(
        unremovable(&r, "idle-1"),
        "the cluster would go below the minimum of --memory-total"
    );
    assert_eq!(removed(&[]).0, 3, "no minimum: all go");
    // --max-disruption (10% by default) limits replacements, not plain scale-down: as upstream, only
    // --max-scale-down-parallelism (and --max-drain-parallelism) cap it.
    let r = sim(&cluster, GROUPS).step(&flags(&[]), &pacing());
    assert_eq!(r.scale_down.len(), 3, "{r:?}");
    let r = sim(&cluster, GROUPS).step(&flags(&["--max-scale-down-parallelism", "1"]), &pacing());
    assert_eq!(r.scale_down.len(), 1, "{r:?}");
}

#[test]
fn similar_groups_are_told_by_upstreams_comparator_and_the_balancing_flags() {
    let groups = r#"
nodeGroups:
  - {name: x, minSize: 0, maxSize: 10, capacity: {cpu: 2, memory: 8Gi}, labels: {size: s, team: x, node.kubernetes.io/instance-type: m5.large}}
  - {name: y, minSize: 0, maxSize: 10, capacity: {cpu: 2, memory: 8Gi}, labels: {size: s, team: y, node.kubernetes.io/instance-type: m5.large}}
"#;
    let cluster: Vec<String> = (0..4)
        .map(|i| {
            pod(
                "a",
                &format!("p{i}"),
                "1500m",
                "1Gi",
                None,
                "  nodeSelector: {size: s}\n",
            )
        })
        .collect();
    let split = |args: &[&str]| {
        let mut all = vec!["--balance-similar-node-groups"];
        all.extend_from_slice(args);
        let r = sim(&cluster, groups).step(&flags(&all), &pacing());
        let mut got: Vec<(String, i32)> = ups(&r)
            .into_iter()
            .map(|(g, n)| (g.to_string(), n))
            .collect();
        got.sort();
        got.into_iter().map(|(_, n)| n).collect::<Vec<i32>>()
    };
    assert_eq!(split(&[]), vec![4], "team differs: not similar");
    assert_eq!(split(&["--balancing-ignore-label", "team"]), vec![2, 2]);
    assert_eq!(split(&["--balancing-label", "size"]), vec![2, 2]);
    assert_eq!(
        split(&["--balancing-label", "size", "--balancing-label", "team"]),
        vec![4]
    );
}

/// A ready node of `small` with the group's labels (a template may be copied from it).
fn small(name: &str) -> String {
    node(name, "small", "1500m", "7Gi").replace("labels: {", "labels: {size: small, ")
}

/// A node of `small` that registered at the simulation's start and is not ready yet (with the node
/// lifecycle controller's taint): still starting.
fn booting(name: &str) -> String {
    small(name)
        .replace("status: \"True\"}]", "status: \"False\"}]")
        .replace(
            "status:\n",
            "spec:\n  taints: [{key: node.kubernetes.io/not-ready, effect: NoSchedule}]\nstatus:\n",
        )
        .replace(
            "metadata:\n",
            "metadata:\n  creationTimestamp: \"2026-01-01T00:00:00Z\"\n",
        )
}

#[test]
fn a_booting_node_counts_once_against_max_nodes_total() {
    // Two full ready nodes, one booting, five pods that each need a node of their own: the booting
    // node takes one, --max-nodes-total 5 leaves room for two more (upstream: ready nodes plus
    // upcoming ones; the booting node is upcoming, not both).
    let mut cluster = vec![
        small("n1"),
        pod("a", "full-1", "1400m", "1Gi", Some("n1"), ""),
        small("n2"),
        pod("a", "full-2", "1400m", "1Gi", Some("n2"), ""),
        booting("n3"),
    ];
    cluster.extend((0..5).map(|i| {
        pod(
            "a",
            &format!("p{i}"),
            "1400m",
            "1Gi",
            None,
            "  nodeSelector: {size: small}\n",
        )
    }));
    let r = sim(&cluster, GROUPS).step(&flags(&["--max-nodes-total", "5"]), &pacing());
    assert_eq!(ups(&r), vec![("small", 2)], "{r:?}");
    assert!(
        reason_of(&r, "a/p0").contains("fits on an upcoming node of small"),
        "{r:?}"
    );
    let capped = r
        .pending
        .iter()
        .filter(|p| p.reason.contains("would exceed a limit"));
    assert_eq!(capped.count(), 2, "{r:?}");
    // The same three nodes all ready (the third full too): three nodes, two more, as before.
    cluster[4] = small("n3");
    cluster.push(pod("a", "full-3", "1400m", "1Gi", Some("n3"), ""));
    let r = sim(&cluster, GROUPS).step(&flags(&["--max-nodes-total", "5"]), &pacing());
    assert_eq!(ups(&r), vec![("small", 2)], "{r:?}");
    // --cores-total counts the booting node once too: 2 cores each, 10 allow five nodes.
    let mut with_cores = cluster.clone();
    with_cores[4] = booting("n3");
    with_cores.pop();
    let r = sim(&with_cores, GROUPS).step(&flags(&["--cores-total", "0:10"]), &pacing());
    assert_eq!(ups(&r), vec![("small", 2)], "{r:?}");
}
