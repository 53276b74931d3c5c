//! `ferroscale simulate --report FILE.html` and `--compare-expanders`: the page of the shipped example is
//! one self-contained file with a chart per series and the decisions with their reasons; compared chains
//! come to what each chain run alone comes to; headless Chromium draws the page; bad flags are named.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use ferroscale::report::{page, ChainRun};
use ferroscale::simulate::{LoopReport, Reasoned, ScaleUpReport};
use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const EXAMPLE_GROUPS: [&str; 4] = ["general-a", "general-b", "memory", "gpu"];

/// Two groups where the price expander and least-nodes part ways: six pods of 0.9 cpu fill three small
/// nodes or one big one.
const GROUPS: &str = "nodeGroups:
  - {name: small, minSize: 0, maxSize: 10, capacity: {cpu: 2, memory: 8Gi, pods: 20}, pricePerHour: 0.096}
  - {name: big, minSize: 0, maxSize: 10, capacity: {cpu: 8, memory: 32Gi, pods: 50}, pricePerHour: 0.5}
";
const PRICES: [(&str, f64); 2] = [("small", 0.096), ("big", 0.5)];

fn cluster() -> String {
    (0..6)
        .map(|i| {
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: web-{i}, namespace: shop, ownerReferences: \
                 [{{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: u, controller: true}}]}}\n\
                 spec: {{containers: [{{name: c, resources: {{requests: {{cpu: 900m, memory: 1Gi}}}}}}]}}\n"
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

pub(crate) fn simulate(cluster: &Path, groups: &Path, args: &[&str]) -> Output {
    Command::new(crate::support::process::BIN)
        .arg("simulate")
        .arg("--cluster")
        .arg(cluster)
        .arg("--node-groups")
        .arg(groups)
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn example(args: &[&str]) -> Output {
    simulate(
        &Path::new(ROOT).join("examples/cluster.yaml"),
        &Path::new(ROOT).join("examples/groups.yaml"),
        args,
    )
}

pub(crate) fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

pub(crate) fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The text between `start` (included) and the next `end` after it.
pub(crate) fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let at = text
        .find(start)
        .unwrap_or_else(|| panic!("no {start:?} in the page"));
    let len = text[at..].find(end).expect("unclosed element");
    &text[at..at + len]
}

/// Whether `svg` has a `<text>` saying `label` (a series' legend).
pub(crate) fn has_text(svg: &str, label: &str) -> bool {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>')?.1.split_once("</text>"))
        .any(|(text, _)| text.trim() == label)
}

/// The cells' texts of the summary row of `chain`.
pub(crate) fn summary_row(html: &str, chain: &str) -> Vec<String> {
    between(html, &format!("<tr data-chain=\"{chain}\">"), "</tr>")
        .split("<td")
        .skip(1)
        .map(|c| {
            c.split_once('>')
                .unwrap()
                .1
                .trim_end_matches("</td>")
                .to_string()
        })
        .collect()
}

/// No script, and nothing the page would fetch: every src and href is local.
pub(crate) fn assert_self_contained(html: &str) {
    let lower = html.to_ascii_lowercase();
    assert!(!lower.contains("<script"), "a script in the page");
    for attr in ["src=", "href="] {
        for (at, _) in lower.match_indices(attr) {
            let value = lower[at + attr.len()..].trim_start_matches(['"', '\'']);
            assert!(
                !value.starts_with("http://")
                    && !value.starts_with("https://")
                    && !value.starts_with("//"),
                "the page fetches {}",
                &html[at..(at + 80).min(html.len())]
            );
        }
    }
}

#[test]
fn the_report_of_the_shipped_example_is_one_page_with_charts_and_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.html");
    let out = example(&[
        "--loops",
        "3",
        "--node-ready-delay",
        "0s",
        "--report",
        path.to_str().unwrap(),
    ]);
    // The report changes nothing on stdout.
    let golden = std::fs::read_to_string(format!("{ROOT}/tests/it/golden/example.jsonl")).unwrap();
    assert_eq!(ok(&out), golden);
    let html = std::fs::read_to_string(&path).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_self_contained(&html);
    // A chart each: pending pods, cost per hour, nodes per group.
    assert_eq!(html.matches("<svg").count(), 3, "{html}");
    let pending = between(&html, "<figure id=\"pending\">", "</figure>");
    assert!(pending.contains("<svg") && has_text(pending, "least-waste"));
    let cost = between(&html, "<figure id=\"cost\">", "</figure>");
    assert!(cost.contains("<svg") && cost.contains("Cost per hour per loop"));
    let nodes = between(&html, "<figure class=\"nodes\">", "</figure>");
    for g in EXAMPLE_GROUPS {
        assert!(has_text(nodes, g), "no series {g}: {nodes}");
    }
    // The decisions and their reasons, as the JSON says them.
    let decisions = between(&html, "<table class=\"decisions\">", "</table>");
    let first = &json_lines(&golden)[0];
    for up in first["scaleUp"].as_array().unwrap() {
        assert!(decisions.contains(&format!("<td>{}</td>", up["group"].as_str().unwrap())));
    }
    let reason = first["pending"][0]["reason"].as_str().unwrap();
    assert!(
        decisions.contains(&format!("<td>{reason}</td>")),
        "{decisions}"
    );
    assert!(decisions.contains(first["expander"][0].as_str().unwrap()));
    // One chain: its outcome, no difference.
    assert_eq!(
        summary_row(&html, "least-waste")[..7],
        ["least-waste", "3", "2", "0", "1", "4", "1.1020"]
    );
}

