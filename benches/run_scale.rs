//! `ferroscale run` on a large cluster, as an operator runs it: the release binary against the loopback
//! Kubernetes API of the tests (`tests/it/support/kube_api`), holding S × 1,000 nodes and S × 51,000
//! pods (51 bound to each node, all of them running), one memory-cloud group owning every node.
//! Nothing changes while it runs, so every loop after the first is a steady-state loop.
//!
//! It answers: how long until the first loop (the watches' initial lists), how long a steady-state loop
//! takes (the binary's `loop done` debug lines), and the process's resident memory after the loops and
//! at its peak (`VmRSS`, `VmHWM` from `/proc/<pid>/status`), at each size S.
//!
//! Knobs: `FERROSCALE_RUN_SCALES` (sizes, default `1,2,4`), `FERROSCALE_RUN_LOOPS` (steady-state loops
//! timed per size, default 10). Run with `cargo bench --bench run_scale`.

#[allow(dead_code, unused_imports)]
#[path = "../tests/it/support/kube_api/mod.rs"]
mod kube_api;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use kube_api::{KubeApi, NODES, PODS};

const PODS_PER_NODE: usize = 51;

fn node(i: usize) -> Value {
    let name = format!("node-{i:06}");
    json!({
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name,
            "topology.kubernetes.io/zone": format!("zone-{}", i % 3),
            "node.kubernetes.io/instance-type": "m5.xlarge"}},
        "spec": {"providerID": format!("memory:///pool/i-{i:06}")},
        "status": {
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        },
    })
}

/// A running pod as a Deployment makes it, with the fields a real pod carries that the loop never reads.
fn pod(i: usize, node: usize) -> Value {
    let app = format!("app-{}", i % 500);
    json!({
        "metadata": {"name": format!("{app}-{i:07}"), "namespace": format!("ns-{}", i % 40),
            "labels": {"app": app, "pod-template-hash": "5d4f8b7c9"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": format!("{app}-5d4f8b7c9"), "uid": "rs-uid", "controller": true}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                "apiVersion": "v1", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}}}}}}]},
        "spec": {"nodeName": format!("node-{node:06}"),
            "containers": [{"name": "app", "image": "registry.example/app:1.2.3",
                "env": [{"name": "MODE", "value": "production"}],
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}}}],
            "terminationGracePeriodSeconds": 30},
        "status": {"phase": "Running", "podIP": "10.0.0.1",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0,
                "image": "registry.example/app:1.2.3", "imageID": "sha256:0123456789abcdef",
                "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]},
    })
}

fn groups_yaml(nodes: usize) -> String {
    let mut s = String::from(
        "nodeGroups:\n  - name: pool\n    minSize: 0\n    maxSize: 100000\n    capacity: {cpu: 4, memory: 16Gi, pods: 110}\n    pricePerHour: 0.192\n",
    );
    s += &format!("    targetSize: {nodes}\n    instances:\n");
    for i in 0..nodes {
        s += &format!("      - {{id: i-{i:06}}}\n");
    }
    s
}

/// `VmRSS`/`VmHWM` of a process in MiB.
fn status_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

fn took_ms(line: &str) -> Option<f64> {
    let at = line.find("took_ms=")? + "took_ms=".len();
    line[at..].split_whitespace().next()?.parse().ok()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn one_size(scale: usize, loops: usize) {
    let api = KubeApi::start().await;
    let nodes = std::env::var("FERROSCALE_RUN_NODES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000 * scale);
    for n in 0..nodes {
        api.put(NODES, node(n));
    }
    for i in 0..nodes * PODS_PER_NODE {
        api.put(PODS, pod(i, i % nodes));
    }
    let dir = tempfile::tempdir().unwrap();
    let groups = dir.path().join("groups.yaml");
    std::fs::write(&groups, groups_yaml(nodes)).unwrap();
    let kubeconfig = api.kubeconfig(dir.path());
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferroscale"))
        .args(["run", "--cloud", "memory", "--scan-interval", "1s"])
        .args(["--leader-elect=false", "--address", "127.0.0.1:0"])
        .arg("--memory-config")
        .arg(&groups)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .env("RUST_LOG", "warn,ferroscale::run=debug")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the ferroscale binary");
    let pid = child.id();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let verbose = std::env::var_os("FERROSCALE_RUN_VERBOSE").is_some();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(ms) = took_ms(&line) {
                let _ = tx.send(ms);
            } else if line.contains("WARN")
                || line.contains("ERROR")
                || line.starts_with("error")
                || (verbose && line.contains("loop phases"))
            {
                eprintln!("  ferroscale: {line}");
            }
        }
    });
    let first = rx
        .recv_timeout(Duration::from_secs(600))
        .expect("a first loop");
    let to_first = started.elapsed();
    let mut times = Vec::new();
    for _ in 0..loops {
        times.push(
            rx.recv_timeout(Duration::from_secs(120))
                .expect("a steady-state loop"),
        );
    }
    let (rss, peak) = (status_mib(pid, "VmRSS"), status_mib(pid, "VmHWM"));
    let _ = child.kill();
    let _ = child.wait();
    times.sort_by(f64::total_cmp);
    println!(
        "{:>6} nodes {:>7} pods | first loop after {:>6.2} s (its loop {:>7.1} ms) | steady loop p50 {:>7.1} ms, max {:>7.1} ms | RSS {:>6.0} MiB, peak {:>6.0} MiB",
        nodes,
        nodes * PODS_PER_NODE,
        to_first.as_secs_f64(),
        first,
        percentile(&times, 0.5),
        percentile(&times, 1.0),
        rss,
        peak,
    );
}

fn main() {
    let scales: Vec<usize> = std::env::var("FERROSCALE_RUN_SCALES")
        .unwrap_or_else(|_| "1,2,4".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let loops = std::env::var("FERROSCALE_RUN_LOOPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    println!("ferroscale run, steady state, against the loopback Kubernetes API:");
    for scale in scales {
        runtime.block_on(one_size(scale, loops));
    }
}
