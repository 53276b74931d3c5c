//! Consolidation's `after` through `simulate`, as Karpenter counts `consolidateAfter`: from the last pod
//! added to or removed from the node. After an HPA scale-in the node it emptied out is not consolidated
//! before `after` has passed since the removal, and is once it has; the node's own do-not-disrupt keeps
//! it from consolidation whatever its pods.

use crate::simulate_consolidation::{cluster as three_half_empty, groups as m5_and_big, OPTED_IN};
use crate::support::fixtures::dump::pod;
use crate::support::simulate_harness::{pacing, sim};

/// Two 16-core m5 nodes created at midnight; `after` 10m.
const GROUPS: &str = r#"
nodeGroups:
  - {name: m5, minSize: 0, maxSize: 4, capacity: {cpu: 16, memory: 64Gi, pods: 110}, pricePerHour: 0.768,
     disruptionBudget: "100%", consolidation: {policy: WhenEmptyOrUnderutilized, after: 10m},
     instances: [{id: i-0}, {id: i-1}]}
"#;

fn node(k: usize) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: m5-{k}\n  creationTimestamp: \"2026-01-01T00:00:00Z\"\n  labels: {{ferroscale.io/node-group: m5, kubernetes.io/hostname: m5-{k}}}\n\
         spec: {{providerID: \"memory:///m5/i-{k}\"}}\n\
         status:\n  allocatable: {{cpu: \"16\", memory: 64Gi, pods: \"110\"}}\n  conditions: [{{type: Ready, status: \"True\"}}]\n"
    )
}

/// m5-0 runs a do-not-disrupt pod created an hour after midnight (the simulation starts then); m5-1
/// runs two old replicas of 9 and 4 cores, which do not fit on m5-0 together, and `web-1` alone does.
fn cluster(with_web_2: bool) -> Vec<String> {
    let mut c = vec![
        node(0),
        node(1),
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: keeper\n  namespace: shop\n  creationTimestamp: \"2026-01-01T01:00:00Z\"\n  \
         annotations: {karpenter.sh/do-not-disrupt: \"true\"}\n  \
         ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: keeper, uid: k, controller: true}]\n\
         spec:\n  nodeName: m5-0\n  containers: [{name: c, resources: {requests: {cpu: \"4\", memory: 1Gi}}}]\n"
            .to_string(),
        pod("shop", "web-1", "9", "1Gi", Some("m5-1"), ""),
    ];
    if with_web_2 {
        c.push(pod("shop", "web-2", "4", "1Gi", Some("m5-1"), ""));
    }
    c
}

#[test]
fn an_hpa_scale_in_is_followed_by_no_consolidation_before_after() {
    let mut settings = ferroscale::cli::flags::default_engine();
    settings.scale_down_enabled = false;
    let mut s = sim(&cluster(true), GROUPS);
    let r = s.step(&settings, &pacing());
    assert!(r.consolidations.is_empty(), "nothing fits before: {r:#?}");

    // The HPA scales in: web-2 is deleted at +10s, seen by the loop at +10s.
    s.cluster().state().pods.retain(|p| p.name != "web-2");
    let mut first = None;
    for _ in 0..70 {
        let r = s.step(&settings, &pacing());
        if let Some(plan) = r.consolidations.first() {
            first = Some((r.time, plan.nodes.clone(), plan.pods_evicted.clone()));
            break;
        }
    }
    let (at, nodes, evicted) = first.expect("consolidated once after has passed");
    // Found 10 minutes after the removal was seen (+610), the deletion is held 15 s and acted on once
    // validated, at the next loop past that (+630).
    assert_eq!(
        at,
        10 + 600 + 20,
        "10 minutes after the removal was seen, validated"
    );
    assert_eq!(nodes, ["m5-1"]);
    assert_eq!(evicted, ["shop/web-1"]);

    // The contrast: a simulation started after the scale-in knows of no removal, and the replica is
    // old: the node goes at once (once validated, 15 s on), as every node did before pod removals
    // were counted.
    let mut snapshot_only = sim(&cluster(false), GROUPS);
    let r = (0..3)
        .map(|_| snapshot_only.step(&settings, &pacing()))
        .find(|r| !r.consolidations.is_empty())
        .expect("consolidated at once");
    assert_eq!(r.time, 20, "{r:#?}");
    assert_eq!(r.consolidations[0].nodes, ["m5-1"]);
}

