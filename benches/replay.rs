//! `ferroscale simulate --trace` replaying a made-up day (issue #42), as a user runs it: the release
//! binary on the day `benches/support/trace.rs` writes (`examples/gen_trace.rs` writes the same), one
//! policy and three compared; prints each run's wall time and peak RSS (the child's own `ru_maxrss`).
//!
//! ```text
//! cargo bench --bench replay                                  # 1,000 nodes at the peak, 50,000 pods
//! REPLAY_SHAPE=1000,2000,50 REPLAY_HOURS=6 cargo bench --bench replay
//! ```
//!
//! `REPLAY_SHAPE` is web replicas at night, at the peak, and per node; `REPLAY_HOURS` the day's length.

#[path = "support/measured.rs"]
mod measured;
#[path = "support/trace.rs"]
mod trace;

use std::io::BufWriter;
use std::process::Command;
use std::time::Duration;

use measured::measured;

/// Runs the binary once with `args`; its wall time and peak RSS in MB.
fn run(args: &[&str]) -> (Duration, f64) {
    measured(Command::new(env!("CARGO_BIN_EXE_ferroscale")).args(args))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let shape: Vec<usize> = std::env::var("REPLAY_SHAPE")
        .unwrap_or_else(|_| "25000,50000,50".into())
        .split(',')
        .map(|s| s.trim().parse().expect("REPLAY_SHAPE: numbers"))
        .collect();
    let hours: i64 =
        std::env::var("REPLAY_HOURS").map_or(24, |h| h.parse().expect("REPLAY_HOURS: a number"));
    let day = trace::Day {
        web_low: shape[0],
        web_peak: shape[1],
        batch: (shape[1] / 10).max(1),
        hpa_every: 300,
        seconds: hours * 3600,
        per_node: shape[2],
    };
    let path = std::env::temp_dir().join("ferroscale-replay-day.jsonl");
    let file = std::fs::File::create(&path).expect("create the trace");
    let mut out = BufWriter::new(file);
    let lines = trace::write(&day, &mut out).expect("write the trace");
    out.into_inner()
        .map_err(|e| e.into_error())
        .and_then(|f| f.sync_all())
        .expect("write the trace");
    let groups = std::env::temp_dir().join("ferroscale-replay-groups.yaml");
    std::fs::write(
        &groups,
        "nodeGroups:\n- name: general-a\n  minSize: 1\n  maxSize: 5000\n  capacity: {cpu: \"4\", memory: 16Gi, pods: \"58\"}\n  allocatable: {cpu: 3920m, memory: 15Gi, pods: \"58\"}\n  pricePerHour: 0.192\n",
    )
    .expect("write the groups");
    let trace = path.to_str().expect("a UTF-8 path");
    let groups = groups.to_str().expect("a UTF-8 path");
    println!(
        "ferroscale simulate --trace: {hours} h, web pods {}..{} ({} a node), {lines} lines:",
        day.web_low, day.web_peak, day.per_node
    );
    let base = ["simulate", "--trace", trace, "--node-groups", groups];
    let (took, rss) = run(&base);
    println!("  one policy: {:.1} s / {rss:.0} MB", took.as_secs_f64());
    let mut compared = base.to_vec();
    compared.extend([
        "--compare-consolidation",
        "off;WhenEmpty;WhenEmptyOrUnderutilized",
    ]);
    let (took, rss) = run(&compared);
    println!(
        "  three consolidation policies compared: {:.1} s / {rss:.0} MB",
        took.as_secs_f64()
    );
    let _ = std::fs::remove_file(&path);
}
