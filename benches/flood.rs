//! CloudProvider latency while the expander is flooded, measured against the release binary as an
//! operator runs it: `ferroscale serve` with `--expander-listen`, on a memory cloud of 200 groups.
//!
//! A probe client sends CA's CloudProvider calls (NodeGroupTargetSize, NodeGroupNodes, Refresh) every
//! 10 ms, first with the server idle, then while F clients (default 4) each send the ~30 MB BestOptions
//! request of a large scale-up (200 options × 500 pods) back to back. It prints the probe's p50/p99/max
//! in both phases and the BestOptions throughput: a flood of expander work must not starve CA's
//! Refresh and writes.
//!
//! The server binds port 0 and its "serving" log line reports the addresses, so no port is guessed.
//! Knobs: `FERROSCALE_FLOOD_CLIENTS` (default 4), `FERROSCALE_FLOOD_SECS` (flood phase, default 20).
//! Run with `cargo bench --bench flood`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferroscale::proto::expander::expander_client::ExpanderClient;
use ferroscale::proto::externalgrpc as pb;
use ferroscale::proto::externalgrpc::cloud_provider_client::CloudProviderClient;

#[path = "support/best_options_request.rs"]
mod fixture;
#[path = "support/served.rs"]
mod served;

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn summary(mut l: Vec<Duration>) -> String {
    l.sort();
    format!(
        "{} calls, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        l.len(),
        percentile(&l, 0.5).as_secs_f64() * 1e3,
        percentile(&l, 0.99).as_secs_f64() * 1e3,
        l[l.len() - 1].as_secs_f64() * 1e3
    )
}

/// CA's CloudProvider calls every 10 ms until `until`; the latency of each.
async fn probe(addr: SocketAddr, until: Instant) -> Vec<Duration> {
    let mut c = CloudProviderClient::connect(format!("http://{addr}"))
        .await
        .expect("connect the CloudProvider");
    let mut out = Vec::new();
    let mut n = 0usize;
    while Instant::now() < until {
        let started = Instant::now();
        let id = format!("group-{:03}", n % fixture::OPTIONS);
        match n % 3 {
            0 => drop(
                c.node_group_target_size(pb::NodeGroupTargetSizeRequest { id })
                    .await,
            ),
            1 => drop(c.node_group_nodes(pb::NodeGroupNodesRequest { id }).await),
            _ => drop(c.refresh(pb::RefreshRequest {}).await.expect("Refresh")),
        }
        out.push(started.elapsed());
        n += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    out
}

#[tokio::main]
async fn main() {
    let flooders: usize = std::env::var("FERROSCALE_FLOOD_CLIENTS")
        .map_or(4, |v| v.parse().expect("FERROSCALE_FLOOD_CLIENTS: a count"));
    let secs: u64 = std::env::var("FERROSCALE_FLOOD_SECS")
        .map_or(20, |v| v.parse().expect("FERROSCALE_FLOOD_SECS: seconds"));
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("groups.yaml");
    std::fs::write(&config, fixture::groups_yaml()).expect("write the groups");
    let server = served::start(
        &[
            "--cloud",
            "memory",
            "--memory-config",
            config.to_str().expect("a UTF-8 path"),
            "--expander-listen",
            "127.0.0.1:0",
            "--expander",
            "price",
        ],
        "ferroscale::grpc::expander=warn",
    );
    let request = fixture::request();
    let size = prost::Message::encoded_len(&request);
    println!(
        "server pid {}; BestOptions request {:.1} MB; {} CPUs shared by server and clients",
        server.child.id(),
        size as f64 / 1e6,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );

    let idle = probe(server.grpc, Instant::now() + Duration::from_secs(5)).await;
    println!("CloudProvider, idle:              {}", summary(idle));

    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..flooders {
        let (stop, answered, refused, request) = (
            stop.clone(),
            answered.clone(),
            refused.clone(),
            request.clone(),
        );
        let addr = server.expander.expect("the expander listens");
        tasks.push(tokio::spawn(async move {
            let mut c = ExpanderClient::connect(format!("http://{addr}"))
                .await
                .expect("connect the expander")
                .max_encoding_message_size(128 << 20)
                .max_decoding_message_size(128 << 20);
            let mut latencies = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                match c.best_options(request.clone()).await {
                    Ok(_) => {
                        latencies.push(started.elapsed());
                        answered.fetch_add(1, Ordering::Relaxed);
                    }
                    // Past the expander's budget of bytes in flight (more flooders than it holds).
                    Err(s) if s.code() == tonic::Code::ResourceExhausted => {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(s) => panic!("BestOptions: {s:?}"),
                }
            }
            latencies
        }));
    }
    let flooded = probe(server.grpc, Instant::now() + Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let mut best = Vec::new();
    for t in tasks {
        best.extend(t.await.expect("flood task"));
    }
    println!(
        "CloudProvider, {flooders} BestOptions floods: {}",
        summary(flooded)
    );
    println!(
        "BestOptions: {} answered, {} refused RESOURCE_EXHAUSTED in {secs} s; {}",
        answered.load(Ordering::Relaxed),
        refused.load(Ordering::Relaxed),
        summary(best)
    );
}
