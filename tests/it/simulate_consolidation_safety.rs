//! Consolidation's safety rules through `simulate` on the memory cloud: a do-not-disrupt pod keeps its
//! node, a disruption budget of 1 replaces one node at a time, a closed disruption window consolidates
//! nothing, and a spot pool interrupted recently (`--events`) is no target of a spot → spot move. Each
//! beside the same cluster where the rule does not hold back, which is consolidated.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::simulate_consolidation::{cluster, groups, OPTED_IN};
use crate::support::fixtures::dump::pod;
use crate::support::simulate_harness::{pacing, sim, ups};
use ferroscale::simulate::{parse_events, LoopReport, Pacing, Simulation};

/// Loops of `seconds` each; new nodes come at once.
fn every(seconds: u64) -> Pacing {
    Pacing {
        scan_interval: Duration::from_secs(seconds),
        ..pacing()
    }
}

/// Why consolidation declined `node` this loop, if it did.
fn declined<'a>(r: &'a LoopReport, node: &str) -> Option<&'a str> {
    r.consolidation_declined
        .iter()
        .find(|d| d.node.as_deref() == Some(node))
        .map(|d| d.reason.as_str())
}

/// The nodes of the simulated cluster now.
fn names(s: &Simulation) -> BTreeSet<String> {
    s.cluster()
        .state()
        .nodes
        .iter()
        .map(|n| n.name.clone())
        .collect()
}

/// The nodes the loop took out of service for consolidation.
fn consolidated(r: &LoopReport) -> Vec<&str> {
    r.disruptions
        .iter()
        .filter(|d| d.reason == "consolidation")
        .map(|d| d.node.as_str())
        .collect()
}

#[test]
fn a_do_not_disrupt_pod_keeps_its_node_and_says_so() {
    for key in [
        "ferroscale.io/do-not-disrupt",
        "karpenter.sh/do-not-disrupt",
    ] {
        // web-1 on m5-1 is annotated; m5-0 and m5-2 are alike but for that.
        let c: Vec<String> = cluster()
            .into_iter()
            .map(|doc| {
                if doc.contains("name: web-1\n") {
                    doc.replacen(
                        "metadata:\n",
                        &format!("metadata:\n  annotations: {{{key}: \"true\"}}\n"),
                        1,
                    )
                } else {
                    doc
                }
            })
            .collect();
        let mut s = sim(&c, &groups(OPTED_IN));
        let settings = ferroscale::cli::flags::default_engine();
        let first = s.step(&settings, &pacing());
        let json = serde_json::to_value(&first).unwrap();
        assert_eq!(
            json["consolidationDeclined"],
            serde_json::json!([{"node": "m5-1",
                "reason": "pod shop/web-1 is marked do-not-disrupt"}]),
            "{key}: {json:#}"
        );
        // The two others are replaced by one big node (without the annotation all three are:
        // simulate_consolidation's three_half_empty test).
        assert_eq!(
            json["consolidations"][0]["nodes"],
            serde_json::json!(["m5-0", "m5-2"]),
            "{key}: {json:#}"
        );
        let mut retired: Vec<String> = Vec::new();
        for _ in 0..10 {
            let r = s.step(&settings, &pacing());
            retired.extend(consolidated(&r).into_iter().map(String::from));
            assert!(
                !r.scale_down.iter().any(|d| d.node == "m5-1"),
                "{key}: {r:#?}"
            );
            assert!(
                r.consolidations
                    .iter()
                    .all(|p| !p.nodes.contains(&"m5-1".to_string())),
                "{key}: {r:#?}"
            );
            assert!(r.pending.is_empty(), "{key}: {r:#?}");
        }
        retired.sort();
        assert_eq!(retired, ["m5-0", "m5-2"], "{key}");
        let left = names(&s);
        assert!(left.contains("m5-1"), "{key}: {left:?}");
        assert!(
            !left.contains("m5-0") && !left.contains("m5-2"),
            "{key}: {left:?}"
        );
    }
}

