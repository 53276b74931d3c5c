//! `simulate`'s cluster answers evictions as the eviction API does, so a preview never shows an eviction
//! `run` would be refused: a PodDisruptionBudget is counted down per eviction and refuses past its
//! allowance (the refusals are in the loop's `evictionsRefused`), the allowance recovering as the PDB
//! controller would; an eviction naming another incarnation of the pod is not carried out.

use ferroscale::actuator::{Attempt, Cluster};
use ferroscale::simulate::{parse_events, Simulation};

use crate::support::simulate_harness::{pacing, sim};

const GROUPS: &str = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 10, capacity: {cpu: 4, memory: 16Gi, pods: 20}}
"#;

fn node(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {{ferroscale.io/node-group: pool, kubernetes.io/hostname: {name}}}\n\
         spec: {{providerID: \"memory:///pool/i-{name}\"}}\n\
         status:\n  allocatable: {{cpu: \"4\", memory: 16Gi, pods: \"20\"}}\n  conditions: [{{type: Ready, status: \"True\"}}]\n"
    )
}

/// A replica of `web` (under the budget) on `node`, busy enough that no node is scaled down.
fn web(name: &str, node: &str) -> String {
    crate::support::fixtures::dump::pod("shop", name, "3", "1Gi", Some(node), "")
        .replace("labels: {app: ", "labels: {tier: web, app: ")
}

/// A budget over the `web` replicas allowing one disruption.
const BUDGET: &str = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web, namespace: shop}\n\
                      spec: {selector: {matchLabels: {tier: web}}, maxUnavailable: 1}\nstatus: {disruptionsAllowed: 1}\n";

fn cluster() -> Simulation {
    let mut objects = Vec::new();
    for n in ["n1", "n2", "n3"] {
        objects.push(node(n));
        objects.push(web(&format!("web-{n}"), n));
    }
    objects.push(BUDGET.into());
    sim(&objects, GROUPS)
}

#[test]
fn a_budget_allowing_one_lets_one_eviction_through_when_three_nodes_drain_in_one_loop() {
    let mut s = cluster();
    // Three spot warnings at once: the three nodes are drained in the same loop.
    let mut events = String::new();
    for n in ["n1", "n2", "n3"] {
        events.push_str(&format!(
            "- at: 0s\n  event:\n    source: aws.ec2\n    detail-type: EC2 Spot Instance Interruption Warning\n    detail: {{instance-id: i-{n}}}\n"
        ));
    }
    s.set_events(parse_events(&events).unwrap(), false);
    let r = s.step(&ferroscale::cli::flags::default_engine(), &pacing());
    assert_eq!(r.disruptions.len(), 3, "{r:?}");
    let refused: Vec<&str> = r.evictions_refused.iter().map(|e| e.pod.as_str()).collect();
    assert_eq!(refused.len(), 2, "at most one eviction accepted: {r:?}");
    assert!(
        refused.iter().all(|p| p.starts_with("shop/web-")),
        "{refused:?}"
    );
    assert!(
        r.evictions_refused
            .iter()
            .all(|e| e.reason.contains("429") && e.reason.contains("shop/web")),
        "{r:?}"
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["evictionsRefused"].as_array().map(Vec::len), Some(2));
}

#[test]
fn the_allowance_is_counted_down_recovers_once_the_pod_runs_again_and_spares_a_new_incarnation() {
    let s = cluster();
    let c = s.cluster().clone();
    let named = |name: &str| {
        let state = c.state();
        let p = state.pods.iter().find(|p| p.name == name).unwrap().clone();
        state.evictee(&p)
    };
    let first = named("web-n1");
    let second = named("web-n2");
    let evict = |p| futures::executor::block_on(c.evict_once(p, 30, ""));
    assert_eq!(evict(&first), Attempt::Evicted);
    assert!(matches!(evict(&second), Attempt::Refused(why) if why.contains("429")));
    // The evicted pod's replacement is pending: the budget allows nothing yet.
    c.state().recount_budgets();
    assert_eq!(c.state().pdbs[0].disruptions_allowed, 0);
    // The eviction named the old incarnation: the replacement under the same name is not taken.
    assert_eq!(evict(&first), Attempt::Gone);
    // Once it runs again the PDB controller allows one disruption again.
    c.schedule();
    c.state().recount_budgets();
    assert_eq!(c.state().pdbs[0].disruptions_allowed, 1);
    assert_eq!(evict(&second), Attempt::Evicted);
}
