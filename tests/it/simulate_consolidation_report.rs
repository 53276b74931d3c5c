//! What `simulate` shows of consolidation before it happens: each loop's plans (nodes, new nodes, dollars
//! an hour saved, pods evicted) and the nodes declined with why in the JSON; `--compare-consolidation`'s
//! outcome per policy; the HTML report's cost with and without consolidation.

use crate::simulate_consolidation::{cluster, groups, OPTED_IN};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::simulate_report::{
    assert_self_contained, between, has_text, json_lines, near, ok, screenshot, simulate,
    summary_row,
};
use crate::support::fixtures::dump::pod;
use crate::support::simulate_harness::{pacing, sim};

/// One 9-core replica on a node of group `a` ($1/h, 16 cores); group `cheap` has the same capacity at
/// `cheap`'s price and no node.
fn one_node(cheap: f64) -> (Vec<String>, String) {
    let node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: a-1\n  creationTimestamp: \"2026-01-01T00:00:00Z\"\n  labels: {ferroscale.io/node-group: a, kubernetes.io/hostname: a-1}\n\
                spec: {providerID: \"memory:///a/i-1\"}\n\
                status:\n  allocatable: {cpu: \"16\", memory: 64Gi, pods: \"110\"}\n  conditions: [{type: Ready, status: \"True\"}]\n";
    let groups = format!(
        r#"
nodeGroups:
  - {{name: a, minSize: 0, maxSize: 4, capacity: {{cpu: 16, memory: 64Gi, pods: 110}}, pricePerHour: 1.0,
     {OPTED_IN} instances: [{{id: i-1}}]}}
  - {{name: cheap, minSize: 0, maxSize: 4, capacity: {{cpu: 16, memory: 64Gi, pods: 110}}, pricePerHour: {cheap}}}
"#
    );
    (
        vec![
            node.to_string(),
            pod("shop", "web-1", "9", "1Gi", Some("a-1"), ""),
        ],
        groups,
    )
}

#[test]
fn each_loop_shows_its_consolidations_in_dollars_and_pods() {
    let mut s = sim(&cluster(), &groups(OPTED_IN));
    // The three old nodes drain at once (the default `--max-drain-parallelism` of 1 takes them one a
    // loop, as it holds scale-down).
    let mut settings = ferroscale::cli::flags::default_engine();
    settings.max_drain_parallelism = 3;
    let r = serde_json::to_value(s.step(&settings, &pacing())).unwrap();
    let plans = r["consolidations"]
        .as_array()
        .unwrap_or_else(|| panic!("{r:#}"));
    assert_eq!(plans.len(), 1, "{r:#}");
    let plan = &plans[0];
    assert_eq!(plan["action"], "replace");
    assert_eq!(plan["nodes"], serde_json::json!(["m5-0", "m5-1", "m5-2"]));
    assert_eq!(
        plan["into"],
        serde_json::json!([{"group": "big", "count": 1}])
    );
    let saving = plan["savingsPerHour"].as_f64().unwrap();
    assert!((saving - (3.0 * 0.768 - 1.224)).abs() < 1e-9, "{plan:#}");
    assert!((plan["pricePerHour"].as_f64().unwrap() - 3.0 * 0.768).abs() < 1e-9);
    assert_eq!(
        plan["podsEvicted"],
        serde_json::json!(["shop/web-0", "shop/web-1", "shop/web-2"])
    );
    assert_eq!(
        plan["reason"],
        "cheaper on 1 big: saves $1.0800/h of $2.3040/h (46.9%), 3 pods evicted"
    );
    // Right after, consolidation says why it looks for nothing new: the old nodes are retired (its
    // own new capacity does not hold it for scale-down's --scale-down-delay-after-add).
    let next = serde_json::to_value(s.step(&settings, &pacing())).unwrap();
    assert!(next.get("consolidations").is_none(), "{next:#}");
    assert_eq!(
        next["consolidationWaits"], "nodes are retired this loop; their pods move first",
        "{next:#}"
    );
}

