//! `simulate --deschedule-policy`: the descheduler's evictions carried out in the simulated cluster as
//! the cluster would (a failed pod deleted, a bare pod gone, a controller's pod recreated and bound where
//! the plan placed it), listed in each loop's JSON and the HTML report, and nothing of it without the
//! flag; a policy file the parser refuses stops the command, naming the file and the field.

use std::sync::Arc;

use ferroscale::deschedule::{Eviction, Strategy};
use ferroscale::model::workload::Pod;
use ferroscale::simulate::Simulation;

use crate::support::fixtures::dump::{node, pod, GROUPS};
use crate::support::process::run_failing;
use crate::support::simulate_harness::{pacing, quick_scale_down, sim};

/// `pod` with its owner references gone: a bare pod.
fn bare(pod: String) -> String {
    pod.replace(
        "  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: u, controller: true}]\n",
        "",
    )
}

/// `pod` in phase Failed.
fn failed(pod: String) -> String {
    format!("{pod}status: {{phase: Failed, reason: Evicted}}\n")
}

/// A live pod of the simulation, by name.
fn live(s: &Simulation, name: &str) -> Option<Arc<Pod>> {
    s.cluster()
        .state()
        .pods
        .iter()
        .find(|p| p.name == name)
        .cloned()
}

fn eviction(pod: Arc<Pod>, strategy: Strategy, to: &str) -> Eviction {
    Eviction {
        node: pod.node_name.clone().unwrap_or_default(),
        pod,
        strategy,
        to: to.into(),
    }
}

#[test]
fn evictions_delete_a_failed_pod_drop_a_bare_one_and_bind_a_controllers_where_planned() {
    let cluster = vec![
        node("a", "small", "2", "8Gi"),
        node("b", "small", "2", "8Gi"),
        pod("d", "web-1", "500m", "1Gi", Some("a"), ""),
        pod("d", "web-2", "500m", "1Gi", Some("a"), ""),
        bare(pod("d", "lone", "100m", "100Mi", Some("a"), "")),
        failed(pod("d", "crashed", "100m", "100Mi", Some("a"), "")),
    ];
    let s = sim(&cluster, GROUPS);
    let crashed = s.cluster().state().failed.first().cloned();
    let crashed = crashed.expect("the dump's failed pod is kept apart");
    assert_eq!(crashed.name, "crashed");
    let web = live(&s, "web-2").unwrap();
    let lone = live(&s, "lone").unwrap();
    let now = s.now() + 60;
    s.cluster().deschedule(
        &[
            eviction(crashed, Strategy::RemoveFailedPods, ""),
            eviction(web, Strategy::RemoveDuplicates, "b"),
            eviction(lone, Strategy::PodLifeTime, "b"),
        ],
        now,
    );
    assert!(s.cluster().state().failed.is_empty());
    assert!(live(&s, "lone").is_none(), "nothing recreates a bare pod");
    let web = live(&s, "web-2").unwrap();
    assert_eq!(web.node_name.as_deref(), Some("b"));
    assert_eq!(web.meta.created, now, "a replacement is a new pod");
    assert_eq!(
        live(&s, "web-1").unwrap().node_name.as_deref(),
        Some("a"),
        "the pods not evicted stay"
    );
}

#[test]
fn a_replacement_its_planned_node_no_longer_takes_waits_for_the_scheduler() {
    let cluster = vec![
        node("a", "small", "2", "8Gi"),
        node("b", "small", "2", "8Gi"),
        pod("d", "web", "1500m", "1Gi", Some("a"), ""),
        pod("d", "hog", "1500m", "1Gi", Some("b"), ""),
    ];
    let mut s = sim(&cluster, GROUPS);
    let web = live(&s, "web").unwrap();
    s.cluster()
        .deschedule(&[eviction(web, Strategy::RemoveDuplicates, "b")], s.now());
    assert_eq!(live(&s, "web").unwrap().node_name, None, "pending");
    // The next loop's scheduler binds it where it fits: its old node.
    let r = s.step(&quick_scale_down(), &pacing());
    assert!(r.pending.is_empty(), "{r:?}");
    assert_eq!(live(&s, "web").unwrap().node_name.as_deref(), Some("a"));
}

#[test]
fn without_the_flag_a_loops_json_has_no_descheduling_keys() {
    let cluster = vec![
        node("a", "small", "2", "8Gi"),
        failed(pod("d", "crashed", "100m", "100Mi", Some("a"), "")),
    ];
    let r = sim(&cluster, GROUPS).step(&quick_scale_down(), &pacing());
    let json = serde_json::to_value(&r).unwrap();
    assert!(json.get("evictions").is_none(), "{json}");
    assert!(json.get("deschedulingDeclined").is_none(), "{json}");
}

#[test]
fn a_policy_file_the_parser_refuses_stops_simulate_naming_the_file_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.yaml");
    std::fs::write(&cluster, node("a", "small", "2", "8Gi")).unwrap();
    let groups = dir.path().join("groups.yaml");
    std::fs::write(&groups, GROUPS).unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  \
         plugins:\n    deschedule:\n      enabled: [RemoveEverything]\n",
    )
    .unwrap();
    let (code, err) = run_failing(&[
        "simulate",
        "--cluster",
        cluster.to_str().unwrap(),
        "--node-groups",
        groups.to_str().unwrap(),
        "--deschedule-policy",
        policy.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("--deschedule-policy {}", policy.display())),
        "{err}"
    );
    let (code, err) = run_failing(&[
        "simulate",
        "--cluster",
        cluster.to_str().unwrap(),
        "--node-groups",
        groups.to_str().unwrap(),
        "--deschedule-policy",
        "/nonexistent/policy.yaml",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--deschedule-policy /nonexistent/policy.yaml"),
        "{err}"
    );
}
