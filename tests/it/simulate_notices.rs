//! What happens to a node after a notice about it is accepted, through `simulate --events` (which
//! predicts what `run` does with the same notices): a later, stronger notice upgrades a weaker one;
//! scheduled changes act by their event type near their start, under the drainability rules and the
//! group's budget; involuntary notices beyond `--max-interruptions-per-minute` drain as voluntary ones.

use crate::support::simulate_harness::{pacing, sim, ups};
use ferroscale::cloud::Cloud;
use ferroscale::model::lifecycle::Budget;
use ferroscale::simulate::{parse_events, LoopReport, Simulation};

/// `pool` (m5.xlarge in us-east-1a, the nodes' pool) and `other` (the same type in us-east-1b).
const GROUPS: &str = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 10, capacity: {cpu: 4, memory: 16Gi, pods: 20},
     labels: {node.kubernetes.io/instance-type: m5.xlarge, topology.kubernetes.io/zone: us-east-1a}}
  - {name: other, minSize: 0, maxSize: 10, capacity: {cpu: 4, memory: 16Gi, pods: 20},
     labels: {node.kubernetes.io/instance-type: m5.xlarge, topology.kubernetes.io/zone: us-east-1b}}
"#;

fn node(name: &str, instance: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {{ferroscale.io/node-group: pool, kubernetes.io/hostname: {name}, \
         node.kubernetes.io/instance-type: m5.xlarge, topology.kubernetes.io/zone: us-east-1a}}\n\
         spec: {{providerID: \"memory:///pool/{instance}\"}}\n\
         status:\n  allocatable: {{cpu: \"4\", memory: 16Gi, pods: \"20\"}}\n  conditions: [{{type: Ready, status: \"True\"}}]\n"
    )
}

/// A ReplicaSet's pod of `cpu` on `node`.
fn replica(name: &str, cpu: &str, node: &str) -> String {
    crate::support::fixtures::dump::pod("shop", name, cpu, "1Gi", Some(node), "")
}

/// A pod no controller recreates: it keeps its node from every voluntary drain.
fn bare(name: &str, node: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: shop\n\
         spec:\n  nodeName: {node}\n  containers: [{{name: c, resources: {{requests: {{cpu: 500m, memory: 1Gi}}}}}}]\n"
    )
}

/// An EC2 event of `kind` for `instance`, `at` into the simulation.
fn ec2(kind: &str, instance: &str, at: &str) -> String {
    format!(
        "- at: {at}\n  event:\n    source: aws.ec2\n    detail-type: {kind}\n    detail: {{instance-id: {instance}}}\n"
    )
}

/// An AWS Health scheduled change `code` for `instance`, starting at `start` (seconds since the epoch),
/// `at` into the simulation, as AWS writes it (RFC 2822 `startTime`).
fn health(code: &str, instance: &str, start: i64, at: &str) -> String {
    let start = k8s_openapi::jiff::Timestamp::from_second(start)
        .unwrap()
        .strftime("%a, %d %b %Y %H:%M:%S GMT");
    let body = format!(
        r#"{{"version":"0","id":"7fb65329","detail-type":"AWS Health Event","source":"aws.health","account":"123456789012","time":"2026-11-24T06:27:57Z","region":"us-east-1","resources":["{instance}"],"detail":{{"eventArn":"arn:aws:health:us-east-1::event/EC2/{code}/x","service":"EC2","eventTypeCode":"{code}","eventTypeCategory":"scheduledChange","startTime":"{start}","affectedEntities":[{{"entityValue":"{instance}"}}]}}}}"#
    );
    format!("- at: {at}\n  event: '{body}'\n")
}

fn disrupted(r: &LoopReport) -> Vec<(&str, &str)> {
    r.disruptions
        .iter()
        .map(|d| (d.node.as_str(), d.reason.as_str()))
        .collect()
}

fn kept<'a>(r: &'a LoopReport, node: &str) -> Option<&'a str> {
    r.unremovable
        .iter()
        .find(|n| n.node.as_deref() == Some(node))
        .map(|n| n.reason.as_str())
}

fn has_node(s: &Simulation, name: &str) -> bool {
    s.cluster().state().nodes.iter().any(|n| n.name == name)
}

