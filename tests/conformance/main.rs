//! The conformance suite: upstream's own table-driven test cases (kube-scheduler's filters,
//! cluster-autoscaler's estimator, drainability, scale-down, node groups and cluster state), transcribed
//! into fixtures under `cases/` and fed through ferroscale's engine. Each fixture file names its upstream
//! source (repository, path, test function); each case keeps upstream's case name. A case that ferroscale
//! decides differently on purpose carries `known_difference: <id>`, and `KNOWN_DIFFERENCES.md` says why
//! under a heading of that id; such a case must still differ (a fixed difference is taken off the list).
//!
//! One module per kind of case; `support` turns a case's Kubernetes objects into the engine's inputs.

mod drain;
mod drain_node;
mod equivalence;
mod estimate;
mod expander;
mod filter;
mod loop_expect;
mod loops;
mod readiness;
mod requests;
mod similar;
mod support;
mod utilization;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// What the suite must hold at least, as the conformance issue asks.
const MINIMUM_CASES: usize = 1104;

/// One fixture file: the upstream test its cases come from.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    source: Source,
    /// Which runner module reads the cases.
    kind: String,
    cases: Vec<serde_norway::Value>,
}

/// Where upstream keeps the cases: `repo`, `path`, the `test` function.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Source {
    repo: String,
    path: String,
    test: String,
}

/// The fields every case has besides its kind's own.
#[derive(Debug, Deserialize)]
struct Common {
    name: String,
    #[serde(default)]
    known_difference: Option<String>,
}

/// Runs one case of `kind`: `Ok` when ferroscale decides as upstream expects, else what differed.
fn check(kind: &str, case: &serde_norway::Value) -> Result<(), String> {
    match kind {
        "filter" => filter::check(case),
        "equivalence" => equivalence::check(case),
        "estimate" => estimate::check(case),
        "expander" => expander::check(case),
        "drain" => drain::check(case),
        "drain_node" => drain_node::check(case),
        "loop" => loops::check(case),
        "requests" => requests::check(case),
        "readiness" => readiness::check(case),
        "similar" => similar::check(case),
        "utilization" => utilization::check(case),
        other => Err(format!("unknown kind {other:?}")),
    }
}

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/cases")
}

fn fixture_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(cases_dir())
        .into_iter()
        .map(|e| e.expect("cases/ readable").into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// The ids `KNOWN_DIFFERENCES.md` explains: its `## ` headings.
fn known_differences() -> Vec<String> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/KNOWN_DIFFERENCES.md"),
    )
    .expect("KNOWN_DIFFERENCES.md readable");
    text.lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(|h| h.trim().to_string())
        .collect()
}

#[test]
fn upstream_cases_decide_as_upstream() {
    let explained = known_differences();
    let mut failures = Vec::new();
    let mut per_area: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut total = 0;
    for path in fixture_files() {
        let shown = path
            .strip_prefix(cases_dir())
            .unwrap()
            .display()
            .to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let file: CaseFile = match serde_norway::from_str(&text) {
            Ok(f) => f,
            Err(e) => {
                failures.push(format!("{shown}: {e}"));
                continue;
            }
        };
        assert!(
            !file.source.repo.is_empty()
                && !file.source.path.is_empty()
                && !file.source.test.is_empty(),
            "{shown}: the source names repo, path and test"
        );
        let area = shown.split('/').next().unwrap_or_default().to_string();
        for case in &file.cases {
            total += 1;
            let common: Common = match serde_norway::from_value(case.clone()) {
                Ok(c) => c,
                Err(e) => {
                    failures.push(format!("{shown}: a case without a name: {e}"));
                    continue;
                }
            };
            let at = format!("{shown} [{}] {:?}", file.source.test, common.name);
            let outcome = check(&file.kind, case);
            let counts = per_area.entry(area.clone()).or_default();
            counts.0 += 1;
            match (&common.known_difference, outcome) {
                (None, Ok(())) => {}
                (None, Err(e)) => failures.push(format!("{at}: {e}")),
                (Some(id), Ok(())) => failures.push(format!(
                    "{at}: listed as known difference {id:?} but now decides as upstream: take it off the list"
                )),
                (Some(id), Err(_)) if !explained.contains(id) => failures.push(format!(
                    "{at}: known difference {id:?} has no heading in KNOWN_DIFFERENCES.md"
                )),
                (Some(_), Err(_)) => counts.1 += 1,
            }
        }
    }
    for (area, (cases, known)) in &per_area {
        println!("{area}: {cases} cases, {known} known differences");
    }
    println!("total: {total} cases");
    assert!(
        failures.is_empty(),
        "{} of {total} upstream cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_suite_holds_enough_upstream_cases() {
    let total: usize = fixture_files()
        .iter()
        .map(|p| {
            serde_norway::from_str::<CaseFile>(&std::fs::read_to_string(p).unwrap())
                .map(|f| f.cases.len())
                .unwrap_or(0)
        })
        .sum();
    assert!(
        total >= MINIMUM_CASES,
        "{total} upstream cases, at least {MINIMUM_CASES} wanted"
    );
}

#[test]
fn every_known_difference_is_used() {
    let used: Vec<String> = fixture_files()
        .iter()
        .flat_map(|p| {
            let f: CaseFile = serde_norway::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            f.cases
                .into_iter()
                .filter_map(|c| serde_norway::from_value::<Common>(c).ok()?.known_difference)
        })
        .collect();
    for id in known_differences() {
        assert!(
            used.contains(&id),
            "KNOWN_DIFFERENCES.md explains {id:?}, which no case names"
        );
    }
}
