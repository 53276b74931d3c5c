//! The chart's monitoring objects, off by default: a PrometheusRule with the alerts the table of
//! docs/operating.md ("Alerts") lists, and a Grafana dashboard ConfigMap whose JSON parses and whose
//! queries name metrics ferroscale exports (src/metrics/).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::Value;

use crate::support::chart::{count, render, render_yaml, typed};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Metric names in a PromQL expression: identifiers followed by `{`, `[`, `)` or the end, that are
/// not functions, keywords or label names.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let expr = &expr.replace("$__rate_interval", "5m");
    let mut out = BTreeSet::new();
    let mut in_braces = false;
    let mut word = String::new();
    let mut in_string = false;
    for c in expr.chars().chain(std::iter::once(' ')) {
        if in_string {
            in_string = c != '"';
            continue;
        }
        if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
            continue;
        }
        if !word.is_empty() && !in_braces && c != '(' {
            let w = std::mem::take(&mut word);
            let keyword = ["by", "without", "or", "and", "unless", "on", "ignoring"];
            if w.contains('_') && !keyword.contains(&w.as_str()) && !w.starts_with(char::is_numeric)
            {
                out.insert(w);
            }
        }
        word.clear();
        match c {
            '{' => in_braces = true,
            '}' => in_braces = false,
            '"' => in_string = true,
            _ => {}
        }
    }
    // A `by (a, b)` list holds label names, not metrics.
    for list in expr.split("by (").skip(1) {
        for label in list.split(')').next().unwrap().split(',') {
            out.remove(label.trim());
        }
    }
    out
}

