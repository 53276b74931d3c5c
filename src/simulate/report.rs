//! What `simulate` prints: one JSON object per loop on stdout, a one-line summary on stderr.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::engine::{ConsolidationAction, ConsolidationPlan};

/// One pod or node with why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Reasoned {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub reason: String,
    /// The reason's stable name, without its figures (upstream's `UnremovableReason`, consolidation's
    /// `Declined::label`): what the HTML report folds kept nodes by. Not in the JSON.
    #[serde(skip)]
    pub kind: &'static str,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScaleUpReport {
    pub group: String,
    pub delta: i32,
    /// Nodes the cloud could not launch (the group is backed off).
    #[serde(skip_serializing_if = "is_zero")]
    pub failed: i32,
    pub pods: Vec<String>,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScaleDownReport {
    pub node: String,
    pub group: String,
    pub reason: String,
    pub evicted: Vec<String>,
    /// DaemonSet pods evicted too (`--daemonset-eviction-for-occupied-nodes`, `-empty-nodes`, or their
    /// pod's `cluster-autoscaler.kubernetes.io/enable-ds-eviction`), after the others.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub daemon_sets: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeleteReport {
    pub group: String,
    pub instance: String,
    pub reason: String,
}

/// Capacity given up in one group.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CancelReport {
    pub group: String,
    pub count: i32,
    pub reason: String,
}

/// What one loop decided, as printed on stdout (one JSON object per loop).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LoopReport {
    #[serde(rename = "loop")]
    pub loop_number: u32,
    /// Seconds of virtual time since the simulation started.
    pub time: i64,
    pub scale_up: Vec<ScaleUpReport>,
    pub scale_down: Vec<ScaleDownReport>,
    /// Instances deleted because they failed or never registered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub delete_instances: Vec<DeleteReport>,
    /// Capacity given up because its launch failed or it was not delivered in time.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cancel: Vec<CancelReport>,
    /// Set when too many nodes are unready: the loop decided nothing else.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unhealthy: Option<String>,
    pub pending: Vec<Reasoned>,
    pub unremovable: Vec<Reasoned>,
    /// Nodes after the loop's decisions, by group (`-` for nodes of no group).
    pub nodes: BTreeMap<String, usize>,
    /// Those nodes' price an hour, each priced as it is (its instance's type, zone, on-demand or spot,
    /// else its group's price; a node of no group or unpriced counts 0): what the report's cost per
    /// hour adds up. Not printed: a loop's line says what was decided.
    #[serde(skip)]
    pub cost_per_hour: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub expander: Vec<String>,
    /// Nodes taken out of service on an event (`--events`), with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disruptions: Vec<DisruptionReport>,
    /// The scale-ups that replace them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replacements: Vec<ReplacementReport>,
    /// Drifted or expired nodes this loop: those being replaced with why, and those kept with why
    /// (drift replacement not enabled, do-not-disrupt).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub due: Vec<Reasoned>,
    /// The descheduler's evictions (`--deschedule-policy`), carried out after the decisions above.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evictions: Vec<EvictionReport>,
    /// Evictions (by any method) the simulated eviction API refused, as the live one would: a
    /// PodDisruptionBudget allowing no more disruptions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evictions_refused: Vec<RefusedReport>,
    /// The descheduler's proposals its plan declined, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub descheduling_declined: Vec<DeclinedReport>,
    /// The descheduler's strategies that did not run, with why (`metricsUtilization` without a
    /// node's metrics).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub descheduling_skipped: Vec<SkippedReport>,
    /// Consolidations decided this loop (a replacement's new nodes are also in `scaleUp` and
    /// `replacements`; its old nodes show as `disruptions` of reason `consolidation` once they have joined).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub consolidations: Vec<ConsolidationReport>,
    /// Nodes consolidation would have taken and did not, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub consolidation_declined: Vec<Reasoned>,
    /// Why consolidation looked for no new plan this loop (only when some group has it on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consolidation_waits: Option<String>,
    /// The nodes the descheduler emptied (`HighNodeUtilization`), handed to scale-down: removed by a
    /// later loop (reason `descheduled`) when its rules allow; their pods are evicted by the drain.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub emptying: Vec<String>,
}

