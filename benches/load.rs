//! Load run of `ferroscale serve` over real sockets, the way cluster-autoscaler uses it.
//!
//! The release binary serves an in-memory cloud of 100 node groups × 50 nodes (5,000 instances, a tenth
//! of the groups with autoscaling options of their own) on 127.0.0.1. C concurrent tonic clients, one
//! HTTP/2 channel each, send the cached reads CA makes on every loop: NodeGroupForNode with real provider
//! ids (the most frequent by far: CA asks it for every node), NodeGroupTargetSize, NodeGroupNodes,
//! NodeGroupTemplateNodeInfo, NodeGroupGetOptions (groups without options answer UNIMPLEMENTED, which is the
//! protocol's normal "keep your defaults") and NodeGroups. Every answer is checked against the config, so
//! a wrong answer counts as an error just like a failed call.
//!
//! It answers: how many requests per second one server sustains, what latency CA's calls see as clients
//! pile up (C = 8, 32, 64), whether anything fails under load, how much memory the server needs for 5,000
//! nodes, and that it still shuts down cleanly on SIGTERM afterwards. Each round is a fixed number of
//! requests and also stops after a time limit; one more round sends only NodeGroupForNode.
//!
//! The load generator runs on the same machine and competes with the server for CPU, so throughput is a
//! lower bound for a dedicated core; "server CPU µs/req" (from `/proc/<pid>/stat`) is the server's own cost.
//!
//! Then open-loop rounds (`open_loop`): CA's read mix sent on a fixed schedule at each rate over one
//! connection, latency measured from when each request was due (no coordinated omission), p50/p99/p99.9
//! per rate after a second of warm-up, with each side's CPU per request; before them, how late the idle
//! machine wakes a sleeping thread (the floor under those tails on a VM).
//!
//! Knobs: `FERROSCALE_LOAD_REQUESTS` (requests per round, default 50,000), `FERROSCALE_LOAD_CLIENTS`
//! (concurrency levels, default `8,32,64`), `FERROSCALE_LOAD_ROUND_SECS` (time limit per round, default 30),
//! `FERROSCALE_LOAD_RATES` (open-loop rates, default `1000,5000,10000`), `FERROSCALE_LOAD_OPEN_SECS`
//! (counted seconds per rate, default 10).
//! Run with `cargo bench --bench load`.

use std::collections::{BTreeMap, BTreeSet};

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferroscale::proto::externalgrpc as pb;
use ferroscale::proto::externalgrpc::cloud_provider_client::CloudProviderClient;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tonic::transport::Channel;
use tonic::Code;

#[path = "support/load_cluster.rs"]
mod cluster;
#[path = "support/open_loop.rs"]
mod open_loop;
#[path = "support/served.rs"]
mod served;
use cluster::Rpc::*;
use cluster::*;
use served::Server;

fn clock_ticks_per_second() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse().ok())
        .unwrap_or(100)
}

/// A minimal HTTP/1.0 GET: the status code and the body.
async fn http_get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n").as_bytes())
        .await?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await?;
    let text = String::from_utf8_lossy(&raw);
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad HTTP response {text:?}")))?;
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b.trim());
    Ok((code, body.to_string()))
}

/// Waits until `/readyz` answers 200 and returns its body.
async fn wait_ready(server: &mut Server, http_port: u16) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = server.child.try_wait().expect("poll the server") {
            panic!("the server exited before it was ready: {status}");
        }
        let attempt = tokio::time::timeout(Duration::from_secs(2), http_get(http_port, "/readyz"));
        if let Ok(Ok((200, body))) = attempt.await {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "/readyz did not answer 200 within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn connect(addr: &str) -> CloudProviderClient<Channel> {
    let channel = Channel::from_shared(addr.to_string())
        .expect("valid address")
        .connect()
        .await
        .unwrap_or_else(|e| panic!("connect to {addr}: {e}"));
    CloudProviderClient::new(channel)
}

/// What the answers must be, learned from the config and the server before the load starts.
struct Fixture {
    groups: Vec<String>,
    with_options: BTreeSet<String>,
    /// Every instance's provider id with its group.
    nodes: Vec<(String, String)>,
}

