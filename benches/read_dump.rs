//! `ferroscale simulate` reading a big cluster dump, as a user runs it (issue #27): the release binary
//! on a kubectl-shaped JSON dump of S × (1,000 nodes, 50 running pods each of 20 ReplicaSets, 50,000
//! pending Job pods), `--loops 1` and `--loops 0` (reading and converting alone), three runs each;
//! prints each run's wall time and peak RSS (the child's own `ru_maxrss`, from `wait4`).
//!
//! ```text
//! cargo bench --bench read_dump                      # S = 1 and 5 (164 MB and 820 MB of JSON)
//! READ_DUMP_SCALES=1 cargo bench --bench read_dump
//! ```
//!
//! The dumps are written to the temporary directory first (`benches/support/dump.rs`, the same writer as
//! `examples/gen_dump.rs`), read once untimed, and removed after.

#[path = "support/dump.rs"]
mod dump;
#[path = "support/measured.rs"]
mod measured;

use std::io::BufWriter;
use std::process::Command;
use std::time::Duration;

use measured::measured;

const RUNS: usize = 3;

/// Runs the binary once; its wall time and peak RSS in MB.
fn run(dump: &std::path::Path, groups: &std::path::Path, loops: u32) -> (Duration, f64) {
    measured(
        Command::new(env!("CARGO_BIN_EXE_ferroscale"))
            .args(["simulate", "--cluster"])
            .arg(dump)
            .arg("--node-groups")
            .arg(groups)
            .args(["--loops", &loops.to_string()]),
    )
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let scales: Vec<usize> = std::env::var("READ_DUMP_SCALES")
        .unwrap_or_else(|_| "1,5".into())
        .split(',')
        .map(|s| s.trim().parse().expect("READ_DUMP_SCALES: numbers"))
        .collect();
    let groups =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/bench-groups.yaml");
    println!("ferroscale simulate on a cluster dump ({RUNS} runs each):");
    for s in scales {
        let shape = dump::Shape {
            nodes: 1_000 * s,
            per_node: 50,
            pending: Some(50_000 * s),
        };
        let path = std::env::temp_dir().join(format!("ferroscale-read-dump-{s}.json"));
        let file = std::fs::File::create(&path).expect("create the dump");
        let mut out = BufWriter::new(file);
        dump::write(&mut out, &shape).expect("write the dump");
        // On disk before any run is timed: the kernel writing it back would be counted in the runs.
        out.into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all())
            .expect("write the dump");
        let mb = std::fs::metadata(&path).map_or(0, |m| m.len()) / 1_000_000;
        let pods = shape.nodes * shape.per_node + shape.pending.unwrap_or(0);
        // One run untimed, as a user's dump is read soon after kubectl wrote it: the file in the page
        // cache, as the runs timed after it find it.
        run(&path, &groups, 0);
        for loops in [1, 0] {
            let runs: Vec<String> = (0..RUNS)
                .map(|_| {
                    let (took, rss) = run(&path, &groups, loops);
                    format!("{:.2} s / {rss:.0} MB", took.as_secs_f64())
                })
                .collect();
            println!(
                "  {} nodes, {pods} pods ({mb} MB), --loops {loops}: {}",
                shape.nodes,
                runs.join(", ")
            );
        }
        let _ = std::fs::remove_file(&path);
    }
}