/// New nodes of one group a consolidation asks for.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct IntoReport {
    pub group: String,
    pub count: i32,
}

/// One consolidation: the nodes it takes, the new nodes it asks for (none for a deletion), the dollars
/// an hour it saves and the pods it evicts.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConsolidationReport {
    /// `delete` (the pods fit on the other nodes) or `replace` (new nodes first).
    pub action: String,
    pub nodes: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub into: Vec<IntoReport>,
    /// The taken nodes' price (USD an hour).
    pub price_per_hour: f64,
    /// Their price less the new nodes' (USD an hour).
    pub savings_per_hour: f64,
    /// Pods evicted from `nodes` (`namespace/name`).
    pub pods_evicted: Vec<String>,
    pub reason: String,
}

/// A plan said in a sentence: what it does and what it saves.
struct PlanReason<'a>(&'a ConsolidationPlan);

impl std::fmt::Display for PlanReason<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = self.0;
        let share = if p.price_per_hour > 0.0 {
            p.savings_per_hour / p.price_per_hour * 100.0
        } else {
            0.0
        };
        match p.action {
            ConsolidationAction::Delete => f.write_str("their pods fit on the other nodes")?,
            ConsolidationAction::Replace => {
                let into: Vec<String> = p
                    .into
                    .iter()
                    .map(|n| format!("{} {}", n.count, n.group))
                    .collect();
                write!(f, "cheaper on {}", into.join(" and "))?;
            }
        }
        write!(
            f,
            ": saves ${:.4}/h of ${:.4}/h ({share:.1}%), {} pods evicted",
            p.savings_per_hour,
            p.price_per_hour,
            p.pods_evicted.len()
        )
    }
}

impl ConsolidationReport {
    pub(super) fn of(p: &ConsolidationPlan) -> Self {
        ConsolidationReport {
            action: p.action.to_string(),
            nodes: p.nodes.clone(),
            into: p
                .into
                .iter()
                .map(|n| IntoReport {
                    group: n.group.clone(),
                    count: n.count,
                })
                .collect(),
            price_per_hour: usd(p.price_per_hour),
            savings_per_hour: usd(p.savings_per_hour),
            pods_evicted: p.pods_evicted.clone(),
            reason: PlanReason(p).to_string(),
        }
    }
}

/// USD rounded to a millionth, so sums print as people expect (1.08, not 1.0799999999999998).
fn usd(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// A pod the descheduler evicted: from which node, by which strategy, to where the scheduling
/// simulation places it (none for a failed pod, which is deleted).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EvictionReport {
    pub pod: String,
    pub node: String,
    pub strategy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

/// An eviction the simulated eviction API refused: the pod, its node, why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RefusedReport {
    pub pod: String,
    pub node: String,
    pub reason: String,
}

/// A pod a strategy proposed and the plan did not evict, with why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DeclinedReport {
    pub pod: String,
    pub node: String,
    pub strategy: String,
    pub reason: String,
    /// For a pod no node takes: each refusal with its scheduler filter and on how many nodes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<BlockedReport>,
}

/// One refusal of the nodes a declined pod could have gone to.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BlockedReport {
    /// The scheduler filter (`VolumeZone`, `TaintToleration`, …).
    pub filter: &'static str,
    pub reason: String,
    pub nodes: u32,
}

/// A strategy that did not run this cycle, with why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SkippedReport {
    pub profile: String,
    pub strategy: String,
    pub reason: String,
}