#[test]
fn a_node_annotated_do_not_disrupt_is_left_out_of_the_plan() {
    let settings = ferroscale::cli::flags::default_engine();
    let mut all = sim(&three_half_empty(), &m5_and_big(OPTED_IN));
    let r = all.step(&settings, &pacing());
    assert_eq!(
        r.replacements[0].for_nodes,
        ["m5-0", "m5-1", "m5-2"],
        "the contrast"
    );

    let mut c = three_half_empty();
    c[0] = c[0].replace(
        "  name: m5-0\n",
        "  name: m5-0\n  annotations: {ferroscale.io/do-not-disrupt: \"true\"}\n",
    );
    let mut kept = sim(&c, &m5_and_big(OPTED_IN));
    let r = kept.step(&settings, &pacing());
    assert_eq!(r.consolidations.len(), 1, "{r:#?}");
    assert_eq!(r.consolidations[0].nodes, ["m5-1", "m5-2"], "{r:#?}");
    let declined: Vec<(String, String)> = r
        .consolidation_declined
        .iter()
        .map(|x| (x.node.clone().unwrap_or_default(), x.reason.clone()))
        .collect();
    assert_eq!(
        declined,
        [(
            "m5-0".to_string(),
            "the node is annotated do-not-disrupt".to_string()
        )]
    );
}

/// Group `m5` (16 cores) opted in with `after` 10m, group `cheap` (16 cores, $0.50/h) empty, and
/// a tainted node of group `other` created an hour after the rest (the simulation starts then).
const MOVES: &str = r#"
nodeGroups:
  - {name: m5, minSize: 0, maxSize: 4, capacity: {cpu: 16, memory: 64Gi, pods: 110}, pricePerHour: 0.768,
     disruptionBudget: "100%", consolidation: {policy: WhenEmptyOrUnderutilized, after: 10m},
     instances: [{id: i-0}, {id: i-1}]}
  - {name: cheap, minSize: 0, maxSize: 4, capacity: {cpu: 16, memory: 64Gi, pods: 110}, pricePerHour: 0.5}
  - {name: other, minSize: 0, maxSize: 1, capacity: {cpu: 2, memory: 8Gi, pods: 110}, instances: [{id: i-o}]}
"#;

/// m5-0 and m5-1 with one old 4-core replica each (`both_on_1`: both on m5-1, m5-0 gone), and the
/// tainted node.
fn moves_cluster(both_on_1: bool) -> Vec<String> {
    let mut c = vec![node(1)];
    if both_on_1 {
        c.push(pod("shop", "web-0", "4", "1Gi", Some("m5-1"), ""));
    } else {
        c.push(node(0));
        c.push(pod("shop", "web-0", "4", "1Gi", Some("m5-0"), ""));
    }
    c.push(pod("shop", "web-1", "4", "1Gi", Some("m5-1"), ""));
    c.push(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: other-0\n  creationTimestamp: \"2026-01-01T01:00:00Z\"\n  \
         labels: {ferroscale.io/node-group: other, kubernetes.io/hostname: other-0}\n\
         spec: {providerID: \"memory:///other/i-o\", taints: [{key: dedicated, value: x, effect: NoSchedule}]}\n\
         status:\n  allocatable: {cpu: \"2\", memory: 8Gi, pods: \"110\"}\n  conditions: [{type: Ready, status: \"True\"}]\n"
            .to_string(),
    );
    c
}

/// A plan moves web-0 onto m5-1; m5-1, still worth replacing by a `cheap` node, waits `after` from when the
/// moved pod was seen bound there before it is replaced: the preview's follow-up plan comes when
/// `run`'s would, not one loop later.
#[test]
fn a_node_that_received_a_moved_pod_waits_after_before_the_next_plan() {
    let mut settings = ferroscale::cli::flags::default_engine();
    settings.scale_down_enabled = false;
    let mut s = sim(&moves_cluster(false), MOVES);
    // The deletion is held 15 s and validated before it is acted on.
    let r = (0..5)
        .map(|_| s.step(&settings, &pacing()))
        .find(|r| !r.consolidations.is_empty())
        .expect("a deletion");
    let deleted_at = r.time;
    assert_eq!(r.consolidations.len(), 1, "{r:#?}");
    assert_eq!(
        (
            r.consolidations[0].action.as_str(),
            r.consolidations[0].nodes.clone()
        ),
        ("delete", vec!["m5-0".to_string()])
    );
    let mut next = None;
    for _ in 0..70 {
        let r = s.step(&settings, &pacing());
        if let Some(plan) = r.consolidations.first() {
            next = Some((r.time, plan.action.clone(), plan.nodes.clone()));
            break;
        }
    }
    assert_eq!(
        next,
        Some((
            deleted_at + 10 + 600,
            "replace".to_string(),
            vec!["m5-1".to_string()]
        )),
        "web-0 was seen bound to m5-1 the loop after the deletion"
    );

    // The contrast: a snapshot with both replicas already on m5-1 knows of no move: replaced at once.
    let mut snapshot_only = sim(&moves_cluster(true), MOVES);
    let r = snapshot_only.step(&settings, &pacing());
    assert_eq!(r.consolidations.len(), 1, "{r:#?}");
    assert_eq!(r.consolidations[0].nodes, ["m5-1"]);
}
