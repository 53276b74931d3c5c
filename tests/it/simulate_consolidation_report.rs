//! What `simulate` shows of consolidation before it happens: each loop's plans (nodes, new nodes, dollars
//! an hour saved, pods evicted) and the nodes declined with why in the JSON; `--compare-consolidation`'s
//! outcome per policy; the HTML report's cost with and without consolidation.

use crate::simulate_consolidation::{cluster, groups, OPTED_IN};
use crate::support::fixtures::dump::pod;
use crate::support::simulate_harness::{pacing, sim};

/// One 9-core replica on a node of group `a` ($1/h, 16 cores); group `cheap` has the same capacity at
/// `cheap`'s price and no node.
fn one_node(cheap: f64) -> (Vec<String>, String) {
    let node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: a-1\n  creationTimestamp: \"2026-01-01T00:00:00Z\"\n  labels: {ferroscale.io/node-group: a, kubernetes.io/hostname: a-1}\n\
                spec: {providerID: \"memory:///a/i-1\"}\n\
                status:\n  allocatable: {cpu: \"16\", memory: 64Gi, pods: \"110\"}\n  conditions: [{type: Ready, status: \"True\"}]\n";
    let groups = format!(
        r#"
nodeGroups:
  - {{name: a, minSize: 0, maxSize: 4, capacity: {{cpu: 16, memory: 64Gi, pods: 110}}, pricePerHour: 1.0,
     {OPTED_IN} instances: [{{id: i-1}}]}}
  - {{name: cheap, minSize: 0, maxSize: 4, capacity: {{cpu: 16, memory: 64Gi, pods: 110}}, pricePerHour: {cheap}}}
"#
    );
    (
        vec![
            node.to_string(),
            pod("shop", "web-1", "9", "1Gi", Some("a-1"), ""),
        ],
        groups,
    )
}

#[test]
fn each_loop_shows_its_consolidations_in_dollars_and_pods() {
    let mut s = sim(&cluster(), &groups(OPTED_IN));
    let settings = ferroscale::cli::flags::default_engine();
    let r = serde_json::to_value(s.step(&settings, &pacing())).unwrap();
    let plans = r["consolidations"]
        .as_array()
        .unwrap_or_else(|| panic!("{r:#}"));
    assert_eq!(plans.len(), 1, "{r:#}");
    let plan = &plans[0];
    assert_eq!(plan["action"], "replace");
    assert_eq!(plan["nodes"], serde_json::json!(["m5-0", "m5-1", "m5-2"]));
    assert_eq!(
        plan["into"],
        serde_json::json!([{"group": "big", "count": 1}])
    );
    let saving = plan["savingsPerHour"].as_f64().unwrap();
    assert!((saving - (3.0 * 0.768 - 1.224)).abs() < 1e-9, "{plan:#}");
    assert!((plan["pricePerHour"].as_f64().unwrap() - 3.0 * 0.768).abs() < 1e-9);
    assert_eq!(
        plan["podsEvicted"],
        serde_json::json!(["shop/web-0", "shop/web-1", "shop/web-2"])
    );
    assert_eq!(
        plan["reason"],
        "cheaper on 1 big: saves $1.0800/h of $2.3040/h (46.9%), 3 pods evicted"
    );
    // Right after, consolidation says why it looks for nothing new (the new capacity counts as a
    // scale-up: scale-down's cooldown).
    let next = serde_json::to_value(s.step(&settings, &pacing())).unwrap();
    assert!(next.get("consolidations").is_none(), "{next:#}");
    assert!(
        next["consolidationWaits"]
            .as_str()
            .is_some_and(|w| w.contains("--scale-down-delay-after-add")),
        "{next:#}"
    );
}

#[test]
fn a_five_percent_saving_is_declined_with_why_and_nothing_is_said_when_off() {
    let (c, g) = one_node(0.95);
    let mut s = sim(&c, &g);
    let settings = ferroscale::cli::flags::default_engine();
    let r = serde_json::to_value(s.step(&settings, &pacing())).unwrap();
    assert!(r.get("consolidations").is_none(), "{r:#}");
    assert_eq!(
        r["consolidationDeclined"],
        serde_json::json!([{"node": "a-1",
            "reason": "saving too small: $0.0500/h of $1.0000/h is below 10%"}]),
        "{r:#}"
    );
    // At 3% the same saving is taken.
    let mut s = sim(&c, &g);
    let mut three = ferroscale::cli::flags::default_engine();
    three.consolidation_min_savings = 0.03;
    let r = serde_json::to_value(s.step(&three, &pacing())).unwrap();
    assert_eq!(r["consolidations"][0]["into"][0]["group"], "cheap", "{r:#}");
    assert!(r.get("consolidationDeclined").is_none(), "{r:#}");
    // A group that does not opt in: no consolidation field at all (the report is as before).
    let mut s = sim(&c, &g.replace(OPTED_IN, ""));
    let r = serde_json::to_value(s.step(&settings, &pacing())).unwrap();
    for field in [
        "consolidations",
        "consolidationDeclined",
        "consolidationWaits",
    ] {
        assert!(r.get(field).is_none(), "{field}: {r:#}");
    }
}
