//! `ferroscale simulate` end to end: scale from zero on the only group that fits, routing by selector,
//! taint and GPU, every scale-down blocker, limits, backoff to the next group, bad input; in-process on
//! the same `Simulation` the command runs, plus the binary on the shipped example.

use std::time::Duration;

use ferroscale::engine::Settings;
use ferroscale::simulate::Pacing;

use crate::support::fixtures::dump::{node, pod, GROUPS};
use crate::support::simulate_harness::{
    pacing, quick_scale_down, reason_of, sim, unremovable, ups,
};

#[test]
fn scale_from_zero_routes_by_size_selector_and_gpu() {
    let gpu_pod = "  tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n  containers: [{name: c, resources: {requests: {cpu: \"1\", memory: 1Gi, nvidia.com/gpu: \"1\"}}}]\n";
    let cluster = vec![
        // 6 cpu: only `big` holds it.
        pod("a", "wide", "6", "4Gi", None, ""),
        // Selector pins it to `small`.
        pod("a", "pinned", "500m", "1Gi", None, "  nodeSelector: {size: small}\n"),
        // The GPU pod tolerates the taint; replace the containers line.
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: train, namespace: ml, ownerReferences: [{{apiVersion: batch/v1, kind: Job, name: j, uid: u, controller: true}}]}}\nspec:\n{gpu_pod}"
        ),
        pod("a", "enormous", "64", "1Gi", None, ""),
    ];
    let mut s = sim(&cluster, GROUPS);
    let r = s.step(&ferroscale::cli::flags::default_engine(), &pacing());
    let mut got = ups(&r);
    got.sort();
    assert_eq!(got, vec![("big", 1), ("gpu", 1), ("small", 1)], "{r:?}");
    assert_eq!(
        reason_of(&r, "a/enormous"),
        "no group fits: 2 insufficient cpu, 1 taint nvidia.com/gpu=true:NoSchedule not tolerated"
    );
    // Next loop the nodes joined and the scheduler placed the pods.
    let r = s.step(&ferroscale::cli::flags::default_engine(), &pacing());
    assert!(r.scale_up.is_empty(), "{r:?}");
    assert_eq!(r.nodes.get("gpu"), Some(&1));
    assert_eq!(r.pending.len(), 1, "only the enormous pod waits: {r:?}");
}

#[test]
fn pods_that_fit_existing_or_upcoming_nodes_trigger_nothing() {
    let cluster = vec![
        node("n1", "small", "2", "8Gi"),
        pod("a", "fits", "1", "1Gi", None, ""),
    ];
    let mut s = sim(&cluster, GROUPS);
    let r = s.step(&ferroscale::cli::flags::default_engine(), &pacing());
    assert!(r.scale_up.is_empty(), "{r:?}");
    assert!(r.pending.is_empty(), "the scheduler bound it: {r:?}");
}

#[test]
fn scale_down_removes_idle_nodes_and_explains_every_kept_one() {
    let mut cluster = vec![];
    let blockers: [(&str, String); 6] = [
        ("pdb", pod("a", "guarded", "100m", "100Mi", Some("pdb"), "")),
        ("system", pod("kube-system", "coredns", "100m", "100Mi", Some("system"), "")),
        (
            "bare",
            pod("a", "bare", "100m", "100Mi", Some("bare"), "").replace(
                "  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: u, controller: true}]\n",
                "",
            ),
        ),
        (
            "local",
            pod("a", "cache", "100m", "100Mi", Some("local"), "  volumes: [{name: v, emptyDir: {}}]\n"),
        ),
        (
            "pinned",
            pod("a", "precious", "100m", "100Mi", Some("pinned"), "").replace(
                "  labels: {app: precious}\n",
                "  labels: {app: precious}\n  annotations: {cluster-autoscaler.kubernetes.io/safe-to-evict: \"false\"}\n",
            ),
        ),
        ("busy", pod("a", "busy", "1500m", "1Gi", Some("busy"), "")),
    ];
    for (n, p) in &blockers {
        cluster.push(node(n, "small", "2", "8Gi"));
        cluster.push(p.clone());
    }
    cluster.push(node("idle", "small", "2", "8Gi"));
    cluster.push(
        node("keep", "small", "2", "8Gi").replace(
            "  labels:",
            "  annotations: {cluster-autoscaler.kubernetes.io/scale-down-disabled: \"true\"}\n  labels:",
        ),
    );
    cluster.push(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: guard, namespace: a}\n\
         spec: {selector: {matchLabels: {app: guarded}}}\nstatus: {disruptionsAllowed: 0}\n"
            .into(),
    );
    let mut s = sim(&cluster, GROUPS);
    let r = s.step(&quick_scale_down(), &pacing());
    let removed: Vec<&str> = r.scale_down.iter().map(|d| d.node.as_str()).collect();
    assert_eq!(removed, vec!["idle"], "{r:?}");
    assert!(unremovable(&r, "pdb").contains("PodDisruptionBudget a/guard allows no disruption"));
    assert!(unremovable(&r, "system")
        .contains("kube-system pod kube-system/coredns has no PodDisruptionBudget"));
    assert!(unremovable(&r, "bare").contains("has no controller"));
    assert!(unremovable(&r, "local").contains("has local storage"));
    assert!(unremovable(&r, "pinned").contains("safe-to-evict=false"));
    assert!(unremovable(&r, "busy").contains("above threshold"));
    assert_eq!(unremovable(&r, "keep"), "scale-down disabled by annotation");
}

