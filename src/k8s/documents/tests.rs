//! The one-pass read (`stream`, `lean`) gives the model the exact read gives: every pod and node of the
//! conformance cases and of a pod that sets every field the model reads, converted both ways.

use k8s_openapi::api::core::v1 as core;
use serde_json::{json, Value};

use super::convert::Converting;
use super::{chunks, lean, stream};
use crate::k8s::objects::{node, pod, pod_finished_bound, pod_terminal};
use crate::k8s::volumes::claim_names;

/// A pod setting every field the converters read, in varied states.
fn everything(phase: &str, node_name: Option<&str>) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "web-1", "namespace": "shop", "uid": "u-1",
            "creationTimestamp": "2026-11-01T10:05:00Z", "deletionTimestamp": "2026-11-02T10:05:00Z",
            "labels": {"app": "web", "tier": "front"},
            "annotations": {
                "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
                "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes": "scratch,cache",
                "kubernetes.io/config.mirror": "x",
                "cluster-autoscaler.kubernetes.io/daemonset-pod": "true",
                "cluster-autoscaler.kubernetes.io/pod-scale-up-delay": "90s",
                "karpenter.sh/do-not-disrupt": "true",
                "descheduler.alpha.kubernetes.io/evict": "",
                "descheduler.alpha.kubernetes.io/prefer-no-eviction": ""
            },
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc", "uid": "o-1", "controller": true},
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "o-2"}
            ],
            "managedFields": [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}]
        },
        "spec": {
            "nodeName": node_name, "priority": 1000, "schedulerName": "custom",
            "terminationGracePeriodSeconds": 45,
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}],
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [
                {"key": "a", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "b", "operator": "Equal", "value": "v", "effect": "NoExecute", "tolerationSeconds": 30},
                {"key": "c", "operator": "Gt", "value": "5"},
                {"key": "d", "operator": "Lt", "value": "9", "effect": ""}
            ],
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}],
                     "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n9"]}]}
                ]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 20, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}
                ]},
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone",
                     "namespaces": ["data"], "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists"}]},
                     "matchLabelKeys": ["tier"]}
                ]},
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname",
                     "mismatchLabelKeys": ["tier", "absent"]}
                ]}
            },
            "topologySpreadConstraints": [
                {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": {"app": "web"}}, "minDomains": 3,
                 "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor", "matchLabelKeys": ["tier"]},
                {"maxSkew": 1, "topologyKey": "host", "whenUnsatisfiable": "ScheduleAnyway"},
                {"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule"}
            ],
            "overhead": {"cpu": "10m", "memory": "16Mi"},
            "resources": {"requests": {"cpu": "2", "memory": "1Gi"}},
            "volumes": [
                {"name": "scratch", "emptyDir": {}},
                {"name": "shm", "emptyDir": {"medium": "Memory"}},
                {"name": "host", "hostPath": {"path": "/var/log"}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-1"}},
                {"name": "tmp", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}},
                {"name": "ebs", "awsElasticBlockStore": {"volumeID": "vol-123"}},
                {"name": "cfg", "configMap": {"name": "cfg"}}
            ],
            "initContainers": [
                {"name": "init", "image": "busybox", "resources": {"requests": {"cpu": "3", "memory": "64Mi"}}},
                {"name": "proxy", "image": "envoy", "restartPolicy": "Always",
                 "ports": [{"containerPort": 15001, "hostPort": 15001, "hostIP": "10.0.0.1"}],
                 "resources": {"requests": {"cpu": "100m"}}}
            ],
            "containers": [
                {"name": "main", "image": "shop/web:1.0", "command": ["/web"], "env": [{"name": "A", "value": "1"}],
                 "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "UDP"}, {"containerPort": 81}],
                 "resources": {"requests": {"cpu": "500m", "memory": "256Mi", "nvidia.com/gpu": "1"}, "limits": {"cpu": "1"}},
                 "livenessProbe": {"httpGet": {"path": "/", "port": 80}}},
                {"name": "side", "resources": {"requests": {"ephemeral-storage": "1Gi"}}}
            ]
        },
        "status": {
            "phase": phase, "reason": "Evicted", "podIP": "10.1.0.1", "nominatedNodeName": "n2",
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"},
                {"type": "PodResizePending", "status": "True", "reason": "Deferred"},
                {"type": "Ready", "status": "False", "reason": "PodCompleted", "lastTransitionTime": "2026-11-01T10:06:00Z"}
            ],
            "resources": {"requests": {"cpu": "2"}},
            "allocatedResources": {"cpu": "2"},
            "initContainerStatuses": [
                {"name": "init", "image": "busybox", "imageID": "x", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
            ],
            "containerStatuses": [
                {"name": "main", "image": "shop/web:1.0", "imageID": "y", "ready": false, "restartCount": 7,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
                 "allocatedResources": {"cpu": "750m"}, "resources": {"requests": {"cpu": "600m"}}},
                {"name": "side", "image": "s", "imageID": "z", "ready": true, "restartCount": 1,
                 "state": {"terminated": {"exitCode": 2, "reason": "Error"}}}
            ],
            "ephemeralContainerStatuses": [
                {"name": "debug", "image": "busybox", "imageID": "d", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}
            ]
        }
    })
}