/// One round's shared work queue.
struct Work {
    fixture: Arc<Fixture>,
    mix: &'static [Rpc],
    next: AtomicUsize,
    total: usize,
    deadline: Instant,
}

struct Sample {
    rpc: Rpc,
    latency: Duration,
    /// Why the request failed, if it did.
    error: Option<String>,
}

/// Sends request number `n` of the round and checks the answer.
async fn request(c: &mut CloudProviderClient<Channel>, w: &Work, n: usize) -> Sample {
    let f = &w.fixture;
    let rpc = w.mix[n % w.mix.len()];
    let group = &f.groups[(n / w.mix.len()) % f.groups.len()];
    let started = Instant::now();
    let outcome: Result<(), String> = match rpc {
        ForNode => {
            let (provider_id, owner) = &f.nodes[n % f.nodes.len()];
            let req = pb::NodeGroupForNodeRequest {
                node: Some(pb::ExternalGrpcNode {
                    provider_id: provider_id.clone(),
                    ..Default::default()
                }),
            };
            c.node_group_for_node(req)
                .await
                .map_err(|s| s.to_string())
                .and_then(|r| {
                    let got = r.into_inner().node_group.unwrap_or_default().id;
                    (&got == owner)
                        .then_some(())
                        .ok_or_else(|| format!("{provider_id} is in {owner}, server said {got:?}"))
                })
        }
        TargetSize => c
            .node_group_target_size(pb::NodeGroupTargetSizeRequest { id: group.clone() })
            .await
            .map_err(|s| s.to_string())
            .and_then(|r| match r.into_inner().target_size {
                t if t as usize == NODES_PER_GROUP => Ok(()),
                t => Err(format!("{group}: target size {t}")),
            }),
        Nodes => c
            .node_group_nodes(pb::NodeGroupNodesRequest { id: group.clone() })
            .await
            .map_err(|s| s.to_string())
            .and_then(|r| match r.into_inner().instances.len() {
                NODES_PER_GROUP => Ok(()),
                k => Err(format!("{group}: {k} instances")),
            }),
        TemplateNodeInfo => c
            .node_group_template_node_info(pb::NodeGroupTemplateNodeInfoRequest {
                id: group.clone(),
            })
            .await
            .map_err(|s| s.to_string())
            .and_then(|r| {
                (!r.into_inner().node_bytes.is_empty())
                    .then_some(())
                    .ok_or_else(|| format!("{group}: empty template node"))
            }),
        GetOptions => {
            let answer = c
                .node_group_get_options(pb::NodeGroupAutoscalingOptionsRequest {
                    id: group.clone(),
                    defaults: None,
                })
                .await;
            match (f.with_options.contains(group), answer) {
                (true, Ok(r)) if r.get_ref().node_group_autoscaling_options.is_some() => Ok(()),
                (false, Err(s)) if s.code() == Code::Unimplemented => Ok(()),
                (own, Ok(_)) => Err(format!("{group} (own options: {own}): unexpected OK")),
                (own, Err(s)) => Err(format!("{group} (own options: {own}): {s}")),
            }
        }
        Groups => c
            .node_groups(pb::NodeGroupsRequest {})
            .await
            .map_err(|s| s.to_string())
            .and_then(|r| match r.into_inner().node_groups.len() {
                GROUPS => Ok(()),
                k => Err(format!("NodeGroups listed {k} groups")),
            }),
    };
    Sample {
        rpc,
        latency: started.elapsed(),
        error: outcome.err(),
    }
}

/// One client: takes request numbers from the shared queue until it is empty or time is up.
async fn client(mut c: CloudProviderClient<Channel>, w: Arc<Work>) -> Vec<Sample> {
    let mut samples = Vec::with_capacity(w.total / 8);
    while Instant::now() < w.deadline {
        let n = w.next.fetch_add(1, Ordering::Relaxed);
        if n >= w.total {
            break;
        }
        samples.push(request(&mut c, &w, n).await);
    }
    samples
}

/// Nearest-rank percentile of sorted latencies.
fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn fmt_latency(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{:.0} µs", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    }
}