#[test]
fn a_node_whose_pods_fit_elsewhere_goes_after_the_unneeded_time_and_its_pods_move() {
    let cluster = vec![
        node("a", "small", "2", "8Gi"),
        node("b", "small", "2", "8Gi"),
        pod("x", "one", "500m", "1Gi", Some("a"), ""),
        pod("x", "two", "500m", "1Gi", Some("b"), ""),
    ];
    let mut s = sim(&cluster, GROUPS);
    let mut settings = quick_scale_down();
    settings.defaults.scale_down_unneeded_time = Duration::from_secs(15);
    let r = s.step(&settings, &pacing());
    assert!(r.scale_down.is_empty());
    assert_eq!(unremovable(&r, "a"), "unneeded for 0s of 15s");
    let _ = s.step(&settings, &pacing());
    let r = s.step(&settings, &pacing());
    assert_eq!(r.scale_down.len(), 1, "one non-empty node per loop: {r:?}");
    assert_eq!(r.scale_down[0].evicted.len(), 1);
    let r = s.step(&settings, &pacing());
    assert!(
        r.pending.is_empty(),
        "the evicted pod found the other node: {r:?}"
    );
    assert_eq!(r.nodes.get("small"), Some(&1));
}

#[test]
fn min_size_and_a_pod_with_nowhere_to_go_keep_nodes() {
    let groups = GROUPS.replace("{name: small, minSize: 0", "{name: small, minSize: 2");
    let cluster = vec![
        node("a", "small", "2", "8Gi"),
        node("b", "small", "2", "8Gi"),
        node("c", "big", "2", "8Gi"),
        pod(
            "x",
            "lonely",
            "500m",
            "1Gi",
            Some("c"),
            "  nodeSelector: {size: big}\n",
        ),
    ];
    let mut s = sim(&cluster, &groups);
    let r = s.step(&quick_scale_down(), &pacing());
    assert_eq!(unremovable(&r, "a"), "group small at min size");
    assert!(
        // a and b, unneeded themselves, take no pod (as upstream's planner drops them from the
        // destinations); the node that would, by its selector, does not exist.
        unremovable(&r, "c").starts_with("pod x/lonely fits no other node"),
        "{r:?}"
    );
}

#[test]
fn a_group_that_cannot_launch_is_backed_off_and_the_next_best_used() {
    let groups = GROUPS.replace(
        "pricePerHour: 0.096,",
        "pricePerHour: 0.096, launchCapacity: 0,",
    );
    let cluster = vec![pod("a", "web", "1", "1Gi", None, "")];
    let mut s = sim(&cluster, &groups);
    let settings = Settings {
        expander: ferroscale::engine::expander::Strategy::parse_chain("price").unwrap(),
        ..ferroscale::cli::flags::default_engine()
    };
    let r = s.step(&settings, &pacing());
    assert_eq!(r.scale_up[0].group, "small", "cheapest first");
    assert_eq!(r.scale_up[0].failed, 1);
    let r = s.step(&settings, &pacing());
    assert_eq!(ups(&r), vec![("big", 1)], "small is backed off: {r:?}");
}

