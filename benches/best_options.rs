//! BestOptions at the size the issue names: 200 options (node groups) × 500 pending pods each, as
//! cluster-autoscaler sends them with `--expander=grpc` during a large scale-up.
//!
//! * `handler`: the whole answer but the transport — decoding every template and every pod (new protocol
//!   generation, raw protobuf bytes), pricing, scoring and choosing — for the `price` and `least-waste`
//!   strategies and a `priority,price` chain.
//! * `grpc_round_trip`: a tonic client over a loopback socket, including encoding and sending the ~40 MB
//!   request, as CA's client sees it.
//!
//! Pods are realistic enough to decode like real ones: name, namespace, labels, an owner reference and two
//! containers with requests. Run with `cargo bench --bench best_options`.

use std::hint::black_box;
use std::sync::{Arc, RwLock};

use divan::Bencher;
use ferroscale::cloud::memory::{MemoryCloud, MemoryConfig};
use ferroscale::engine::expander::{Priorities, Strategy};
use ferroscale::grpc::expander::{ExpanderService, ExpanderSettings};
use ferroscale::proto::expander as pb;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use prost::Message;

fn main() {
    divan::main();
}

const OPTIONS: usize = 200;
const PODS: usize = 500;

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

fn cloud() -> MemoryCloud {
    let mut yaml = String::from("nodeGroups:\n");
    for g in 0..OPTIONS {
        let (cpu, price) = shape(g);
        yaml.push_str(&format!(
            "  - {{name: group-{g:03}, minSize: 0, maxSize: 1000, capacity: {{cpu: {cpu}, memory: {}Gi, pods: 110}}, pricePerHour: {price}}}\n",
            cpu * 4
        ));
    }
    MemoryCloud::new(&MemoryConfig::parse(&yaml).unwrap()).unwrap()
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

fn request() -> pb::BestOptionsRequest {
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

fn service(chain: &str) -> ExpanderService {
    let settings = Arc::new(ExpanderSettings {
        chain: Strategy::parse_chain(chain).unwrap(),
        priorities: RwLock::new(Priorities::parse("10: ['group-0[0-4].*']\n1: ['.*']").unwrap()),
    });
    ExpanderService::new(Arc::new(cloud()), Default::default(), settings)
}

#[divan::bench(args = ["price", "least-waste", "priority,price"], sample_count = 10, sample_size = 1)]
fn handler(bencher: Bencher, chain: &str) {
    let svc = service(chain);
    let req = request();
    let answer = svc.answer(req.clone()).unwrap();
    assert!(!answer.options.is_empty(), "a winner (ties are all kept)");
    bencher
        .with_inputs(|| req.clone())
        .bench_local_values(|r| black_box(svc.answer(r).unwrap()));
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn grpc_round_trip(bencher: Bencher) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let req = request();
    let mut client = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = service("price").into_server();
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(server)
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
        );
        pb::expander_client::ExpanderClient::connect(format!("http://{addr}"))
            .await
            .unwrap()
            .max_encoding_message_size(128 << 20)
            .max_decoding_message_size(128 << 20)
    });
    bencher.with_inputs(|| req.clone()).bench_local_values(|r| {
        rt.block_on(async {
            let a = client.best_options(r).await.unwrap().into_inner();
            assert!(!a.options.is_empty());
            black_box(a)
        })
    });
}
