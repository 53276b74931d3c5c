//! The objects tests build, in the three shapes ferroscale reads them: `grpc` as cluster-autoscaler sends
//! them to `serve`, `kube` as the Kubernetes API serves them to `run` (JSON), `dump` as `kubectl get -o
//! yaml` writes them for `simulate`; each with the memory cloud's groups the tests of that shape share.

/// Objects as cluster-autoscaler sends them over gRPC, and the groups `serve` tests start on.
pub mod grpc {
    use ferroscale::proto::externalgrpc as pb;

    /// Three groups: `general` (zone-labelled, options), `batch` (no zone, tainted), `gpu` (GPU, capacity 2).
    pub const GROUPS: &str = r#"
nodeGroups:
  - name: general
    minSize: 1
    maxSize: 10
    targetSize: 2
    capacity: {cpu: "4", memory: 16Gi, pods: "58", ephemeral-storage: 100Gi}
    allocatable: {cpu: 3920m, memory: 15Gi}
    labels: {node.kubernetes.io/instance-type: m5.xlarge, topology.kubernetes.io/zone: us-east-1a}
    pricePerHour: 0.192
    options: {scaleDownUtilizationThreshold: 0.4, scaleDownUnneededTime: 5m}
  - name: batch
    minSize: 0
    maxSize: 5
    targetSize: 1
    capacity: {cpu: 8, memory: 32Gi}
    labels: {node.kubernetes.io/instance-type: c5.2xlarge}
    taints: [{key: dedicated, value: batch, effect: NoSchedule}]
    pricePerHour: 0.34
  - name: gpu
    minSize: 0
    maxSize: 4
    targetSize: 0
    capacity: {cpu: "4", memory: 16Gi, pods: "29", nvidia.com/gpu: "1"}
    labels:
      node.kubernetes.io/instance-type: g4dn.xlarge
      topology.kubernetes.io/zone: us-east-1b
      k8s.amazonaws.com/accelerator: nvidia-tesla-t4
      kubernetes.io/arch: amd64
    taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
    pricePerHour: 0.526
    launchCapacity: 2
"#;

    /// A protobuf timestamp `seconds` after the epoch.
    pub fn ts(seconds: i64) -> Option<prost_types::Timestamp> {
        Some(prost_types::Timestamp { seconds, nanos: 0 })
    }

    /// A node as CA sends it, known by provider id.
    pub fn node(provider_id: &str) -> pb::ExternalGrpcNode {
        pb::ExternalGrpcNode {
            provider_id: provider_id.into(),
            name: provider_id.rsplit('/').next().unwrap().into(),
            ..Default::default()
        }
    }

    /// A pod `default/web-1` with one container requesting `cpu` and `memory`.
    pub fn pod(cpu: &str, memory: &str) -> k8s_pb::api::core::v1::Pod {
        k8s_pb::api::core::v1::Pod {
            metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("web-1".into()),
                namespace: Some("default".into()),
                ..Default::default()
            }),
            spec: Some(k8s_pb::api::core::v1::PodSpec {
                containers: vec![k8s_pb::api::core::v1::Container {
                    name: Some("web".into()),
                    resources: Some(k8s_pb::api::core::v1::ResourceRequirements {
                        requests: [("cpu", cpu), ("memory", memory)]
                            .into_iter()
                            .map(|(k, v)| {
                                (
                                    k.to_string(),
                                    k8s_pb::apimachinery::pkg::api::resource::Quantity {
                                        string: Some(v.into()),
                                    },
                                )
                            })
                            .collect(),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }
}

/// Objects as the Kubernetes API serves them (JSON), and the groups `run` tests start on.
pub mod kube {
    use serde_json::{json, Value};

    pub const GROUPS: &str = r#"
nodeGroups:
  - {name: small, minSize: 0, maxSize: 5, targetSize: 1, instances: [{id: i-a}],
     capacity: {cpu: 2, memory: 8Gi, pods: 20}, pricePerHour: 0.096}
  - {name: big, minSize: 0, maxSize: 2, targetSize: 0,
     capacity: {cpu: 8, memory: 32Gi, pods: 50}, pricePerHour: 0.384}
"#;

    pub const POOL: &str = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 5, targetSize: 2, instances: [{id: i-a}, {id: i-b}],
     capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.192}
"#;

    /// A ready node `name` with `cpu` and `memory` allocatable, for 20 pods.
    pub fn node(name: &str, provider_id: &str, cpu: &str, memory: &str) -> Value {
        json!({
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"providerID": provider_id},
            "status": {
                "allocatable": {"cpu": cpu, "memory": memory, "pods": "20"},
                "capacity": {"cpu": cpu, "memory": memory, "pods": "20"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        })
    }

    /// A pod owned by a ReplicaSet; pending (marked unschedulable by the scheduler) without a node.
    pub fn pod(name: &str, cpu: &str, node: Option<&str>, app: &str) -> Value {
        let status = match node {
            Some(_) => json!({"phase": "Running"}),
            None => json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}),
        };
        json!({
            "metadata": {"name": name, "namespace": "default", "labels": {"app": app},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                    "uid": "rs-uid", "controller": true}]},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "app",
                "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}]},
            "status": status,
        })
    }
}

/// Objects as `kubectl get -o yaml` writes them (the input of `simulate`), and the groups simulations
/// start on.
pub mod dump {
    pub const GROUPS: &str = r#"
nodeGroups:
  - {name: small, minSize: 0, maxSize: 10, capacity: {cpu: 2, memory: 8Gi, pods: 20}, pricePerHour: 0.096,
     labels: {size: small}}
  - {name: big, minSize: 0, maxSize: 10, capacity: {cpu: 8, memory: 32Gi, pods: 50}, pricePerHour: 0.384,
     labels: {size: big}}
  - {name: gpu, minSize: 0, maxSize: 2, capacity: {cpu: 4, memory: 16Gi, pods: 20, nvidia.com/gpu: 1},
     pricePerHour: 0.526, taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]}
"#;

    /// A ready node `name` of `group` with `cpu` and `memory` allocatable, for 20 pods.
    pub fn node(name: &str, group: &str, cpu: &str, memory: &str) -> String {
        format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {{ferroscale.io/node-group: {group}, kubernetes.io/hostname: {name}}}\n\
         status:\n  allocatable: {{cpu: \"{cpu}\", memory: {memory}, pods: \"20\"}}\n  conditions: [{{type: Ready, status: \"True\"}}]\n"
    )
    }

    /// A pod owned by a ReplicaSet unless `owner` says otherwise; `extra` is YAML under `spec`.
    pub fn pod(
        ns: &str,
        name: &str,
        cpu: &str,
        memory: &str,
        node: Option<&str>,
        extra: &str,
    ) -> String {
        let node = node
            .map(|n| format!("  nodeName: {n}\n"))
            .unwrap_or_default();
        format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\n  labels: {{app: {name}}}\n  \
         ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: u, controller: true}}]\n\
         spec:\n{node}  containers: [{{name: c, resources: {{requests: {{cpu: \"{cpu}\", memory: {memory}}}}}}}]\n{extra}"
    )
    }
}