fn summary(latencies: &mut [Duration]) -> String {
    latencies.sort_unstable();
    format!(
        "p50 {:>7}, p90 {:>7}, p99 {:>7}, max {:>8}",
        fmt_latency(percentile(latencies, 0.50)),
        fmt_latency(percentile(latencies, 0.90)),
        fmt_latency(percentile(latencies, 0.99)),
        fmt_latency(percentile(latencies, 1.0)),
    )
}

struct RoundSettings<'a> {
    label: &'a str,
    addr: &'a str,
    clients: usize,
    total: usize,
    limit: Duration,
    mix: &'static [Rpc],
    ticks_per_second: u64,
}

/// Runs one round and prints its figures; returns the number of failed requests.
async fn round(server: &Server, fixture: &Arc<Fixture>, r: RoundSettings<'_>) -> usize {
    let mut clients = Vec::with_capacity(r.clients);
    for _ in 0..r.clients {
        clients.push(connect(r.addr).await);
    }
    let cpu_before = server.cpu_time(r.ticks_per_second);
    let started = Instant::now();
    let work = Arc::new(Work {
        fixture: fixture.clone(),
        mix: r.mix,
        next: AtomicUsize::new(0),
        total: r.total,
        deadline: started + r.limit,
    });
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|c| tokio::spawn(client(c, work.clone())))
        .collect();
    let mut samples = Vec::with_capacity(r.total);
    for t in tasks {
        samples.extend(t.await.expect("client task"));
    }
    let wall = started.elapsed();
    let server_cpu = server.cpu_time(r.ticks_per_second) - cpu_before;

    let requests = samples.len();
    let errors: Vec<&str> = samples.iter().filter_map(|s| s.error.as_deref()).collect();
    let mut all: Vec<Duration> = samples.iter().map(|s| s.latency).collect();
    let timed_out = if requests < r.total {
        format!(" (stopped at the {:?} limit)", r.limit)
    } else {
        String::new()
    };
    println!(
        "{:<16} C={:<3} {requests:>6} requests, {:>3} errors, {:>7.0} req/s, {}; server CPU {:.1} µs/req{timed_out}",
        r.label,
        r.clients,
        errors.len(),
        requests as f64 / wall.as_secs_f64(),
        summary(&mut all),
        server_cpu.as_secs_f64() * 1e6 / requests.max(1) as f64,
    );
    if r.mix.len() > 1 {
        let mut by_rpc: BTreeMap<Rpc, Vec<Duration>> = BTreeMap::new();
        for s in &samples {
            by_rpc.entry(s.rpc).or_default().push(s.latency);
        }
        for (rpc, mut latencies) in by_rpc {
            println!(
                "    {:<26} {:>6} requests, {}",
                rpc.name(),
                latencies.len(),
                summary(&mut latencies)
            );
        }
    }
    if let Some(first) = errors.first() {
        println!("    first error: {first}");
    }
    errors.len()
}

/// Fetches the groups and every instance's provider id, as CA does at the start of a loop.
async fn fixture(addr: &str, with_options: BTreeSet<String>) -> Fixture {
    let mut c = connect(addr).await;
    let groups: Vec<String> = c
        .node_groups(pb::NodeGroupsRequest {})
        .await
        .expect("NodeGroups")
        .into_inner()
        .node_groups
        .into_iter()
        .map(|g| g.id)
        .collect();
    assert_eq!(groups.len(), GROUPS);
    let mut nodes = Vec::with_capacity(GROUPS * NODES_PER_GROUP);
    for g in &groups {
        let instances = c
            .node_group_nodes(pb::NodeGroupNodesRequest { id: g.clone() })
            .await
            .unwrap_or_else(|s| panic!("NodeGroupNodes {g}: {s}"))
            .into_inner()
            .instances;
        nodes.extend(instances.into_iter().map(|i| (i.id, g.clone())));
    }
    assert_eq!(nodes.len(), GROUPS * NODES_PER_GROUP);
    assert!(nodes
        .iter()
        .all(|(id, _)| id.starts_with("aws:///us-east-1")));
    Fixture {
        groups,
        with_options,
        nodes,
    }
}

