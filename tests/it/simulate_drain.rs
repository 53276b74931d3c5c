//! `simulate` on upstream's drainability rules and utilisation, each both ways, on dumps as
//! `kubectl get -o yaml` writes them; settings come from the command line's flags.

use std::time::Duration;

use ferroscale::engine::Settings;
use ferroscale::simulate::{LoopReport, Pacing};

use crate::support::fixtures::dump::{node, pod, GROUPS};
use crate::support::simulate_harness::{flags, pacing, sim, unremovable};

/// `pod` with `lines` added to its metadata (two-space indented).
fn with_meta(pod: String, lines: &str) -> String {
    pod.replacen(
        "  ownerReferences:",
        &format!("{lines}  ownerReferences:"),
        1,
    )
}

/// `pod` owned by a controller of `kind` (None: no owner).
fn owned_by(pod: String, kind: Option<&str>) -> String {
    let refs = "  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: u, controller: true}]\n";
    match kind {
        Some(k) => pod.replace(refs, &refs.replace("ReplicaSet", k)),
        None => pod.replace(refs, ""),
    }
}

fn removed(r: &LoopReport) -> Vec<&str> {
    r.scale_down.iter().map(|d| d.node.as_str()).collect()
}

/// A busy node whose 1.5 cpu keeps it (0.75 > 0.5) and whose room takes the pods that move.
fn busy() -> Vec<String> {
    vec![
        node("busy", "small", "2", "8Gi"),
        pod("b", "hog", "1500m", "1Gi", Some("busy"), ""),
    ]
}

fn one_loop(cluster: &[String], settings: &Settings) -> LoopReport {
    sim(cluster, GROUPS).step(settings, &pacing())
}

#[test]
fn a_kube_system_pod_without_a_budget_keeps_its_node_for_an_hour_after_its_creation() {
    let mut cluster = busy();
    cluster.push(node("sys", "small", "2", "8Gi"));
    cluster.push(with_meta(
        pod("kube-system", "metrics", "100m", "100Mi", Some("sys"), ""),
        "  creationTimestamp: \"2024-01-01T00:00:00Z\"\n",
    ));
    let mut s = sim(&cluster, GROUPS);
    let settings = flags(&[]);
    let r = s.step(&settings, &pacing());
    assert!(removed(&r).is_empty(), "{r:?}");
    assert!(
        unremovable(&r, "sys").contains("younger than --blocking-system-pod-distruption-timeout"),
        "{r:?}"
    );
    // The simulation started at the pod's creation; an hour and a second later it may move.
    let later = Pacing {
        scan_interval: Duration::from_secs(3601),
        ..pacing()
    };
    let _ = s.step(&settings, &later);
    let r = s.step(&settings, &pacing());
    assert_eq!(removed(&r), vec!["sys"], "{r:?}");
    assert_eq!(r.scale_down[0].evicted, vec!["kube-system/metrics"]);
    // A longer timeout still holds it then; --skip-nodes-with-system-pods=false lets it go at once.
    let two_hours = flags(&["--blocking-system-pod-distruption-timeout", "2h"]);
    let mut s = sim(&cluster, GROUPS);
    let _ = s.step(&two_hours, &later);
    let r = s.step(&two_hours, &pacing());
    assert!(removed(&r).is_empty(), "{r:?}");
    let r = one_loop(&cluster, &flags(&["--skip-nodes-with-system-pods=false"]));
    assert_eq!(removed(&r), vec!["sys"], "{r:?}");
}

#[test]
fn a_custom_controllers_pod_keeps_its_node_unless_custom_controllers_are_allowed() {
    let mut cluster = busy();
    cluster.push(node("custom", "small", "2", "8Gi"));
    cluster.push(owned_by(
        pod("a", "thing", "100m", "100Mi", Some("custom"), ""),
        Some("Foo"),
    ));
    let r = one_loop(&cluster, &flags(&[]));
    assert!(removed(&r).is_empty(), "{r:?}");
    assert_eq!(
        unremovable(&r, "custom"),
        "pod a/thing is owned by a Foo, a custom controller (--skip-nodes-with-custom-controller-pods)"
    );
    let r = one_loop(
        &cluster,
        &flags(&["--skip-nodes-with-custom-controller-pods=false"]),
    );
    assert_eq!(removed(&r), vec!["custom"], "{r:?}");
    // Without any controller the pod blocks either way.
    let mut bare = busy();
    bare.push(node("custom", "small", "2", "8Gi"));
    bare.push(owned_by(
        pod("a", "thing", "100m", "100Mi", Some("custom"), ""),
        None,
    ));
    let r = one_loop(
        &bare,
        &flags(&["--skip-nodes-with-custom-controller-pods=false"]),
    );
    assert_eq!(unremovable(&r, "custom"), "pod a/thing has no controller");
}

