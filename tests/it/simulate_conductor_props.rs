//! The conductor's invariants (issue #37) over random clusters with every method on at once, through
//! `simulate` on the memory cloud, loop after loop: scale-down, consolidation (two groups opted in),
//! drift (some nodes on an old revision), voluntary notices (rebalance recommendations), the
//! descheduler (LowNodeUtilization) and a PodDisruptionBudget over half the pods.
//!
//! After every loop: no pod leaves its node unless an action of that loop removes the node (or names
//! the pod); no action plans an eviction of a pod bound elsewhere; no PDB gives more nodes' pods than it
//! allows; group `a` (a budget of one) never has more than one node out of service; no group passes its
//! max size nor the cluster `--max-nodes-total`; no backed-off group grows; and no pod is lost.

use std::collections::{BTreeSet, HashMap};

use crate::simulate_conductor::placement;
use crate::support::simulate_harness::{flags, pacing, sim};
use ferroscale::simulate::parse_events;

/// A node of the random cluster: its group (0: `a`, 1: `b`, 2: `big`), whether it is drifted, and its
/// pods' cores, each pod of tier web (PDB) or not.
type NodeSpec = (u8, bool, Vec<(u8, bool)>);

const MAX_TOTAL: usize = 12;

fn group_name(g: u8) -> &'static str {
    ["a", "b", "big"][g as usize % 3]
}

fn cluster(nodes: &[NodeSpec], allowed: i32) -> (Vec<String>, String) {
    let mut docs = Vec::new();
    let mut instances: HashMap<&str, Vec<String>> = HashMap::new();
    for (k, (g, drifted, pods)) in nodes.iter().enumerate() {
        let group = group_name(*g);
        let cpu = if group == "big" { 16 } else { 8 };
        let name = format!("{group}-{k}");
        let rev = if *drifted { "v1" } else { "v2" };
        instances
            .entry(group)
            .or_default()
            .push(format!("{{id: {name}, revision: {rev}}}"));
        docs.push(format!(
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  creationTimestamp: \"2026-01-01T00:00:00Z\"\n  \
             labels: {{ferroscale.io/node-group: {group}, kubernetes.io/hostname: {name}}}\n\
             spec: {{providerID: \"memory:///{group}/{name}\"}}\n\
             status:\n  allocatable: {{cpu: \"{cpu}\", memory: 64Gi, pods: \"110\"}}\n  conditions: [{{type: Ready, status: \"True\"}}]\n"
        ));
        for (j, (cores, web)) in pods.iter().enumerate() {
            let tier = if *web { "web" } else { "api" };
            let pod = format!("p-{k}-{j}");
            docs.push(format!(
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {pod}\n  namespace: shop\n  labels: {{app: {pod}, tier: {tier}}}\n  \
                 creationTimestamp: \"2026-01-01T00:00:00Z\"\n  \
                 ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: rs-{pod}, uid: u-{pod}, controller: true}}]\n\
                 spec:\n  nodeName: {name}\n  containers: [{{name: c, resources: {{requests: {{cpu: \"{cores}\", memory: 1Gi}}}}}}]\n\
                 status: {{phase: Running}}\n"
            ));
        }
    }
    docs.push(format!(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: web, namespace: shop}}\n\
         spec: {{selector: {{matchLabels: {{tier: web}}}}}}\nstatus: {{disruptionsAllowed: {allowed}}}\n"
    ));
    let list = |g: &str| instances.get(g).map_or(String::new(), |v| v.join(", "));
    let opted = "consolidation: {policy: WhenEmptyOrUnderutilized, after: 0s},";
    let groups = format!(
        "nodeGroups:\n\
         \x20 - {{name: a, minSize: 0, maxSize: 7, capacity: {{cpu: 8, memory: 64Gi, pods: 110}}, pricePerHour: 0.4,\n     \
         revision: v2, drift: Replace, disruptionBudget: \"1\", {opted} instances: [{}]}}\n\
         \x20 - {{name: b, minSize: 1, maxSize: 7, capacity: {{cpu: 8, memory: 64Gi, pods: 110}}, pricePerHour: 0.35,\n     \
         revision: v2, drift: Replace, disruptionBudget: \"100%\", instances: [{}]}}\n\
         \x20 - {{name: big, minSize: 0, maxSize: 7, capacity: {{cpu: 16, memory: 64Gi, pods: 110}}, pricePerHour: 0.6,\n     \
         revision: v2, drift: Replace, disruptionBudget: \"100%\", {opted} instances: [{}]}}\n",
        list("a"),
        list("b"),
        list("big"),
    );
    (docs, groups)
}

