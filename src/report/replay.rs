//! The report of `simulate --trace`: what really happened drawn beside each simulated run (cost per
//! hour, nodes, pending pods), and each run's answers in a table.

use std::fmt::Write;

use super::charts::{lines, Series};
use super::text::escape;
use super::{ChainRun, Extras};
use crate::error::Result;
use crate::simulate::Answers;

/// The label of the recorded line.
pub const REALLY: &str = "really (recorded)";

/// What a replay adds to the report: the recorded figures per loop and each run's answers.
#[derive(Debug, Clone, Default)]
pub struct ReplayExtras {
    pub cost: Vec<f64>,
    pub nodes: Vec<f64>,
    pub pending: Vec<f64>,
    /// Per run shown, in order: its label and answers.
    pub answers: Vec<(String, Answers)>,
}

/// Adds the recorded line to the pending-pods and cost charts' series.
pub fn add_real<'a>(pending: &mut Vec<Series<'a>>, cost: &mut Vec<Series<'a>>, extras: &Extras) {
    if let Some(r) = &extras.replay {
        pending.push(Series {
            label: REALLY,
            values: r.pending.clone(),
        });
        cost.push(Series {
            label: REALLY,
            values: r.cost.clone(),
        });
    }
}

/// The replay's section: each run's answers beside the recorded ones, and the node count of each run
/// and of the recording.
pub fn section(h: &mut String, runs: &[ChainRun], extras: &Extras) -> Result<()> {
    let Some(r) = &extras.replay else {
        return Ok(());
    };
    h.push_str(
        "<h2>Replay</h2>\n<table id=\"replay\"><thead><tr><th>run</th><th>cost (USD)</th>\
         <th>node-hours</th><th>pending pod-seconds</th><th>p50 / p99 to schedule (s)</th>\
         <th>evictions</th><th>nodes launched</th><th>nodes removed</th><th>error: nodes</th>\
         <th>error: USD/h</th></tr></thead><tbody>\n",
    );
    let row = |h: &mut String,
               label: &str,
               f: &crate::simulate::Figures,
               error: Option<&Answers>| {
        let p = |x: Option<i64>| x.map_or("-".to_string(), |x| x.to_string());
        let _ = writeln!(
            h,
            "<tr data-run=\"{l}\"><td>{l}</td><td class=\"n\">{:.2}</td><td class=\"n\">{:.1}</td>\
             <td class=\"n\">{:.0}</td><td class=\"n\">{} / {}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            f.cost_dollars,
            f.node_hours,
            f.pending_pod_seconds,
            p(f.p50_time_to_schedule_seconds),
            p(f.p99_time_to_schedule_seconds),
            f.evictions.map_or("-".to_string(), |e| e.to_string()),
            f.nodes_launched,
            f.nodes_removed,
            error.map_or("-".to_string(), |a| format!("{:.2}", a.error.node_count_mae)),
            error.map_or("-".to_string(), |a| format!("{:.3}", a.error.cost_per_hour_mae)),
            l = escape(label),
        );
    };
    for (label, answers) in &r.answers {
        row(h, label, &answers.summary, Some(answers));
    }
    if let Some((_, first)) = r.answers.first() {
        row(h, REALLY, &first.real, None);
    }
    h.push_str("</tbody></table>\n");
    let mut series: Vec<Series> = runs
        .iter()
        .map(|run| Series {
            label: &run.chain,
            values: run
                .loops
                .iter()
                .map(|l| l.nodes.values().sum::<usize>() as f64)
                .collect(),
        })
        .collect();
    series.push(Series {
        label: REALLY,
        values: r.nodes.clone(),
    });
    let _ = writeln!(
        h,
        "<figure id=\"replay-nodes\">{}</figure>",
        lines("Nodes, simulated and recorded", "nodes", true, &series)?
    );
    Ok(())
}