#[test]
fn safe_to_evict_true_drains_a_pod_whose_budget_allows_nothing() {
    let mut cluster = busy();
    let budget = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: guard, namespace: a}\n\
                  spec: {selector: {matchLabels: {tier: guarded}}}\nstatus: {disruptionsAllowed: 0}\n";
    for (n, annotation) in [
        ("guarded", ""),
        (
            "annotated",
            "  annotations: {cluster-autoscaler.kubernetes.io/safe-to-evict: \"true\"}\n",
        ),
    ] {
        cluster.push(node(n, "small", "2", "8Gi"));
        let p = pod("a", &format!("{n}-pod"), "100m", "100Mi", Some(n), "");
        let p = p.replace(
            &format!("  labels: {{app: {n}-pod}}\n"),
            &format!("  labels: {{app: {n}-pod, tier: guarded}}\n{annotation}"),
        );
        cluster.push(p);
    }
    cluster.push(budget.into());
    let r = one_loop(&cluster, &flags(&[]));
    assert_eq!(removed(&r), vec!["annotated"], "{r:?}");
    assert_eq!(
        unremovable(&r, "guarded"),
        "pod a/guarded-pod: PodDisruptionBudget a/guard allows no disruption"
    );
}

#[test]
fn local_volumes_named_safe_to_evict_do_not_keep_the_node() {
    let volumes =
        "  volumes: [{name: cache, emptyDir: {}}, {name: ram, emptyDir: {medium: Memory}}]\n";
    let mut cluster = busy();
    for (n, safe) in [("listed", "cache"), ("unlisted", "other")] {
        cluster.push(node(n, "small", "2", "8Gi"));
        cluster.push(with_meta(
            pod("a", &format!("{n}-pod"), "100m", "100Mi", Some(n), volumes),
            &format!(
                "  annotations: {{cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes: \"{safe}\"}}\n"
            ),
        ));
    }
    let r = one_loop(&cluster, &flags(&[]));
    assert_eq!(removed(&r), vec!["listed"], "{r:?}");
    assert_eq!(
        unremovable(&r, "unlisted"),
        "pod a/unlisted-pod has local storage (volume cache)",
        "the in-memory emptyDir never counts"
    );
    let r = one_loop(&cluster, &flags(&["--skip-nodes-with-local-storage=false"]));
    assert!(
        r.unremovable
            .iter()
            .all(|u| !u.reason.contains("local storage")),
        "{r:?}"
    );
}

#[test]
fn a_pod_running_to_completion_keeps_its_node_until_it_is_done() {
    let mut cluster = busy();
    cluster.push(node("batch", "small", "2", "8Gi"));
    let job = owned_by(
        pod("a", "report", "100m", "100Mi", Some("batch"), ""),
        Some("Job"),
    );
    let waiting = with_meta(
        job.clone(),
        "  annotations: {cluster-autoscaler.kubernetes.io/safe-to-evict: on-completion}\n",
    );
    let r = one_loop(&[cluster.clone(), vec![waiting]].concat(), &flags(&[]));
    assert!(removed(&r).is_empty(), "{r:?}");
    assert_eq!(
        unremovable(&r, "batch"),
        "unneeded, but pod a/report (safe-to-evict: on-completion) runs until it is done"
    );
    // Once it has succeeded it is no longer there (the adapters leave finished pods out).
    let done = format!("{job}status: {{phase: Succeeded}}\n");
    let r = one_loop(&[cluster, vec![done]].concat(), &flags(&[]));
    assert_eq!(removed(&r), vec!["batch"], "{r:?}");
    assert!(r.scale_down[0].evicted.is_empty(), "{r:?}");
}