#[test]
fn the_page_escapes_what_it_shows() {
    let evil = "<script>alert(\"x\")</script> & 'co'";
    let run = ChainRun {
        chain: "least-waste".into(),
        prices: vec![("a<b".into(), Some(1.0))],
        loops: vec![LoopReport {
            loop_number: 1,
            time: 0,
            scale_up: vec![ScaleUpReport {
                group: "a<b".into(),
                delta: 1,
                failed: 0,
                pods: vec![evil.into()],
            }],
            scale_down: vec![],
            delete_instances: vec![],
            cancel: vec![],
            unhealthy: None,
            pending: vec![Reasoned {
                pod: Some("ns/p".into()),
                node: None,
                reason: evil.into(),
                kind: "",
            }],
            unremovable: vec![Reasoned {
                pod: None,
                node: Some(evil.into()),
                reason: evil.into(),
                kind: "NotUnderutilized",
            }],
            nodes: [("a<b".to_string(), 1)].into(),
            cost_per_hour: None,
            expander: vec![],
            disruptions: vec![],
            replacements: vec![],
            due: vec![],
            evictions: vec![],
            evictions_refused: vec![],
            descheduling_declined: vec![],
            descheduling_skipped: vec![],
            consolidations: vec![],
            consolidation_declined: vec![],
            consolidation_waits: None,
            emptying: vec![],
        }],
    };
    let html = page("t & <t>", &[run]).unwrap();
    assert!(!html.contains("<script"), "{html}");
    assert!(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;co&#39;"));
    assert!(html.contains("t &amp; &lt;t&gt;"));
    assert!(!html.contains("a<b"), "{html}");
}

/// The outcome of a chain run alone, from its JSON lines: nodes added, pods pending, nodes, cost.
fn alone(lines: &[Value]) -> (i64, u64, u64, f64) {
    let added = lines
        .iter()
        .flat_map(|l| l["scaleUp"].as_array().unwrap())
        .map(|u| u["delta"].as_i64().unwrap() - u["failed"].as_i64().unwrap_or(0))
        .sum();
    let last = lines.last().unwrap();
    let nodes = last["nodes"].as_object().unwrap();
    let cost = PRICES
        .iter()
        .map(|(g, p)| nodes.get(*g).map_or(0, |n| n.as_u64().unwrap()) as f64 * p)
        .sum::<f64>();
    (
        added,
        last["pending"].as_array().unwrap().len() as u64,
        nodes.values().map(|n| n.as_u64().unwrap()).sum(),
        cost,
    )
}

fn fixture(dir: &Path) -> (PathBuf, PathBuf) {
    let (c, g) = (dir.join("cluster.yaml"), dir.join("groups.yaml"));
    std::fs::write(&c, cluster()).unwrap();
    std::fs::write(&g, GROUPS).unwrap();
    (c, g)
}

#[test]
fn compared_chains_come_to_what_each_chain_comes_to_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (c, g) = fixture(dir.path());
    let path = dir.path().join("compare.html");
    let chains = ["price,least-waste", "least-nodes"];
    let out = simulate(
        &c,
        &g,
        &[
            "--loops",
            "3",
            "--compare-expanders",
            " price, least-waste ;least-nodes",
            "--report",
            path.to_str().unwrap(),
        ],
    );
    let outcomes = json_lines(&ok(&out));
    assert_eq!(outcomes.len(), 2);
    let html = std::fs::read_to_string(&path).unwrap();
    assert_self_contained(&html);
    let mut seen = Vec::new();
    for (chain, o) in chains.iter().zip(&outcomes) {
        let (added, pending, nodes, cost) = alone(&json_lines(&ok(&simulate(
            &c,
            &g,
            &["--loops", "3", "--expander", chain],
        ))));
        assert_eq!(o["expander"], *chain);
        assert_eq!(o["nodesAdded"], added, "{chain}");
        assert_eq!(o["podsPending"], pending, "{chain}");
        assert_eq!(o["nodes"], nodes, "{chain}");
        assert!(
            (o["costPerHour"].as_f64().unwrap() - cost).abs() < 1e-9,
            "{chain}"
        );
        let row = summary_row(&html, chain);
        assert_eq!(
            row[..7],
            [
                chain.to_string(),
                "3".into(),
                added.to_string(),
                "0".into(),
                pending.to_string(),
                nodes.to_string(),
                format!("{cost:.4}")
            ],
            "{chain}"
        );
        assert!(html.contains(&format!("<section data-chain=\"{chain}\">")));
        seen.push((added, cost, row));
    }
    // The chains part ways here: three small nodes against one big one.
    let ((a0, c0, _), (a1, c1, row1)) = (&seen[0], &seen[1]);
    assert_ne!(a0, a1);
    let vs = &outcomes[1]["vsFirst"];
    assert_eq!(vs["expander"], chains[0]);
    assert_eq!(vs["nodesAdded"], a1 - a0);
    assert!((vs["costPerHour"].as_f64().unwrap() - (c1 - c0)).abs() < 1e-9);
    assert_eq!(row1[7], format!("{:+}", a1 - a0));
    assert_eq!(row1[9], format!("{:+.4}", c1 - c0));
    assert!(outcomes[0].get("vsFirst").is_none());
    // Both chains are series of the pending and cost charts; each has its nodes per group.
    for figure in ["<figure id=\"pending\">", "<figure id=\"cost\">"] {
        let svg = between(&html, figure, "</figure>");
        for chain in chains {
            assert!(has_text(svg, chain), "{figure} lacks {chain}");
        }
    }
    assert_eq!(html.matches("<figure class=\"nodes\">").count(), 2);
}

