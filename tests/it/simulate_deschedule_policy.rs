//! `simulate --deschedule-policy FILE` through the binary: a policy file as the descheduler reads it
//! evicts, prints and reports each cycle; a file the parser refuses stops the command with code 2,
//! naming the file and the field.

use serde_json::{json, Value};

use crate::simulate_deschedule::{created, declined, failed, old, NEW};
use crate::support::fixtures::dump::{node, pod, GROUPS};
use crate::support::process::run_failing;

#[test]
fn a_policy_file_the_parser_refuses_stops_simulate_naming_the_file_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.yaml");
    std::fs::write(&cluster, node("a", "small", "2", "8Gi")).unwrap();
    let groups = dir.path().join("groups.yaml");
    std::fs::write(&groups, GROUPS).unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  \
         plugins:\n    deschedule:\n      enabled: [RemoveEverything]\n",
    )
    .unwrap();
    let (code, err) = run_failing(&[
        "simulate",
        "--cluster",
        cluster.to_str().unwrap(),
        "--node-groups",
        groups.to_str().unwrap(),
        "--deschedule-policy",
        policy.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("--deschedule-policy {}", policy.display())),
        "{err}"
    );
    assert!(
        err.contains(
            "profiles[0].plugins.deschedule.enabled[0]: unknown plugin \"RemoveEverything\""
        ),
        "the field and the plugin named: {err}"
    );
    let negative = dir.path().join("negative.yaml");
    std::fs::write(
        &negative,
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  \
         pluginConfig:\n  - name: LowNodeUtilization\n    args:\n      thresholds: {cpu: -10}\n      \
         targetThresholds: {cpu: 50}\n  plugins:\n    balance:\n      enabled: [LowNodeUtilization]\n",
    )
    .unwrap();
    let (code, err) = run_failing(&[
        "simulate",
        "--cluster",
        cluster.to_str().unwrap(),
        "--node-groups",
        groups.to_str().unwrap(),
        "--deschedule-policy",
        negative.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("profiles[0].pluginConfig[0].args.thresholds.cpu: -10"),
        "{err}"
    );
    // From --config, under its camelCase name, relative to the file.
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        "cluster: cluster.yaml\nnodeGroups: groups.yaml\ndeschedulePolicy: policy.yaml\n",
    )
    .unwrap();
    let (code, err) = run_failing(&["simulate", "--config", config.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("--deschedule-policy {}", policy.display())),
        "{err}"
    );
    let (code, err) = run_failing(&[
        "simulate",
        "--cluster",
        cluster.to_str().unwrap(),
        "--node-groups",
        groups.to_str().unwrap(),
        "--deschedule-policy",
        "/nonexistent/policy.yaml",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--deschedule-policy /nonexistent/policy.yaml"),
        "{err}"
    );
}
/// The descheduler README's style of policy: failed pods removed, duplicates spread, pods over an hour
/// old replaced.
const POLICY: &str = r#"apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
profiles:
  - name: default
    pluginConfig:
      - name: DefaultEvictor
      - name: RemoveFailedPods
        args:
          minPodLifetimeSeconds: 60
      - name: RemoveDuplicates
      - name: PodLifeTime
        args:
          maxPodLifeTimeSeconds: 3600
          namespaces:
            include: [big]
    plugins:
      deschedule:
        enabled: [RemoveFailedPods, PodLifeTime]
      balance:
        enabled: [RemoveDuplicates]
"#;

#[test]
fn simulate_with_a_policy_file_prints_and_reports_the_cycles_evictions() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = [
        node("a", "small", "2", "8Gi"),
        node("b", "small", "2", "8Gi"),
        node("d", "big", "8", "32Gi"),
        old(pod("web", "dup-1", "300m", "1Gi", Some("a"), "")),
        old(pod("web", "dup-2", "300m", "1Gi", Some("a"), "")),
        failed(old(pod("jobs", "crashed", "100m", "100Mi", Some("a"), ""))),
        old(pod("big", "big-1", "6", "1Gi", Some("d"), "")),
        // Busy enough that scale-down needs `b`: the nodes it holds unneeded are no destination.
        created(pod("f", "fresh", "1100m", "100Mi", Some("b"), ""), NEW),
    ]
    .join("---\n");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let (cluster, groups, policy) = (
        write("cluster.yaml", &cluster),
        write("groups.yaml", GROUPS),
        write("policy.yaml", POLICY),
    );
    let report = dir.path().join("report.html");
    let out = std::process::Command::new(crate::support::process::BIN)
        .args(["simulate", "--cluster", &cluster, "--node-groups", &groups])
        .args(["--loops", "2", "--deschedule-policy", &policy, "--report"])
        .arg(&report)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines[0]["evictions"],
        json!([
            {"pod": "jobs/crashed", "node": "a", "strategy": "RemoveFailedPods"},
            {"pod": "web/dup-2", "node": "a", "strategy": "RemoveDuplicates", "to": "b"},
        ]),
        "{}",
        lines[0]
    );
    let why = declined(&lines[0]);
    assert!(
        why.iter()
            .any(|(p, r)| p == "big/big-1" && r.starts_with("no other node can take it")),
        "{why:?}"
    );
    assert!(lines[1].get("evictions").is_none(), "{}", lines[1]);
    assert!(
        stderr.contains("descheduled [jobs/crashed (deleted), web/dup-2 a->b]"),
        "{stderr}"
    );
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(
        html.contains("<td>evict (RemoveDuplicates)</td><td>web/dup-2</td><td>from a to b</td>"),
        "{html}"
    );
}