#[test]
fn instances_that_never_register_are_deleted_and_the_next_group_used() {
    let cluster = vec![pod("a", "web", "1", "1Gi", None, "")];
    let mut s = sim(&cluster, GROUPS);
    let settings = Settings {
        expander: ferroscale::engine::expander::Strategy::parse_chain("price").unwrap(),
        ..ferroscale::cli::flags::default_engine()
    };
    // Nodes take 30m to join; the default max node provision time is 15m, counted from the first loop
    // that sees the instance without a node (t=5m).
    let slow = Pacing {
        loops: 1,
        scan_interval: Duration::from_secs(300),
        provision_delay: Duration::from_secs(1800),
        node_ready_delay: Duration::ZERO,
        by_group: Default::default(),
    };
    let r = s.step(&settings, &slow);
    assert_eq!(ups(&r), vec![("small", 1)]);
    for _ in 0..3 {
        let r = s.step(&settings, &slow);
        assert!(r.scale_up.is_empty(), "{r:?}");
        assert!(
            reason_of(&r, "a/web").starts_with("fits on an upcoming node of small"),
            "{r:?}"
        );
    }
    // At t=20m: the instance goes, small backs off, big takes the pod.
    let r = s.step(&settings, &slow);
    assert_eq!(r.delete_instances.len(), 1, "{r:?}");
    assert_eq!(r.delete_instances[0].group, "small");
    assert_eq!(
        r.delete_instances[0].reason,
        "no node registered within 900s"
    );
    assert_eq!(ups(&r), vec![("big", 1)], "{r:?}");
}

#[test]
fn listed_instances_without_a_node_count_as_unregistered() {
    let groups = GROUPS.replace(
        "labels: {size: small}}",
        "labels: {size: small}, instances: [{id: i-0123456789abcdef0}]}",
    );
    let mut s = sim(&[], &groups);
    let r = s.step(&ferroscale::cli::flags::default_engine(), &pacing());
    assert!(r.delete_instances.is_empty(), "not yet 15m: {r:?}");
    let mut later = pacing();
    later.scan_interval = Duration::from_secs(900);
    let _ = s.step(&ferroscale::cli::flags::default_engine(), &later);
    let r = s.step(&ferroscale::cli::flags::default_engine(), &later);
    assert_eq!(
        r.delete_instances
            .iter()
            .map(|d| d.instance.as_str())
            .collect::<Vec<_>>(),
        vec!["sim:///small/i-0123456789abcdef0"]
    );
}

