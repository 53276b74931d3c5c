//! The `ferroscale` binary: starts on the shipped example, answers, stops cleanly on SIGTERM, and
//! refuses bad configuration with exit code 2 and a message naming the field.

use std::process::Command;
use std::time::{Duration, Instant};

use ferroscale::proto::externalgrpc as pb;

use crate::support::process::{run_failing, Served};
use crate::support::server::{connect, http_get};

#[tokio::test]
async fn serves_the_example_and_stops_on_sigterm() {
    let mut served = Served::start(
        &[
            "--cloud",
            "memory",
            "--memory-config",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/memory-cloud.yaml"),
            "--shutdown-grace-period",
            "300ms",
        ],
        &[],
    )
    .await;
    assert_eq!(http_get(served.http, "/readyz").await.0, 200);
    let mut c = connect(served.grpc).await;
    let groups = c
        .node_groups(pb::NodeGroupsRequest {})
        .await
        .unwrap()
        .into_inner()
        .node_groups;
    let ids: Vec<_> = groups.iter().map(|g| g.id.as_str()).collect();
    assert_eq!(ids, vec!["general", "gpu", "memory-optimised", "spot-arm"]);
    let (status, metrics) = http_get(served.http, "/metrics").await;
    assert_eq!(status, 200);
    assert!(metrics.contains("grpc_method=\"NodeGroups\""), "{metrics}");
    // CA never closes its connection: the stop must not wait for it beyond the grace period.
    let started = Instant::now();
    let status = served.terminate();
    assert!(status.success(), "graceful stop: {status}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stop took {:?}",
        started.elapsed()
    );
    drop(c);
}

#[tokio::test]
async fn config_file_carries_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/examples/memory-cloud.yaml"),
        dir.path().join("groups.yaml"),
    )
    .unwrap();
    let cfg = dir.path().join("ferroscale.yaml");
    std::fs::write(
        &cfg,
        "listen: 127.0.0.1:0\nhttpListen: 127.0.0.1:0\ncloud: memory\nmemoryConfig: groups.yaml\nshutdownGracePeriod: 300ms\n",
    )
    .unwrap();
    let mut served = Served::spawn(&["serve", "--config", cfg.to_str().unwrap()], &[]).await;
    let mut c = connect(served.grpc).await;
    let target = c
        .node_group_target_size(pb::NodeGroupTargetSizeRequest {
            id: "spot-arm".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .target_size;
    assert_eq!(target, 3);
    drop(c);
    assert!(served.terminate().success());
}

#[test]
fn bad_configuration_exits_2_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "nodeGroups:\n  - {name: a, minSize: 0, maxSize: 2, capacity: {cpu: 2, memory: 4Qi}}\n",
    )
    .unwrap();
    let (code, err) = run_failing(&["serve", "--memory-config", bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nodeGroups[0] (a).capacity.memory"), "{err}");

    let (code, err) = run_failing(&["serve", "--memory-config", "/nonexistent/groups.yaml"]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/groups.yaml"), "{err}");

    let (code, err) = run_failing(&["serve", "--cloud", "memory"]);
    assert_eq!(code, 2);
    assert!(err.contains("--memory-config"), "{err}");

    let (code, _) = run_failing(&["serve", "--listen", "not-an-address"]);
    assert_eq!(code, 2, "clap usage error");
}

#[test]
fn help_lists_every_command_and_flag() {
    let out = Command::new(crate::support::process::BIN)
        .arg("--help")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("serve"), "{text}");
    let out = Command::new(crate::support::process::BIN)
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for flag in [
        "--listen",
        "--http-listen",
        "--cloud",
        "--memory-config",
        "--config",
    ] {
        assert!(text.contains(flag), "serve --help lacks {flag}");
    }
}

#[test]
fn bad_tls_and_price_flags_exit_2_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/memory-cloud.yaml");
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let prices = file("prices.yaml", "nodeGroups:\n  batch: {discount: 2}\n");
    let not_pem = file("cert.txt", "hello");
    let bad_pem = file(
        "bad.pem",
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    );
    for (args, wanted) in [
        (vec!["--pricing-source", "file"], "--price-overrides"),
        (
            vec!["--price-overrides", &prices],
            "nodeGroups.batch.discount",
        ),
        (vec!["--tls-cert", &not_pem], "--tls-cert needs --tls-key"),
        (
            vec!["--tls-client-ca", &not_pem],
            "--tls-client-ca needs --tls-cert",
        ),
        (
            vec!["--tls-client-san", "cluster-autoscaler"],
            "--tls-client-san needs --tls-client-ca",
        ),
        (vec!["--listen", "0.0.0.0:0"], "--allow-plaintext"),
        (
            vec!["--tls-cert", &not_pem, "--tls-key", &not_pem],
            "--tls-cert",
        ),
        (
            vec![
                "--expander-tls-cert",
                &bad_pem,
                "--expander-tls-key",
                &bad_pem,
            ],
            "--expander-tls-key /",
        ),
    ] {
        let mut all = vec!["serve", "--memory-config", example];
        all.extend(args.iter().copied());
        let (code, err) = run_failing(&all);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(wanted), "{args:?}: {err}");
    }
}

