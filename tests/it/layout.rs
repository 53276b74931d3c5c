//! The house rules, checked: the core crate depends on no protocol, cluster, cloud or command-line crate
//! (through anything it pulls in), no source file is over 500 lines, and no module imports another that
//! imports it back, neither a file (through any number of others) nor a layer (a crate's top-level
//! module: `cloud`, `k8s`, `engine`, …). `imports` reads the imports as Rust resolves them.

mod imports;
mod imports_tests;
mod lex;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use imports::{circles, describe, Crate, Edges};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Every package's dependencies by name, as Cargo.lock records them.
fn lock_graph() -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(format!("{ROOT}/Cargo.lock")).unwrap();
    let mut graph: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for package in text.split("[[package]]").skip(1) {
        let name = package
            .lines()
            .find_map(|l| l.strip_prefix("name = "))
            .unwrap()
            .trim_matches('"')
            .to_string();
        let deps: Vec<String> = package
            .split_once("dependencies = [")
            .map(|(_, rest)| rest.split(']').next().unwrap_or(""))
            .unwrap_or("")
            .lines()
            .filter_map(|l| l.trim().trim_end_matches(',').strip_prefix('"'))
            .map(|d| {
                d.trim_end_matches('"')
                    .split(' ')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect();
        graph.entry(name).or_default().extend(deps);
    }
    graph
}

#[test]
fn the_core_crate_pulls_in_no_protocol_cluster_cloud_or_cli_crate() {
    let graph = lock_graph();
    let mut seen = BTreeSet::new();
    let mut todo = vec!["ferroscale-core".to_string()];
    while let Some(p) = todo.pop() {
        if seen.insert(p.clone()) {
            todo.extend(graph.get(&p).into_iter().flatten().cloned());
        }
    }
    let banned: Vec<&String> = seen
        .iter()
        .filter(|p| {
            [
                "tonic",
                "prost",
                "kube",
                "k8s-openapi",
                "k8s-pb",
                "clap",
                "tokio",
                "hyper",
            ]
            .iter()
            .any(|b| p == b || p.starts_with(&format!("{b}-")))
                || p.starts_with("aws-")
        })
        .collect();
    assert!(banned.is_empty(), "ferroscale-core depends on {banned:?}");
    assert!(
        seen.contains("serde"),
        "the walk found the core's own dependencies: {seen:?}"
    );
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_source_file_is_over_500_lines() {
    let mut files = Vec::new();
    for dir in ["src", "crates", "tests", "benches"] {
        rust_files(&Path::new(ROOT).join(dir), &mut files);
    }
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n > 500).then(|| format!("{} ({n} lines)", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these by job: {long:?}");
}

/// A crate's source files by their path under `dir` (`a/b.rs`), with their text.
fn sources(dir: &str) -> BTreeMap<String, String> {
    let root = Path::new(ROOT).join(dir);
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(&root).unwrap().to_string_lossy();
            (rel.replace('\\', "/"), std::fs::read_to_string(f).unwrap())
        })
        .collect()
}

/// The library crates whose imports are checked: the binary's and the core's.
const CRATES: [&str; 2] = ["src", "crates/ferroscale-core/src"];

#[test]
fn no_file_imports_one_that_imports_it_back() {
    for dir in CRATES {
        let krate = Crate::new(&sources(dir), "lib.rs");
        assert!(krate.modules.len() > 50, "{dir}: modules found");
        let edges = krate.edges();
        let found: Vec<String> = circles(&edges)
            .iter()
            .map(|c| describe(c, &edges))
            .collect();
        assert!(
            found.is_empty(),
            "{dir}: files that import each other in a circle:\n{}",
            found.join("\n")
        );
    }
}

/// The imports between a crate's top-level modules (its layers: `cloud`, `k8s`, `engine`, …), each
/// with the file imports that make it.
fn layer_edges(krate: &Crate) -> Edges {
    let layer: BTreeMap<&String, &String> = krate
        .modules
        .iter()
        .filter_map(|(m, (file, _))| Some((file, m.first()?)))
        .collect();
    let mut out = Edges::new();
    for (from, imports) in krate.edges() {
        for (to, names) in imports {
            let (Some(a), Some(b)) = (layer.get(&from), layer.get(&to)) else {
                continue;
            };
            if a != b {
                let names: Vec<String> = names.into_iter().collect();
                let tie = format!("{from} -> {to} ({})", names.join(", "));
                out.entry(a.to_string())
                    .or_default()
                    .entry(b.to_string())
                    .or_default()
                    .insert(tie);
            }
        }
    }
    out
}

#[test]
fn no_layer_imports_one_that_imports_it_back() {
    for dir in CRATES {
        let krate = Crate::new(&sources(dir), "lib.rs");
        let edges = layer_edges(&krate);
        assert!(edges.len() > 3, "{dir}: layers found: {:?}", edges.keys());
        let found: Vec<String> = circles(&edges)
            .iter()
            .map(|c| describe(c, &edges))
            .collect();
        assert!(
            found.is_empty(),
            "{dir}: top-level modules that import each other in a circle:\n{}",
            found.join("\n")
        );
    }
}

/// Inherent `impl` blocks (not trait impls) by type name: the files each type's own code is in.
fn inherent_impls() -> BTreeMap<String, BTreeSet<PathBuf>> {
    let mut files = Vec::new();
    for dir in ["src", "crates/ferroscale-core/src"] {
        rust_files(&Path::new(ROOT).join(dir), &mut files);
    }
    let mut out: BTreeMap<String, BTreeSet<PathBuf>> = BTreeMap::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let text = text.split("#[cfg(test)]").next().unwrap();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("impl") else {
                continue;
            };
            if line.contains(" for ") || !rest.starts_with([' ', '<']) {
                continue;
            }
            // Skip the generics, then the type's name.
            let mut depth = 0;
            let mut start = rest.len();
            for (i, c) in rest.char_indices() {
                match c {
                    '<' => depth += 1,
                    '>' => depth -= 1,
                    c if depth == 0 && c.is_ascii_alphabetic() => {
                        start = i;
                        break;
                    }
                    _ => {}
                }
            }
            let name: String = rest[start..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.entry(name).or_default().insert(f.clone());
            }
        }
    }
    out
}

#[test]
fn no_type_has_its_own_code_in_more_than_two_files() {
    let impls = inherent_impls();
    assert!(impls.contains_key("Actuator"), "impls found: {impls:?}");
    let spread: Vec<String> = impls
        .iter()
        .filter(|(_, files)| files.len() > 2)
        .map(|(name, files)| format!("{name}: {files:?}"))
        .collect();
    assert!(
        spread.is_empty(),
        "split these by job, not by impl block: {spread:?}"
    );
}

#[test]
fn the_live_loop_shares_no_locked_state_with_its_tasks() {
    // Drains, evictions and the interruption poller report to the loop by messages on channels.
    let mut files = Vec::new();
    for dir in ["src/run", "src/actuator"] {
        rust_files(&Path::new(ROOT).join(dir), &mut files);
    }
    assert!(files.len() > 5, "{files:?}");
    let shared: Vec<String> = files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            text.lines()
                .enumerate()
                .filter(|(_, l)| {
                    let l = l.replace("parking_lot::", "").replace("std::sync::", "");
                    l.contains("Arc<Mutex<")
                })
                .map(|(i, l)| format!("{}:{}: {}", f.display(), i + 1, l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(shared.is_empty(), "use a channel: {shared:?}");
}
