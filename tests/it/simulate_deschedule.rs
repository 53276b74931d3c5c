//! `simulate --deschedule-policy`, in process with policies built in code: the descheduler's evictions
//! carried out in the simulated cluster as the cluster would (a failed pod deleted, a bare pod gone, a
//! controller's pod recreated and bound where the plan placed it), the cooldown across cycles, each
//! loop's JSON and the HTML report, and nothing of it without the flag. Policy files through the binary:
//! `simulate_deschedule_policy`.

use std::sync::Arc;
use std::time::Duration;

use ferroscale::actuator::Cluster;
use ferroscale::deschedule::strategies::failed::RemoveFailedPodsArgs;
use ferroscale::deschedule::strategies::lifetime::PodLifeTimeArgs;
use ferroscale::deschedule::{Eviction, PluginArgs, Policy, Profile, Settings, Strategy};
use ferroscale::model::workload::Pod;
use ferroscale::report::{page, ChainRun};
use ferroscale::simulate::{LoopReport, Simulation};
use serde_json::{json, Value};

use crate::support::fixtures::dump::{node, pod, GROUPS};
use crate::support::simulate_harness::{pacing, quick_scale_down, sim};

/// `pod` created at `at` (RFC 3339).
pub(crate) fn created(pod: String, at: &str) -> String {
    pod.replacen(
        "  ownerReferences:",
        &format!("  creationTimestamp: \"{at}\"\n  ownerReferences:"),
        1,
    )
}

pub(crate) const OLD: &str = "2024-01-01T00:00:00Z";
/// The newest object of the dumps below: the simulation starts then, a day after [`OLD`].
pub(crate) const NEW: &str = "2024-01-02T00:00:00Z";

/// `pod` a day old when the simulation starts.
pub(crate) fn old(pod: String) -> String {
    created(pod, OLD)
}

/// One profile of `strategies` with the default evictor.
fn policy(strategies: Vec<PluginArgs>) -> Policy {
    Policy {
        profiles: vec![Profile {
            name: "p".into(),
            strategies,
            ..Profile::default()
        }],
        ..Policy::default()
    }
}

/// PodLifeTime for pods over an hour old.
fn lifetime() -> PluginArgs {
    PluginArgs::PodLifeTime(PodLifeTimeArgs {
        max_pod_life_time_seconds: Some(3600),
        ..PodLifeTimeArgs::default()
    })
}

/// RemoveFailedPods for failed pods of any age.
fn failed_pods() -> PluginArgs {
    PluginArgs::RemoveFailedPods(RemoveFailedPodsArgs {
        min_pod_lifetime_seconds: None,
        ..RemoveFailedPodsArgs::default()
    })
}

/// A simulation of `cluster` descheduling with `policy` every `interval`, cooldown `cooldown`.
fn descheduling(cluster: &[String], policy: Policy, interval: u64, cooldown: i64) -> Simulation {
    let mut s = sim(cluster, GROUPS);
    s.set_descheduler(
        policy,
        Duration::from_secs(interval),
        Settings {
            cooldown_secs: cooldown,
        },
    );
    s
}

/// The binary's defaults (nodes unneeded for 10 minutes before they go).
fn step(s: &mut Simulation) -> (LoopReport, Value) {
    let r = s.step(&ferroscale::cli::flags::default_engine(), &pacing());
    let json = serde_json::to_value(&r).unwrap();
    (r, json)
}