#[test]
fn a_failed_pod_without_a_controller_does_not_keep_its_node() {
    let mut cluster = busy();
    cluster.push(node("failed", "small", "2", "8Gi"));
    let bare = owned_by(pod("a", "once", "100m", "100Mi", Some("failed"), ""), None);
    let r = one_loop(&[cluster.clone(), vec![bare.clone()]].concat(), &flags(&[]));
    assert_eq!(unremovable(&r, "failed"), "pod a/once has no controller");
    let r = one_loop(
        &[cluster, vec![format!("{bare}status: {{phase: Failed}}\n")]].concat(),
        &flags(&[]),
    );
    assert_eq!(removed(&r), vec!["failed"], "{r:?}");
}

#[test]
fn a_pod_terminating_past_its_grace_period_is_left_behind() {
    // The simulation starts at the node's creation, 100s after the pods were deleted.
    let mut cluster = busy();
    cluster.push(node("term", "small", "2", "8Gi").replace(
        "  name: term\n",
        "  name: term\n  creationTimestamp: \"2024-01-01T00:01:40Z\"\n",
    ));
    let deleted = |grace: u32| {
        owned_by(
            with_meta(
                pod("a", "stuck", "100m", "100Mi", Some("term"), ""),
                "  deletionTimestamp: \"2024-01-01T00:00:00Z\"\n",
            ),
            None,
        )
        .replace(
            "  containers:",
            &format!("  terminationGracePeriodSeconds: {grace}\n  containers:"),
        )
    };
    // 100s > 30s of grace + 30s: left behind, and the node is empty.
    let mut s = sim(&[cluster.clone(), vec![deleted(30)]].concat(), GROUPS);
    let r = s.step(&flags(&[]), &pacing());
    assert_eq!(removed(&r), vec!["term"], "{r:?}");
    assert!(r.scale_down[0].evicted.is_empty(), "{r:?}");
    let r = s.step(&flags(&[]), &pacing());
    assert_eq!(
        unremovable(&r, "busy"),
        "utilization 0.75 above threshold 0.50",
        "the pod went with its node, it did not move to busy: {r:?}"
    );
    // Within 90s of grace + 30s it is still a pod like any other: here one without a controller.
    let r = one_loop(&[cluster, vec![deleted(90)]].concat(), &flags(&[]));
    assert_eq!(unremovable(&r, "term"), "pod a/stuck has no controller");
}

#[test]
fn min_replica_count_keeps_the_pods_of_smaller_replica_sets() {
    let mut cluster = busy();
    cluster.push(node("web", "small", "2", "8Gi"));
    cluster.push(pod("a", "web-1", "100m", "100Mi", Some("web"), ""));
    cluster.push(
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs, namespace: a}\n\
         spec: {replicas: 2, selector: {matchLabels: {app: web-1}}, template: {metadata: {labels: {app: web-1}}, spec: {containers: []}}}\n"
            .into(),
    );
    let r = one_loop(&cluster, &flags(&["--min-replica-count", "3"]));
    assert_eq!(
        unremovable(&r, "web"),
        "pod a/web-1: its ReplicaSet has 2 replicas, fewer than --min-replica-count 3"
    );
    let r = one_loop(&cluster, &flags(&["--min-replica-count", "2"]));
    assert_eq!(removed(&r), vec!["web"], "{r:?}");
    let r = one_loop(
        &cluster,
        &flags(&[
            "--min-replica-count",
            "3",
            "--skip-nodes-with-custom-controller-pods=false",
        ]),
    );
    assert_eq!(removed(&r), vec!["web"], "the rule needs the flag: {r:?}");
}

#[test]
fn expendable_pods_neither_count_nor_keep_their_node() {
    let mut cluster = busy();
    cluster.push(node("cheap", "small", "2", "8Gi"));
    // 1.8 cpu, no controller, local storage: it would keep the node three times over.
    cluster.push(owned_by(
        pod(
            "a",
            "filler",
            "1800m",
            "1Gi",
            Some("cheap"),
            "  priority: -100\n  volumes: [{name: v, emptyDir: {}}]\n",
        ),
        None,
    ));
    let r = one_loop(&cluster, &flags(&[]));
    assert_eq!(removed(&r), vec!["cheap"], "{r:?}");
    assert!(r.scale_down[0].evicted.is_empty(), "{r:?}");
    let r = one_loop(
        &cluster,
        &flags(&["--expendable-pods-priority-cutoff", "-100"]),
    );
    assert!(
        unremovable(&r, "cheap").starts_with("utilization 0.90 above"),
        "not expendable at -100: {r:?}"
    );
}