#[test]
fn a_spot_warning_after_a_rebalance_upgrades_it_the_instance_goes_and_its_pool_is_short() {
    // pool-a holds a pod no controller recreates: the rebalance recommendation (voluntary) keeps it;
    // the spot warning that follows takes it out anyway.
    let cluster = vec![
        node("pool-a", "i-a"),
        node("pool-b", "i-b"),
        replica("web-a0", "1500m", "pool-a"),
        replica("web-a1", "1500m", "pool-a"),
        bare("tool", "pool-a"),
        replica("web-b0", "3", "pool-b"),
    ];
    let mut s = sim(&cluster, GROUPS);
    let mut text = ec2("EC2 Instance Rebalance Recommendation", "i-a", "0s");
    text.push_str(&ec2("EC2 Spot Instance Interruption Warning", "i-a", "10s"));
    s.set_events(parse_events(&text).unwrap(), true);
    let settings = ferroscale::cli::flags::default_engine();

    let first = s.step(&settings, &pacing());
    assert!(first.disruptions.is_empty(), "{first:?}");
    assert!(
        kept(&first, "pool-a").is_some_and(|why| why.contains("tool")),
        "the rebalance keeps the node for its bare pod: {first:?}"
    );
    assert!(has_node(&s, "pool-a"));

    let second = s.step(&settings, &pacing());
    assert_eq!(
        disrupted(&second),
        vec![("pool-a", "spot-interruption")],
        "{second:?}"
    );
    assert!(!has_node(&s, "pool-a"), "the instance is deleted");
    assert!(
        !s.cloud()
            .snapshot()
            .group("pool")
            .unwrap()
            .instances
            .iter()
            .any(|i| i.id.ends_with("/i-a")),
        "the instance is gone from its group"
    );
    // Its replicas need 3 cpu, pool-b has 1: the new node comes from the other zone, the pool
    // (m5.xlarge in us-east-1a) being short of spot capacity.
    assert_eq!(ups(&second), vec![("other", 1)], "{second:?}");
}

#[test]
fn scheduled_changes_act_by_type_near_their_start_under_the_budget() {
    let mut cluster = Vec::new();
    for (n, i) in [("pool-a", "i-a"), ("pool-b", "i-b"), ("pool-c", "i-c")] {
        cluster.push(node(n, i));
        // Busy enough not to be scaled down meanwhile.
        cluster.push(replica(&format!("web-{n}"), "3", n));
    }
    let mut s = sim(&cluster, GROUPS);
    let t0 = s.now();
    let hour = 3600;
    // A reboot-only maintenance of pool-a in 30 minutes; pool-b and pool-c retire in 3 hours.
    let mut text = health(
        "AWS_EC2_SYSTEM_REBOOT_MAINTENANCE_SCHEDULED",
        "i-a",
        t0 + hour / 2,
        "0s",
    );
    for i in ["i-b", "i-c"] {
        text.push_str(&health(
            "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
            i,
            t0 + 3 * hour,
            "0s",
        ));
    }
    s.set_events(parse_events(&text).unwrap(), false);
    let settings = ferroscale::cli::flags::default_engine();
    let mut every = pacing();
    every.scan_interval = std::time::Duration::from_secs(15 * 60);
    let mut taken: Vec<(i64, String)> = Vec::new();
    for _ in 0..10 {
        let r = s.step(&settings, &every);
        assert!(
            r.disruptions.len() <= 1,
            "the group's budget (10% of 3: one node) takes one at a time: {r:?}"
        );
        for (node, reason) in disrupted(&r) {
            assert_eq!(reason, "scheduled-change");
            taken.push((r.time, node.to_string()));
        }
        if r.time == 3600 {
            // Both are due; one goes, the other waits for the budget.
            assert!(
                kept(&r, "pool-c").is_some_and(|why| why.contains("budget")),
                "{r:?}"
            );
        }
    }
    assert!(has_node(&s, "pool-a"), "a reboot drains nothing");
    assert_eq!(
        taken
            .iter()
            .map(|(at, n)| (*at, n.as_str()))
            .collect::<Vec<_>>(),
        vec![(3600, "pool-b"), (4500, "pool-c")],
        "nothing before the two hours ahead of the start, then one at a time"
    );
}

#[test]
fn spot_warnings_beyond_the_per_minute_cap_drain_as_voluntary_ones() {
    let cluster = vec![
        node("pool-a", "i-a"),
        node("pool-b", "i-b"),
        bare("tool-a", "pool-a"),
        bare("tool-b", "pool-b"),
    ];
    let mut s = sim(&cluster, GROUPS);
    let mut text = ec2("EC2 Spot Instance Interruption Warning", "i-a", "0s");
    text.push_str(&ec2("EC2 Spot Instance Interruption Warning", "i-b", "0s"));
    s.set_events(parse_events(&text).unwrap(), false);
    let mut settings = ferroscale::cli::flags::default_engine();
    settings.max_interruptions_per_minute = Budget::Count(1);
    let first = s.step(&settings, &pacing());
    assert_eq!(
        disrupted(&first),
        vec![("pool-a", "spot-interruption")],
        "{first:?}"
    );
    assert!(
        kept(&first, "pool-b").is_some_and(|why| why.contains("tool-b")),
        "over the cap the warning is bound by the drainability rules: {first:?}"
    );
    assert!(!has_node(&s, "pool-a") && has_node(&s, "pool-b"));
    // A minute later the cap has room again and the warning takes pool-b out.
    let mut at = None;
    for _ in 0..8 {
        let r = s.step(&settings, &pacing());
        if !r.disruptions.is_empty() {
            assert_eq!(disrupted(&r), vec![("pool-b", "spot-interruption")]);
            at = Some(r.time);
            break;
        }
    }
    assert!(at.is_some_and(|t| t >= 60), "{at:?}");
    assert!(!has_node(&s, "pool-b"));
}

