//! Upstream's policies acting in `simulate --deschedule-policy` where they used to do nothing: its
//! `examples/pod-life-time-transition.yml` on a Succeeded pod (finished pods are read from the dump),
//! and a DefaultEvictor `priorityThreshold.name` resolved from a PriorityClass in the dump.

use serde_json::Value;

use crate::simulate_deschedule::{created, old, NEW, OLD};
use crate::simulate_report::{json_lines, ok};
use crate::support::fixtures::dump::{node, pod, GROUPS};

/// Each loop's JSON of `simulate` on `cluster` with `policy`, one loop.
fn simulate(cluster: &str, policy: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let (cluster, groups, policy) = (
        write("cluster.yaml", cluster),
        write("groups.yaml", GROUPS),
        write("policy.yaml", policy),
    );
    let out = std::process::Command::new(crate::support::process::BIN)
        .args(["simulate", "--cluster", &cluster, "--node-groups", &groups])
        .args(["--loops", "1", "--deschedule-policy", &policy])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    json_lines(&ok(&out))
}

fn evicted(line: &Value) -> Vec<String> {
    line["evictions"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["pod"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// A pod of `default` that succeeded, its `Initialized` condition `PodCompleted` since `since`.
fn succeeded(name: &str, since: &str) -> String {
    format!(
        "{}status:\n  phase: Succeeded\n  conditions:\n  - {{type: Initialized, status: \"True\", \
         reason: PodCompleted, lastTransitionTime: \"{since}\"}}\n",
        old(pod("default", name, "100m", "100Mi", Some("a"), ""))
    )
}

#[test]
fn upstreams_pod_life_time_transition_example_removes_succeeded_pods() {
    let policy = include_str!(
        "../../crates/ferroscale-core/src/deschedule/policy/examples/pod-life-time-transition.yml"
    );
    let cluster = [
        node("a", "small", "2", "8Gi"),
        node("b", "small", "2", "8Gi"),
        // Done a day before the simulation starts: over the example's four hours.
        succeeded("finished-long-ago", OLD),
        // Done at the start: not yet.
        succeeded("finished-now", NEW),
        // The newest object: the simulation starts when it was created.
        created(
            pod("default", "running", "100m", "100Mi", Some("a"), ""),
            NEW,
        ),
    ]
    .join("---\n");
    let lines = simulate(&cluster, policy);
    assert_eq!(
        evicted(&lines[0]),
        ["default/finished-long-ago"],
        "{}",
        lines[0]
    );
}

#[test]
fn a_priority_threshold_name_reads_the_priority_class_of_the_dump() {
    let policy = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  \
                  pluginConfig:\n  - name: DefaultEvictor\n    args:\n      priorityThreshold: {name: important}\n  \
                  - name: PodLifeTime\n    args: {maxPodLifeTimeSeconds: 3600}\n  plugins:\n    deschedule:\n      \
                  enabled: [PodLifeTime]\n";
    let cluster = [
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: important}\nvalue: 1000\n"
            .to_string(),
        node("a", "small", "2", "8Gi"),
        node("b", "small", "2", "8Gi"),
        old(pod("web", "ordinary", "100m", "100Mi", Some("a"), "  priority: 10\n")),
        old(pod("web", "vital", "100m", "100Mi", Some("a"), "  priority: 1000\n")),
        created(pod("web", "young", "100m", "100Mi", Some("b"), ""), NEW),
    ]
    .join("---\n");
    let lines = simulate(&cluster, policy);
    assert_eq!(evicted(&lines[0]), ["web/ordinary"], "{}", lines[0]);
}

/// Every policy file of upstream's `examples/` (kept byte for byte in the core's `policy/examples/`)
/// and `tests/fixtures/descheduler/` (its chart's default values at HEAD, v0.31.0 and v0.29.0 as its
/// ConfigMap renders them, its `test/manifests/v1alpha2/configmap.yaml`), each through `simulate`.
#[test]
fn every_upstream_policy_file_is_accepted_by_simulate() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dirs = [
        root.join("crates/ferroscale-core/src/deschedule/policy/examples"),
        root.join("tests/fixtures/descheduler"),
    ];
    let mut files: Vec<_> = dirs
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    assert!(files.len() >= 13, "{files:?}");
    let cluster = [
        node("a", "small", "2", "8Gi"),
        node("b", "small", "2", "8Gi"),
        old(pod("default", "web-1", "100m", "100Mi", Some("a"), "")),
        created(pod("default", "web-2", "100m", "100Mi", Some("a"), ""), NEW),
    ]
    .join("---\n");
    for f in files {
        let policy = std::fs::read_to_string(&f).unwrap();
        let lines = simulate(&cluster, &policy);
        assert_eq!(lines.len(), 1, "{}", f.display());
    }
}