/// The three half-empty m5 nodes' groups (m5 with `extra`), and group `small`: one 16-core node for
/// $0.612/h, the cheapest home of one 9-core replica.
fn with_small(extra: &str) -> String {
    format!(
        "{}  - {{name: small, minSize: 0, maxSize: 6, capacity: {{cpu: 16, memory: 64Gi, pods: 110}}, pricePerHour: 0.612}}\n",
        groups(extra)
    )
}

#[test]
fn a_budget_of_one_replaces_one_node_at_a_time() {
    let settings = ferroscale::cli::flags::default_engine();
    // With room for all three at once, one plan takes them all onto one big node.
    let mut s = sim(&cluster(), &with_small(OPTED_IN));
    let r = s.step(&settings, &pacing());
    assert_eq!(r.consolidations.len(), 1, "{r:#?}");
    assert_eq!(r.consolidations[0].nodes, ["m5-0", "m5-1", "m5-2"]);

    let mut s = sim(&cluster(), &with_small(&OPTED_IN.replace("100%", "1")));
    let (mut plans, mut retired) = (Vec::new(), Vec::new());
    let mut last = None;
    // A minute a loop: scale-down's 10-minute cooldown after each replacement's new node is 10 loops.
    for _ in 0..60 {
        let r = s.step(&settings, &every(60));
        for p in &r.consolidations {
            assert_eq!(p.nodes.len(), 1, "one node a plan: {r:#?}");
            assert_eq!(p.into.len(), 1);
            assert_eq!((p.into[0].group.as_str(), p.into[0].count), ("small", 1));
            plans.push(p.nodes[0].clone());
        }
        assert!(consolidated(&r).len() <= 1, "{r:#?}");
        retired.extend(consolidated(&r).into_iter().map(String::from));
        // From its plan until it is gone, an old node is out of service: never two at once.
        let present = names(&s);
        let out: Vec<&String> = plans.iter().filter(|n| present.contains(*n)).collect();
        assert!(out.len() <= 1, "{out:?} out at once: {r:#?}");
        last = Some(r);
    }
    let last = last.unwrap();
    plans.sort();
    assert_eq!(plans, ["m5-0", "m5-1", "m5-2"], "{last:#?}");
    retired.sort();
    assert_eq!(retired, plans, "{last:#?}");
    assert_eq!(last.nodes.get("m5").copied().unwrap_or(0), 0, "{last:#?}");
    assert_eq!(last.nodes["small"], 3, "{last:#?}");
    assert!(last.pending.is_empty(), "{last:#?}");
}

#[test]
fn a_closed_window_consolidates_nothing_until_it_opens() {
    // The snapshot is of 00:00 UTC; the window opens at 00:05 for an hour.
    let window = format!("{OPTED_IN} disruptionWindow: {{schedule: \"5 0 * * *\", duration: 1h}},");
    let mut s = sim(&cluster(), &groups(&window));
    let settings = ferroscale::cli::flags::default_engine();
    for _ in 0..30 {
        let r = s.step(&settings, &pacing());
        assert!(r.time < 300);
        assert!(
            r.consolidations.is_empty() && r.scale_up.is_empty() && r.disruptions.is_empty(),
            "{r:#?}"
        );
        for n in ["m5-0", "m5-1", "m5-2"] {
            assert_eq!(
                declined(&r, n),
                Some("group m5's disruption window is closed"),
                "{r:#?}"
            );
        }
    }
    let open = s.step(&settings, &pacing());
    assert_eq!(open.time, 300);
    assert!(open.consolidation_declined.is_empty(), "{open:#?}");
    assert_eq!(open.consolidations.len(), 1, "{open:#?}");
    assert_eq!(open.consolidations[0].nodes, ["m5-0", "m5-1", "m5-2"]);
}

