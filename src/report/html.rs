//! The report page: a summary table of the chains, the charts (inline SVG) and, per chain side by side,
//! its nodes per group and its decisions with their reasons. No script, no stylesheet or image from
//! elsewhere: the file is the whole page.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::charts::{lines, Series};
pub use super::text::escape;
use super::{outcomes, policy_outcomes, ChainRun, Extras};
use crate::error::Result;
use crate::simulate::{LoopReport, Reasoned};

const STYLE: &str = "body{font-family:sans-serif;margin:16px;color:#222;background:#fff}\
h1{font-size:22px}h2{font-size:18px;margin-top:28px}h3{font-size:16px}\
table{border-collapse:collapse;font-size:13px;margin:8px 0}\
th,td{border:1px solid #bbb;padding:3px 6px;text-align:left;vertical-align:top;overflow-wrap:break-word}\
th{background:#e8eef6}td.n{text-align:right;white-space:nowrap}figure{margin:0}.decisions th,.decisions td:nth-child(-n+3){white-space:nowrap}\
.charts{display:flex;flex-wrap:wrap;gap:12px}\
.chains{display:grid;gap:16px}.chains>section{min-width:0}\
svg{max-width:100%;height:auto}";

/// A whole number with its sign (`+1`, `0`, `-2`).
fn signed(n: i64) -> String {
    if n > 0 {
        format!("+{n}")
    } else {
        n.to_string()
    }
}

fn signed_usd(x: f64) -> String {
    if x > 0.0 {
        format!("+{x:.4}")
    } else {
        format!("{x:.4}")
    }
}

/// The whole page of `runs` (one run per expander chain), titled `title`.
pub fn page(title: &str, runs: &[ChainRun]) -> Result<String> {
    page_with(title, runs, &Extras::default())
}

/// The whole page of `runs` with `extras`: runs per consolidation policy, and each run's cost without
/// consolidation.
pub fn page_with(title: &str, runs: &[ChainRun], extras: &Extras) -> Result<String> {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>ferroscale simulate: {t}</title><style>{STYLE}</style></head><body>\n\
         <h1>ferroscale simulate</h1>\n<p>{t}</p>\n",
        t = escape(title)
    );
    match extras.policies {
        Some(hours) => policy_summary(&mut h, runs, hours),
        None => summary(&mut h, runs),
    }
    let mut pending: Vec<Series> = runs
        .iter()
        .map(|r| Series {
            label: &r.chain,
            values: r.loops.iter().map(|l| l.pending.len() as f64).collect(),
        })
        .collect();
    let mut cost: Vec<Series> = runs
        .iter()
        .map(|r| Series {
            label: &r.chain,
            values: r.loops.iter().map(|l| r.cost_per_hour(l)).collect(),
        })
        .collect();
    super::replay::add_real(&mut pending, &mut cost, extras);
    super::replay::section(&mut h, runs, extras)?;
    let _ = write!(
        h,
        "<h2>Per loop</h2>\n<div class=\"charts\">\n<figure id=\"pending\">{}</figure>\n\
         <figure id=\"cost\">{}</figure>\n",
        lines("Pending pods per loop", "pods", true, &pending)?,
        lines("Cost per hour per loop", "USD per hour", false, &cost)?
    );
    with_and_without(&mut h, runs, &extras.without_consolidation)?;
    h.push_str("</div>\n");
    let kind = if extras.policies.is_some() {
        "consolidation"
    } else {
        "expander"
    };
    let _ = write!(
        h,
        "<h2>Per {}</h2>\n<div class=\"chains\" \
         style=\"grid-template-columns:repeat({},minmax(0,1fr))\">\n",
        if extras.policies.is_some() {
            "consolidation policy"
        } else {
            "expander chain"
        },
        runs.len().max(1)
    );
    for run in runs {
        chain(&mut h, run, kind)?;
    }
    h.push_str("</div>\n</body></html>\n");
    Ok(h)
}

/// The summary table: one row per chain, with its difference from the first.
fn summary(h: &mut String, runs: &[ChainRun]) {
    h.push_str(
        "<h2>Summary</h2>\n<table class=\"summary\"><thead><tr><th>expander</th><th>loops</th>\
         <th>nodes added</th><th>nodes removed</th><th>pods pending at the end</th>\
         <th>nodes at the end</th><th>cost per hour at the end (USD)</th>\
         <th>nodes added vs first</th><th>pods pending vs first</th><th>cost per hour vs first</th>\
         </tr></thead><tbody>\n",
    );
    for o in outcomes(runs) {
        let (added, pending, cost) = match &o.vs_first {
            Some(d) => (
                signed(d.nodes_added),
                signed(d.pods_pending),
                signed_usd(d.cost_per_hour),
            ),
            None => ("—".into(), "—".into(), "—".into()),
        };
        let _ = writeln!(
            h,
            "<tr data-chain=\"{c}\"><td>{c}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{:.4}</td><td class=\"n\">{added}</td><td class=\"n\">{pending}</td>\
             <td class=\"n\">{cost}</td></tr>",
            o.loops,
            o.nodes_added,
            o.nodes_removed,
            o.pods_pending,
            o.nodes,
            o.cost_per_hour,
            c = escape(&o.expander),
        );
    }
    h.push_str("</tbody></table>\n");
}

