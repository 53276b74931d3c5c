//! `ferroscale simulate --trace` as users run it: the binary replays the shipped example day (plain and
//! gzip), compares policies on it, and refuses a bad timeline naming the line.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::simulate_report::{json_lines, ok};
use crate::support::process::{run_failing, BIN};

const DAY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/day.jsonl");
const GROUPS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/day-groups.yaml");

/// The JSON lines `simulate` printed, with `args` after `--trace FILE --node-groups GROUPS`.
fn replay(trace: &str, args: &[&str]) -> Vec<Value> {
    let out = Command::new(BIN)
        .args(["simulate", "--trace", trace, "--node-groups", GROUPS])
        .args(args)
        .output()
        .unwrap();
    json_lines(&ok(&out))
}

/// What the example day's file says really happened to nodes after its start: (added, deleted).
fn recorded_node_changes() -> (u64, u64) {
    let text = std::fs::read_to_string(DAY).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let start = lines[0]["time"].clone();
    let nodes = |change: &str| {
        lines
            .iter()
            .filter(|l| l["time"] != start && l["object"]["kind"] == "Node" && l["type"] == change)
            .count() as u64
    };
    (nodes("ADDED"), nodes("DELETED"))
}

#[test]
fn the_example_day_replays_to_its_answers_beside_what_really_happened() {
    let lines = replay(DAY, &[]);
    let answers = lines.last().unwrap();
    let loops = &lines[..lines.len() - 1];
    assert_eq!(answers["loops"].as_u64().unwrap() as usize, loops.len());
    // A loop every 10 s through the day.
    let last = loops.last().unwrap()["time"].as_i64().unwrap();
    let first = loops[0]["time"].as_i64().unwrap();
    assert_eq!(last - first, 10 * (loops.len() as i64 - 1));
    assert!(last - first >= 85_000, "{first}..{last}");
    let sim = &answers["summary"];
    let real = &answers["real"];
    // The day's peak needs nodes the night does not: the simulation launches and removes some.
    assert!(sim["nodesLaunched"].as_u64().unwrap() >= 2, "{sim}");
    assert!(sim["nodesRemoved"].as_u64().unwrap() >= 2, "{sim}");
    let peak = loops
        .iter()
        .map(|l| l["nodes"]["general-a"].as_u64().unwrap())
        .max()
        .unwrap();
    let night = loops[0]["nodes"]["general-a"].as_u64().unwrap();
    assert!(peak > night + 2, "peak {peak}, night {night}");
    // Every pod the day created found a node.
    assert_eq!(loops.last().unwrap()["pending"], Value::Array(vec![]));
    assert!(sim["p99TimeToScheduleSeconds"].as_i64().is_some());
    // What really happened is what the file says.
    let (added, deleted) = recorded_node_changes();
    assert_eq!(real["nodesLaunched"].as_u64().unwrap(), added);
    assert_eq!(real["nodesRemoved"].as_u64().unwrap(), deleted);
    assert!(
        real.get("evictions").is_none(),
        "a timeline holds no evictions"
    );
    // The cost is its node-hours at the group's price, on both sides.
    for side in [sim, real] {
        let cost = side["costDollars"].as_f64().unwrap();
        let hours = side["nodeHours"].as_f64().unwrap();
        assert!((cost - hours * 0.192).abs() < 0.05, "{side}");
    }
    // The start-up times are the day's own: its new nodes registered a while after pods waited, and
    // pods that waited for a new node in the simulation waited that long too.
    let calibrated = &answers["calibrated"];
    assert_eq!(calibrated["nodes"].as_u64().unwrap(), added);
    let provision = calibrated["provisionDelaySeconds"].as_i64().unwrap();
    assert!(provision > 0, "{calibrated}");
    assert!(
        sim["p99TimeToScheduleSeconds"].as_i64().unwrap() >= provision,
        "{sim}"
    );
    // The simulation follows the real day within a node or two.
    let mae = answers["error"]["nodeCountMae"].as_f64().unwrap();
    assert!(mae < 2.0, "{}", answers["error"]);
}

#[test]
fn a_gzip_timeline_replays_as_its_text() {
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("day.jsonl.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    enc.write_all(&std::fs::read(DAY).unwrap()).unwrap();
    enc.finish().unwrap();
    let loops = [
        "--loops",
        "400",
        "--provision-delay",
        "0s",
        "--node-ready-delay",
        "0s",
    ];
    let plain = replay(DAY, &loops);
    assert_eq!(replay(gz.to_str().unwrap(), &loops), plain);
    // Start-up times given as flags are not taken from the timeline.
    assert!(plain.last().unwrap().get("calibrated").is_none());
    assert_eq!(plain.len(), 401);
}

#[test]
fn policies_compared_on_the_same_day_each_give_their_answers() {
    let lines = replay(
        DAY,
        &["--compare-consolidation", "off;WhenEmptyOrUnderutilized"],
    );
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["label"], "off");
    assert_eq!(lines[1]["label"], "WhenEmptyOrUnderutilized");
    let cost = |l: &Value| l["summary"]["costDollars"].as_f64().unwrap();
    let evictions = |l: &Value| l["summary"]["evictions"].as_u64().unwrap();
    // Consolidation moves pods to spend less; off, only the pods of the node the day lost are
    // evicted (`simulate_trace_lost`).
    assert!(evictions(&lines[1]) > evictions(&lines[0]), "{lines:?}");
    assert!(cost(&lines[1]) < cost(&lines[0]), "{lines:?}");
    // The same day really happened under both.
    assert_eq!(lines[0]["real"], lines[1]["real"]);
}

