//! The grpc expander (BestOptions) over a real socket: both protocol generations, strategy chains with
//! the memory cloud's prices, and the protocol's edge cases.

use std::sync::Arc;
use std::time::Duration;

use ferroscale::cloud::memory::{MemoryCloud, MemoryConfig};
use ferroscale::engine::expander::{Priorities, Strategy};
use ferroscale::grpc::expander::ExpanderSettings;
use ferroscale::pricing::PriceOverrides;
use ferroscale::proto::expander as pb;
use ferroscale::proto::expander::expander_client::ExpanderClient;
use ferroscale::tls::ReloadingTls;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use parking_lot::RwLock;
use prost::Message;

use crate::support::fixtures::grpc::pod;
use crate::support::process::Served;
use crate::support::server::{Extras, Running};

const GROUPS: &str = r#"
nodeGroups:
  - {name: on-demand, minSize: 0, maxSize: 10, capacity: {cpu: 4, memory: 16Gi}, pricePerHour: 0.192}
  - {name: spot, minSize: 0, maxSize: 10, capacity: {cpu: 4, memory: 16Gi}, pricePerHour: 0.07}
  - {name: big, minSize: 0, maxSize: 10, capacity: {cpu: 16, memory: 64Gi}, pricePerHour: 0.768}
"#;

async fn start(
    chain: &str,
    priorities: &str,
) -> (
    ExpanderClient<tonic::transport::Channel>,
    tokio::sync::oneshot::Sender<()>,
) {
    let (running, _) = start_with(chain, priorities, "", None).await;
    let addr = running.expander_addr.unwrap();
    (
        ExpanderClient::connect(format!("http://{addr}"))
            .await
            .unwrap(),
        running.stop,
    )
}

/// The expander on the memory cloud with `GROUPS`, prices adjusted by the price file `overrides`.
async fn start_with(
    chain: &str,
    priorities: &str,
    overrides: &str,
    tls: Option<Arc<ReloadingTls>>,
) -> (Running, Arc<ExpanderSettings>) {
    let cloud = Arc::new(
        MemoryCloud::with_prices(
            &MemoryConfig::parse(GROUPS).unwrap(),
            &PriceOverrides::parse(overrides).unwrap(),
        )
        .unwrap(),
    );
    let settings = Arc::new(ExpanderSettings {
        chain: Strategy::parse_chain(chain).unwrap(),
        priorities: Arc::new(RwLock::new(Priorities::parse(priorities).unwrap())),
    });
    let extras = Extras {
        expander: Some(settings.clone()),
        expander_tls: tls,
        ..Extras::default()
    };
    (
        Running::spawn(cloud, Default::default(), extras).await,
        settings,
    )
}

