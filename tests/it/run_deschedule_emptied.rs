//! `run --deschedule-policy` with `HighNodeUtilization`, against the loopback Kubernetes API: the node the
//! plan empties is not evicted pod by pod by the descheduler; the next loop's scale-down removes it at once
//! through its path (the deletion taint, the drain's evictions, the instance deleted), counted as a
//! disruption of reason `descheduled`, though ordinary scale-down keeps it (above the utilization
//! threshold by memory).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::support::fixtures::kube::{node, pod, POOL};
use crate::support::kube_api::{KubeApi, NODES, PODS};
use crate::support::run_harness::{evictions, run_settings, Harness};
use ferroscale::deschedule::strategies::high_utilization::HighNodeUtilizationArgs;
use ferroscale::deschedule::{PluginArgs, Policy, Profile, Settings};
use ferroscale::descheduler::{Descheduler, DeschedulerSettings};
use ferroscale::k8s::events::Events;
use ferroscale::k8s::index::Index;
use ferroscale::k8s::watch::Watches;
use ferroscale::metrics::Metrics;
use ferroscale::run::RunSettings;
use ferroscale::time::unix_now as now;

/// `HighNodeUtilization` for nodes under 20% of their cpu.
pub(crate) fn pack() -> Policy {
    Policy {
        profiles: vec![Profile {
            name: "pack".into(),
            strategies: vec![PluginArgs::HighNodeUtilization(HighNodeUtilizationArgs {
                thresholds: BTreeMap::from([("cpu".to_string(), 20.0)]),
                ..HighNodeUtilizationArgs::default()
            })],
            ..Profile::default()
        }],
        ..Policy::default()
    }
}

/// `pool-a` with two pods of little cpu and 5Gi each (62% of its memory: scale-down keeps it), `pool-b`
/// at 52% of its cpu (scale-down needs it: the nodes it holds unneeded are no destination):
/// `HighNodeUtilization` packs `pool-a`'s pods onto `pool-b`.
pub(crate) fn objects() -> Vec<(&'static str, Value)> {
    let heavy = |name: &str| {
        let mut p = pod(name, "100m", Some("pool-a"), "web");
        p["spec"]["containers"][0]["resources"]["requests"]["memory"] = "5Gi".into();
        p
    };
    vec![
        ("Node", node("pool-a", "memory:///pool/i-a", "4", "16Gi")),
        ("Node", node("pool-b", "memory:///pool/i-b", "4", "16Gi")),
        ("Pod", heavy("web-1")),
        ("Pod", heavy("web-2")),
        ("Pod", pod("db", "2100m", Some("pool-b"), "db")),
    ]
}

pub(crate) fn settings() -> DeschedulerSettings {
    DeschedulerSettings {
        policy: Arc::new(pack()),
        interval: Duration::from_secs(300),
        plan: Settings::default(),
        dry_run: false,
    }
}

#[tokio::test]
async fn a_node_high_node_utilization_empties_is_tainted_drained_and_deleted_by_scale_down() {
    let api = KubeApi::start().await;
    for (kind, o) in objects() {
        api.put(if kind == "Node" { NODES } else { PODS }, o);
    }
    let run = RunSettings {
        deschedule: Some(settings()),
        ..run_settings()
    };
    let mut h = Harness::new(
        api.clone(),
        POOL,
        ferroscale::cli::flags::default_engine(),
        run,
    )
    .await;
    let t = now();
    let d = h.runner.run_once(t).await.unwrap();
    assert!(d.scale_down.is_empty(), "{d:?}");
    // The cycle after the loop evicted nothing itself: pool-a is handed to scale-down.
    assert_eq!(evictions(&api), 0);
    assert_eq!(
        h.runner.memory().emptying.keys().collect::<Vec<_>>(),
        ["pool-a"]
    );

    let d = h.runner.run_once(t + 10).await.unwrap();
    assert_eq!(d.scale_down.len(), 1, "{d:?}");
    assert_eq!(d.scale_down[0].node, "pool-a");
    assert_eq!(
        d.scale_down[0].reason.to_string(),
        "emptied by the descheduler"
    );
    let results = h.runner.settle().await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    // Tainted first, then drained: both pods through the eviction API, then the instance deleted.
    let requests = api.requests();
    let taint = requests
        .iter()
        .position(|r| r.starts_with("PATCH /api/v1/nodes/pool-a"))
        .expect("the deletion taint");
    let first_eviction = requests
        .iter()
        .position(|r| r.starts_with("POST") && r.contains("/eviction"))
        .expect("the drain's evictions");
    assert!(taint < first_eviction, "{requests:#?}");
    assert_eq!(evictions(&api), 2);
    assert!(api.get(PODS, "default", "web-1").is_none());
    assert!(api.get(PODS, "default", "web-2").is_none());
    assert!(api.get(PODS, "default", "db").is_some());
    let pool = h.group("pool");
    assert_eq!(pool.target_size, 1);
    assert!(pool.instances.iter().all(|i| !i.id.ends_with("i-a")));
    let m = h.metrics.encode();
    assert!(
        m.contains(r#"ferroscale_nodes_disrupted_total{reason="descheduled",node_group="pool"} 1"#),
        "{m}"
    );
    api.wait_for("the Descheduled event", |a| {
        !a.events("Descheduled").is_empty()
    })
    .await;
}

/// `ferroscale deschedule` runs beside upstream cluster-autoscaler, which removes empty nodes itself: the
/// descheduler evicts the emptied node's pods as the descheduler does.
#[tokio::test]
async fn beside_upstream_the_descheduler_evicts_the_emptied_nodes_pods_itself() {
    let api = KubeApi::start().await;
    for (kind, o) in objects() {
        api.put(if kind == "Node" { NODES } else { PODS }, o);
    }
    let watches = Watches::start(&api.client(), false);
    watches
        .ready(tokio::time::sleep(Duration::from_secs(10)))
        .await
        .unwrap();
    let mut index = Index::default();
    index.update(&watches, now());
    let client = api.client();
    let mut d = Descheduler::new(
        settings(),
        client.clone(),
        Events::none(),
        Metrics::default()
            .with_descheduler()
            .descheduler
            .clone()
            .unwrap(),
    );
    let mut cycle = d.cycle(&index, &Default::default(), now()).await;
    cycle.evicted.sort();
    assert_eq!(cycle.evicted, ["default/web-1", "default/web-2"]);
    assert!(cycle.emptying.is_empty());
    assert_eq!(evictions(&api), 2);
}
