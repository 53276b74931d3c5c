//! The actuator's eviction invariant: a removal evicts only pods bound, now, to the node it takes. A
//! decision naming a pod on another node (a bug upstream of the actuator) is refused, logged and counted
//! by `ferroscale_evictions_refused_total{reason="not_on_node"}`; the pod stays where it is.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fixtures::kube::{node, pod, POOL};
use ferroscale::actuator::{Actuator, DrainSettings};
use ferroscale::cloud::memory::MemoryConfig;
use ferroscale::engine::reasons::Removal;
use ferroscale::engine::{Decisions, Memory, ScaleDown};
use ferroscale::k8s::documents;
use ferroscale::metrics::Metrics;
use ferroscale::pricing::PriceOverrides;
use ferroscale::simulate::{SimView, Simulation};

/// A simulation of `objects` (as the loopback API's fixtures build them) read from a dump.
pub(crate) fn simulation(objects: Vec<(&str, Value)>) -> Simulation {
    let items: Vec<Value> = objects
        .into_iter()
        .map(|(kind, mut o)| {
            o["kind"] = json!(kind);
            o["apiVersion"] = json!(if kind == "PodDisruptionBudget" {
                "policy/v1"
            } else {
                "v1"
            });
            o
        })
        .collect();
    let dump = json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string();
    let objects = documents::parse(&dump, "cluster.json").unwrap();
    let config = MemoryConfig::parse(POOL).unwrap();
    Simulation::new(&objects, &config, &PriceOverrides::default()).unwrap()
}

#[test]
fn a_removal_refuses_to_evict_a_pod_bound_to_another_node_and_counts_it() {
    let sim = simulation(vec![
        ("Node", node("pool-a", "memory:///pool/i-a", "4", "16Gi")),
        ("Node", node("pool-b", "memory:///pool/i-b", "4", "16Gi")),
        ("Pod", pod("web-1", "200m", Some("pool-b"), "web")),
    ]);
    let metrics = Metrics::for_run();
    let cluster = sim.cluster().clone();
    let mut actuator = Actuator::new(
        sim.cloud(),
        cluster.clone(),
        metrics.autoscaler.clone().unwrap(),
        DrainSettings {
            max_pod_eviction_time: Duration::from_secs(10),
            max_graceful_termination: Duration::from_secs(10),
        },
        false,
    );
    // pool-a goes, and the decision names web-1, which is bound to pool-b.
    let d = Decisions {
        scale_down: vec![ScaleDown {
            node: "pool-a".into(),
            group: "pool".into(),
            reason: Removal {
                utilization: 0.0,
                threshold: 0.5,
                waited: 0,
                empty: false,
                unready: false,
                disruption: None,
            },
            evict: vec!["default/web-1".into()],
            left: vec![],
            daemon_sets: vec![],
        }],
        ..Decisions::default()
    };
    let view = SimView::of(&cluster, &d);
    let mut memory = Memory::default();
    futures::executor::block_on(actuator.act(&d, &view, &mut memory, sim.now()));
    let state = cluster.state();
    let web = state.pods.iter().find(|p| p.name == "web-1").unwrap();
    assert_eq!(web.node_name.as_deref(), Some("pool-b"), "not evicted");
    let scrape = metrics.encode();
    assert!(
        scrape.contains("ferroscale_evictions_refused_total{reason=\"not_on_node\"} 1"),
        "{scrape}"
    );
    let asked = scrape
        .lines()
        .filter(|l| l.starts_with("cluster_autoscaler_evicted_pods_total"))
        .any(|l| !l.ends_with(" 0"));
    assert!(!asked, "no eviction was asked for: {scrape}");
}