/// Adds one descheduling cycle to its loop's report: the evictions carried out, the proposals declined,
/// the nodes emptied.
pub fn add_descheduling(
    report: &mut LoopReport,
    plan: &crate::deschedule::Plan,
    cycle: &crate::descheduler::Cycle,
) {
    // The evictions the simulated API accepted (a budget's refusal is in `evictions_refused`).
    let evicted: std::collections::HashSet<&str> =
        cycle.evicted.iter().map(String::as_str).collect();
    let done = plan
        .evictions
        .iter()
        .filter(|e| evicted.contains(e.pod.key().as_str()));
    report.evictions.extend(done.map(|e| EvictionReport {
        pod: e.pod.key(),
        node: e.node.clone(),
        strategy: e.strategy.to_string(),
        to: Some(e.to.clone()).filter(|t| !t.is_empty()),
    }));
    report
        .descheduling_declined
        .extend(plan.declined.iter().map(|d| {
            DeclinedReport {
                pod: d.pod.key(),
                node: d.node.clone(),
                strategy: d.strategy.to_string(),
                reason: d.why.to_string(),
                blocked: match &d.why {
                    crate::deschedule::Why::NoPlace(b) => {
                        b.0.iter()
                            .map(|(u, n)| BlockedReport {
                                filter: u.filter(),
                                reason: u.to_string(),
                                nodes: *n,
                            })
                            .collect()
                    }
                    _ => Vec::new(),
                },
            }
        }));
    report.emptying.extend(plan.emptied.iter().cloned());
    report
        .descheduling_skipped
        .extend(plan.skipped.iter().map(|s| SkippedReport {
            profile: s.profile.clone(),
            strategy: s.strategy.to_string(),
            reason: s.why.to_string(),
        }));
}

/// A node taken out of service.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DisruptionReport {
    pub node: String,
    pub group: String,
    /// `spot-interruption`, `rebalance`, `scheduled-change`, `instance-stopping`, `drift`, `expired`,
    /// `consolidation`, `descheduled`.
    pub reason: String,
}

/// A scale-up that replaces disrupted nodes.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ReplacementReport {
    pub group: String,
    pub delta: i32,
    /// The disrupted nodes whose pods it takes.
    #[serde(rename = "for")]
    pub for_nodes: Vec<String>,
}

/// A person's summary of one loop, for stderr.
pub fn summary(r: &LoopReport) -> String {
    let ups: Vec<String> = r
        .scale_up
        .iter()
        .map(|u| {
            let failed = if u.failed > 0 {
                format!(" ({} failed)", u.failed)
            } else {
                String::new()
            };
            format!("+{} {}{failed} for {} pods", u.delta, u.group, u.pods.len())
        })
        .collect();
    let downs: Vec<String> = r
        .scale_down
        .iter()
        .map(|s| format!("-{}", s.node))
        .collect();
    let mut line = format!(
        "loop {} at +{}s: scale-up [{}], scale-down [{}], {} pods pending, {} nodes",
        r.loop_number,
        r.time,
        ups.join(", "),
        downs.join(", "),
        r.pending.len(),
        r.nodes.values().sum::<usize>()
    );
    for c in &r.consolidations {
        line.push_str(&format!(
            ", consolidate {} [{}] saving ${:.4}/h",
            c.action,
            c.nodes.join(", "),
            c.savings_per_hour
        ));
    }
    if !r.evictions.is_empty() || !r.descheduling_declined.is_empty() {
        let moves: Vec<String> = r
            .evictions
            .iter()
            .map(|e| match &e.to {
                Some(to) => format!("{} {}->{to}", e.pod, e.node),
                None => format!("{} (deleted)", e.pod),
            })
            .collect();
        line.push_str(&format!(
            ", descheduled [{}], {} declined",
            moves.join(", "),
            r.descheduling_declined.len()
        ));
    }
    if !r.emptying.is_empty() {
        line.push_str(&format!(", emptying [{}]", r.emptying.join(", ")));
    }
    line
}
