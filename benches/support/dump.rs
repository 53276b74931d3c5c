//! A cluster dump as `kubectl get nodes,pods -A -o json` writes it (one `List`, four-space indent; pods
//! trimmed to the fields that matter), for measuring `ferroscale simulate` on a big cluster: written by
//! `examples/gen_dump.rs` and by the `read_dump` bench. Nodes are labelled into the groups of
//! `examples/bench-groups.yaml` (`general-a`, `general-b`, `memory`). Items are written one at a time,
//! so the writer's own memory stays small.

use std::io::Write;

use serde::Serialize;
use serde_json::{json, Value};

const GROUPS: [(&str, &str, &str); 3] = [
    ("general-a", "us-east-1a", "m5.xlarge"),
    ("general-b", "us-east-1b", "m5.xlarge"),
    ("memory", "us-east-1a", "r5.xlarge"),
];

fn node(i: usize) -> Value {
    let (group, zone, itype) = GROUPS[i % GROUPS.len()];
    let name = format!(
        "ip-10-{}-{}-{}.ec2.internal",
        i / 65536,
        (i / 256) % 256,
        i % 256
    );
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
            "creationTimestamp": "2026-11-01T10:00:00Z",
            "labels": {
                "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                "ferroscale.io/node-group": group, "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": itype, "topology.kubernetes.io/region": "us-east-1",
                "topology.kubernetes.io/zone": zone
            },
            "name": name,
            "resourceVersion": format!("{}", 1000 + i),
            "uid": format!("00000000-0000-4000-8000-{i:012}")
        },
        "spec": {"providerID": format!("aws:///{zone}/i-{i:017x}")},
        "status": {
            "addresses": [{"address": format!("10.0.{}.{}", i / 256, i % 256), "type": "InternalIP"}, {"address": name, "type": "Hostname"}],
            "allocatable": {"cpu": "3920m", "ephemeral-storage": "95491281146", "memory": "15136204Ki", "pods": "110"},
            "capacity": {"cpu": "4", "ephemeral-storage": "104845292Ki", "memory": "16069068Ki", "pods": "110"},
            "conditions": [
                {"lastHeartbeatTime": "2026-11-23T10:00:00Z", "lastTransitionTime": "2026-11-01T10:00:00Z", "message": "kubelet has sufficient memory available", "reason": "KubeletHasSufficientMemory", "status": "False", "type": "MemoryPressure"},
                {"lastHeartbeatTime": "2026-11-23T10:00:00Z", "lastTransitionTime": "2026-11-01T10:00:00Z", "message": "kubelet has no disk pressure", "reason": "KubeletHasNoDiskPressure", "status": "False", "type": "DiskPressure"},
                {"lastHeartbeatTime": "2026-11-23T10:00:00Z", "lastTransitionTime": "2026-11-01T10:01:00Z", "message": "kubelet is posting ready status", "reason": "KubeletReady", "status": "True", "type": "Ready"}
            ],
            "nodeInfo": {"architecture": "amd64", "containerRuntimeVersion": "containerd://1.7.22", "kernelVersion": "6.1.112", "kubeProxyVersion": "v1.31.0", "kubeletVersion": "v1.31.0", "operatingSystem": "linux", "osImage": "Amazon Linux 2023"}
        }
    })
}

/// The shape of the dump written.
pub struct Shape {
    pub nodes: usize,
    /// Pods per node.
    pub per_node: usize,
    /// Pending Job pods after the bound ones (None: one pending pod per node instead).
    pub pending: Option<usize>,
}