fn write_config(dir: &Path) -> (std::path::PathBuf, BTreeSet<String>) {
    let (yaml, with_options) = memory_config();
    let path = dir.join("memory-cloud.yaml");
    std::fs::write(&path, yaml).expect("write the memory-cloud config");
    (path, with_options)
}

#[tokio::main]
async fn main() {
    let total: usize = env_or("FERROSCALE_LOAD_REQUESTS", 50_000);
    let limit = Duration::from_secs(env_or("FERROSCALE_LOAD_ROUND_SECS", 30));
    let levels: Vec<usize> = env_or::<String>("FERROSCALE_LOAD_CLIENTS", "8,32,64".into())
        .split(',')
        .map(|c| {
            c.trim()
                .parse()
                .expect("FERROSCALE_LOAD_CLIENTS: comma-separated counts")
        })
        .collect();
    assert!(total > 0 && levels.iter().all(|&c| c > 0));
    let ticks_per_second = clock_ticks_per_second();

    let dir = tempfile::tempdir().expect("temp dir");
    let (config, with_options) = write_config(dir.path());
    let spawned = Instant::now();
    let mut server = served::start(
        &[
            "--cloud",
            "memory",
            "--memory-config",
            config.to_str().expect("a UTF-8 path"),
        ],
        "ferroscale::grpc=warn",
    );
    let (grpc_port, http_port) = (server.grpc.port(), server.http.port());
    let ready = wait_ready(&mut server, http_port).await;
    println!(
        "server pid {} ready in {:.0} ms: {ready}; RSS {} KiB",
        server.pid(),
        spawned.elapsed().as_secs_f64() * 1e3,
        server.status_kib("VmRSS")
    );

    let addr = format!("http://127.0.0.1:{grpc_port}");
    let fixture = Arc::new(fixture(&addr, with_options).await);
    println!(
        "{} groups ({} with options of their own), {} nodes; {total} requests per round, at most {limit:?} each; \
         {} CPUs shared by server and clients",
        fixture.groups.len(),
        fixture.with_options.len(),
        fixture.nodes.len(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );

    let mut errors = 0;
    let settings = |label: &'static str, clients: usize, mix: &'static [Rpc]| RoundSettings {
        label,
        addr: &addr,
        clients,
        total,
        limit,
        mix,
        ticks_per_second,
    };
    let mut rounds: Vec<RoundSettings> = levels
        .iter()
        .map(|&c| settings("CA read mix", c, &MIX[..]))
        .collect();
    let lookup_clients = levels[levels.len() / 2];
    rounds.push(settings(
        "NodeGroupForNode",
        lookup_clients,
        &LOOKUP_ONLY[..],
    ));
    for r in rounds {
        errors += round(&server, &fixture, r).await;
    }
    let open_secs: u64 = env_or("FERROSCALE_LOAD_OPEN_SECS", 10);
    open_loop::machine_stalls(Duration::from_secs(open_secs));
    for rate in env_or::<String>("FERROSCALE_LOAD_RATES", "1000,5000,10000".into())
        .split(',')
        .map(|r| {
            r.trim()
                .parse::<u64>()
                .expect("FERROSCALE_LOAD_RATES: comma-separated rates")
        })
    {
        // The generator runs on a thread and runtime of its own; this one only waits for it.
        errors += tokio::task::block_in_place(|| {
            open_loop::round(&server, &addr, &fixture, rate.max(1), open_secs)
        });
    }

    println!(
        "server memory: peak RSS (VmHWM) {} KiB, current RSS (VmRSS) {} KiB",
        server.status_kib("VmHWM"),
        server.status_kib("VmRSS")
    );

    let stopping = Instant::now();
    let kill = Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(kill.success(), "kill -TERM failed: {kill}");
    let status = loop {
        if let Some(status) = server.child.try_wait().expect("wait for the server") {
            break status;
        }
        assert!(
            stopping.elapsed() < Duration::from_secs(20),
            "the server did not exit within 20 s of SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    println!(
        "server exited after SIGTERM in {:.0} ms: {status}",
        stopping.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(status.code(), Some(0), "server exit: {status}");
    assert_eq!(errors, 0, "requests failed under load");
}