#[test]
fn daemonset_pods_take_their_share_of_a_new_node() {
    // A 1.5-cpu pod fits an empty 2-cpu `small` node, but not next to a 1-cpu DaemonSet pod.
    let ds = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: kube-system}\n\
              spec:\n  selector: {matchLabels: {app: agent}}\n  template:\n    metadata: {labels: {app: agent}}\n    \
              spec: {containers: [{name: a, resources: {requests: {cpu: \"1\", memory: 100Mi}}}]}\n";
    let cluster = vec![pod("a", "web", "1500m", "1Gi", None, ""), ds.to_string()];
    let mut s = sim(&cluster, GROUPS);
    let settings = Settings {
        expander: ferroscale::engine::expander::Strategy::parse_chain("price").unwrap(),
        ..ferroscale::cli::flags::default_engine()
    };
    let r = s.step(&settings, &pacing());
    assert_eq!(ups(&r), vec![("big", 1)], "{r:?}");
    // The new node starts the DaemonSet pod too.
    let r = s.step(&settings, &pacing());
    assert!(r.pending.is_empty(), "{r:?}");
}

#[test]
fn similar_groups_share_a_scale_up() {
    let groups = r#"
nodeGroups:
  - {name: zone-a, minSize: 0, maxSize: 10, capacity: {cpu: 2, memory: 8Gi}, labels: {topology.kubernetes.io/zone: a, size: s, node.kubernetes.io/instance-type: m5.large}}
  - {name: zone-b, minSize: 0, maxSize: 10, capacity: {cpu: 2, memory: 8Gi}, labels: {topology.kubernetes.io/zone: b, size: s, node.kubernetes.io/instance-type: m5.large}}
  - {name: other, minSize: 0, maxSize: 10, capacity: {cpu: 2, memory: 8Gi}, labels: {size: other}}
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
    let settings = Settings {
        balance_similar_node_groups: true,
        ..ferroscale::cli::flags::default_engine()
    };
    let r = sim(&cluster, groups).step(&settings, &pacing());
    let mut got = ups(&r);
    got.sort();
    assert_eq!(got, vec![("zone-a", 2), ("zone-b", 2)], "{r:?}");
    let r = sim(&cluster, groups).step(&ferroscale::cli::flags::default_engine(), &pacing());
    assert_eq!(
        r.scale_up.len(),
        1,
        "without balancing one group takes all: {r:?}"
    );
    assert_eq!(r.scale_up[0].delta, 4);
}

#[test]
fn expendable_and_new_pods_wait() {
    let low = pod("a", "batch", "1", "1Gi", None, "  priority: -100\n");
    let cluster = vec![low, pod("a", "web", "1", "1Gi", None, "")];
    let settings = Settings {
        new_pod_scale_up_delay: Duration::from_secs(30),
        ..ferroscale::cli::flags::default_engine()
    };
    let mut s = sim(&cluster, GROUPS);
    let r = s.step(&settings, &pacing());
    assert!(r.scale_up.is_empty(), "{r:?}");
    assert!(reason_of(&r, "a/batch").starts_with("expendable"));
    assert_eq!(
        reason_of(&r, "a/web"),
        "younger than --new-pod-scale-up-delay"
    );
    let _ = s.step(&settings, &pacing());
    let _ = s.step(&settings, &pacing());
    let r = s.step(&settings, &pacing());
    assert_eq!(r.scale_up.len(), 1, "30s later: {r:?}");
    assert_eq!(r.scale_up[0].pods, vec!["a/web".to_string()]);
    assert!(reason_of(&r, "a/batch").starts_with("expendable"));
}

#[test]
fn an_instance_type_out_of_capacity_in_a_zone_is_avoided_by_every_group() {
    // Two groups of m5.large in us-east-1a (the cheaper cannot launch), one in us-east-1b.
    let groups = r#"
nodeGroups:
  - {name: a-cheap, minSize: 0, maxSize: 5, capacity: {cpu: 2, memory: 8Gi, pods: 20}, pricePerHour: 0.08,
     launchCapacity: 0, labels: {node.kubernetes.io/instance-type: m5.large, topology.kubernetes.io/zone: us-east-1a}}
  - {name: a-other, minSize: 0, maxSize: 5, capacity: {cpu: 2, memory: 8Gi, pods: 20}, pricePerHour: 0.09,
     labels: {node.kubernetes.io/instance-type: m5.large, topology.kubernetes.io/zone: us-east-1a}}
  - {name: b, minSize: 0, maxSize: 5, capacity: {cpu: 2, memory: 8Gi, pods: 20}, pricePerHour: 0.10,
     labels: {node.kubernetes.io/instance-type: m5.large, topology.kubernetes.io/zone: us-east-1b}}
"#;
    let cluster = vec![pod("a", "web", "1", "1Gi", None, "")];
    let mut s = sim(&cluster, groups);
    let settings = Settings {
        expander: ferroscale::engine::expander::Strategy::parse_chain("price").unwrap(),
        ..ferroscale::cli::flags::default_engine()
    };
    let r = s.step(&settings, &pacing());
    assert_eq!(
        (r.scale_up[0].group.as_str(), r.scale_up[0].failed),
        ("a-cheap", 1)
    );
    let r = s.step(&settings, &pacing());
    assert_eq!(
        ups(&r),
        vec![("b", 1)],
        "a-other shares the exhausted type and zone: {r:?}"
    );
}

#[test]
fn after_a_removal_the_next_waits_for_the_delay_after_delete() {
    let cluster = vec![
        node("idle-1", "small", "2", "8Gi"),
        node("idle-2", "small", "2", "8Gi"),
    ];
    let mut settings = quick_scale_down();
    settings.max_scale_down_parallelism = 1;
    settings.scale_down_delay_after_delete = Duration::from_secs(60);
    let mut s = sim(&cluster, GROUPS);
    let r = s.step(&settings, &pacing());
    assert_eq!(r.scale_down.len(), 1, "{r:?}");
    let kept = if r.scale_down[0].node == "idle-1" {
        "idle-2"
    } else {
        "idle-1"
    };
    // 10s later: still within the delay.
    let r = s.step(&settings, &pacing());
    assert!(r.scale_down.is_empty(), "{r:?}");
    assert!(unremovable(&r, kept).contains("--scale-down-delay-after-delete"));
    // Past it (six more loops of 10s), the other goes.
    let mut gone = false;
    for _ in 0..6 {
        gone |= !s.step(&settings, &pacing()).scale_down.is_empty();
    }
    assert!(gone, "removed once the delay passed");
}