#[test]
fn a_five_percent_saving_is_declined_with_why_and_nothing_is_said_when_off() {
    let (c, g) = one_node(0.95);
    let mut s = sim(&c, &g);
    let settings = ferroscale::cli::flags::default_engine();
    let r = serde_json::to_value(s.step(&settings, &pacing())).unwrap();
    assert!(r.get("consolidations").is_none(), "{r:#}");
    assert_eq!(
        r["consolidationDeclined"],
        serde_json::json!([{"node": "a-1",
            "reason": "saving too small: $0.0500/h of $1.0000/h is below 10%"}]),
        "{r:#}"
    );
    // At 3% the same saving is taken.
    let mut s = sim(&c, &g);
    let mut three = ferroscale::cli::flags::default_engine();
    three.consolidation_min_savings = 0.03;
    let r = serde_json::to_value(s.step(&three, &pacing())).unwrap();
    assert_eq!(r["consolidations"][0]["into"][0]["group"], "cheap", "{r:#}");
    assert!(r.get("consolidationDeclined").is_none(), "{r:#}");
    // A group that does not opt in: no consolidation field at all (the report is as before).
    let mut s = sim(&c, &g.replace(OPTED_IN, ""));
    let r = serde_json::to_value(s.step(&settings, &pacing())).unwrap();
    for field in [
        "consolidations",
        "consolidationDeclined",
        "consolidationWaits",
    ] {
        assert!(r.get(field).is_none(), "{field}: {r:#}");
    }
}

/// The three half-empty nodes' cluster and groups (with `extra`) written for the binary.
fn files(dir: &Path, extra: &str) -> (PathBuf, PathBuf) {
    let (c, g) = (dir.join("cluster.yaml"), dir.join("groups.yaml"));
    std::fs::write(&c, cluster().join("---\n")).unwrap();
    std::fs::write(&g, groups(extra)).unwrap();
    (c, g)
}

const BUDGET: &str = "disruptionBudget: \"100%\",";

/// Each loop's nodes priced for the 10 s to the next loop, summed: what a run cost.
fn total(lines: &[Value]) -> f64 {
    let price = |g: &str| if g == "m5" { 0.768 } else { 1.224 };
    lines
        .iter()
        .flat_map(|l| l["nodes"].as_object().unwrap())
        .map(|(g, n)| price(g) * n.as_f64().unwrap() * 10.0 / 3600.0)
        .sum()
}

