//! `simulate --deschedule-policy` with `HighNodeUtilization`: a node the plan empties is not evicted pod by
//! pod; it is handed to scale-down, which removes it at once through its path (taint, drain, delete) with
//! the reason `descheduled`, though ordinary scale-down would keep it (it is above the utilization
//! threshold). Its pods end on the other nodes and nothing is left pending.

use std::collections::BTreeMap;
use std::time::Duration;

use ferroscale::deschedule::strategies::high_utilization::HighNodeUtilizationArgs;
use ferroscale::deschedule::{PluginArgs, Policy, Profile, Settings};
use ferroscale::report::{page, ChainRun};
use ferroscale::simulate::{LoopReport, Simulation};
use serde_json::{json, Value};

use crate::support::fixtures::dump::{node, pod, GROUPS};
use crate::support::simulate_harness::{pacing, sim};

/// `HighNodeUtilization` for nodes under 60% of their cpu.
pub(crate) fn pack() -> Policy {
    Policy {
        profiles: vec![Profile {
            name: "pack".into(),
            strategies: vec![PluginArgs::HighNodeUtilization(HighNodeUtilizationArgs {
                thresholds: BTreeMap::from([("cpu".to_string(), 60.0)]),
                ..HighNodeUtilizationArgs::default()
            })],
            ..Profile::default()
        }],
        ..Policy::default()
    }
}

/// Three 4-cpu nodes of `small`: `a` at 55% (two pods of 1.1 cpu), `b` and `c` at 65%: each of `b` and
/// `c` has room for one of `a`'s pods.
pub(crate) fn underused() -> Vec<String> {
    vec![
        node("a", "small", "4", "16Gi"),
        node("b", "small", "4", "16Gi"),
        node("c", "small", "4", "16Gi"),
        pod("shop", "web-1", "1100m", "1Gi", Some("a"), ""),
        pod("shop", "web-2", "1100m", "1Gi", Some("a"), ""),
        pod("shop", "db-1", "2600m", "1Gi", Some("b"), ""),
        pod("shop", "db-2", "2600m", "1Gi", Some("c"), ""),
    ]
}

fn step(s: &mut Simulation, reports: &mut Vec<LoopReport>) -> Value {
    let r = s.step(&ferroscale::cli::flags::default_engine(), &pacing());
    let json = serde_json::to_value(&r).unwrap();
    reports.push(r);
    json
}

#[test]
fn a_node_high_node_utilization_empties_is_removed_by_scale_down_with_its_pods_on_the_others() {
    let mut reports = Vec::new();
    let mut s = sim(&underused(), GROUPS);
    // Without the descheduler `a` stays: 55% is above the utilization threshold (50%).
    let json = step(&mut s, &mut reports);
    let kept = json["unremovable"].as_array().unwrap();
    assert!(
        kept.iter()
            .any(|k| k["node"] == "a" && k["reason"].as_str().unwrap().contains("above threshold")),
        "{json}"
    );

    let mut s = sim(&underused(), GROUPS);
    reports.clear();
    s.set_descheduler(pack(), Duration::from_secs(300), Settings::default());
    let first = step(&mut s, &mut reports);
    assert_eq!(first["emptying"], json!(["a"]), "{first}");
    assert!(
        first.get("evictions").is_none(),
        "the drain evicts a's pods, not the descheduler: {first}"
    );
    let mut loops = vec![first];
    for _ in 0..10 {
        loops.push(step(&mut s, &mut reports));
    }
    let removal = loops
        .iter()
        .find(|l| l["disruptions"].as_array().is_some_and(|d| !d.is_empty()))
        .unwrap_or_else(|| panic!("no removal: {loops:?}"));
    assert_eq!(
        removal["disruptions"],
        json!([{"node": "a", "group": "small", "reason": "descheduled"}])
    );
    assert_eq!(removal["scaleDown"][0]["node"], "a", "{removal}");
    assert_eq!(removal["loop"], 2, "at once, not after the unneeded time");

    let state = s.cluster().state();
    let names: Vec<&str> = state.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["b", "c"]);
    let mut web: Vec<(&str, Option<&str>)> = state
        .pods
        .iter()
        .filter(|p| p.name.starts_with("web"))
        .map(|p| (p.name.as_str(), p.node_name.as_deref()))
        .collect();
    web.sort();
    assert_eq!(web.len(), 2);
    assert!(
        web.iter().all(|(_, n)| matches!(n, Some("b") | Some("c"))),
        "{web:?}"
    );
    assert_ne!(web[0].1, web[1].1, "one on each node");
    let last = loops.last().unwrap();
    assert_eq!(last["pending"], json!([]), "{last}");
    drop(state);

    let html = page(
        "t",
        &[ChainRun {
            chain: "least-waste".into(),
            prices: s.prices(),
            loops: reports,
        }],
    )
    .unwrap();
    for row in [
        "<td>empty (HighNodeUtilization)</td><td>a</td>",
        "<td>scale-down</td><td>a (small)</td><td>emptied by the descheduler; evicts shop/web-1, shop/web-2</td>",
    ] {
        assert!(html.contains(row), "{row}\n{html}");
    }
}