fn pod(node: usize, j: usize, shape: &Shape) -> Value {
    let (nodes, per_node) = (shape.nodes, shape.per_node);
    let bound = shape.pending.is_some() || j + 1 < per_node;
    let n = node * per_node + j;
    let apps = if shape.pending.is_some() { 20 } else { 200 };
    let app = format!("app-{}", n % apps);
    let mut spec = json!({
        "containers": [{
            "image": format!("registry.example.com/{app}:1.2.3"),
            "name": "main",
            "resources": {"requests": {"cpu": "50m", "memory": "100Mi"}}
        }]
    });
    let status = if bound {
        spec["nodeName"] = json!(node_name(node));
        json!({"phase": "Running", "podIP": format!("10.1.{}.{}", n / 256 % 256, n % 256)})
    } else {
        json!({
            "conditions": [{"message": format!("0/{nodes} nodes are available: {nodes} Insufficient cpu."),
                "reason": "Unschedulable", "status": "False", "type": "PodScheduled"}],
            "phase": "Pending"
        })
    };
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "creationTimestamp": "2026-11-01T10:05:00Z",
            "labels": {"app": app},
            "name": format!("{app}-{node:05x}{j:03x}"),
            "namespace": format!("ns-{}", n % 20),
            "ownerReferences": [{"apiVersion": "apps/v1", "controller": true, "kind": "ReplicaSet",
                "name": format!("{app}-7d9f8c6b5"), "uid": format!("00000000-0000-4000-9000-{:012}", n % 200)}],
            "uid": format!("00000000-0000-4000-a000-{n:012}")
        },
        "spec": spec,
        "status": status
    })
}

/// The `k`th pending pod of a Job (100 Jobs).
fn job_pod(k: usize, nodes: usize) -> Value {
    let job = format!("batch-{}", k % 100);
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "creationTimestamp": "2026-11-01T10:10:00Z",
            "labels": {"batch.kubernetes.io/job-name": job, "job-name": job},
            "name": format!("{job}-{k:06x}"),
            "namespace": format!("jobs-{}", k % 5),
            "ownerReferences": [{"apiVersion": "batch/v1", "blockOwnerDeletion": true, "controller": true,
                "kind": "Job", "name": job, "uid": format!("00000000-0000-4000-b000-{:012}", k % 100)}],
            "uid": format!("00000000-0000-4000-c000-{k:012}")
        },
        "spec": {
            "containers": [{
                "image": "registry.example.com/batch:2.0.1",
                "name": "work",
                "resources": {"requests": {"cpu": "100m", "memory": "200Mi"}}
            }],
            "restartPolicy": "Never"
        },
        "status": {
            "conditions": [{"message": format!("0/{nodes} nodes are available: {nodes} Insufficient cpu."),
                "reason": "Unschedulable", "status": "False", "type": "PodScheduled"}],
            "phase": "Pending"
        }
    })
}

fn node_name(i: usize) -> String {
    format!(
        "ip-10-{}-{}-{}.ec2.internal",
        i / 65536,
        (i / 256) % 256,
        i % 256
    )
}

/// One item, indented as an element of the List's `items`.
fn write_item(out: &mut impl Write, item: &Value, first: bool) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(
        &mut buf,
        serde_json::ser::PrettyFormatter::with_indent(b"    "),
    );
    item.serialize(&mut ser).map_err(std::io::Error::other)?;
    let text = String::from_utf8(buf).map_err(std::io::Error::other)?;
    out.write_all(if first { b"\n" } else { b",\n" })?;
    for (i, line) in text.lines().enumerate() {
        if i > 0 {
            out.write_all(b"\n")?;
        }
        write!(out, "        {line}")?;
    }
    Ok(())
}

/// Writes the whole dump, an item at a time.
pub fn write(out: &mut impl Write, shape: &Shape) -> std::io::Result<()> {
    out.write_all(b"{\n    \"apiVersion\": \"v1\",\n    \"items\": [")?;
    for i in 0..shape.nodes {
        write_item(out, &node(i), i == 0)?;
    }
    for i in 0..shape.nodes {
        for j in 0..shape.per_node {
            write_item(out, &pod(i, j, shape), false)?;
        }
    }
    for k in 0..shape.pending.unwrap_or(0) {
        write_item(out, &job_pod(k, shape.nodes), false)?;
    }
    out.write_all(b"\n    ],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n")?;
    out.flush()
}