/// The figure of cost per hour with consolidation (each run's own) and without (`without`, per run),
/// when some run has the second, beside the other charts.
fn with_and_without(h: &mut String, runs: &[ChainRun], without: &[Option<Vec<f64>>]) -> Result<()> {
    let pairs: Vec<(&ChainRun, &Vec<f64>)> = runs
        .iter()
        .zip(without)
        .filter_map(|(r, w)| Some((r, w.as_ref()?)))
        .collect();
    if pairs.is_empty() {
        return Ok(());
    }
    let labels: Vec<(String, String)> = pairs
        .iter()
        .map(|(r, _)| {
            if runs.len() == 1 {
                ("with consolidation".into(), "without consolidation".into())
            } else {
                (
                    format!("{} with consolidation", r.chain),
                    format!("{} without consolidation", r.chain),
                )
            }
        })
        .collect();
    let mut series = Vec::new();
    for ((r, w), (with_label, without_label)) in pairs.iter().zip(&labels) {
        series.push(Series {
            label: with_label,
            values: r.loops.iter().map(|l| r.cost_per_hour(l)).collect(),
        });
        series.push(Series {
            label: without_label,
            values: w.to_vec(),
        });
    }
    let _ = writeln!(
        h,
        "<figure id=\"consolidation-cost\">{}</figure>",
        lines(
            "Cost per hour with and without consolidation",
            "USD per hour",
            false,
            &series
        )?
    );
    Ok(())
}

/// The summary table of `--compare-consolidation`: one row per policy, with its difference from the
/// first.
fn policy_summary(h: &mut String, runs: &[ChainRun], hours_per_loop: f64) {
    h.push_str(
        "<h2>Summary</h2>\n<table class=\"summary\"><thead><tr><th>consolidation</th><th>loops</th>\
         <th>cost per hour at the end (USD)</th><th>total cost (USD)</th><th>consolidations</th>\
         <th>nodes consolidated</th><th>pods evicted</th><th>pods pending at the end</th>\
         <th>nodes at the end</th><th>cost per hour vs first</th><th>total cost vs first</th>\
         </tr></thead><tbody>\n",
    );
    for o in policy_outcomes(runs, hours_per_loop) {
        let (per_hour, total) = match &o.vs_first {
            Some(d) => (signed_usd(d.cost_per_hour), signed_usd(d.total_cost)),
            None => ("—".into(), "—".into()),
        };
        let _ = writeln!(
            h,
            "<tr data-chain=\"{c}\"><td>{c}</td><td class=\"n\">{}</td><td class=\"n\">{:.4}</td>\
             <td class=\"n\">{:.4}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{per_hour}</td>\
             <td class=\"n\">{total}</td></tr>",
            o.loops,
            o.cost_per_hour,
            o.total_cost,
            o.consolidations,
            o.nodes_consolidated,
            o.pods_evicted,
            o.pods_pending,
            o.nodes,
            c = escape(&o.consolidation),
        );
    }
    h.push_str("</tbody></table>\n");
}

/// One run's column (`kind`: what its label names, `expander` or `consolidation`): its nodes per group
/// and its decisions.
fn chain(h: &mut String, run: &ChainRun, kind: &str) -> Result<()> {
    let groups = run.groups();
    let series: Vec<Series> = groups
        .iter()
        .map(|g| Series {
            label: g,
            values: run.nodes_of(g),
        })
        .collect();
    let _ =
        write!(
        h,
        "<section data-chain=\"{c}\"><h3>{kind} {c}</h3>\n<figure class=\"nodes\">{}</figure>\n\
         <table class=\"decisions\"><thead><tr><th>loop</th><th>time</th><th>decision</th>\
         <th>what</th><th>reason</th></tr></thead><tbody>\n",
        lines(&format!("Nodes per group ({})", run.chain), "nodes", true, &series)?,
        c = escape(&run.chain)
    );
    let mut shown: BTreeSet<(String, String)> = BTreeSet::new();
    for l in &run.loops {
        shown = decisions(h, l, &shown);
    }
    h.push_str("</tbody></table></section>\n");
    Ok(())
}

