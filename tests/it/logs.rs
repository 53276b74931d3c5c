//! The binary's logs as an operator or a log collector sees them: no colour codes when stderr is not a
//! terminal, `--log-format json` one object per line, `--v` (cluster-autoscaler's klog verbosity) when
//! `RUST_LOG` is not set, and a bad value refused naming the flag.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::process::BIN;

/// What `ferroscale serve` (memory cloud, loopback, plaintext) with `args` writes to stderr, a file,
/// until it has logged that it serves (or, at `--v=0`, its plaintext warning) and half a second more.
/// `RUST_LOG` and `NO_COLOR` are unset unless `env` sets them.
fn serve_log(args: &[&str], env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stderr.log");
    let file = std::fs::File::create(&path).unwrap();
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--cloud",
            "memory",
            "--memory-config",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/memory-cloud.yaml"),
            "--listen",
            "127.0.0.1:0",
            "--http-listen",
            "127.0.0.1:0",
        ])
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(file)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(&path).unwrap();
        if text.contains("serving") || text.contains("plaintext") {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("ferroscale exited ({status}):\n{text}");
        }
        assert!(Instant::now() < deadline, "no log line after 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let _ = child.kill();
    let _ = child.wait();
    std::fs::read_to_string(&path).unwrap()
}

#[test]
fn stderr_to_a_file_has_no_colour_codes() {
    for format in ["text", "json"] {
        let log = serve_log(&["--log-format", format], &[("RUST_LOG", "info")]);
        assert!(log.contains("serving"), "{log}");
        assert!(!log.contains('\x1b'), "{format}: ESC in a file:\n{log:?}");
    }
}

#[test]
fn json_format_writes_one_object_per_line_with_level_message_and_fields() {
    let log = serve_log(&["--log-format=json"], &[]);
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        lines.iter().all(|l| l["level"].is_string()
            && l["message"].is_string()
            && l["timestamp"].is_string()),
        "{log}"
    );
    let serving = lines
        .iter()
        .find(|l| l["message"] == "serving")
        .unwrap_or_else(|| panic!("{log}"));
    assert_eq!(serving["level"], "INFO");
    assert_eq!(
        serving["cloud"], "memory",
        "fields at the top level: {serving}"
    );
    assert!(lines
        .iter()
        .any(|l| l["level"] == "WARN" && l["message"].as_str().unwrap().contains("plaintext")));
}

#[test]
fn klog_verbosity_sets_the_level_unless_rust_log_does() {
    // --v=0: warnings only (the plaintext warning, not the "serving" info line); before or after the
    // command's name.
    for args in [&["--v=0"][..], &["--v", "0"]] {
        let log = serve_log(args, &[]);
        assert!(log.contains("WARN") && log.contains("plaintext"), "{log}");
        assert!(!log.contains("INFO") && !log.contains("serving"), "{log}");
    }
    // 1: info.
    let log = serve_log(&["--v=1"], &[]);
    assert!(log.contains("INFO") && log.contains("serving"), "{log}");
    // RUST_LOG wins over --v.
    let log = serve_log(&["--v=0"], &[("RUST_LOG", "info")]);
    assert!(log.contains("serving"), "{log}");
    // Before the command's name, too; klog's other flags in upstream's chart defaults are accepted.
    let out = Command::new(BIN)
        .args(["--v=0", "--log-format=json", "simulate", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    for klog in ["--logtostderr=true", "--logtostderr"] {
        let log = serve_log(&["--v=4", klog, "--stderrthreshold=INFO"], &[]);
        assert!(log.contains("serving"), "{log}");
    }
}

#[test]
fn bad_log_flags_exit_non_zero_naming_the_flag() {
    for (args, flag) in [
        (&["serve", "--log-format", "xml"][..], "--log-format"),
        (&["run", "--log-format=yaml"], "--log-format"),
        (&["simulate", "--v=9"], "--v"),
        (&["serve", "--v=loud"], "--v"),
        (&["serve", "--logtostderr=false"], "--logtostderr"),
        (&["run", "--stderrthreshold=loud"], "--stderrthreshold"),
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
}

#[test]
fn verbosity_maps_to_documented_levels() {
    use ferroscale::cli::log::LogFlags;
    let level = |v: Option<u8>| {
        LogFlags {
            verbosity: v,
            ..Default::default()
        }
        .directives()
    };
    assert_eq!(level(None), "info,ferroscale=info,ferroscale_core=info");
    assert_eq!(level(Some(0)), "warn,ferroscale=warn,ferroscale_core=warn");
    assert_eq!(level(Some(2)), "info,ferroscale=info,ferroscale_core=info");
    assert_eq!(
        level(Some(4)),
        "info,ferroscale=debug,ferroscale_core=debug"
    );
    assert_eq!(
        level(Some(5)),
        "info,ferroscale=trace,ferroscale_core=trace"
    );
}