#[test]
fn bad_compare_and_report_flags_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let (c, g) = fixture(dir.path());
    let cases: [(&[&str], &[&str]); 5] = [
        (
            &["--compare-expanders", "price;;least-waste"],
            &["--compare-expanders", "chain 2"],
        ),
        (
            &["--compare-expanders", ""],
            &["--compare-expanders", "chain 1"],
        ),
        (
            &["--compare-expanders", "price,"],
            &["--compare-expanders", "chain 1"],
        ),
        (
            &["--compare-expanders", "price;cheapest,least-waste"],
            &["--compare-expanders", "chain 2", "\"cheapest\""],
        ),
        (
            &["--report", "/nonexistent-dir/report.html"],
            &["--report", "/nonexistent-dir/report.html"],
        ),
    ];
    for (args, words) in cases {
        let out = simulate(&c, &g, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        for w in words {
            assert!(err.contains(w), "{args:?}: {err}");
        }
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// Runs `command`, killing it after `limit`.
fn run_with_limit(command: &mut Command, limit: Duration) -> Output {
    let child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(id.to_string()).status();
            panic!("{command:?} did not finish in {limit:?}");
        }
    }
}

/// Headless Chromium's screenshot (1200×1600) of the page at `page`, as RGB pixels; `dir` holds its
/// profile and the picture.
pub(crate) fn screenshot(page: &Path, dir: &Path) -> Vec<[u8; 3]> {
    let chromium = std::env::var("FERROSCALE_CHROMIUM")
        .ok()
        .filter(|c| !c.is_empty());
    let chromium = chromium.unwrap_or_else(|| {
        panic!(
            "FERROSCALE_CHROMIUM is not set: set it to a Chromium binary (scripts/test.sh installs \
             Debian's chromium and sets it to /usr/bin/chromium)"
        )
    });
    assert!(
        Path::new(&chromium).exists(),
        "FERROSCALE_CHROMIUM={chromium} does not exist (apt-get install -y chromium)"
    );
    let shot = dir.join("report.png");
    let profile = dir.join("profile");
    let out = run_with_limit(
        Command::new(&chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
            ])
            .args([
                "--hide-scrollbars",
                "--no-first-run",
                "--window-size=1200,1600",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(format!("--screenshot={}", shot.display()))
            .arg(format!("file://{}", page.display())),
        Duration::from_secs(180),
    );
    let bytes = std::fs::read(&shot).unwrap_or_else(|e| {
        panic!(
            "no screenshot ({e}); chromium exited {:?}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1200, 1600));
    let step = info.color_type.samples();
    assert!(step >= 3, "{:?}", info.color_type);
    buf[..info.buffer_size()]
        .chunks_exact(step)
        .map(|p| [p[0], p[1], p[2]])
        .collect()
}

/// Pixels within 12 of `colour` on each channel (a series' line and legend).
pub(crate) fn near(pixels: &[[u8; 3]], colour: [i32; 3]) -> usize {
    pixels
        .iter()
        .filter(|p| {
            p.iter()
                .zip(colour)
                .all(|(a, b)| (i32::from(*a) - b).abs() <= 12)
        })
        .count()
}

#[test]
fn headless_chromium_draws_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let (c, g) = fixture(dir.path());
    let report = dir.path().join("report.html");
    ok(&simulate(
        &c,
        &g,
        &[
            "--loops",
            "3",
            "--compare-expanders",
            "price;least-nodes",
            "--report",
            report.to_str().unwrap(),
        ],
    ));
    let html = std::fs::read_to_string(&report).unwrap();
    for series in ["price", "least-nodes", "small", "big"] {
        assert!(has_text(&html, series), "no series {series}");
    }
    let pixels = screenshot(&report, dir.path());
    let colours: std::collections::HashSet<[u8; 3]> = pixels.iter().copied().collect();
    let inked = pixels.iter().filter(|p| **p != [255, 255, 255]).count();
    assert!(colours.len() >= 32, "{} colours: blank?", colours.len());
    assert!(
        inked * 100 > pixels.len(),
        "{inked} of {} pixels not white",
        pixels.len()
    );
    // The first two series' colours are drawn (the charts' lines and legends).
    for series in [[0, 114, 178], [213, 94, 0]] {
        assert!(near(&pixels, series) > 50, "no series drawn in {series:?}");
    }
}