/// Every object of kind `kind` in `value`, however deep.
fn objects_of(value: &Value, kind: &str, out: &mut Vec<Value>) {
    match value {
        Value::Object(m) if m.get("kind").and_then(Value::as_str) == Some(kind) => {
            out.push(value.clone())
        }
        Value::Object(m) => m.values().for_each(|v| objects_of(v, kind, out)),
        Value::Array(a) => a.iter().for_each(|v| objects_of(v, kind, out)),
        _ => {}
    }
}

/// Every conformance case file, as JSON.
fn cases() -> Vec<Value> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/cases");
    walkdir::WalkDir::new(root)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.path().extension().is_some_and(|x| x == "yaml"))
        .map(|e| {
            let text = std::fs::read_to_string(e.path()).unwrap();
            serde_norway::from_str::<Value>(&text).unwrap()
        })
        .collect()
}

fn pods() -> Vec<Value> {
    let mut out = vec![
        everything("Running", Some("n1")),
        everything("Failed", Some("n1")),
        everything("Succeeded", None),
        everything("Pending", None),
    ];
    for case in cases() {
        objects_of(&case, "Pod", &mut out);
    }
    out
}

fn nodes() -> Vec<Value> {
    let mut out = vec![json!({
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"zone": "a"}, "creationTimestamp": "2026-11-01T10:00:00Z",
            "annotations": {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}},
        "spec": {"providerID": "aws:///us-east-1a/i-1", "unschedulable": true,
            "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}, {"key": "e", "effect": "NoExecute"}]},
        "status": {"allocatable": {"cpu": "3920m", "memory": "15Gi"}, "capacity": {"cpu": "4", "memory": "16Gi", "pods": "58"},
            "images": [{"names": ["a"], "sizeBytes": 1}],
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-01T10:01:00Z"},
                {"type": "DiskPressure", "status": "False", "lastTransitionTime": "2026-11-01T10:03:00Z"},
                {"type": "MemoryPressure", "status": "False", "lastTransitionTime": "2026-11-09T10:03:00Z"}
            ]}
    })];
    // Conditions that make a node unready (upstream's GetNodeReadiness) are read both ways.
    for kind in ["DiskPressure", "NetworkUnavailable"] {
        out.push(json!({"kind": "Node", "metadata": {"name": kind},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": kind, "status": "True"}]}}));
    }
    for case in cases() {
        objects_of(&case, "Node", &mut out);
    }
    out
}

#[test]
fn a_pod_read_lean_converts_to_the_model_the_full_object_gives() {
    let pods = pods();
    assert!(pods.len() > 100, "{} pods", pods.len());
    for p in pods {
        let text = p.to_string();
        let full: core::Pod = serde_json::from_str(&text).unwrap();
        let lean = serde_json::from_str::<lean::Pod>(&text)
            .unwrap()
            .into_core();
        let model = |p: &core::Pod| pod(p).map_err(|e| e.to_string());
        assert_eq!(model(&lean), model(&full), "{text}");
        if text.contains("prefer-no-eviction") {
            // The descheduler's facts are read, not left at their defaults, both ways.
            let m = model(&lean).unwrap().meta;
            assert!(m.prefer_no_eviction && m.has_resource_claims, "{text}");
            assert_eq!(m.conditions.len(), 3);
            assert_eq!(m.nominated_node.as_deref(), Some("n2"));
            assert!(m.conditions[2].last_transition.is_some());
            assert!(m.containers.last().is_some_and(|c| c.ephemeral));
            // ScheduleAnyway spread and preferred node affinity, kept for the descheduler.
            assert_eq!(m.soft_spread.len(), 1);
            assert_eq!(m.soft_spread[0].topology_key, "host");
            assert_eq!(m.preferred_node_affinity.len(), 1);
            assert_eq!(m.preferred_node_affinity[0].0, 20);
        }
        assert_eq!(claim_names(&lean), claim_names(&full), "{text}");
        assert_eq!(pod_terminal(&lean), pod_terminal(&full));
        assert_eq!(pod_finished_bound(&lean), pod_finished_bound(&full));
    }
}

#[test]
fn a_node_read_lean_converts_to_the_model_the_full_object_gives() {
    let nodes = nodes();
    assert!(nodes.len() > 50, "{} nodes", nodes.len());
    for n in nodes {
        let text = n.to_string();
        let full: core::Node = serde_json::from_str(&text).unwrap();
        let lean = serde_json::from_str::<lean::Node>(&text)
            .unwrap()
            .into_core();
        let model = |n: &core::Node| node(n).map_err(|e| e.to_string());
        assert_eq!(model(&lean), model(&full), "{text}");
        let m = model(&lean).unwrap_or_default();
        match m.name.as_str() {
            "DiskPressure" => assert!(m.disk_pressure && !m.network_unavailable, "{text}"),
            "NetworkUnavailable" => assert!(m.network_unavailable && !m.disk_pressure, "{text}"),
            _ => {}
        }
    }
}

/// The model of `text` both ways: the one-pass read, and the exact read.
fn both_ways(text: &str) -> (String, String) {
    let once = stream::read(text).expect("the one-pass read takes it");
    let exact = super::json::parse::<Converting>(text, "dump")
        .map_err(|_| "exact read failed")
        .unwrap();
    let show = |c: Converting| format!("{:?}", c.finish().unwrap());
    (show(once), show(exact))
}

#[test]
fn a_dump_read_in_one_pass_is_the_dump_read_exactly() {
    let mut items = nodes();
    items.extend(pods().into_iter().filter(|p| {
        // Conformance pods are of many clusters: keep those that convert, with unique names.
        let full: core::Pod = serde_json::from_value(p.clone()).unwrap();
        pod(&full).is_ok()
    }));
    let text = json!({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}});
    let (once, exact) = both_ways(&serde_json::to_string_pretty(&text).unwrap());
    assert_eq!(once, exact);
    // Kind first, concatenated documents, and an object that is no List.
    let text = format!(
        "{}\n{}",
        json!({"kind": "List", "items": [everything("Running", Some("n1"))]}),
        nodes()[0]
    );
    let (once, exact) = both_ways(&text);
    assert_eq!(once, exact);
}

/// The model of every item of the conformance cases that converts, as one List's text.
fn a_big_list() -> String {
    let mut items = nodes();
    items.extend(pods().into_iter().filter(|p| {
        let full: core::Pod = serde_json::from_value(p.clone()).unwrap();
        pod(&full).is_ok()
    }));
    let text = json!({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}});
    serde_json::to_string_pretty(&text).unwrap()
}

