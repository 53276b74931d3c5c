//! `simulate --events`: AWS's EventBridge events replayed against the simulation. A spot warning takes
//! its node out in the loop that reaches it, with the replacement asked for in the same loop; a rebalance
//! recommendation only with `--handle-rebalance-recommendations`; an event about an instance of no group
//! changes nothing.

use crate::support::fixtures::dump::pod;
use crate::support::simulate_harness::{pacing, sim, ups};
use ferroscale::simulate::parse_events;

const GROUPS: &str = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 5, capacity: {cpu: 4, memory: 16Gi, pods: 20}}
"#;

fn node(name: &str, instance: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {{ferroscale.io/node-group: pool, kubernetes.io/hostname: {name}}}\n\
         spec: {{providerID: \"memory:///pool/{instance}\"}}\n\
         status:\n  allocatable: {{cpu: \"4\", memory: 16Gi, pods: \"20\"}}\n  conditions: [{{type: Ready, status: \"True\"}}]\n"
    )
}

/// Two 4-cpu nodes with three 1-cpu replicas each.
fn cluster() -> Vec<String> {
    let mut c = vec![node("pool-a", "i-a"), node("pool-b", "i-b")];
    for (n, on) in [("a", "pool-a"), ("b", "pool-b")] {
        for k in 0..3 {
            c.push(pod(
                "shop",
                &format!("web-{n}{k}"),
                "1",
                "1Gi",
                Some(on),
                "",
            ));
        }
    }
    c
}

fn events(kind: &str, instance: &str, at: &str) -> String {
    format!(
        "- at: {at}\n  event:\n    version: \"0\"\n    source: aws.ec2\n    detail-type: {kind}\n    region: us-east-1\n    detail: {{instance-id: {instance}}}\n"
    )
}

#[test]
fn a_spot_warning_takes_its_node_out_and_the_same_loop_asks_for_the_replacement() {
    let mut s = sim(&cluster(), GROUPS);
    let mut text = events("EC2 Spot Instance Interruption Warning", "i-a", "10s");
    text.push_str(&events(
        "EC2 Spot Instance Interruption Warning",
        "i-0other",
        "10s",
    ));
    s.set_events(parse_events(&text).unwrap(), false);
    let settings = ferroscale::cli::flags::default_engine();
    let first = s.step(&settings, &pacing());
    assert!(first.disruptions.is_empty(), "not due yet: {first:?}");
    let r = s.step(&settings, &pacing());
    assert_eq!(r.time, 10);
    assert_eq!(r.disruptions.len(), 1, "{r:?}");
    assert_eq!(
        (
            r.disruptions[0].node.as_str(),
            r.disruptions[0].group.as_str(),
            r.disruptions[0].reason.as_str()
        ),
        ("pool-a", "pool", "spot-interruption")
    );
    // Three 1-cpu pods, one cpu free on pool-b: one new node.
    assert_eq!(ups(&r), vec![("pool", 1)]);
    assert_eq!(r.replacements.len(), 1);
    assert_eq!(r.replacements[0].for_nodes, vec!["pool-a"]);
    assert_eq!(r.nodes["pool"], 1, "pool-a is gone");
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["disruptions"][0]["reason"], "spot-interruption");
    assert_eq!(json["replacements"][0]["for"][0], "pool-a");
    // The next loop: the replacement joins and takes the pods.
    let next = s.step(&settings, &pacing());
    assert!(next.disruptions.is_empty());
    assert_eq!(next.nodes["pool"], 2);
    assert!(
        next.pending.iter().all(|p| !p.reason.contains("no group")),
        "{next:?}"
    );
}

#[test]
fn a_rebalance_recommendation_counts_only_when_handled() {
    let text = events("EC2 Instance Rebalance Recommendation", "i-b", "0s");
    let settings = ferroscale::cli::flags::default_engine();
    let mut ignored = sim(&cluster(), GROUPS);
    ignored.set_events(parse_events(&text).unwrap(), false);
    assert!(ignored.step(&settings, &pacing()).disruptions.is_empty());
    let mut handled = sim(&cluster(), GROUPS);
    handled.set_events(parse_events(&text).unwrap(), true);
    let r = handled.step(&settings, &pacing());
    assert_eq!(r.disruptions.len(), 1);
    assert_eq!(r.disruptions[0].reason, "rebalance");
}

#[test]
fn the_binary_takes_an_events_file_and_names_a_bad_entry() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let cluster = write("cluster.yaml", &cluster().join("---\n"));
    let groups = write("groups.yaml", GROUPS);
    let good = write(
        "events.yaml",
        &events("EC2 Spot Instance Interruption Warning", "i-b", "0s"),
    );
    let out = std::process::Command::new(crate::support::process::BIN)
        .args(["simulate", "--loops", "1", "--cluster"])
        .arg(&cluster)
        .arg("--node-groups")
        .arg(&groups)
        .arg("--events")
        .arg(&good)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line: serde_json::Value = serde_json::from_str(
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(line["disruptions"][0]["node"], "pool-b");
    let bad = write("bad.yaml", "- {at: soon, event: {}}\n");
    let out = std::process::Command::new(crate::support::process::BIN)
        .args(["simulate", "--cluster"])
        .arg(&cluster)
        .arg("--node-groups")
        .arg(&groups)
        .arg("--events")
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--events") && err.contains("entry 0: at:"),
        "{err}"
    );
}
