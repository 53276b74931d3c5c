//! The release `ferroscale serve` as a child process, as an operator runs it: its listeners bind port 0
//! and the addresses are read from its "serving" log line, so no bench guesses a free port.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The server process, killed if still running when dropped.
#[allow(dead_code)] // each bench reads the addresses it needs
pub struct Server {
    pub child: Child,
    pub grpc: SocketAddr,
    pub http: SocketAddr,
    pub expander: Option<SocketAddr>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The address after `key=Some(` in a log line.
fn address(line: &str, key: &str) -> Option<SocketAddr> {
    let start = line.find(&format!("{key}=Some("))? + key.len() + 6;
    let end = start + line[start..].find(')')?;
    line[start..end].parse().ok()
}

/// Starts `ferroscale serve` on 127.0.0.1 port 0 with `args` added; returns once it serves.
pub fn start(args: &[&str], log_filter: &str) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferroscale"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--http-listen",
            "127.0.0.1:0",
        ])
        .args(args)
        .env("RUST_LOG", format!("info,{log_filter}"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the ferroscale binary");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let serving = loop {
        let line = lines
            .next()
            .expect("the server exited before serving")
            .expect("read stderr");
        if line.contains(" serving") {
            break line;
        }
    };
    // Keep reading so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Server {
        grpc: address(&serving, "grpc").expect("grpc address"),
        http: address(&serving, "http").expect("http address"),
        expander: address(&serving, "expander"),
        child,
    }
}

impl Server {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A field of `/proc/<pid>/status` in KiB (`VmRSS`, `VmHWM`).
    #[allow(dead_code)]
    pub fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("read /proc/<pid>/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc/{}/status", self.pid()))
    }

    /// User plus system CPU time consumed so far.
    #[allow(dead_code)]
    pub fn cpu_time(&self, ticks_per_second: u64) -> Duration {
        cpu_time_of(&self.pid().to_string(), ticks_per_second)
    }
}

/// User plus system CPU time a process (a pid, or `self`) consumed so far.
#[allow(dead_code)]
pub fn cpu_time_of(pid: &str, ticks_per_second: u64) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc/<pid>/stat");
    // Fields after the parenthesised command name start at field 3 (state); utime and stime are 14, 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .expect("stat has a command name")
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_secs_f64(ticks as f64 / ticks_per_second as f64)
}