#[test]
fn a_dump_read_a_few_bytes_at_a_time_is_the_dump_read_whole() {
    let show = |c: Option<Converting>| format!("{:?}", c.expect("taken").finish().unwrap());
    let pending = everything("Pending", None);
    for text in [
        a_big_list(),
        // Kind first, concatenated Lists, empty and null items.
        format!(
            "{}\n{}{}",
            json!({"kind": "List", "items": [everything("Running", Some("n1")), pending]}),
            json!({"kind": "NodeList", "items": [], "metadata": {}}),
            json!({"items": null, "kind": "PodList"})
        ),
    ] {
        let whole = show(stream::read(&text));
        for chunk in [1, 7, 100, 4096, 1 << 20] {
            let chunked = chunks::read_sized(text.as_bytes(), chunk).unwrap();
            assert_eq!(show(chunked), whole, "chunk {chunk}");
        }
    }
}

#[test]
fn a_dump_the_chunked_read_refuses_is_read_whole_with_its_error() {
    let dir = tempfile::tempdir().unwrap();
    for (text, error) in [
        (
            r#"{"items": [{"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}}], "kind": "List"}"#,
            "pod default/p",
        ),
        (
            r#"{"items": [{"kind": "Pod", "spec": {"containers": 3}}], "kind": "List"}"#,
            "items[0] (Pod ): spec.containers",
        ),
        (
            r#"{"items": [{"kind": "Pod"}, "kind": "List"}"#,
            "dump.json",
        ),
    ] {
        assert!(chunks::read_sized(text.as_bytes(), 5).unwrap().is_none());
        let file = dir.path().join("dump.json");
        std::fs::write(&file, text).unwrap();
        let whole = || Ok(std::fs::read_to_string(&file).unwrap());
        let e = super::inputs_of_file(&file, "dump.json", whole).unwrap_err();
        assert!(e.to_string().contains(error), "{e}");
    }
    // A single object, no List, is read whole (and taken).
    let file = dir.path().join("node.json");
    std::fs::write(&file, nodes()[0].to_string()).unwrap();
    let whole = || Ok(std::fs::read_to_string(&file).unwrap());
    let read = super::inputs_of_file(&file, "node.json", whole).unwrap();
    assert_eq!(read.nodes.len(), 1);
}

#[test]
fn a_dump_the_one_pass_read_refuses_is_read_exactly_with_its_error() {
    for (text, error) in [
        (
            r#"{"items": [{"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}}], "kind": "List"}"#,
            "pod default/p",
        ),
        (
            r#"{"items": [{"kind": "Pod", "spec": {"containers": 3}}], "kind": "List"}"#,
            "items[0] (Pod ): spec.containers",
        ),
        (
            r#"{"items": [{"kind": "Gadget"}], "kind": "List"}"#,
            "Gadget",
        ),
    ] {
        assert!(stream::read(text).is_none());
        let e = super::inputs(text, "dump.json").unwrap_err().to_string();
        assert!(e.contains(error), "{e}");
    }
}
