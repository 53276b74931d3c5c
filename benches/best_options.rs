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
use std::sync::Arc;

use divan::Bencher;
use ferroscale::cloud::memory::{MemoryCloud, MemoryConfig};
use ferroscale::engine::expander::{Priorities, Strategy};
use ferroscale::grpc::expander::{ExpanderService, ExpanderSettings};
use ferroscale::proto::expander as pb;
use parking_lot::RwLock;

#[path = "support/best_options_request.rs"]
mod fixture;
use fixture::{groups_yaml, request};

fn main() {
    divan::main();
}

fn cloud() -> MemoryCloud {
    MemoryCloud::new(&MemoryConfig::parse(&groups_yaml()).unwrap()).unwrap()
}

fn service(chain: &str) -> ExpanderService {
    let settings = Arc::new(ExpanderSettings {
        chain: Strategy::parse_chain(chain).unwrap(),
        priorities: Arc::new(RwLock::new(
            Priorities::parse("10: ['group-0[0-4].*']\n1: ['.*']").unwrap(),
        )),
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