/// Spot groups `a` (m5.4xlarge, $0.4/h, consolidating) and `b` (m6a.4xlarge, $0.2/h), in one zone.
const SPOT: &str = r#"
nodeGroups:
  - {name: a, minSize: 0, maxSize: 4, capacity: {cpu: 16, memory: 64Gi, pods: 110}, pricePerHour: 0.4,
     labels: {node.kubernetes.io/instance-type: m5.4xlarge, topology.kubernetes.io/zone: us-east-1a,
              eks.amazonaws.com/capacityType: SPOT},
     disruptionBudget: "100%", consolidation: {policy: WhenEmptyOrUnderutilized, after: 0s}}
  - {name: b, minSize: 0, maxSize: 4, capacity: {cpu: 16, memory: 64Gi, pods: 110}, pricePerHour: 0.2,
     labels: {node.kubernetes.io/instance-type: m6a.4xlarge, topology.kubernetes.io/zone: us-east-1a,
              eks.amazonaws.com/capacityType: SPOT}}
"#;

/// A spot node of `group` (instance type `ty`) running one 9-core replica: no two fit on one node.
fn spot_node(group: &str, ty: &str) -> Vec<String> {
    let name = format!("{group}-1");
    vec![
        format!(
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  creationTimestamp: \"2026-01-01T00:00:00Z\"\n  \
             labels: {{ferroscale.io/node-group: {group}, kubernetes.io/hostname: {name}, node.kubernetes.io/instance-type: {ty}, \
             topology.kubernetes.io/zone: us-east-1a, eks.amazonaws.com/capacityType: SPOT}}\n\
             spec: {{providerID: \"memory:///{group}/i-{group}1\"}}\n\
             status:\n  allocatable: {{cpu: \"16\", memory: 64Gi, pods: \"110\"}}\n  conditions: [{{type: Ready, status: \"True\"}}]\n"
        ),
        pod("shop", &format!("web-{group}"), "9", "1Gi", Some(&name), ""),
    ]
}

#[test]
fn no_spot_to_spot_move_onto_a_pool_interrupted_recently() {
    let c = [spot_node("a", "m5.4xlarge"), spot_node("b", "m6a.4xlarge")].concat();
    let settings = ferroscale::cli::flags::default_engine();
    // b's pool quiet: a-1 moves onto a new b node at once, half the price.
    let mut s = sim(&c, SPOT);
    let r = s.step(&settings, &pacing());
    assert_eq!(r.consolidations.len(), 1, "{r:#?}");
    assert_eq!(r.consolidations[0].nodes, ["a-1"]);
    assert_eq!(r.consolidations[0].into[0].group, "b");

    // b-1 gets a spot interruption warning: its pool (m6a.4xlarge in us-east-1a) was interrupted.
    let mut s = sim(&c, SPOT);
    let events = "- at: 0s\n  event:\n    source: aws.ec2\n    detail-type: EC2 Spot Instance Interruption Warning\n    detail: {instance-id: i-b1, instance-action: terminate}\n";
    s.set_events(parse_events(events).unwrap(), false);
    let first = s.step(&settings, &every(300));
    assert_eq!(consolidated(&first), Vec::<&str>::new());
    assert!(
        first
            .disruptions
            .iter()
            .any(|d| d.node == "b-1" && d.reason == "spot-interruption"),
        "{first:#?}"
    );
    // Its replica's new node comes from a: b's pool is short for now.
    assert_eq!(ups(&first), [("a", 1)], "{first:#?}");
    // For three hours (the pool's interruption stays recent), a's nodes stay on a, although b is
    // half the price; b's own avoidance (5 minutes) is long over.
    let mut moved = None;
    for _ in 0..48 {
        let r = s.step(&settings, &every(300));
        let onto_b = r
            .consolidations
            .iter()
            .any(|p| p.into.iter().any(|i| i.group == "b"));
        if r.time < 3 * 3600 {
            assert!(!onto_b, "{r:#?}");
            assert!(!r.scale_up.iter().any(|u| u.group == "b"), "{r:#?}");
        } else if onto_b && moved.is_none() {
            moved = Some(r.time);
        }
        assert!(r.pending.is_empty() || r.time < 600, "{r:#?}");
    }
    // Once it is no longer recent, the move is taken (both a nodes onto two b nodes).
    assert!(moved.is_some_and(|t| t < 4 * 3600), "{moved:?}");
}
