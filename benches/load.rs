//! Load run of `ferroscale serve` over real sockets: the release binary serves 5,000 nodes in 100 groups
//! and C concurrent tonic clients send the cached reads CA makes every loop. Prints throughput, latency
//! percentiles and the server's peak RSS. `FERROSCALE_LOAD_REQUESTS` sets requests per round.

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ferroscale::proto::externalgrpc as pb;
use ferroscale::proto::externalgrpc::cloud_provider_client::CloudProviderClient;
use tonic::transport::Channel;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// One request of the mix; the request number picks the RPC (most are NodeGroupForNode, as in CA).
async fn one(
    c: &mut CloudProviderClient<Channel>,
    n: usize,
    ids: &[String],
    only_lookup: bool,
) -> bool {
    let group = format!("group-{:03}", n % 100);
    let kind = if only_lookup { 0 } else { n % 10 };
    let ok = match kind {
        0..=5 => c
            .node_group_for_node(pb::NodeGroupForNodeRequest {
                node: Some(pb::ExternalGrpcNode {
                    provider_id: ids[n % ids.len()].clone(),
                    ..Default::default()
                }),
            })
            .await
            .is_ok(),
        6 => c
            .node_group_target_size(pb::NodeGroupTargetSizeRequest { id: group })
            .await
            .is_ok(),
        7 => c
            .node_group_template_node_info(pb::NodeGroupTemplateNodeInfoRequest { id: group })
            .await
            .is_ok(),
        8 => match c
            .node_group_get_options(pb::NodeGroupAutoscalingOptionsRequest {
                id: group,
                defaults: None,
            })
            .await
        {
            Ok(_) => true,
            Err(s) => s.code() == tonic::Code::Unimplemented,
        },
        _ => c
            .node_group_nodes(pb::NodeGroupNodesRequest { id: group })
            .await
            .is_ok(),
    };
    ok
}

async fn round(addr: &str, clients: usize, total: usize, ids: &[String], only_lookup: bool) {
    let per_client = total / clients;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for k in 0..clients {
        let mut c = CloudProviderClient::connect(addr.to_string())
            .await
            .unwrap();
        let ids = ids.to_vec();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(per_client);
            let mut errors = 0;
            let deadline = Instant::now() + Duration::from_secs(30);
            for i in 0..per_client {
                let t = Instant::now();
                if !one(&mut c, k * per_client + i, &ids, only_lookup).await {
                    errors += 1;
                }
                lat.push(t.elapsed());
                if Instant::now() > deadline {
                    break;
                }
            }
            (lat, errors)
        }));
    }
    let mut lat = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await.unwrap();
        lat.extend(l);
        errors += e;
    }
    let wall = started.elapsed();
    lat.sort();
    let p = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)].as_secs_f64() * 1e6;
    println!(
        "{:<22} clients {clients:>3}: {:>6} requests, {errors} errors, {:>8.0} req/s, p50 {:>6.0} µs, p90 {:>6.0} µs, p99 {:>6.0} µs, max {:>7.0} µs",
        if only_lookup { "NodeGroupForNode only" } else { "CA read mix" },
        lat.len(),
        lat.len() as f64 / wall.as_secs_f64(),
        p(0.5),
        p(0.9),
        p(0.99),
        p(1.0)
    );
}

#[tokio::main]
async fn main() {
    let total: usize = std::env::var("FERROSCALE_LOAD_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("groups.yaml");
    let mut yaml = String::from("nodeGroups:\n");
    for g in 0..100 {
        let options = if g % 4 == 0 {
            ", options: {scaleDownUtilizationThreshold: 0.4}"
        } else {
            ""
        };
        yaml.push_str(&format!(
            "  - {{name: group-{g:03}, minSize: 0, maxSize: 200, targetSize: 50, pricePerHour: 0.192, \
             capacity: {{cpu: 4, memory: 16Gi, pods: 58}}, \
             labels: {{topology.kubernetes.io/zone: us-east-1a, node.kubernetes.io/instance-type: m5.xlarge}}{options}}}\n"
        ));
    }
    std::fs::write(&config, yaml).unwrap();
    let (grpc, http) = (free_port(), free_port());
    let mut server = Command::new(env!("CARGO_BIN_EXE_ferroscale"))
        .args(["serve", "--cloud", "memory", "--memory-config"])
        .arg(&config)
        .args([
            "--listen",
            &format!("127.0.0.1:{grpc}"),
            "--http-listen",
            &format!("127.0.0.1:{http}"),
        ])
        .args(["--shutdown-grace-period", "1s"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let addr = format!("http://127.0.0.1:{grpc}");
    let mut c = loop {
        if let Ok(c) = CloudProviderClient::connect(addr.clone()).await {
            break c;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let idle_rss = rss_kib(server.id(), "VmRSS");
    let mut ids = Vec::new();
    for g in 0..100 {
        let r = c
            .node_group_nodes(pb::NodeGroupNodesRequest {
                id: format!("group-{g:03}"),
            })
            .await
            .unwrap();
        ids.extend(r.into_inner().instances.into_iter().map(|i| i.id));
    }
    println!(
        "server: 100 groups, {} nodes; RSS after start {} KiB",
        ids.len(),
        idle_rss
    );
    for clients in [8, 32, 64] {
        round(&addr, clients, total, &ids, false).await;
    }
    round(&addr, 32, total, &ids, true).await;
    println!(
        "server RSS now {} KiB, peak {} KiB",
        rss_kib(server.id(), "VmRSS"),
        rss_kib(server.id(), "VmHWM")
    );
    drop(c);
    Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    let status = server.wait().unwrap();
    assert!(status.success(), "server exit: {status}");
}