#[test]
fn descheduler_policies_compared_on_the_same_day_each_give_their_answers() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("lifetime.yaml");
    std::fs::write(
        &policy,
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  pluginConfig:\n  - name: PodLifeTime\n    args: {maxPodLifeTimeSeconds: 7200}\n  plugins:\n    deschedule: {enabled: [PodLifeTime]}\n",
    )
    .unwrap();
    let choices = format!("off;{}", policy.display());
    // A third of the day is enough for pods to outlive two hours.
    let lines = replay(
        DAY,
        &["--compare-deschedule-policy", &choices, "--loops", "3000"],
    );
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["label"], "off");
    assert_eq!(lines[1]["label"], policy.to_str().unwrap());
    let evictions = |l: &Value| l["summary"]["evictions"].as_u64().unwrap();
    // Off, nothing moves; pods older than two hours are evicted through the day under the policy.
    assert_eq!(evictions(&lines[0]), 0);
    assert!(evictions(&lines[1]) > 10, "{}", lines[1]);
    // Without a timeline the comparison is refused, named.
    let (code, stderr) = run_failing(&[
        "simulate",
        "--cluster",
        concat!(env!("CARGO_MANIFEST_DIR"), "/examples/cluster.yaml"),
        "--node-groups",
        GROUPS,
        "--compare-deschedule-policy",
        &choices,
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--compare-deschedule-policy: only with --trace"),
        "{stderr}"
    );
}

fn write(dir: &Path, name: &str, lines: &[String]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_bad_timeline_is_refused_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(DAY).unwrap();
    let good: Vec<String> = text.lines().take(5).map(String::from).collect();
    let entry = |time: &str, kind: &str| {
        format!(
            "{{\"time\":\"{time}\",\"type\":\"ADDED\",\"object\":{{\"kind\":\"{kind}\",\"metadata\":{{\"name\":\"x\"}}}}}}"
        )
    };
    let with = |line: String| {
        let mut lines = good.clone();
        lines.insert(3, line);
        lines
    };
    let cases = [
        (with("{\"time\": oops".into()), "line 4:"),
        (
            with(entry("2020-01-01T00:00:00Z", "Pod")),
            "line 4: time 2020-01-01T00:00:00Z is before",
        ),
        (
            with(entry("2026-11-20T00:00:00Z", "Secret")),
            "line 4: object.kind: unknown kind \"Secret\"",
        ),
    ];
    for (i, (lines, want)) in cases.into_iter().enumerate() {
        let file = write(dir.path(), &format!("bad-{i}.jsonl"), &lines);
        let (code, stderr) = run_failing(&["simulate", "--trace", &file, "--node-groups", GROUPS]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(want), "{stderr:?} should contain {want:?}");
    }
    let (code, stderr) = run_failing(&[
        "simulate",
        "--trace",
        DAY,
        "--cluster",
        DAY,
        "--node-groups",
        GROUPS,
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--trace and --cluster"), "{stderr}");
}

#[test]
fn the_replays_report_draws_what_really_happened_beside_each_run() {
    use crate::simulate_report::{assert_self_contained, between, has_text, near, screenshot};
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("replay.html");
    let lines = replay(
        DAY,
        &[
            "--compare-consolidation",
            "off;WhenEmptyOrUnderutilized",
            "--loops",
            "3000",
            "--report",
            report.to_str().unwrap(),
        ],
    );
    let html = std::fs::read_to_string(&report).unwrap();
    assert_self_contained(&html);
    // The table: each run's answers, then the recorded ones.
    let table = between(&html, "<table id=\"replay\">", "</table>");
    for line in &lines {
        let label = line["label"].as_str().unwrap();
        let row = between(table, &format!("<tr data-run=\"{label}\">"), "</tr>");
        let cost = format!("{:.2}", line["summary"]["costDollars"].as_f64().unwrap());
        assert!(row.contains(&cost), "{row} should show {cost}");
    }
    let real = between(table, "<tr data-run=\"really (recorded)\">", "</tr>");
    let cost = format!("{:.2}", lines[0]["real"]["costDollars"].as_f64().unwrap());
    assert!(real.contains(&cost), "{real} should show {cost}");
    // The recorded line is drawn beside the runs: cost, pending pods, nodes.
    for figure in [
        "<figure id=\"cost\">",
        "<figure id=\"pending\">",
        "<figure id=\"replay-nodes\">",
    ] {
        let svg = between(&html, figure, "</figure>");
        assert!(
            has_text(svg, "really (recorded)"),
            "{figure} has no recorded line"
        );
    }
    // In a browser: the runs' lines and the recorded one (the third colour) are drawn.
    let pixels = screenshot(&report, dir.path());
    for series in [[0, 114, 178], [213, 94, 0], [0, 158, 115]] {
        assert!(near(&pixels, series) > 50, "no series drawn in {series:?}");
    }
}
