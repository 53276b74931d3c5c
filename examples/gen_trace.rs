//! Writes a made-up day of a cluster as `ferroscale record` writes it (`benches/support/trace.rs`):
//! diurnal web traffic followed by an HPA, a nightly batch, a spot interruption.
//!
//! ```text
//! cargo run --example gen_trace > examples/day.jsonl            # the example trace
//! cargo run --release --example gen_trace -- 25000 50000 50 > /tmp/big-day.jsonl   # a 1,000-node day
//! ```
//!
//! Arguments: web replicas at night and at the peak (default 14 and 56) and per node (default 7: half a
//! CPU each); the batch is a tenth of the peak.

use std::io::{BufWriter, Write};

#[path = "../benches/support/trace.rs"]
mod trace;

fn main() -> std::io::Result<()> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number of replicas"))
        .collect();
    let low = args.first().copied().unwrap_or(14);
    let peak = args.get(1).copied().unwrap_or(56);
    let day = trace::Day {
        web_low: low,
        web_peak: peak,
        batch: (peak / 10).max(1),
        hpa_every: 300,
        seconds: 86_400,
        per_node: args.get(2).copied().unwrap_or(7),
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    trace::write(&day, &mut out)?;
    out.flush()
}
