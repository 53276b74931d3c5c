//! Writes a cluster dump (`benches/support/dump.rs`) for measuring `ferroscale simulate` on a big
//! cluster:
//!
//! ```text
//! cargo run --release --example gen_dump -- 1000 51 > /tmp/big.json
//! ferroscale simulate --cluster /tmp/big.json --node-groups examples/bench-groups.yaml --loops 1
//! ```
//!
//! Arguments: nodes (default 1,000) and pods per node (default 51: 50 bound to each node, one pending,
//! of 200 ReplicaSets). With `--pending M` every pod per node is bound (of 20 ReplicaSets) and M pending
//! pods of Jobs follow: the shape of issue #27 (`gen_dump 1000 50 --pending 50000`, 100,000 pods).
//! `cargo bench --bench read_dump` writes and reads both of issue #27's dumps itself.

use std::io::BufWriter;

#[path = "../benches/support/dump.rs"]
mod dump;

fn main() -> std::io::Result<()> {
    let mut positional = Vec::new();
    let mut pending = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--pending" {
            let m = args.next().expect("--pending takes a number of pods");
            pending = Some(m.parse().expect("--pending"));
        } else {
            positional.push(a);
        }
    }
    let mut positional = positional.into_iter();
    let nodes: usize = positional
        .next()
        .map_or(1_000, |a| a.parse().expect("nodes"));
    let per_node: usize = positional
        .next()
        .map_or(51, |a| a.parse().expect("pods per node"));
    let shape = dump::Shape {
        nodes,
        per_node,
        pending,
    };
    dump::write(&mut BufWriter::new(std::io::stdout().lock()), &shape)
}
