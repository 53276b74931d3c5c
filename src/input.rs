//! Local input files read within their bounds (`ferroscale_core::bounds`): a file longer than its size
//! limit is refused by its length before it is read, and never read past its limit (a file that grows
//! meanwhile, a pipe). The table of every input's limits is `docs/reference/limits.md`.

use std::path::Path;

use crate::bounds::{Bounds, DEPTH};

use crate::error::{Error, Result};

/// A node groups file (`--memory-config`, `simulate --node-groups`): 4 MiB.
pub const NODE_GROUPS: Bounds = Bounds {
    input: "node groups",
    max_bytes: 4 << 20,
    max_depth: DEPTH,
};

/// An events file (`simulate --events`): 16 MiB (a thousand EventBridge events are about 1 MiB); the
/// JSON of each event is held to the same depth.
pub const EVENTS: Bounds = Bounds {
    input: "events",
    max_bytes: 16 << 20,
    max_depth: DEPTH,
};

/// A `--config` file: 1 MiB.
pub const CONFIG: Bounds = Bounds {
    input: "--config file",
    max_bytes: 1 << 20,
    max_depth: DEPTH,
};

/// A `--scheduler-config-file` (kube-scheduler's configuration): 1 MiB.
pub const SCHEDULER_CONFIG: Bounds = Bounds {
    input: "--scheduler-config-file",
    max_bytes: 1 << 20,
    max_depth: DEPTH,
};

/// The status ConfigMap's `data.status`, read back: 1 MiB (all a ConfigMap holds).
pub const STATUS: Bounds = Bounds {
    input: "status",
    max_bytes: 1 << 20,
    max_depth: DEPTH,
};

/// A cluster dump read whole (YAML, or JSON that is not one `List`): 2 GiB, 64 levels (an object's
/// `managedFields` are the deepest part of a dump, some 15 levels). A JSON `List` is streamed, an item
/// at a time, without a size limit, its items held to the JSON parser's own depth of 128.
pub const DUMP: Bounds = Bounds {
    input: "cluster dump",
    max_bytes: 2 << 30,
    max_depth: 64,
};

/// The text of the file at `path` that `flag` names, within `bounds`: the error names the flag and
/// the file, and the limit when one is exceeded (a configuration error).
pub fn read_file(path: &Path, bounds: &Bounds, flag: &str) -> Result<String> {
    std::fs::File::open(path)
        .and_then(|f| {
            let len = f.metadata().ok().map(|m| m.len());
            bounds.read(f, len)
        })
        .map_err(|e| Error::config(format!("cannot read {flag} {}: {e}", path.display())))
}