#[test]
fn a_cap_of_ten_percent_takes_two_of_twenty_nodes_out_a_minute() {
    // Twenty nodes of pool, each holding a pod no controller recreates: over the cap, a spot warning
    // is bound by the drainability rules and keeps its node.
    let mut groups = String::from(
        "nodeGroups:\n  - {name: pool, minSize: 0, maxSize: 40, capacity: {cpu: 4, memory: 16Gi, pods: 20},\n     \
         labels: {node.kubernetes.io/instance-type: m5.xlarge, topology.kubernetes.io/zone: us-east-1a},\n     instances: [",
    );
    let (mut cluster, mut text) = (Vec::new(), String::new());
    for k in 0..20 {
        groups.push_str(&format!("{{id: i-{k}}}, "));
        cluster.push(node(&format!("pool-{k}"), &format!("i-{k}")));
        cluster.push(bare(&format!("tool-{k}"), &format!("pool-{k}")));
        text.push_str(&ec2(
            "EC2 Spot Instance Interruption Warning",
            &format!("i-{k}"),
            "0s",
        ));
    }
    groups.push_str("]}\n");
    let mut s = sim(&cluster, &groups);
    s.set_events(parse_events(&text).unwrap(), false);
    let mut settings = ferroscale::cli::flags::default_engine();
    settings.max_interruptions_per_minute = Budget::parse("10%").unwrap();
    let first = s.step(&settings, &pacing());
    assert_eq!(first.disruptions.len(), 2, "10% of 20 nodes: {first:?}");
    // Within the minute no more go involuntarily; the next minute takes two more.
    let mut per_minute: std::collections::BTreeMap<i64, usize> = Default::default();
    per_minute.insert(first.time / 60, 2);
    // Fourteen more loops, ten seconds apart: two and a half minutes in all.
    for _ in 0..14 {
        let r = s.step(&settings, &pacing());
        *per_minute.entry(r.time / 60).or_default() += r.disruptions.len();
    }
    assert!(per_minute.values().all(|&n| n <= 2), "{per_minute:?}");
    assert_eq!(per_minute.values().sum::<usize>(), 6, "{per_minute:?}");
}

/// A notice the property test may send.
#[derive(Debug, Clone)]
enum Kind {
    Spot,
    Rebalance,
    Stopping,
    Retirement,
    Reboot,
}

impl Kind {
    fn involuntary(&self) -> bool {
        matches!(self, Kind::Spot | Kind::Stopping)
    }

    /// The event, `at` seconds in, for `instance`, a simulation starting at `t0`.
    fn event(&self, instance: &str, at: u64, t0: i64) -> String {
        let at = format!("{at}s");
        match self {
            Kind::Spot => ec2("EC2 Spot Instance Interruption Warning", instance, &at),
            Kind::Rebalance => ec2("EC2 Instance Rebalance Recommendation", instance, &at),
            Kind::Stopping => format!(
                "- at: {at}\n  event:\n    source: aws.ec2\n    detail-type: EC2 Instance State-change Notification\n    detail: {{instance-id: {instance}, state: stopping}}\n"
            ),
            Kind::Retirement => health(
                "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
                instance,
                t0 + 3600,
                &at,
            ),
            Kind::Reboot => health(
                "AWS_EC2_INSTANCE_REBOOT_MAINTENANCE_SCHEDULED",
                instance,
                t0 + 60,
                &at,
            ),
        }
    }
}

fn kind() -> impl proptest::strategy::Strategy<Value = Kind> {
    use proptest::prelude::*;
    prop_oneof![
        Just(Kind::Spot),
        Just(Kind::Rebalance),
        Just(Kind::Stopping),
        Just(Kind::Retirement),
        Just(Kind::Reboot),
    ]
}