#[test]
fn compare_consolidation_gives_each_policys_dollars_and_disruption() {
    let dir = tempfile::tempdir().unwrap();
    let (c, g) = files(dir.path(), BUDGET);
    let page = dir.path().join("compare.html");
    // The policies replace the groups' (none here) and --consolidation's; its `after` stays.
    // The old nodes drain at once, as in the loop test above.
    let common = [
        "--loops",
        "6",
        "--consolidation",
        "WhenEmpty,after=0s",
        "--max-drain-parallelism",
        "3",
    ];
    let out = simulate(
        &c,
        &g,
        &[
            &common[..],
            &[
                "--compare-consolidation",
                "off; WhenEmptyOrUnderutilized:10% ;WhenEmptyOrUnderutilized:50%",
                "--report",
                page.to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    let outcomes = json_lines(&ok(&out));
    assert_eq!(outcomes.len(), 3, "{outcomes:#?}");
    let labels: Vec<&str> = outcomes
        .iter()
        .map(|o| o["consolidation"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "off",
            "WhenEmptyOrUnderutilized:10%",
            "WhenEmptyOrUnderutilized:50%"
        ]
    );
    let [off, ten, fifty] = &outcomes[..] else {
        unreachable!()
    };
    let close = |v: &Value, x: f64| (v.as_f64().unwrap() - x).abs() < 1e-6;
    assert!(close(&off["costPerHour"], 3.0 * 0.768), "{off:#}");
    assert_eq!(off["consolidations"], 0);
    assert!(off.get("vsFirst").is_none());
    assert!(close(&ten["costPerHour"], 1.224), "{ten:#}");
    assert_eq!(
        (&ten["consolidations"], &ten["nodesConsolidated"]),
        (&1.into(), &3.into())
    );
    assert_eq!(ten["podsEvicted"], 3);
    assert_eq!(ten["podsPending"], 0);
    assert!(
        close(&ten["vsFirst"]["costPerHour"], 1.224 - 3.0 * 0.768),
        "{ten:#}"
    );
    assert_eq!(ten["vsFirst"]["podsEvicted"], 3);
    // 47% saved is not worth it at a 50% minimum.
    assert_eq!(fifty["consolidations"], 0, "{fifty:#}");
    assert!(close(&fifty["vsFirst"]["costPerHour"], 0.0));
    // Each total is what the policy's run alone costs, loop by loop.
    for (o, policy) in [(off, "Never"), (ten, "WhenEmptyOrUnderutilized")] {
        let alone = json_lines(&ok(&simulate(
            &c,
            &g,
            &[
                "--loops",
                "6",
                "--consolidation",
                &format!("{policy},after=0s"),
                "--max-drain-parallelism",
                "3",
            ],
        )));
        assert!(close(&o["totalCost"], total(&alone)), "{policy}: {o:#}");
    }
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains(
            "WhenEmptyOrUnderutilized:10%: $1.2240/h at the end, $0.0426 over 6 loops, \
             1 consolidations (3 nodes, 3 pods evicted), 0 pods pending; vs off: -$1.0800/h"
        ),
        "{text}"
    );
    // The page: a row per policy with its dollars, and its decisions.
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    let row = summary_row(&html, "WhenEmptyOrUnderutilized:10%");
    assert_eq!(
        row[..7],
        [
            "WhenEmptyOrUnderutilized:10%",
            "6",
            "1.2240",
            "0.0426",
            "1",
            "3",
            "3"
        ]
    );
    assert!(html.contains("<h3>consolidation off</h3>"), "{html}");
    assert!(html.contains("<td>consolidate (replace)</td><td>m5-0, m5-1, m5-2</td>"));
    let cost = between(&html, "<figure id=\"cost\">", "</figure>");
    for label in labels {
        assert!(has_text(cost, label), "{label}");
    }
}

#[test]
fn a_bad_policy_to_compare_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (c, g) = files(dir.path(), "");
    let cases: [(&[&str], &[&str]); 4] = [
        (
            &["--compare-consolidation", "off;Sometimes:10%"],
            &["--compare-consolidation", "policy 2", "\"Sometimes:10%\""],
        ),
        (
            &["--compare-consolidation", "WhenEmpty:lots;off"],
            &[
                "--compare-consolidation",
                "policy 1",
                "minimum saving",
                "\"lots\"",
            ],
        ),
        (
            &["--compare-consolidation", "off;"],
            &["--compare-consolidation", "policy 2", "empty"],
        ),
        (
            &[
                "--compare-consolidation",
                "off",
                "--compare-expanders",
                "price",
            ],
            &["--compare-consolidation and --compare-expanders"],
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

#[test]
fn the_report_draws_cost_with_and_without_consolidation() {
    let dir = tempfile::tempdir().unwrap();
    let (c, g) = files(
        dir.path(),
        &format!("{BUDGET} consolidation: {{policy: WhenEmptyOrUnderutilized, after: 0s}},"),
    );
    let page = dir.path().join("report.html");
    let with_page = ok(&simulate(
        &c,
        &g,
        &["--loops", "6", "--report", page.to_str().unwrap()],
    ));
    // The second run, without consolidation, adds nothing to stdout.
    assert_eq!(with_page, ok(&simulate(&c, &g, &["--loops", "6"])));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    let figure = between(&html, "<figure id=\"consolidation-cost\">", "</figure>");
    assert!(figure.contains("Cost per hour with and without consolidation"));
    for series in ["with consolidation", "without consolidation"] {
        assert!(has_text(figure, series), "no series {series}: {figure}");
    }
    assert!(html.contains("<td>consolidate (replace)</td>"), "{html}");
    // Chromium draws both lines (the first two series' colours) of that chart alone.
    let alone = dir.path().join("chart.html");
    std::fs::write(
        &alone,
        format!(
            "<!DOCTYPE html><html><body style=\"background:#fff\">{figure}</figure></body></html>"
        ),
    )
    .unwrap();
    let pixels = screenshot(&alone, dir.path());
    for colour in [[0, 114, 178], [213, 94, 0]] {
        assert!(near(&pixels, colour) > 300, "no line drawn in {colour:?}");
    }
    // Without a group that consolidates there is no such chart (and no second run).
    let (c, g) = files(dir.path(), BUDGET);
    ok(&simulate(
        &c,
        &g,
        &["--loops", "2", "--report", page.to_str().unwrap()],
    ));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("consolidation-cost"));
}