fn template(cpu: &str, memory: &str) -> core::Node {
    let q = |v: &str| Quantity {
        string: Some(v.into()),
    };
    core::Node {
        status: Some(core::NodeStatus {
            capacity: [
                ("cpu".to_string(), q(cpu)),
                ("memory".to_string(), q(memory)),
            ]
            .into(),
            allocatable: [
                ("cpu".to_string(), q(cpu)),
                ("memory".to_string(), q(memory)),
            ]
            .into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Options for 6 pods of 1 cpu / 2 GiB: 2 × on-demand, 2 × spot, 1 × big.
fn new_generation() -> pb::BestOptionsRequest {
    let pods: Vec<Vec<u8>> = (0..6).map(|_| pod("1", "2Gi").encode_to_vec()).collect();
    let option = |id: &str, n: i32| pb::Option {
        node_group_id: id.into(),
        node_count: n,
        pod_bytes: pods.clone(),
        ..Default::default()
    };
    pb::BestOptionsRequest {
        options: vec![option("on-demand", 2), option("spot", 2), option("big", 1)],
        node_bytes_map: [
            (
                "on-demand".to_string(),
                template("4", "16Gi").encode_to_vec(),
            ),
            ("spot".to_string(), template("4", "16Gi").encode_to_vec()),
            ("big".to_string(), template("16", "64Gi").encode_to_vec()),
        ]
        .into(),
        ..Default::default()
    }
}

#[allow(deprecated)]
fn old_generation() -> pb::BestOptionsRequest {
    let r = new_generation();
    pb::BestOptionsRequest {
        options: r
            .options
            .into_iter()
            .map(|o| pb::Option {
                pod: o
                    .pod_bytes
                    .iter()
                    .map(|b| core::Pod::decode(b.as_slice()).unwrap())
                    .collect(),
                pod_bytes: vec![],
                ..o
            })
            .collect(),
        node_map: r
            .node_bytes_map
            .into_iter()
            .map(|(k, v)| (k, core::Node::decode(v.as_slice()).unwrap()))
            .collect(),
        node_bytes_map: Default::default(),
    }
}

fn ids(r: &pb::BestOptionsResponse) -> Vec<&str> {
    r.options.iter().map(|o| o.node_group_id.as_str()).collect()
}

#[tokio::test]
async fn price_picks_the_cheapest_in_both_generations() {
    let (mut c, _stop) = start("price", "").await;
    for req in [new_generation(), old_generation()] {
        let r = c.best_options(req.clone()).await.unwrap().into_inner();
        assert_eq!(ids(&r), vec!["spot"]);
        let sent = &req.options[1];
        let got = &r.options[0];
        assert_eq!(
            (got.node_count, got.pod_bytes.len()),
            (sent.node_count, sent.pod_bytes.len()),
            "unchanged"
        );
        assert!(got.debug.contains("price: on-demand="), "{}", got.debug);
    }
}

#[tokio::test]
async fn chains_break_ties_and_priorities_tier() {
    let (mut c, _stop) = start("least-nodes,least-waste", "").await;
    let r = c.best_options(new_generation()).await.unwrap().into_inner();
    assert_eq!(ids(&r), vec!["big"], "1 node beats 2");
    let (mut c, _stop2) = start("most-pods", "").await;
    let r = c.best_options(new_generation()).await.unwrap().into_inner();
    assert_eq!(
        ids(&r),
        vec!["on-demand", "spot", "big"],
        "all tie: all kept"
    );
    let (mut c, _stop3) = start(
        "priority,price",
        "10: ['^on-demand$', '^big$']\n1: ['.*']\n",
    )
    .await;
    let r = c.best_options(new_generation()).await.unwrap().into_inner();
    assert_eq!(
        ids(&r),
        vec!["on-demand"],
        "tier 10 first, then the cheaper of it"
    );
}

#[tokio::test]
async fn edge_cases() {
    let (mut c, _stop) = start("price", "").await;
    let r = c
        .best_options(pb::BestOptionsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(r.options.is_empty(), "no options: empty answer");
    let mut req = new_generation();
    req.node_bytes_map.remove("spot");
    let r = c.best_options(req).await.unwrap().into_inner();
    assert_eq!(
        ids(&r),
        vec!["on-demand"],
        "an option without template is skipped, not an error"
    );
    let mut req = new_generation();
    req.options[0].pod_bytes[0] = b"not a pod".to_vec();
    let e = c.best_options(req).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(
        e.message().contains("options[0].podBytes[0]"),
        "{}",
        e.message()
    );
}

#[tokio::test]
async fn priority_file_changes_are_picked_up_and_bad_ones_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("priorities.yaml");
    std::fs::write(&path, "10: ['^spot$']\n").unwrap();
    let settings = Arc::new(ExpanderSettings {
        chain: vec![Strategy::Priority],
        priorities: Arc::new(RwLock::new(Priorities::parse("10: ['^spot$']").unwrap())),
    });
    let watcher = ferroscale::cli::flags::watch_priority_file(
        path.clone(),
        settings.priorities.clone(),
        Duration::from_millis(20),
    );
    let of = |g: &str| settings.priorities.read().of(g);
    std::fs::write(&path, "20: ['^on-demand$']\n").unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while of("on-demand") != Some(20) {
        assert!(std::time::Instant::now() < deadline, "change not picked up");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    std::fs::write(&path, "30: ['(']\n").unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        of("on-demand"),
        Some(20),
        "a bad file keeps the last good tiers"
    );
    watcher.abort();
}

/// The price strategy's answer to `new_generation()` with the price file `overrides`.
async fn priced_answer(overrides: &str) -> pb::BestOptionsResponse {
    let (running, _) = start_with("price", "", overrides, None).await;
    let addr = running.expander_addr.unwrap();
    let mut c = ExpanderClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    c.best_options(new_generation()).await.unwrap().into_inner()
}

#[tokio::test]
async fn the_price_file_changes_the_winner() {
    // Without the file spot (0.07/h) beats on-demand (0.192/h); a 70% discount makes on-demand
    // 0.0576/h, so the same request now picks on-demand.
    let r = priced_answer("nodeGroups:\n  on-demand: {discount: 0.7}\n").await;
    assert_eq!(ids(&r), vec!["on-demand"], "{}", r.options[0].debug);
}

#[tokio::test]
async fn a_group_priced_zero_is_the_cheapest_and_no_score_is_nan() {
    // Reserved capacity already paid for: the price file sets the group's price to 0.
    let r = priced_answer("nodeGroups:\n  on-demand: {pricePerHour: 0}\n").await;
    assert_eq!(ids(&r), vec!["on-demand"], "{}", r.options[0].debug);
    let debug = &r.options[0].debug;
    assert!(!debug.contains("NaN") && !debug.contains("inf"), "{debug}");
}

#[tokio::test]
async fn served_over_tls_to_a_client_that_verifies_the_server() {
    let pki = crate::support::pki::Pki::new();
    let (running, _) = start_with("price", "", "", Some(pki.server_tls(false))).await;
    let addr = running.expander_addr.unwrap();
    // CA's expander client: TLS verifying the server against --grpc-expander-cert, no client certificate.
    let channel = pki.channel(addr, None).await.unwrap();
    let mut c = ExpanderClient::new(channel);
    let r = c.best_options(new_generation()).await.unwrap().into_inner();
    assert_eq!(ids(&r), vec!["spot"]);
    let r = c.best_options(old_generation()).await.unwrap().into_inner();
    assert_eq!(ids(&r), vec!["spot"]);
    // A plaintext client gets nothing.
    let plain = ExpanderClient::connect(format!("http://{addr}")).await;
    match plain {
        Err(_) => {}
        Ok(mut p) => assert!(p.best_options(new_generation()).await.is_err()),
    }
}

#[tokio::test]
async fn requests_beyond_16_mib_are_accepted() {
    // CA sends every option's pods: large scale-ups exceed the 16 MiB of the CloudProvider listener.
    let (running, _) = start_with("price", "", "", None).await;
    let addr = running.expander_addr.unwrap();
    let mut big = pod("1", "2Gi");
    big.metadata.as_mut().unwrap().annotations =
        [("padding".to_string(), "x".repeat(10_000))].into();
    let bytes = big.encode_to_vec();
    let mut req = new_generation();
    for o in &mut req.options {
        o.pod_bytes = vec![bytes.clone(); 700];
    }
    assert!(req.encoded_len() > 20 << 20, "{}", req.encoded_len());
    let mut c = ExpanderClient::connect(format!("http://{addr}"))
        .await
        .unwrap()
        .max_encoding_message_size(128 << 20)
        // CA's expander client accepts answers up to 128 MiB.
        .max_decoding_message_size(128 << 20);
    let r = c.best_options(req).await.unwrap().into_inner();
    assert_eq!(ids(&r), vec!["spot"]);
}

/// 16 CA-like clients, each on its own connection, all sending a ~24 MiB BestOptions request at once: what
/// would take the expander past its budget of request bytes in flight is refused RESOURCE_EXHAUSTED
/// before it is read or decoded, so the server's peak memory stays bounded; the others are answered,
/// and so is the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_big_requests_is_refused_past_the_byte_budget_before_decoding() {
    const CLIENTS: usize = 16;
    let dir = tempfile::tempdir().unwrap();
    let groups = dir.path().join("groups.yaml");
    std::fs::write(&groups, GROUPS).unwrap();
    let served = Served::start(
        &[
            "--cloud",
            "memory",
            "--memory-config",
            groups.to_str().unwrap(),
            "--expander-listen",
            "127.0.0.1:0",
            "--expander",
            "price",
        ],
        &[],
    )
    .await;
    let addr = served.expander.unwrap();
    let mut big = pod("1", "2Gi");
    big.metadata.as_mut().unwrap().annotations =
        [("padding".to_string(), "x".repeat(10_000))].into();
    let bytes = big.encode_to_vec();
    let mut req = new_generation();
    for o in &mut req.options {
        o.pod_bytes = vec![bytes.clone(); 800];
    }
    let size = req.encoded_len();
    assert!(size > 20 << 20, "{size}");
    let client = || async {
        ExpanderClient::connect(format!("http://{addr}"))
            .await
            .unwrap()
            .max_encoding_message_size(128 << 20)
            .max_decoding_message_size(128 << 20)
    };
    // One first: the server's buffers grown for a request of this size.
    let r = client().await.best_options(req.clone()).await.unwrap();
    assert_eq!(ids(&r.into_inner()), vec!["spot"]);
    let before = served.peak_rss_kib();
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(client().await);
    }
    let start = Arc::new(tokio::sync::Barrier::new(CLIENTS));
    let mut sent = tokio::task::JoinSet::new();
    for mut c in clients {
        let (req, start) = (req.clone(), start.clone());
        sent.spawn(async move {
            start.wait().await;
            c.best_options(req).await.map(|r| r.into_inner())
        });
    }
    let (mut answered, mut refused) = (0, 0);
    while let Some(outcome) = sent.join_next().await {
        match outcome.unwrap() {
            Ok(r) => {
                assert_eq!(ids(&r), vec!["spot"]);
                answered += 1;
            }
            Err(s) => {
                assert_eq!(s.code(), tonic::Code::ResourceExhausted, "{s:?}");
                assert!(s.message().contains("budget"), "{s:?}");
                refused += 1;
            }
        }
    }
    let grown = served.peak_rss_kib().saturating_sub(before);
    eprintln!("{answered} answered, {refused} refused; peak RSS grew {grown} KiB ({CLIENTS} × {size} bytes sent)");
    // The budget is 128 MiB of requests; without it all 16 are read and decoded at once (~370 MiB).
    assert!(
        grown < 224 * 1024,
        "peak RSS grew {grown} KiB: {answered} answered, {refused} refused"
    );
    let r = client().await.best_options(req).await.unwrap();
    assert_eq!(ids(&r.into_inner()), vec!["spot"], "answered afterwards");
}