/// The metric names ferroscale registers (the files of src/metrics/), as exposed: counters with `_total`,
/// and the cluster_autoscaler_ ones built from the `p` prefix.
fn exported() -> BTreeSet<String> {
    let mut files: Vec<_> = std::fs::read_dir(format!("{ROOT}/src/metrics"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no source files in src/metrics");
    let src: String = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    let mut out = BTreeSet::new();
    for piece in src.split('"').skip(1).step_by(2) {
        let name = piece.replace("{p}", "cluster_autoscaler_");
        if name.chars().all(|c| c.is_ascii_lowercase() || c == '_') && name.contains('_') {
            out.insert(name.clone());
            out.insert(format!("{name}_total"));
        }
    }
    out
}

#[test]
fn the_prometheus_rule_has_the_documented_alerts() {
    assert_eq!(
        count(&render(None).unwrap(), "PrometheusRule"),
        0,
        "off by default"
    );
    let operating = std::fs::read_to_string(format!("{ROOT}/docs/operating.md")).unwrap();
    let table = operating
        .split("**Alert on** (Prometheus")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .nth(1)
        .unwrap();
    let documented: BTreeSet<String> = table
        .lines()
        .skip(2)
        .flat_map(|row| metric_names(row.split('|').nth(1).unwrap().replace('`', " ").trim()))
        .filter(|m| m != "health_check")
        .collect();
    assert!(documented.len() >= 8, "{documented:?}");
    let exported = exported();
    for mode in ["provider", "standalone"] {
        let objects = render_yaml(&format!(
            "mode: {mode}\nprometheusRule: {{enabled: true, namespace: monitoring, additionalLabels: {{release: kps}}, interval: 1m, rules: [{{alert: Mine, expr: vector(1)}}]}}\n"
        ))
        .unwrap();
        let rule = objects
            .iter()
            .find(|o| o["kind"] == "PrometheusRule")
            .unwrap();
        assert_eq!(rule["apiVersion"], "monitoring.coreos.com/v1");
        assert_eq!(rule["metadata"]["namespace"], "monitoring");
        assert_eq!(rule["metadata"]["labels"]["release"], "kps");
        let group = &rule["spec"]["groups"][0];
        assert_eq!(group["interval"], "1m");
        let rules = group["rules"].as_array().unwrap();
        assert_eq!(rules.last().unwrap()["alert"], "Mine", "rules appended");
        assert!(
            rules
                .iter()
                .any(|r| r["expr"].as_str().unwrap().starts_with("up{")),
            "an alert on the target being down"
        );
        let mut used = BTreeSet::new();
        for r in rules {
            let expr = r["expr"].as_str().unwrap();
            assert!(r["alert"].is_string() && !expr.is_empty(), "{r}");
            used.extend(metric_names(expr));
        }
        for m in &documented {
            // serve has no gRPC refusals to report in standalone mode.
            if mode == "standalone" && m.starts_with("grpc_") {
                continue;
            }
            assert!(used.contains(m), "{mode}: no alert on {m}: {used:?}");
        }
        for m in used.iter().filter(|m| *m != "up" && *m != "vector") {
            assert!(
                exported.contains(m),
                "{m} is not a metric ferroscale exports"
            );
        }
    }
}

#[test]
fn the_grafana_dashboard_is_valid_json_with_the_operators_panels() {
    assert_eq!(
        render(None)
            .unwrap()
            .iter()
            .filter(|o| o["metadata"]["name"] == "fs-ferroscale-dashboard")
            .count(),
        0,
        "off by default"
    );
    let objects = render_yaml(
        "grafanaDashboard: {enabled: true, annotations: {grafana_folder: Autoscaling}, labels: {team: infra}}\n",
    )
    .unwrap();
    let cm = objects
        .iter()
        .find(|o| o["metadata"]["name"] == "fs-ferroscale-dashboard")
        .unwrap();
    let cm: ConfigMap = typed(cm);
    let meta = cm.metadata;
    assert_eq!(meta.labels.as_ref().unwrap()["grafana_dashboard"], "1");
    assert_eq!(meta.labels.as_ref().unwrap()["team"], "infra");
    assert_eq!(meta.annotations.unwrap()["grafana_folder"], "Autoscaling");
    let json = &cm.data.unwrap()["ferroscale.json"];
    let dashboard: Value = serde_json::from_str(json).unwrap();
    assert_eq!(dashboard["uid"], "ferroscale");
    let panels = dashboard["panels"].as_array().unwrap();
    let titles: Vec<&str> = panels
        .iter()
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    let mut used = BTreeSet::new();
    let mut ids = BTreeSet::new();
    for p in panels {
        assert!(ids.insert(p["id"].as_u64().unwrap()), "unique panel ids");
        for t in p["targets"].as_array().unwrap() {
            used.extend(metric_names(t["expr"].as_str().unwrap()));
        }
    }
    for title in [
        "Nodes per group",
        "Pending (unschedulable) pods",
        "Scale events",
        "Failed scale-ups",
        "Cost per hour",
        "State and price age",
    ] {
        assert!(titles.contains(&title), "{title}: {titles:?}");
    }
    let exported = exported();
    for m in &used {
        assert!(
            exported.contains(m),
            "{m} is not a metric ferroscale exports"
        );
    }
    for m in [
        "cluster_autoscaler_unschedulable_pods_count",
        "cluster_autoscaler_failed_scale_ups_total",
        "cluster_autoscaler_scaled_up_nodes_total",
        "ferroscale_cloud_state_age_seconds",
        "ferroscale_price_age_seconds",
        "ferroscale_cluster_cost_per_hour",
        "ferroscale_node_group_price_per_hour",
        "cluster_autoscaler_node_group_target_count",
    ] {
        assert!(used.contains(m), "{m}: {used:?}");
    }
}

#[test]
fn promql_metric_names_are_found() {
    assert_eq!(
        metric_names("sum by (node_group) (rate(grpc_server_handled_total{grpc_code!=\"OK\", job=\"a_b\"}[5m])) > 0"),
        BTreeSet::from(["grpc_server_handled_total".to_string()])
    );
    assert_eq!(
        metric_names("time() - cluster_autoscaler_last_activity{activity=\"autoscaling\"} > 900"),
        BTreeSet::from(["cluster_autoscaler_last_activity".to_string()])
    );
}