fn check(nodes: &[NodeSpec], allowed: i32, notices: &[(usize, u64)]) {
    let (docs, groups) = cluster(nodes, allowed);
    let mut s = sim(&docs, &groups);
    let mut text = String::new();
    for (k, at) in notices {
        let k = k % nodes.len();
        let name = format!("{}-{k}", group_name(nodes[k].0));
        text.push_str(&format!(
            "- at: {}s\n  event:\n    source: aws.ec2\n    detail-type: EC2 Instance Rebalance Recommendation\n    detail: {{instance-id: {name}}}\n",
            at * 10
        ));
    }
    if !text.is_empty() {
        s.set_events(parse_events(&text).unwrap(), true);
    }
    // The descheduler too, every other loop: LowNodeUtilization between the busy and the idle nodes.
    let policy = ferroscale::deschedule::Policy::parse(crate::simulate_conductor::LNU)
        .unwrap()
        .0;
    s.set_descheduler(
        policy,
        std::time::Duration::from_secs(20),
        ferroscale::deschedule::Settings::default(),
    );
    let settings = flags(&[&format!("--max-nodes-total={MAX_TOTAL}")]);
    let pods = s.cluster().state().pods.len();
    for _ in 0..24 {
        // The kubelet and the scheduler first, as the loop runs them: what the engine then sees.
        let before = placement(&s);
        let backed_off: BTreeSet<String> = ["a", "b", "big"]
            .into_iter()
            .filter(|g| s.memory().backed_off(g, s.now()).is_some())
            .map(String::from)
            .collect();
        let r = s.step(&settings, &pacing());
        let ctx = |what: &str| format!("+{}s: {what}: {r:#?}", r.time);
        let removed: BTreeSet<&str> = r
            .scale_down
            .iter()
            .map(|d| d.node.as_str())
            .chain(r.disruptions.iter().map(|d| d.node.as_str()))
            .collect();
        // Evictions are planned only of pods bound to the node the same action removes.
        for d in &r.scale_down {
            for p in &d.evicted {
                assert_eq!(before.get(p), Some(&d.node), "{}", ctx("evicted elsewhere"));
            }
        }
        for c in &r.consolidations {
            for p in &c.pods_evicted {
                assert!(
                    before.get(p).is_some_and(|n| c.nodes.contains(n)),
                    "{}",
                    ctx("consolidation evicts a pod of another node")
                );
            }
        }
        // No pod leaves a node that stays unless an action named it.
        let named: BTreeSet<&str> = r.evictions.iter().map(|e| e.pod.as_str()).collect();
        let after: HashMap<String, String> = s
            .cluster()
            .state()
            .pods
            .iter()
            .filter_map(|p| Some((p.key(), p.node_name.clone()?)))
            .collect();
        for (p, n) in &before {
            if after.get(p) != Some(n) {
                assert!(
                    removed.contains(n.as_str()) || named.contains(p.as_str()),
                    "{}",
                    ctx(&format!(
                        "{p} left {n}, which no action of the loop removes"
                    ))
                );
            }
        }
        // The PDB gives at most its allowance of nodes' pods a loop.
        let web_nodes = removed
            .iter()
            .filter(|n| before.iter().any(|(p, at)| at == *n && web_pod(nodes, p)))
            .count();
        assert!(
            web_nodes as i32 <= allowed.max(0),
            "{}",
            ctx("PDB overdrawn")
        );
        // Group `a` (budget 1): at most one node out of service at a time.
        let held: BTreeSet<String> = s
            .memory()
            .replacing
            .keys()
            .cloned()
            .chain(
                s.memory()
                    .consolidating
                    .iter()
                    .flat_map(|c| c.nodes.iter().cloned()),
            )
            .chain(removed.iter().map(|n| n.to_string()))
            .filter(|n| n.starts_with("a-"))
            .collect();
        assert!(
            held.len() <= 1,
            "{}",
            ctx(&format!("group a out: {held:?}"))
        );
        // Max sizes, the cluster maximum, and no growth while backed off.
        let total: usize = r.nodes.values().sum();
        assert!(total <= MAX_TOTAL, "{}", ctx("past --max-nodes-total"));
        for (g, max) in [("a", 7), ("b", 7), ("big", 7)] {
            assert!(r.nodes.get(g).copied().unwrap_or(0) <= max, "{}", ctx(g));
        }
        for u in &r.scale_up {
            assert!(
                !backed_off.contains(&u.group),
                "{}",
                ctx("a backed-off group grew")
            );
        }
        // No pod is lost: evicted pods come back to be placed again.
        assert_eq!(s.cluster().state().pods.len(), pods, "{}", ctx("pods lost"));
    }
}

/// Whether `key` is one of the random cluster's web pods.
fn web_pod(nodes: &[NodeSpec], key: &str) -> bool {
    let Some(rest) = key.strip_prefix("shop/p-") else {
        return false;
    };
    let mut it = rest.split('-').map(|x| x.parse::<usize>().ok());
    match (it.next().flatten(), it.next().flatten()) {
        (Some(k), Some(j)) => nodes
            .get(k)
            .and_then(|n| n.2.get(j))
            .is_some_and(|(_, web)| *web),
        _ => false,
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

    #[test]
    fn every_method_on_one_ledger_keeps_every_rule(
        nodes in proptest::collection::vec(
            (0u8..3, proptest::bool::ANY, proptest::collection::vec((1u8..4, proptest::bool::ANY), 0..3)),
            2..7,
        ),
        allowed in 0i32..3,
        notices in proptest::collection::vec((0usize..7, 0u64..12), 0..3),
    ) {
        check(&nodes, allowed, &notices);
    }
}