/// What a node of the property test holds: a replica's cpu (tenths), whether a pod keeps it from
/// voluntary drains (none, a bare pod, a `safe-to-evict: "false"` one), whether it is drifted.
type NodeSpec = (u8, u8, bool);

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, ..Default::default() })]

    /// Random notices of every kind, at random times, on nodes that scale-down and drift also take
    /// out: no node goes with a pod it may not evict unless an involuntary notice named it, no node is
    /// removed twice, and no group goes below its minimum.
    #[test]
    fn notices_scale_downs_and_drift_never_break_the_rules(
        nodes in proptest::collection::vec((1u8..35, 0u8..3, proptest::bool::ANY), 2..5),
        notices in proptest::collection::vec((0usize..5, kind(), 0u64..8), 0..8),
        cap in 0usize..3,
        rebalance in proptest::bool::ANY,
    ) {
        check(&nodes, &notices, cap, rebalance);
    }
}

fn check(nodes: &[NodeSpec], notices: &[(usize, Kind, u64)], cap: usize, rebalance: bool) {
    let min = 1;
    let mut groups = format!(
        "nodeGroups:\n  - {{name: pool, minSize: {min}, maxSize: 10, revision: v2, drift: Replace, capacity: {{cpu: 4, memory: 16Gi, pods: 20}},\n     \
         labels: {{node.kubernetes.io/instance-type: m5.xlarge, topology.kubernetes.io/zone: us-east-1a}},\n     instances: ["
    );
    let mut cluster = Vec::new();
    for (k, &(tenths, keeper, drifted)) in nodes.iter().enumerate() {
        let (name, instance) = (format!("pool-{k}"), format!("i-{k}"));
        let revision = if drifted { "v1" } else { "v2" };
        groups.push_str(&format!("{{id: {instance}, revision: {revision}}}, "));
        cluster.push(node(&name, &instance));
        cluster.push(replica(
            &format!("web-{k}"),
            &format!("{}m", u32::from(tenths) * 100),
            &name,
        ));
        match keeper {
            1 => cluster.push(bare(&format!("keep-bare-{k}"), &name)),
            2 => cluster.push(
                crate::support::fixtures::dump::pod("shop", &format!("keep-safe-{k}"), "100m", "1Gi", Some(&name), "")
                    .replace(
                        "  ownerReferences:",
                        "  annotations: {cluster-autoscaler.kubernetes.io/safe-to-evict: \"false\"}\n  ownerReferences:",
                    ),
            ),
            _ => {}
        }
    }
    groups.push_str("]}\n");
    let mut s = sim(&cluster, &groups);
    let t0 = s.now();
    let mut text = String::new();
    let mut involuntary: std::collections::HashSet<String> = Default::default();
    for (target, kind, at) in notices {
        let k = target % nodes.len();
        text.push_str(&kind.event(&format!("i-{k}"), at * 10, t0));
        if kind.involuntary() {
            involuntary.insert(format!("pool-{k}"));
        }
    }
    if !text.is_empty() {
        s.set_events(parse_events(&text).unwrap(), rebalance);
    }
    let mut settings = crate::support::simulate_harness::quick_scale_down();
    settings.max_interruptions_per_minute = Budget::Count(cap as u32);
    let mut removed: std::collections::HashSet<String> = Default::default();
    for _ in 0..12 {
        // Which nodes hold a pod they may not give up voluntarily, before the loop.
        let kept: std::collections::HashSet<String> = {
            let state = s.cluster().state();
            state
                .pods
                .iter()
                .filter(|p| p.name.starts_with("keep-"))
                .filter_map(|p| p.node_name.clone())
                .collect()
        };
        let before: Vec<String> = s
            .cluster()
            .state()
            .nodes
            .iter()
            .map(|n| n.name.clone())
            .collect();
        let r = s.step(&settings, &pacing());
        let after: std::collections::HashSet<String> = s
            .cluster()
            .state()
            .nodes
            .iter()
            .map(|n| n.name.clone())
            .collect();
        // One removal per node per loop, never of a node removed before.
        let mut named: Vec<&str> = r.scale_down.iter().map(|x| x.node.as_str()).collect();
        named.extend(
            r.disruptions
                .iter()
                .filter(|x| !r.scale_down.iter().any(|sd| sd.node == x.node))
                .map(|x| x.node.as_str()),
        );
        let mut unique = named.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), named.len(), "a node removed twice: {r:?}");
        for n in &named {
            assert!(!removed.contains(*n), "{n} removed again: {r:?}");
        }
        for gone in before.iter().filter(|n| !after.contains(*n)) {
            removed.insert(gone.clone());
            if kept.contains(gone) {
                let why = r.disruptions.iter().find(|x| &x.node == gone);
                assert!(
                    involuntary.contains(gone)
                        && why.is_some_and(|x| {
                            x.reason == "spot-interruption" || x.reason == "instance-stopping"
                        }),
                    "{gone} went with a pod it may not evict: {r:?}"
                );
            }
        }
        let snapshot = s.cloud().snapshot();
        let g = snapshot.group("pool").unwrap();
        assert!(g.target_size >= min, "below min: {g:?} after {r:?}");
    }
}
