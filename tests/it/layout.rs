//! The house rules, checked: the core crate depends on no protocol, cluster, cloud or command-line crate
//! (through anything it pulls in), no source file is over 500 lines, and no module imports another that
//! imports it back.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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

/// The module path of a source file under `root` (`mod.rs` and `lib.rs` name their folder).
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The longest prefix of `path` that is a module.
fn resolve(modules: &BTreeSet<Vec<String>>, path: &[String]) -> Option<Vec<String>> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
}

/// Module → modules it names (`crate::a::b`, `super::c`), ancestors left out (a child may use its
/// parent's items).
fn imports(root: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(root, f)).collect();
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut edges = BTreeMap::new();
    for f in &files {
        let me = module_of(root, f);
        let text = std::fs::read_to_string(f).unwrap();
        let text = text.split("#[cfg(test)]").next().unwrap();
        let mut targets = BTreeSet::new();
        for (start, kw) in text
            .match_indices("crate::")
            .chain(text.match_indices("super::"))
        {
            if start > 0 && text[..start].ends_with(|c: char| word(c) || c == ':') {
                continue;
            }
            let rest = &text[start + kw.len()..];
            let mut path: Vec<String> = Vec::new();
            let mut base = if kw == "crate::" {
                Vec::new()
            } else {
                me[..me.len().saturating_sub(1)].to_vec()
            };
            let mut r = rest;
            loop {
                let name: String = r.chars().take_while(|&c| word(c)).collect();
                if name.is_empty() {
                    break;
                }
                if name == "super" {
                    base.pop();
                } else {
                    path.push(name.clone());
                }
                r = &r[name.len()..];
                match r.strip_prefix("::") {
                    Some(next) => r = next,
                    None => break,
                }
            }
            let full: Vec<String> = base.into_iter().chain(path).collect();
            if let Some(t) = resolve(&modules, &full) {
                let ancestor = t.len() < me.len() && me[..t.len()] == t[..];
                if t != me && !ancestor {
                    targets.insert(t);
                }
            }
        }
        edges.insert(me, targets);
    }
    edges
}

fn cycle(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Option<Vec<Vec<String>>> {
    fn visit(
        m: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        path: &mut Vec<Vec<String>>,
        done: &mut BTreeSet<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        if let Some(at) = path.iter().position(|p| p == m) {
            return Some(path[at..].to_vec());
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.clone());
        for t in edges.get(m).into_iter().flatten() {
            if let Some(c) = visit(t, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.clone());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|m| visit(m, edges, &mut Vec::new(), &mut done))
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    for root in ["src", "crates/ferroscale-core/src"] {
        let edges = imports(&Path::new(ROOT).join(root));
        assert!(edges.len() > 10, "{root}: modules found");
        if let Some(c) = cycle(&edges) {
            let names: Vec<String> = c.iter().map(|m| m.join("::")).collect();
            panic!("{root}: import cycle {}", names.join(" -> "));
        }
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
