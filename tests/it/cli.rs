//! The `ferroscale` binary: starts on the shipped example, answers, stops cleanly on SIGTERM, and
//! refuses bad configuration with exit code 2 and a message naming the field.

use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ferroscale::proto::externalgrpc as pb;

use crate::common::{connect, http_get};

pub const BIN: &str = env!("CARGO_BIN_EXE_ferroscale");

pub fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

pub async fn wait_ready(http: SocketAddr, child: &mut std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("ferroscale exited early: {status}");
        }
        if tokio::net::TcpStream::connect(http).await.is_ok()
            && http_get(http, "/readyz").await.0 == 200
        {
            return;
        }
        assert!(Instant::now() < deadline, "not ready in time");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub fn terminate(child: &mut std::process::Child) -> std::process::ExitStatus {
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    child.wait().unwrap()
}

#[tokio::test]
async fn serves_the_example_and_stops_on_sigterm() {
    let (grpc, http) = (free_addr(), free_addr());
    let mut child = Command::new(BIN)
        .args(["serve", "--cloud", "memory", "--memory-config"])
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/memory-cloud.yaml"
        ))
        .args([
            "--listen",
            &grpc.to_string(),
            "--http-listen",
            &http.to_string(),
            "--shutdown-grace-period",
            "300ms",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(http, &mut child).await;
    let mut c = connect(grpc).await;
    let groups = c
        .node_groups(pb::NodeGroupsRequest {})
        .await
        .unwrap()
        .into_inner()
        .node_groups;
    let ids: Vec<_> = groups.iter().map(|g| g.id.as_str()).collect();
    assert_eq!(ids, vec!["general", "gpu", "memory-optimised", "spot-arm"]);
    let (status, metrics) = http_get(http, "/metrics").await;
    assert_eq!(status, 200);
    assert!(metrics.contains("grpc_method=\"NodeGroups\""), "{metrics}");
    // CA never closes its connection: the stop must not wait for it beyond the grace period.
    let started = Instant::now();
    let status = terminate(&mut child);
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
    let (grpc, http) = (free_addr(), free_addr());
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/examples/memory-cloud.yaml"),
        dir.path().join("groups.yaml"),
    )
    .unwrap();
    let cfg = dir.path().join("ferroscale.yaml");
    std::fs::write(
        &cfg,
        format!("listen: {grpc}\nhttpListen: {http}\ncloud: memory\nmemoryConfig: groups.yaml\nshutdownGracePeriod: 300ms\n"),
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(&cfg)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_ready(http, &mut child).await;
    let mut c = connect(grpc).await;
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
    assert!(terminate(&mut child).success());
}

pub fn run_failing(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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
    let out = Command::new(BIN).arg("--help").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("serve"), "{text}");
    let out = Command::new(BIN)
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
