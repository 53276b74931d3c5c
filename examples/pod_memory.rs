//! Prints what the model of a cluster dump holds in memory, per pod: the bytes allocated and still live
//! once the dump is read (nodes, pods and the shared label, namespace and image tables), divided by the
//! pods, as issue #27's "pod memory in the model ≤ 1 KB" counts it:
//!
//! ```text
//! cargo run --release --example gen_dump -- 1000 50 --pending 50000 > /tmp/d100k.json
//! cargo run --release --example pod_memory -- /tmp/d100k.json
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: pod_memory DUMP.json");
    let before = LIVE.load(Ordering::Relaxed);
    let path = std::path::Path::new(&path);
    let mut inputs = ferroscale::k8s::documents::inputs_of_file(path, "dump", || {
        std::fs::read_to_string(path).map_err(|e| ferroscale::error::Error::config(e.to_string()))
    })
    .expect("the dump reads");
    // Vectors grown by doubling hold up to twice their length: count what they hold.
    inputs.pods.shrink_to_fit();
    inputs.nodes.shrink_to_fit();
    let live = LIVE.load(Ordering::Relaxed) - before;
    let pods = inputs.pods.len().max(1);
    println!(
        "{} nodes, {} pods: {} bytes live, {} bytes per pod (the model's Pod struct alone: {} bytes)",
        inputs.nodes.len(),
        inputs.pods.len(),
        live,
        live / pods,
        std::mem::size_of::<ferroscale::model::workload::Pod>(),
    );
}
