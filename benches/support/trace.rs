//! A day of a cluster as `ferroscale record` writes it, made up: web traffic that an HPA follows through
//! the day (replicas rising to a peak at 14:00 and back), a nightly batch of Jobs at 02:00 that runs for
//! an hour on nodes of its own, and a spot interruption at 15:30 that takes one node and its pods
//! (recreated elsewhere).
//! The real cluster's autoscaler keeps one node of headroom and takes 90 s to bring a node. Shared by
//! `examples/gen_trace.rs` (the example trace) and the replay bench (a 1,000-node day).

use std::io::Write;

use serde_json::{json, Value};

/// The shape of the day.
pub struct Day {
    /// Web replicas at night and at the peak.
    pub web_low: usize,
    pub web_peak: usize,
    /// Pods of the nightly batch.
    pub batch: usize,
    /// Seconds between two HPA decisions.
    pub hpa_every: i64,
    /// Length of the day, in seconds.
    pub seconds: i64,
    /// Web pods a node holds (their requests are a node's allocatable shared by this many).
    pub per_node: usize,
}

/// A batch pod: one CPU, 2 GiB; a node: 4 CPUs (3,920m allocatable), 15 GiB, 58 pods; a web pod a
/// `per_node`th of a node.
const START: i64 = 1_795_132_800; // 2026-11-20T00:00:00Z
const GROUP: &str = "general-a";

fn time(t: i64) -> String {
    let secs = START + t;
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

fn node(name: &str, t: i64) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "creationTimestamp": time(t),
            "labels": {"ferroscale.io/node-group": GROUP, "kubernetes.io/hostname": name,
                       "node.kubernetes.io/instance-type": "m5.xlarge",
                       "topology.kubernetes.io/zone": "us-east-1a"}},
        "spec": {},
        "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "58"},
                   "allocatable": {"cpu": "3920m", "memory": "15Gi", "pods": "58"},
                   "conditions": [{"type": "Ready", "status": "True"}]}})
}

/// A node's last state as cluster-autoscaler deletes it: tainted `ToBeDeletedByClusterAutoscaler`
/// (a replay tells such a removal from a node lost to an interruption).
fn removed(name: &str) -> Value {
    let mut n = node(name, 0);
    n["spec"]["taints"] =
        json!([{"key": "ToBeDeletedByClusterAutoscaler", "value": "1", "effect": "NoSchedule"}]);
    n
}

fn pod(
    name: &str,
    owner: (&str, &str),
    cpu: &str,
    memory: &str,
    t: i64,
    on: Option<&str>,
) -> Value {
    let mut p = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "creationTimestamp": time(t),
            "labels": {"app": owner.1},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": owner.0, "name": owner.1,
                                 "uid": format!("uid-{}", owner.1), "controller": true}]},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
        "status": {"phase": "Pending"}});
    if let Some(n) = on {
        p["spec"]["nodeName"] = json!(n);
        p["status"]["phase"] = json!("Running");
    }
    p
}

