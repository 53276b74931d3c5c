//! The descheduler on the live cluster (`ferroscale::descheduler`), against the loopback Kubernetes API:
//! what the watches feed it (failed pods kept apart from the autoscaling engine's), each planned eviction
//! asked of the eviction API once with its Event and the descheduler's metric, a PodDisruptionBudget's 429
//! leaving the pod for a later cycle, and `run` running a cycle every `--deschedule-interval`. Declined
//! proposals: `run_deschedule_declined`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::support::fixtures::kube::{node, pod, POOL};
use crate::support::kube_api::{KubeApi, NODES, PDBS, PODS, PRIORITYCLASSES};
use crate::support::run_harness::{evictions, run_settings, Harness};
use ferroscale::deschedule::args::PriorityThreshold;
use ferroscale::deschedule::strategies::{failed::RemoveFailedPodsArgs, lifetime::PodLifeTimeArgs};
use ferroscale::deschedule::{
    owner_key, Eviction, Plan, PluginArgs, Policy, Profile, Settings, Strategy,
};
use ferroscale::descheduler::{Descheduler, DeschedulerSettings};
use ferroscale::k8s::events::Events;
use ferroscale::k8s::index::Index;
use ferroscale::k8s::watch::Watches;
use ferroscale::metrics::Metrics;
use ferroscale::run::RunSettings;
use ferroscale::time::unix_now as now;

