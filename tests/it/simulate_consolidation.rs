//! Consolidation through `simulate` on the memory cloud: a group opting in (`consolidation:` in its
//! config) has its half-empty nodes replaced by a cheaper group's node, surge first; without the field
//! (the default `Never`) nothing changes.

use crate::support::fixtures::dump::pod;
use crate::support::simulate_harness::{pacing, sim};

/// Three m5.4xlarge-like nodes ($0.768/h) of group `m5` (with `extra` config), and group `big`
/// (32 cores, $1.224/h) with no node.
pub(crate) fn groups(extra: &str) -> String {
    format!(
        r#"
nodeGroups:
  - {{name: m5, minSize: 0, maxSize: 6, capacity: {{cpu: 16, memory: 64Gi, pods: 110}}, pricePerHour: 0.768,
     {extra} instances: [{{id: i-0}}, {{id: i-1}}, {{id: i-2}}]}}
  - {{name: big, minSize: 0, maxSize: 6, capacity: {{cpu: 32, memory: 128Gi, pods: 110}}, pricePerHour: 1.224}}
"#
    )
}

/// Each node runs one 9-core replica, which fits on no other of them.
pub(crate) fn cluster() -> Vec<String> {
    let mut c = Vec::new();
    for k in 0..3 {
        c.push(format!(
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: m5-{k}\n  creationTimestamp: \"2026-01-01T00:00:00Z\"\n  labels: {{ferroscale.io/node-group: m5, kubernetes.io/hostname: m5-{k}}}\n\
             spec: {{providerID: \"memory:///m5/i-{k}\"}}\n\
             status:\n  allocatable: {{cpu: \"16\", memory: 64Gi, pods: \"110\"}}\n  conditions: [{{type: Ready, status: \"True\"}}]\n"
        ));
        c.push(pod(
            "shop",
            &format!("web-{k}"),
            "9",
            "1Gi",
            Some(&format!("m5-{k}")),
            "",
        ));
    }
    c
}

pub(crate) const OPTED_IN: &str =
    "disruptionBudget: \"100%\", consolidation: {policy: WhenEmptyOrUnderutilized, after: 0s},";

#[test]
fn three_half_empty_nodes_move_to_one_cheaper_node_new_capacity_first() {
    let mut s = sim(&cluster(), &groups(OPTED_IN));
    let settings = ferroscale::cli::flags::default_engine();
    let r = s.step(&settings, &pacing());
    assert_eq!(r.replacements.len(), 1, "{r:#?}");
    assert_eq!(r.replacements[0].group, "big");
    assert_eq!(r.replacements[0].delta, 1);
    assert_eq!(r.replacements[0].for_nodes, ["m5-0", "m5-1", "m5-2"]);
    assert!(
        r.disruptions.is_empty() && r.scale_down.is_empty(),
        "surge first: {r:#?}"
    );
    let mut retired = Vec::new();
    let mut last = r;
    for _ in 0..6 {
        last = s.step(&settings, &pacing());
        retired.extend(
            last.disruptions
                .iter()
                .map(|x| (x.node.clone(), x.reason.clone())),
        );
    }
    retired.sort();
    let why = |n: &str| (n.to_string(), "consolidation".to_string());
    assert_eq!(
        retired,
        [why("m5-0"), why("m5-1"), why("m5-2")],
        "{last:#?}"
    );
    assert_eq!(last.nodes.get("m5").copied().unwrap_or(0), 0, "{last:#?}");
    assert_eq!(last.nodes["big"], 1, "{last:#?}");
    assert!(last.pending.is_empty(), "every pod has a place: {last:#?}");
}

#[test]
fn without_the_field_nothing_is_consolidated_and_a_bad_policy_is_refused() {
    let mut s = sim(&cluster(), &groups(""));
    let settings = ferroscale::cli::flags::default_engine();
    for _ in 0..3 {
        let r = s.step(&settings, &pacing());
        assert!(r.replacements.is_empty() && r.scale_up.is_empty(), "{r:#?}");
    }
    let config = ferroscale::cloud::memory::MemoryConfig::parse(&groups(
        "consolidation: {policy: Sometimes},",
    ))
    .unwrap();
    let bad = ferroscale::cloud::memory::MemoryCloud::new(&config)
        .err()
        .expect("an unknown policy is refused");
    assert!(bad.to_string().contains("consolidation.policy"), "{bad}");
}
