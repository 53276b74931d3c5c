//! The ferroscale binary as a child process, as an operator runs it: its listeners bind port 0 and the
//! addresses are read from its "serving" log line, so no test ever guesses a free port.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_ferroscale");

/// A running `ferroscale serve` (or `run`), killed when dropped.
pub struct Served {
    pub child: Child,
    /// The CloudProvider listener (`serve` only).
    pub grpc: SocketAddr,
    pub http: SocketAddr,
    pub expander: Option<SocketAddr>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address after `key=Some(` in a log line, if any.
fn address(line: &str, key: &str) -> Option<SocketAddr> {
    let start = line.find(&format!("{key}=Some("))? + key.len() + 6;
    let end = start + line[start..].find(')')?;
    line[start..end].parse().ok()
}

impl Served {
    /// Starts `ferroscale serve` on 127.0.0.1 port 0 (CloudProvider and HTTP listeners) with `args`
    /// added and `env` set, and waits until it serves.
    pub async fn start(args: &[&str], env: &[(&str, &str)]) -> Served {
        let mut all = vec![
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--http-listen",
            "127.0.0.1:0",
        ];
        all.extend_from_slice(args);
        Served::spawn(&all, env).await
    }

    /// `ferroscale run` on the memory cloud holding `groups` (written to `dir`), against `api`, on port
    /// 0, with `args` after those and `env` set: how the tests that need the real binary start it.
    pub async fn run_on_memory(
        api: &crate::support::kube_api::KubeApi,
        dir: &std::path::Path,
        groups: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Served {
        let groups_file = dir.join("groups.yaml");
        std::fs::write(&groups_file, groups).unwrap();
        let kubeconfig = api.kubeconfig(dir);
        let mut all = vec![
            "run",
            "--cloud",
            "memory",
            "--memory-config",
            groups_file.to_str().unwrap(),
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--address",
            "127.0.0.1:0",
        ];
        all.extend_from_slice(args);
        Served::spawn(&all, env).await
    }

    /// Starts the binary with exactly `args` (which must make it listen on port 0) and waits until it
    /// logs that it serves.
    pub async fn spawn(args: &[&str], env: &[(&str, &str)]) -> Served {
        let mut child = Command::new(BIN)
            .args(args)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the ferroscale binary");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                sink.lock().unwrap().push_str(&line);
                sink.lock().unwrap().push('\n');
                if line.contains(" serving") {
                    let _ = tx.send(line);
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let line = loop {
            if let Ok(line) = rx.try_recv() {
                break line;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("ferroscale exited ({status}):\n{}", log.lock().unwrap());
            }
            assert!(
                Instant::now() < deadline,
                "not serving after 60 s:\n{}",
                log.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let http = address(&line, "http")
            .or_else(|| address(&line, "https"))
            .expect("http address");
        Served {
            grpc: address(&line, "grpc").unwrap_or(http),
            http,
            expander: address(&line, "expander"),
            child,
        }
    }

    /// Resident memory of the process, in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .expect("VmRSS")
    }

    /// Peak resident memory of the process so far (VmHWM), in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .expect("VmHWM")
    }

    /// Sends SIGTERM and waits for the exit (at most 20 s).
    pub fn terminate(&mut self) -> ExitStatus {
        let ok = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "no exit within 20 s of SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Runs the binary with `args` to its end, expecting a failure: (exit code, stderr).
pub fn run_failing(args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the binary with `args` to its end, its data (heap and private mappings: `RLIMIT_DATA`) limited
/// to `max_bytes`: an allocation past it fails, and the process aborts. (Its peak memory cannot be read
/// after the fact: a child's `ru_maxrss` counts the test process it was forked from.) The exit code
/// (None: killed by a signal) and stderr.
pub fn run_limited(args: &[&str], max_bytes: u64) -> (Option<i32>, String) {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(BIN);
    command.args(args);
    // SAFETY: setrlimit is async-signal-safe, and touches nothing of the parent.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: max_bytes,
                rlim_max: max_bytes,
            };
            if libc::setrlimit(libc::RLIMIT_DATA, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = command.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `ferroscale deschedule` with no interval (one cycle) on `policy` against `kubeconfig`'s cluster,
/// waited for (at most 60 s; the API server the test serves keeps answering meanwhile).
pub async fn deschedule_once(policy: &std::path::Path, kubeconfig: &std::path::Path) -> ExitStatus {
    let mut child = Command::new(BIN)
        .args([
            "deschedule",
            "--address",
            "127.0.0.1:0",
            "--policy-config-file",
        ])
        .arg(policy)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "still running after 60 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