/// The day's lines, written to `out` in time order.
pub fn write(day: &Day, out: &mut impl Write) -> std::io::Result<u64> {
    let mut events: Vec<(i64, u64, &'static str, Value)> = Vec::new();
    let mut seq = 0u64;
    let mut push = |t: i64, kind: &'static str, v: Value| {
        seq += 1;
        events.push((t, seq, kind, v));
    };
    let per_node = day.per_node.clamp(1, 55);
    let nodes_for = |pods: usize| pods.div_ceil(per_node) + 1;
    let cpu = format!("{}m", 3920 / per_node);
    let memory = format!("{}Mi", 15 * 1024 / per_node);
    let web_pod = |name: &str, t: i64, on: Option<&str>| {
        pod(name, ("ReplicaSet", "web"), &cpu, &memory, t, on)
    };
    let mut web: Vec<(String, String)> = Vec::new(); // (pod, node)
    let mut nodes: Vec<String> = Vec::new();
    let mut next_node = 0;
    let mut next_pod = 0;
    push(
        0,
        "ADDED",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
    );
    let start_nodes = nodes_for(day.web_low);
    for _ in 0..start_nodes {
        let name = format!("ip-10-0-{}-{}", next_node / 250, next_node % 250);
        next_node += 1;
        push(0, "ADDED", node(&name, -3600));
        nodes.push(name);
    }
    for i in 0..day.web_low {
        let name = format!("web-{next_pod}");
        next_pod += 1;
        let on = nodes[i % nodes.len()].clone();
        push(0, "ADDED", web_pod(&name, -600, Some(&on)));
        web.push((name, on));
    }
    let mut t = day.hpa_every;
    let mut batch_done = false;
    let mut interrupted = false;
    while t < day.seconds {
        // The HPA: replicas follow the day, lowest at 02:00, highest at 14:00.
        let phase = ((t as f64 / 86_400.0) - 14.0 / 24.0) * std::f64::consts::TAU;
        let level = (1.0 + phase.cos()) / 2.0;
        let want = day.web_low + ((day.web_peak - day.web_low) as f64 * level).round() as usize;
        // The real autoscaler: nodes for the pods plus one, each 90 s after it is needed.
        let need = nodes_for(want.max(web.len()));
        while nodes.len() < need {
            let name = format!("ip-10-0-{}-{}", next_node / 250, next_node % 250);
            next_node += 1;
            push(t + 90, "ADDED", node(&name, t + 90));
            nodes.push(name);
        }
        while web.len() < want {
            let name = format!("web-{next_pod}");
            next_pod += 1;
            let on = nodes[web.len() % nodes.len()].clone();
            push(t, "ADDED", web_pod(&name, t, None));
            let bound_at = t + 95;
            push(bound_at, "MODIFIED", web_pod(&name, t, Some(&on)));
            web.push((name, on));
        }
        while web.len() > want {
            let (name, on) = web.pop().unwrap_or_default();
            push(t, "DELETED", web_pod(&name, t, Some(&on)));
        }
        let keep = nodes_for(want);
        while nodes.len() > keep && nodes.len() > start_nodes {
            // Scale-down takes the newest node once its pods have gone elsewhere (10 minutes later).
            let gone = nodes.pop().unwrap_or_default();
            push(t + 600, "DELETED", removed(&gone));
            for (_, on) in web.iter_mut().filter(|(_, on)| *on == gone) {
                on.clone_from(&nodes[0]);
            }
        }
        // The nightly batch at 02:00, an hour long.
        if !batch_done && t >= 2 * 3600 {
            batch_done = true;
            // The real autoscaler brings the batch its own nodes (three one-CPU pods a node) 90 s
            // after, and removes them ten minutes after the batch is gone.
            let mut batch_nodes = Vec::new();
            for _ in 0..day.batch.div_ceil(3) {
                let name = format!("ip-10-0-{}-{}", next_node / 250, next_node % 250);
                next_node += 1;
                push(t + 90, "ADDED", node(&name, t + 90));
                push(t + 3660 + 600, "DELETED", removed(&name));
                batch_nodes.push(name);
            }
            for i in 0..day.batch {
                let name = format!("batch-{i}");
                let on = batch_nodes[i / 3].clone();
                let b = |on| pod(&name, ("Job", "nightly"), "1", "2Gi", t, on);
                push(t, "ADDED", b(None));
                push(t + 120, "MODIFIED", b(Some(&on)));
                let mut done = b(Some(&on));
                done["status"]["phase"] = json!("Succeeded");
                push(t + 3600, "MODIFIED", done.clone());
                push(t + 3660, "DELETED", done);
            }
        }
        // A spot interruption at 15:30: the node goes, its web pods are created again.
        if !interrupted && t >= 15 * 3600 + 1800 && nodes.len() > 1 {
            interrupted = true;
            let gone = nodes.remove(0);
            push(t + 120, "DELETED", node(&gone, 0));
            let moved: Vec<usize> = (0..web.len()).filter(|&i| web[i].1 == gone).collect();
            for i in moved {
                let (old, _) = web[i].clone();
                push(t + 120, "DELETED", web_pod(&old, t, Some(&gone)));
                let name = format!("web-{next_pod}");
                next_pod += 1;
                let on = nodes[i % nodes.len()].clone();
                push(t + 121, "ADDED", web_pod(&name, t + 121, None));
                push(
                    t + 125,
                    "MODIFIED",
                    pod(
                        &name,
                        ("ReplicaSet", "web"),
                        "500m",
                        "1Gi",
                        t + 121,
                        Some(&on),
                    ),
                );
                web[i] = (name, on);
            }
        }
        t += day.hpa_every;
    }
    events.sort_by_key(|(t, seq, _, _)| (*t, *seq));
    let mut lines = 0;
    for (t, _, change, object) in events {
        let line = json!({"time": time(t.max(0)), "type": change, "object": object});
        serde_json::to_writer(&mut *out, &line)?;
        out.write_all(b"\n")?;
        lines += 1;
    }
    Ok(lines)
}