/// One loop's rows, the descheduler's evictions among them; pods pending, nodes kept and proposals
/// declined for the same reason as in the loop before are not repeated. Returns what this loop showed of those.
fn decisions(
    h: &mut String,
    l: &LoopReport,
    before: &BTreeSet<(String, String)>,
) -> BTreeSet<(String, String)> {
    let mut row = |decision: &str, what: &str, reason: &str| {
        let _ = writeln!(
            h,
            "<tr><td class=\"n\">{}</td><td class=\"n\">+{}s</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            l.loop_number,
            l.time,
            escape(decision),
            escape(what),
            escape(reason)
        );
    };
    if let Some(u) = &l.unhealthy {
        row("unhealthy", "cluster", u);
    }
    for c in &l.cancel {
        row(&format!("cancel {}", c.count), &c.group, &c.reason);
    }
    for d in &l.delete_instances {
        row(
            "delete instance",
            &format!("{} ({})", d.instance, d.group),
            &d.reason,
        );
    }
    for u in &l.scale_up {
        let failed = if u.failed > 0 {
            format!(" ({} failed)", u.failed)
        } else {
            String::new()
        };
        let mut reason = format!("for {} pods: {}", u.pods.len(), u.pods.join(", "));
        if !l.expander.is_empty() {
            reason.push_str("; expander: ");
            reason.push_str(&l.expander.join("; "));
        }
        row(&format!("scale-up +{}{failed}", u.delta), &u.group, &reason);
    }
    for d in &l.scale_down {
        let mut reason = d.reason.clone();
        if !d.evicted.is_empty() {
            reason.push_str(&format!("; evicts {}", d.evicted.join(", ")));
        }
        row("scale-down", &format!("{} ({})", d.node, d.group), &reason);
    }
    for e in &l.evictions {
        let to = match &e.to {
            Some(to) => format!("from {} to {to}", e.node),
            None => format!("failed pod deleted from {}", e.node),
        };
        row(&format!("evict ({})", e.strategy), &e.pod, &to);
    }
    for c in &l.consolidations {
        let mut reason = c.reason.clone();
        if !c.pods_evicted.is_empty() {
            reason.push_str(&format!("; evicts {}", c.pods_evicted.join(", ")));
        }
        row(
            &format!("consolidate ({})", c.action),
            &c.nodes.join(", "),
            &reason,
        );
    }
    for n in &l.emptying {
        row(
            "empty (HighNodeUtilization)",
            n,
            "handed to scale-down: tainted, drained and deleted when its rules allow",
        );
    }
    let mut now = BTreeSet::new();
    for d in &l.descheduling_declined {
        let decision = format!("not evicted ({})", d.strategy);
        let key = (format!("{decision} {}", d.pod), d.reason.clone());
        if !before.contains(&key) {
            row(&decision, &d.pod, &format!("on {}: {}", d.node, d.reason));
        }
        now.insert(key);
    }
    // Nodes kept are folded by reason: one row per reason with their count, the list behind a click.
    let mut folds: BTreeMap<(&str, &str), Vec<&Reasoned>> = BTreeMap::new();
    for (decision, list) in [
        ("pending", &l.pending),
        ("kept", &l.unremovable),
        ("not consolidated", &l.consolidation_declined),
    ] {
        for r in list {
            let what = r.pod.as_deref().or(r.node.as_deref()).unwrap_or("");
            let key = (format!("{decision} {what}"), r.reason.clone());
            if !before.contains(&key) {
                if r.node.is_some() {
                    folds.entry((decision, r.kind)).or_default().push(r);
                } else {
                    row(decision, what, &r.reason);
                }
            }
            now.insert(key);
        }
    }
    for ((decision, kind), rs) in folds {
        fold(h, l, decision, kind, &rs);
    }
    now
}

/// One row for the nodes `rs` kept for the same reason (`kind`): their count, and each node with its
/// reason in full inside a `<details>` element, closed until clicked.
fn fold(h: &mut String, l: &LoopReport, decision: &str, kind: &str, rs: &[&Reasoned]) {
    let nodes = if rs.len() == 1 { "node" } else { "nodes" };
    let _ = write!(
        h,
        "<tr class=\"fold\"><td class=\"n\">{}</td><td class=\"n\">+{}s</td><td>{}</td><td>{} {nodes}</td>\
         <td><details><summary>{}: {} {nodes}</summary><ul>",
        l.loop_number,
        l.time,
        escape(decision),
        rs.len(),
        escape(kind),
        rs.len()
    );
    for r in rs {
        let _ = write!(
            h,
            "<li>{}: {}</li>",
            escape(r.node.as_deref().unwrap_or("")),
            escape(&r.reason)
        );
    }
    h.push_str("</ul></details></td></tr>\n");
}
