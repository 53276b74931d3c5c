//! CA's BestOptions request at the size of a large scale-up: 200 options (node groups) × 500 pending pods
//! each (~30 MB), shared by the `best_options` and `flood` benches.

use ferroscale::proto::expander as pb;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use prost::Message;

pub const OPTIONS: usize = 200;
pub const PODS: usize = 500;

fn q(v: &str) -> Quantity {
    Quantity {
        string: Some(v.into()),
    }
}

fn container(name: &str, cpu: &str, memory: &str) -> core::Container {
    core::Container {
        name: Some(name.into()),
        image: Some(format!("registry.example.com/{name}:1.2.3")),
        resources: Some(core::ResourceRequirements {
            requests: [
                ("cpu".to_string(), q(cpu)),
                ("memory".to_string(), q(memory)),
            ]
            .into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn pod(i: usize) -> core::Pod {
    core::Pod {
        metadata: Some(meta::ObjectMeta {
            name: Some(format!("web-7d9f8c6b5-{i:05}")),
            namespace: Some("shop".into()),
            labels: [
                ("app".to_string(), "web".to_string()),
                ("pod-template-hash".to_string(), "7d9f8c6b5".to_string()),
            ]
            .into(),
            owner_references: vec![meta::OwnerReference {
                api_version: Some("apps/v1".into()),
                kind: Some("ReplicaSet".into()),
                name: Some("web-7d9f8c6b5".into()),
                uid: Some("0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9".into()),
                controller: Some(true),
                ..Default::default()
            }],
            ..Default::default()
        }),
        spec: Some(core::PodSpec {
            containers: vec![
                container("web", &format!("{}m", 250 + i % 4 * 250), "512Mi"),
                container("sidecar", "50m", "64Mi"),
            ],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Group `g`'s shape: 2 to 32 vCPUs at 4 GiB each, priced like m5 (0.048/vCPU-hour), every tenth a
/// discounted one.
fn shape(g: usize) -> (usize, f64) {
    let cpu = 2 << (g % 5);
    let mut price = 0.048 * cpu as f64;
    if g.is_multiple_of(10) {
        price *= 0.7;
    }
    (cpu, price)
}

/// The memory cloud's config of the 200 groups the options name.
pub fn groups_yaml() -> String {
    let mut yaml = String::from("nodeGroups:\n");
    for g in 0..OPTIONS {
        let (cpu, price) = shape(g);
        yaml.push_str(&format!(
            "  - {{name: group-{g:03}, minSize: 0, maxSize: 1000, capacity: {{cpu: {cpu}, memory: {}Gi, pods: 110}}, pricePerHour: {price}}}\n",
            cpu * 4
        ));
    }
    yaml
}

fn template(cpu: usize) -> core::Node {
    let resources = [
        ("cpu".to_string(), q(&cpu.to_string())),
        ("memory".to_string(), q(&format!("{}Gi", cpu * 4))),
        ("pods".to_string(), q("110")),
    ];
    core::Node {
        metadata: Some(meta::ObjectMeta {
            name: Some(format!("template-{cpu}")),
            labels: [("kubernetes.io/os".to_string(), "linux".to_string())].into(),
            ..Default::default()
        }),
        status: Some(core::NodeStatus {
            capacity: resources.clone().into(),
            allocatable: resources.into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The whole BestOptions request: 200 options, each with the same 500 pending pods.
pub fn request() -> pb::BestOptionsRequest {
    let pods: Vec<Vec<u8>> = (0..PODS).map(|i| pod(i).encode_to_vec()).collect();
    let mut req = pb::BestOptionsRequest::default();
    for g in 0..OPTIONS {
        let (cpu, _) = shape(g);
        let id = format!("group-{g:03}");
        req.options.push(pb::Option {
            node_group_id: id.clone(),
            node_count: (PODS * 1000 / (cpu * 1000)).max(1) as i32,
            pod_bytes: pods.clone(),
            ..Default::default()
        });
        req.node_bytes_map.insert(id, template(cpu).encode_to_vec());
    }
    req
}