/// A loop's declined proposals as (pod, reason).
pub(crate) fn declined(json: &Value) -> Vec<(String, String)> {
    json["deschedulingDeclined"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|d| {
                    (
                        d["pod"].as_str().unwrap().to_string(),
                        d["reason"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `pod` with its owner references gone: a bare pod.
fn bare(pod: String) -> String {
    pod.replace(
        "  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: u, controller: true}]\n",
        "",
    )
}

/// `pod` in phase Failed.
pub(crate) fn failed(pod: String) -> String {
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

/// The descheduler's `evictions`, asked of the simulated cluster at `now` one by one, as the descheduler
/// asks them (`Cluster::evict_once`).
fn deschedule(s: &Simulation, evictions: &[Eviction], now: i64) {
    let c = s.cluster();
    c.state().now = now;
    for e in evictions {
        let pod = c.state().evictee(&e.pod);
        futures::executor::block_on(c.evict_once(&pod, 30, &e.to));
    }
}

fn eviction(pod: Arc<Pod>, strategy: Strategy, to: &str) -> Eviction {
    Eviction {
        node: pod.node_name.clone().unwrap_or_default(),
        pod,
        strategy,
        profile: "default".into(),
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
    deschedule(
        &s,
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
    let now = s.now();
    deschedule(&s, &[eviction(web, Strategy::RemoveDuplicates, "b")], now);
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

/// Three nodes: `a` with an old pod, a fresh one and a failed one; `b` nearly full with an old pod that
/// no other node has room for; `c` with one fresh pod (an empty node is scale-down's first candidate, no
/// destination once found unneeded). (PodLifeTime would take the failed pod too: RemoveFailedPods
/// comes first in the policies below.)
fn three_nodes() -> Vec<String> {
    vec![
        node("a", "small", "2", "8Gi"),
        node("b", "small", "2", "8Gi"),
        node("c", "small", "2", "8Gi"),
        old(pod("web", "web-1", "500m", "1Gi", Some("a"), "")),
        created(pod("f", "fresh", "100m", "100Mi", Some("a"), ""), NEW),
        failed(old(pod("f", "crashed", "100m", "100Mi", Some("a"), ""))),
        old(pod("big", "big-1", "1950m", "1Gi", Some("b"), "")),
        created(pod("f", "fresh-c", "100m", "100Mi", Some("c"), ""), NEW),
    ]
}

#[test]
fn a_cycle_deletes_a_failed_pod_moves_an_old_one_and_declines_one_that_would_go_pending() {
    let mut s = descheduling(
        &three_nodes(),
        policy(vec![failed_pods(), lifetime()]),
        300,
        1800,
    );
    let (r, json) = step(&mut s);
    assert_eq!(
        json["evictions"],
        json!([
            {"pod": "f/crashed", "node": "a", "strategy": "RemoveFailedPods"},
            {"pod": "web/web-1", "node": "a", "strategy": "PodLifeTime", "to": "c"},
        ]),
        "{json}"
    );
    let declined = declined(&json);
    let big = declined.iter().find(|(p, _)| p == "big/big-1");
    assert!(
        big.is_some_and(|(_, why)| why.starts_with("no other node can take it")),
        "{declined:?}"
    );
    assert!(
        !declined.iter().any(|(p, _)| p == "f/fresh"),
        "{declined:?}"
    );
    assert_eq!(
        live(&s, "web-1").unwrap().node_name.as_deref(),
        Some("c"),
        "bound where the plan placed it"
    );
    assert_eq!(live(&s, "big-1").unwrap().node_name.as_deref(), Some("b"));
    assert!(s.cluster().state().failed.is_empty());
    let summary = ferroscale::simulate::summary(&r);
    assert!(
        summary.contains("descheduled [f/crashed (deleted), web/web-1 a->c]"),
        "{summary}"
    );
    // The next loop is within the interval: no cycle, nothing in its JSON.
    let (_, json) = step(&mut s);
    assert!(json.get("evictions").is_none(), "{json}");
    assert!(json.get("deschedulingDeclined").is_none(), "{json}");
}

#[test]
fn a_workload_moved_is_left_alone_for_the_cooldown_across_cycles() {
    let cluster = |ns: &str| {
        vec![
            node("a", "small", "2", "8Gi"),
            node("b", "small", "2", "8Gi"),
            created(pod(ns, "web-1", "500m", "1Gi", Some("a"), ""), OLD),
            created(pod(ns, "web-2", "500m", "1Gi", Some("a"), ""), OLD),
            created(pod("f", "fresh", "100m", "100Mi", Some("b"), ""), NEW),
        ]
    };
    let one_at_a_time = |cooldown: i64| {
        let mut p = policy(vec![lifetime()]);
        p.max_total = Some(1);
        descheduling(&cluster("web"), p, 10, cooldown)
    };
    let mut s = one_at_a_time(1800);
    let (_, first) = step(&mut s);
    let moved = first["evictions"].as_array().unwrap();
    assert_eq!(moved.len(), 1, "{first}");
    let other = if moved[0]["pod"] == "web/web-1" {
        "web/web-2"
    } else {
        "web/web-1"
    };
    assert!(
        declined(&first).contains(&(
            other.to_string(),
            "maxNoOfPodsToEvictTotal (1) reached".to_string()
        )),
        "{first}"
    );
    let (_, second) = step(&mut s);
    assert!(second.get("evictions").is_none(), "{second}");
    let why = declined(&second);
    assert!(
        why.iter()
            .any(|(p, r)| p == other && r.starts_with("its workload was moved recently")),
        "{why:?}"
    );
    // Without a cooldown the second cycle moves the other pod.
    let mut s = one_at_a_time(0);
    step(&mut s);
    let (_, second) = step(&mut s);
    assert_eq!(second["evictions"][0]["pod"], other, "{second}");
}

#[test]
fn the_report_lists_each_eviction_with_its_strategy_and_target() {
    let mut s = descheduling(
        &three_nodes(),
        policy(vec![failed_pods(), lifetime()]),
        300,
        1800,
    );
    let (r, _) = step(&mut s);
    let html = page(
        "t",
        &[ChainRun {
            chain: "least-waste".into(),
            prices: s.prices(),
            loops: vec![r],
        }],
    )
    .unwrap();
    assert!(
        html.contains("<td>evict (PodLifeTime)</td><td>web/web-1</td><td>from a to c</td>"),
        "{html}"
    );
    assert!(
        html.contains(
            "<td>evict (RemoveFailedPods)</td><td>f/crashed</td><td>failed pod deleted from a</td>"
        ),
        "{html}"
    );
    assert!(
        html.contains("<td>not evicted (PodLifeTime)</td><td>big/big-1</td><td>on b: no other node can take it"),
        "{html}"
    );
}