/// Every command reads its flags from `--config` too: the same names in camelCase, paths relative to
/// the file, flags winning, an unknown key refused naming it.
#[test]
fn simulate_reads_the_same_settings_from_a_file() {
    let root = env!("CARGO_MANIFEST_DIR");
    let dir = tempfile::tempdir().unwrap();
    for f in ["cluster.yaml", "groups.yaml"] {
        std::fs::copy(format!("{root}/examples/{f}"), dir.path().join(f)).unwrap();
    }
    let cfg = dir.path().join("simulate.yaml");
    std::fs::write(
        &cfg,
        "cluster: cluster.yaml\nnodeGroups: groups.yaml\nloops: 5\nexpander: price\nscaleDownUtilizationThreshold: 0.9\n",
    )
    .unwrap();
    let out = Command::new(crate::support::process::BIN)
        .args([
            "simulate",
            "--config",
            cfg.to_str().unwrap(),
            "--loops",
            "2",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = String::from_utf8(out.stdout).unwrap();
    assert_eq!(lines.lines().count(), 2, "--loops wins over the file");
    assert!(lines.contains("\"price: "), "the file's expander: {lines}");

    std::fs::write(&cfg, "cluster: cluster.yaml\nnodeGroup: groups.yaml\n").unwrap();
    let (code, err) = run_failing(&["simulate", "--config", cfg.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown key \"nodeGroup\""), "{err}");
    let (code, err) = run_failing(&["simulate", "--loops", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--cluster FILE is required"), "{err}");
}

/// The value of the sample `name` (with its labels, as exposed) on /metrics.
fn sample(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{name} not in:\n{metrics}"))
        .parse()
        .unwrap()
}

#[tokio::test]
async fn metrics_carry_each_groups_sizes_and_price_and_the_cluster_cost() {
    let served = Served::start(
        &[
            "--cloud",
            "memory",
            "--memory-config",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/memory-cloud.yaml"),
        ],
        &[],
    )
    .await;
    let (_, metrics) = http_get(served.http, "/metrics").await;
    let general = "{node_group=\"general\"}";
    for (name, want) in [
        ("cluster_autoscaler_node_group_target_count", 2.0),
        ("cluster_autoscaler_node_group_min_count", 1.0),
        ("cluster_autoscaler_node_group_max_count", 20.0),
        ("ferroscale_node_group_price_per_hour", 0.192),
    ] {
        assert_eq!(
            sample(&metrics, &format!("{name}{general}")),
            want,
            "{name}"
        );
    }
    // The example's instances: 2 general at 0.192, 3 spot-arm at 0.0308.
    let cost = sample(&metrics, "ferroscale_cluster_cost_per_hour");
    assert!((cost - (2.0 * 0.192 + 3.0 * 0.0308)).abs() < 1e-9, "{cost}");
    // A scale-up shows at the next scrape.
    let mut c = connect(served.grpc).await;
    c.node_group_increase_size(pb::NodeGroupIncreaseSizeRequest {
        id: "general".into(),
        delta: 1,
    })
    .await
    .unwrap();
    let (_, metrics) = http_get(served.http, "/metrics").await;
    assert_eq!(
        sample(
            &metrics,
            &format!("cluster_autoscaler_node_group_target_count{general}")
        ),
        3.0
    );
}

/// `--gpu-total` as upstream parses it, `<gpu_type>:<min>:<max>`: a malformed value on the command line
/// or in a `--config` file ends the process with exit code 2, naming the flag; a good one runs.
#[test]
fn a_malformed_gpu_total_exits_2_naming_the_flag() {
    let root = env!("CARGO_MANIFEST_DIR");
    let cluster = format!("{root}/examples/cluster.yaml");
    let groups = format!("{root}/examples/groups.yaml");
    let base = ["simulate", "--cluster", &cluster, "--node-groups", &groups];
    for bad in ["t4:1", "t4:1:10:x", "t4:x:10", "t4:-1:10", "t4:10:1"] {
        let mut args = base.to_vec();
        args.extend(["--gpu-total", bad]);
        let (code, err) = run_failing(&args);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("--gpu-total"), "{bad}: {err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("simulate.yaml");
    std::fs::write(&cfg, "gpuTotal: [\"t4:1\"]\n").unwrap();
    let mut args = base.to_vec();
    args.extend(["--config", cfg.to_str().unwrap()]);
    let (code, err) = run_failing(&args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("gpuTotal"), "{err}");

    let out = Command::new(crate::support::process::BIN)
        .args(base)
        .args(["--loops", "1", "--gpu-total", "nvidia-tesla-t4:0:4"])
        .args(["--gpu-total=nvidia-a10g:0:2"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