/// A policy of one profile `default` enabling `strategies` (with their default arguments).
pub(crate) fn policy(strategies: &[Strategy]) -> Policy {
    Policy {
        profiles: vec![Profile {
            name: "default".into(),
            strategies: strategies
                .iter()
                .map(|s| PluginArgs::default_for(*s))
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

pub(crate) fn settings(policy: Policy) -> DeschedulerSettings {
    DeschedulerSettings {
        policy: Arc::new(policy),
        interval: Duration::from_secs(300),
        plan: Settings::default(),
        dry_run: false,
    }
}

/// Two nodes; `web-1` and `web-2` of one ReplicaSet on `pool-b`, under a budget allowing `allowed`
/// disruptions; a failed pod still bound to `pool-a`.
pub(crate) async fn cluster(allowed: i64) -> KubeApi {
    let api = KubeApi::start().await;
    api.put(NODES, node("pool-a", "memory:///pool/i-a", "4", "16Gi"));
    api.put(NODES, node("pool-b", "memory:///pool/i-b", "4", "16Gi"));
    api.put(PODS, pod("web-1", "200m", Some("pool-b"), "web"));
    api.put(PODS, pod("web-2", "200m", Some("pool-b"), "web"));
    let mut failed = pod("job-1", "100m", Some("pool-a"), "job");
    failed["status"] = json!({"phase": "Failed", "reason": "Error"});
    failed["metadata"]["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job",
        "name": "job", "uid": "job-uid", "controller": true}]);
    api.put(PODS, failed);
    api.put(
        PDBS,
        json!({"metadata": {"name": "web", "namespace": "default"},
               "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1},
               "status": {"disruptionsAllowed": allowed}}),
    );
    api
}

/// The watches synced with `api` and an index brought up to date from them.
pub(crate) async fn indexed(api: &KubeApi) -> (Watches, Index) {
    let watches = Watches::start(&api.client(), false);
    watches
        .ready(tokio::time::sleep(Duration::from_secs(10)))
        .await
        .unwrap();
    let mut index = Index::default();
    index.update(&watches, now());
    (watches, index)
}

/// A descheduler against `api`, with its metrics.
pub(crate) fn descheduler(api: &KubeApi, policy: Policy) -> (Descheduler, Arc<Metrics>) {
    let metrics = Arc::new(Metrics::default().with_descheduler());
    let client = api.client();
    let d = Descheduler::new(
        settings(policy),
        client.clone(),
        Events::start(&client, "test-replica"),
        metrics.descheduler.clone().unwrap(),
    );
    (d, metrics)
}

/// A plan evicting `name` (on `pool-b`) for `strategy`, placed on `pool-a`.
fn evicting(index: &Index, name: &str, strategy: Strategy) -> Plan {
    let (pod, _) = index.pods.get(&format!("default/{name}")).unwrap();
    Plan {
        evictions: vec![Eviction {
            pod: pod.clone(),
            node: "pool-b".into(),
            strategy,
            profile: "default".into(),
            to: "pool-a".into(),
        }],
        ..Default::default()
    }
}

/// The sample of `descheduler_pods_evicted_total` with these labels, if any.
fn evicted_sample(metrics: &Metrics, result: &str, name: &str) -> Option<String> {
    let want = format!(
        "descheduler_pods_evicted_total{{result=\"{result}\",strategy=\"RemoveDuplicates\",profile=\"default\",namespace=\"default\",node=\"pool-b\"}}"
    );
    metrics
        .encode()
        .lines()
        .find(|l| l.starts_with(&want))
        .map(|l| l.replace(&want, name))
}

#[tokio::test]
async fn failed_pods_still_bound_are_indexed_apart_from_the_autoscalers_pods() {
    let api = cluster(1).await;
    let (_watches, index) = indexed(&api).await;
    let live: Vec<_> = index
        .pods
        .items()
        .iter()
        .map(|p| p.name.to_string())
        .collect();
    let failed: Vec<_> = index
        .failed
        .items()
        .iter()
        .map(|p| p.name.to_string())
        .collect();
    assert_eq!(live.len(), 2, "{live:?}");
    assert!(!live.contains(&"job-1".to_string()));
    assert_eq!(failed, ["job-1"]);
}

/// Waits until the pods' watch has delivered more than `seen` events.
async fn pod_events_past(watches: &Watches, seen: u64) {
    for _ in 0..400 {
        if watches.pods.events() > seen {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the pods' watch did not deliver the change");
}

#[tokio::test]
async fn a_pod_that_fails_moves_to_the_failed_pods_and_one_deleted_leaves_them() {
    let api = cluster(1).await;
    let (watches, mut index) = indexed(&api).await;
    let seen = watches.pods.events();
    api.update(
        PODS,
        "default",
        "web-1",
        json!({"status": {"phase": "Failed"}}),
    );
    pod_events_past(&watches, seen).await;
    index.update(&watches, now());
    assert!(index.pods.get("default/web-1").is_none());
    assert!(index.failed.get("default/web-1").is_some());
    let seen = watches.pods.events();
    api.delete(PODS, "default", "job-1");
    pod_events_past(&watches, seen).await;
    index.update(&watches, now());
    assert!(index.failed.get("default/job-1").is_none());
    assert_eq!(index.failed.items().len(), 1);
    assert_eq!(index.pods.items().len(), 1);
}

#[tokio::test]
async fn a_planned_eviction_is_asked_once_with_an_event_naming_the_strategy_and_target() {
    let api = cluster(1).await;
    let (_watches, index) = indexed(&api).await;
    let (mut d, metrics) = descheduler(&api, policy(&[Strategy::RemoveDuplicates]));
    let plan = evicting(&index, "web-1", Strategy::RemoveDuplicates);
    let done = d.carry_out(&index, &plan, now()).await;
    assert_eq!(done.evicted, ["default/web-1"]);
    assert!(api.get(PODS, "default", "web-1").is_none(), "evicted");
    assert_eq!(evictions(&api), 1);
    api.wait_for("the eviction's event", |a| {
        !a.events("RemoveDuplicates").is_empty()
    })
    .await;
    let (regarding, note) = api.events("RemoveDuplicates").remove(0);
    assert_eq!(regarding, "web-1");
    assert!(note.contains("pool-b") && note.contains("pool-a"), "{note}");
    assert_eq!(
        evicted_sample(&metrics, "success", "x").as_deref(),
        Some("x 1")
    );
    // Remembered for the cooldown, by owner.
    let (pod, _) = index.pods.get("default/web-1").unwrap();
    assert!(d.history().last(&owner_key(pod)).is_some());
}

#[tokio::test]
async fn a_budget_allowing_no_disruption_leaves_the_pod_for_a_later_cycle() {
    let api = cluster(0).await;
    let (_watches, index) = indexed(&api).await;
    let (mut d, metrics) = descheduler(&api, policy(&[Strategy::RemoveDuplicates]));
    let plan = evicting(&index, "web-1", Strategy::RemoveDuplicates);
    let done = d.carry_out(&index, &plan, now()).await;
    assert_eq!(done.refused, ["default/web-1"]);
    assert!(done.evicted.is_empty());
    assert!(api.get(PODS, "default", "web-1").is_some(), "still there");
    // One request, no retry within the cycle.
    assert_eq!(evictions(&api), 1);
    assert_eq!(
        evicted_sample(&metrics, "error", "x").as_deref(),
        Some("x 1")
    );
    assert!(evicted_sample(&metrics, "success", "x").is_none());
    assert!(d.history().is_empty(), "nothing moved, nothing remembered");
    assert!(api.events("RemoveDuplicates").is_empty());
}

#[tokio::test]
async fn dry_run_evicts_nothing_and_counts_what_it_would() {
    let api = cluster(1).await;
    let (_watches, index) = indexed(&api).await;
    let metrics = Arc::new(Metrics::default().with_descheduler());
    let mut d = Descheduler::new(
        DeschedulerSettings {
            dry_run: true,
            ..settings(policy(&[Strategy::RemoveDuplicates]))
        },
        api.client(),
        Events::none(),
        metrics.descheduler.clone().unwrap(),
    );
    let plan = evicting(&index, "web-1", Strategy::RemoveDuplicates);
    let done = d.carry_out(&index, &plan, now()).await;
    assert_eq!(done.evicted, ["default/web-1"]);
    assert_eq!(evictions(&api), 0);
    assert!(api.get(PODS, "default", "web-1").is_some());
    assert_eq!(
        evicted_sample(&metrics, "success", "x").as_deref(),
        Some("x 1")
    );
}

#[tokio::test]
async fn run_deschedules_after_its_loop_every_interval() {
    let api = cluster(1).await;
    let run = RunSettings {
        deschedule: Some(settings(policy(&[Strategy::RemoveFailedPods]))),
        ..run_settings()
    };
    let mut h = Harness::new(api, POOL, ferroscale::cli::flags::default_engine(), run).await;
    let cycles = |h: &Harness| {
        h.metrics
            .encode()
            .lines()
            .find(|l| l.starts_with("descheduler_loop_duration_seconds_count"))
            .map(|l| l.rsplit(' ').next().unwrap().to_string())
    };
    let t = now();
    h.runner.run_once(t).await.unwrap();
    assert_eq!(cycles(&h).as_deref(), Some("1"));
    // The next loop, within --deschedule-interval: no cycle.
    h.runner.run_once(t + 10).await.unwrap();
    assert_eq!(cycles(&h).as_deref(), Some("1"));
    // The cycle's evictions run in the background; once done, the next cycle is due after the interval.
    h.runner.settle().await;
    h.runner.run_once(t + 300).await.unwrap();
    assert_eq!(cycles(&h).as_deref(), Some("2"));
    // Each cycle times each strategy under the descheduler's name and labels.
    let strategy_runs = h
        .metrics
        .encode()
        .lines()
        .find(|l| {
            l.starts_with("descheduler_strategy_duration_seconds_count")
                && l.contains("strategy=\"RemoveFailedPods\"")
        })
        .map(|l| l.rsplit(' ').next().unwrap().to_string());
    assert_eq!(strategy_runs.as_deref(), Some("2"));
}

/// `run` with RemoveFailedPods and PodLifeTime (every pod older than a second), a budget allowing one
/// disruption of `web`.
pub(crate) fn lifetime_policy() -> Policy {
    Policy {
        profiles: vec![Profile {
            name: "default".into(),
            strategies: vec![
                PluginArgs::RemoveFailedPods(RemoveFailedPodsArgs {
                    min_pod_lifetime_seconds: Some(0),
                    ..Default::default()
                }),
                PluginArgs::PodLifeTime(PodLifeTimeArgs {
                    max_pod_life_time_seconds: Some(1),
                    ..Default::default()
                }),
            ],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[tokio::test]
async fn run_evicts_what_the_plan_keeps_and_not_the_same_workload_again_within_the_cooldown() {
    let api = cluster(1).await;
    let run = RunSettings {
        deschedule: Some(settings(lifetime_policy())),
        ..run_settings()
    };
    // No scale-down: the loops span the cooldown, and the half-empty nodes would go meanwhile.
    let engine = ferroscale::engine::Settings {
        scale_down_enabled: false,
        ..ferroscale::cli::flags::default_engine()
    };
    let mut h = Harness::new(api.clone(), POOL, engine, run).await;
    let t = now() + 60;
    h.runner.run_once(t).await.unwrap();
    // The evictions run in the background, off the loop.
    h.runner.settle().await;
    // The failed pod goes; of web's two pods the budget lets one go, placed on the other node.
    assert!(api.get(PODS, "default", "job-1").is_none());
    let left: Vec<bool> = ["web-1", "web-2"]
        .iter()
        .map(|p| api.get(PODS, "default", p).is_some())
        .collect();
    assert_eq!(left.iter().filter(|l| !**l).count(), 1, "{left:?}");
    let gone = if left[0] { "web-2" } else { "web-1" };
    let stays = if left[0] { "web-1" } else { "web-2" };
    assert_eq!(evictions(&api), 2);
    api.wait_for("the events", |a| {
        !a.events("PodLifeTime").is_empty() && !a.events("RemoveFailedPods").is_empty()
    })
    .await;
    let (regarding, note) = api.events("PodLifeTime").remove(0);
    assert_eq!(regarding, gone);
    assert!(
        note.contains("from node pool-b") && note.contains("on pool-a"),
        "{note}"
    );
    let scrape = h.metrics.encode();
    for (strategy, node) in [("PodLifeTime", "pool-b"), ("RemoveFailedPods", "pool-a")] {
        let sample = format!("descheduler_pods_evicted_total{{result=\"success\",strategy=\"{strategy}\",profile=\"default\",namespace=\"default\",node=\"{node}\"}} 1");
        assert!(scrape.contains(&sample), "{sample}\n{scrape}");
    }

    // The budget allows another disruption again, the next cycle is due: the other pod of the same
    // ReplicaSet stays, its workload moved within the cooldown.
    let seen = h.watches.pdbs.events();
    api.update(
        PDBS,
        "default",
        "web",
        json!({"status": {"disruptionsAllowed": 1}}),
    );
    for _ in 0..400 {
        if h.watches.pdbs.events() > seen {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        h.watches.pdbs.events() > seen,
        "the budget's change reached the watch"
    );
    h.runner.run_once(t + 300).await.unwrap();
    h.runner.settle().await;
    assert!(api.get(PODS, "default", stays).is_some());
    assert_eq!(evictions(&api), 2);
    // Past the cooldown it goes.
    h.runner.run_once(t + 300 + 1800).await.unwrap();
    h.runner.settle().await;
    assert!(api.get(PODS, "default", stays).is_none());
    assert_eq!(evictions(&api), 3);
}

#[tokio::test]
async fn a_priority_threshold_by_class_name_reads_the_class() {
    let api = cluster(1).await;
    api.put(
        PRIORITYCLASSES,
        json!({"metadata": {"name": "important"}, "value": 1000}),
    );
    let (_watches, index) = indexed(&api).await;
    let mut policy = lifetime_policy();
    // Pods below the class's value (these, at 0) may go; without the value every pod would be kept.
    policy.profiles[0].evictor.priority_threshold = Some(PriorityThreshold {
        value: None,
        name: "important".into(),
    });
    let (mut d, _) = descheduler(&api, policy);
    let done = d.cycle(&index, &Default::default(), now() + 60).await;
    assert_eq!(done.evicted.len(), 2, "{done:?}");
    assert!(api
        .requests()
        .iter()
        .any(|r| r.starts_with("GET /apis/scheduling.k8s.io/v1/priorityclasses/important")));
}

#[tokio::test]
async fn a_cycles_evictions_run_in_the_background_and_do_not_hold_the_loop() {
    let api = cluster(1).await;
    // The eviction API does not answer the failed pod's eviction until released.
    api.hold("POST /api/v1/namespaces/default/pods/job-1/eviction");
    let run = RunSettings {
        deschedule: Some(settings(policy(&[Strategy::RemoveFailedPods]))),
        ..run_settings()
    };
    let mut h = Harness::new(
        api.clone(),
        POOL,
        ferroscale::cli::flags::default_engine(),
        run,
    )
    .await;
    let t = now() + 60;
    // The loop ends with the eviction still unanswered: asked, held, the pod still there.
    h.runner.run_once(t).await.unwrap();
    api.wait_for("the eviction to be asked", |a| evictions(a) == 1)
        .await;
    assert!(api.get(PODS, "default", "job-1").is_some());
    api.release();
    h.runner.settle().await;
    assert!(api.get(PODS, "default", "job-1").is_none(), "evicted");
    assert_eq!(evictions(&api), 1);
    let scrape = h.metrics.encode();
    let sample = "descheduler_pods_evicted_total{result=\"success\",strategy=\"RemoveFailedPods\",profile=\"default\",namespace=\"default\",node=\"pool-a\"} 1";
    assert!(scrape.contains(sample), "{scrape}");
}

#[tokio::test]
async fn each_eviction_gives_the_policys_grace_period_else_the_pods_own() {
    let api = cluster(2).await;
    let (_watches, index) = indexed(&api).await;
    let dedup = || policy(&[Strategy::RemoveDuplicates]);
    let with_grace = Policy {
        grace_period_seconds: Some(5),
        ..dedup()
    };
    let (mut d, _) = descheduler(&api, with_grace);
    let plan = evicting(&index, "web-1", Strategy::RemoveDuplicates);
    assert_eq!(d.carry_out(&index, &plan, now()).await.evicted.len(), 1);
    let (mut d, _) = descheduler(&api, dedup());
    let plan = evicting(&index, "web-2", Strategy::RemoveDuplicates);
    assert_eq!(d.carry_out(&index, &plan, now()).await.evicted.len(), 1);
    // gracePeriodSeconds: 5 sent as the descheduler sends it; without it, the pod's own (30: none set).
    assert_eq!(
        api.eviction_graces(),
        [
            ("default/web-1".to_string(), Some(5)),
            ("default/web-2".to_string(), Some(30))
        ]
    );
}
