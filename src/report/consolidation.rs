//! `simulate --compare-consolidation "off;WhenEmptyOrUnderutilized:10%"`: the policies compared, each
//! run's outcome in dollars and disruption ([`PolicyOutcome`]), and its line of text.

use serde::Serialize;

use super::{usd, ChainRun};
use crate::error::{Error, Result};
use crate::model::consolidation::{parse_share, ConsolidationPolicy};

/// One policy of `--compare-consolidation`: applied to every group, with its own minimum saving or
/// `--consolidation-min-savings`.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySpec {
    /// As given, trimmed (`off`, `WhenEmptyOrUnderutilized:10%`): the run's label.
    pub label: String,
    pub policy: ConsolidationPolicy,
    /// The share after `:`, if any.
    pub min_savings: Option<f64>,
}

/// The policies of `--compare-consolidation`, `;`-separated, each `off` | `<Policy>[:<min-savings>]`;
/// errors name the flag and the part at fault.
pub fn parse_policies(text: &str) -> Result<Vec<PolicySpec>> {
    let bad = |i: usize, part: &str, why: String| {
        Error::config(format!(
            "--compare-consolidation: policy {} ({part:?}): {why}",
            i + 1
        ))
    };
    text.split(';')
        .enumerate()
        .map(|(i, part)| {
            let label = part.trim();
            if label.is_empty() {
                return Err(bad(
                    i,
                    label,
                    "empty; expected off or <Policy>[:<min-savings>], e.g. WhenEmptyOrUnderutilized:10%"
                        .into(),
                ));
            }
            if label.eq_ignore_ascii_case("off") {
                return Ok(PolicySpec {
                    label: label.into(),
                    policy: ConsolidationPolicy::Never,
                    min_savings: None,
                });
            }
            let (name, share) = match label.split_once(':') {
                Some((n, s)) => (n, Some(s)),
                None => (label, None),
            };
            let policy = ConsolidationPolicy::parse(name).map_err(|e| bad(i, label, e))?;
            let min_savings = share
                .map(|s| parse_share(s).map_err(|e| bad(i, label, format!("minimum saving {e}"))))
                .transpose()?;
            Ok(PolicySpec {
                label: label.into(),
                policy,
                min_savings,
            })
        })
        .collect()
}

/// What a policy's run came to, and how it differs from the first policy compared.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PolicyOutcome {
    pub consolidation: String,
    pub loops: usize,
    /// The nodes after the last loop times their group's price (USD an hour).
    pub cost_per_hour: f64,
    /// Each loop's nodes priced over the time to the next loop, summed (USD).
    pub total_cost: f64,
    /// Consolidation plans carried out.
    pub consolidations: usize,
    /// Nodes those plans took.
    pub nodes_consolidated: usize,
    /// Pods those plans evicted.
    pub pods_evicted: usize,
    /// Pods still pending after the last loop.
    pub pods_pending: usize,
    /// Nodes after the last loop.
    pub nodes: usize,
    /// This outcome less the first policy's (absent for the first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_first: Option<PolicyDifference>,
}

/// One policy's outcome less another's.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PolicyDifference {
    pub consolidation: String,
    pub cost_per_hour: f64,
    pub total_cost: f64,
    pub pods_evicted: i64,
    pub pods_pending: i64,
}

impl ChainRun {
    /// The run's cost over its loops: each loop's nodes priced for `hours_per_loop`.
    pub fn total_cost(&self, hours_per_loop: f64) -> f64 {
        usd(self
            .loops
            .iter()
            .map(|l| self.cost_per_hour(l) * hours_per_loop)
            .sum())
    }

    /// The run as a consolidation policy's outcome.
    pub fn policy_outcome(&self, hours_per_loop: f64) -> PolicyOutcome {
        let plans = || self.loops.iter().flat_map(|l| &l.consolidations);
        let last = self.loops.last();
        PolicyOutcome {
            consolidation: self.chain.clone(),
            loops: self.loops.len(),
            cost_per_hour: last.map_or(0.0, |l| self.cost_per_hour(l)),
            total_cost: self.total_cost(hours_per_loop),
            consolidations: plans().count(),
            nodes_consolidated: plans().map(|p| p.nodes.len()).sum(),
            pods_evicted: plans().map(|p| p.pods_evicted.len()).sum(),
            pods_pending: last.map_or(0, |l| l.pending.len()),
            nodes: last.map_or(0, |l| l.nodes.values().sum()),
            vs_first: None,
        }
    }
}

/// The outcomes of `runs` (one per policy), each after the first with its difference from the first.
pub fn policy_outcomes(runs: &[ChainRun], hours_per_loop: f64) -> Vec<PolicyOutcome> {
    let mut all: Vec<PolicyOutcome> = runs
        .iter()
        .map(|r| r.policy_outcome(hours_per_loop))
        .collect();
    if let Some(first) = all.first().cloned() {
        for o in all.iter_mut().skip(1) {
            o.vs_first = Some(PolicyDifference {
                consolidation: first.consolidation.clone(),
                cost_per_hour: usd(o.cost_per_hour - first.cost_per_hour),
                total_cost: usd(o.total_cost - first.total_cost),
                pods_evicted: o.pods_evicted as i64 - first.pods_evicted as i64,
                pods_pending: o.pods_pending as i64 - first.pods_pending as i64,
            });
        }
    }
    all
}

/// A signed amount of dollars: `+$0.0042`, `-$1.0800`.
fn dollars(x: f64) -> String {
    let sign = if x < 0.0 { '-' } else { '+' };
    format!("{sign}${:.4}", x.abs())
}

impl std::fmt::Display for PolicyOutcome {
    /// A person's line: `WhenEmpty:10%: $1.2240/h at the end, $2.0400 over 10 loops, 1 consolidations
    /// (3 nodes, 3 pods evicted), 0 pods pending; vs off: -$1.0800/h, +$0.0042 in all`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: ${:.4}/h at the end, ${:.4} over {} loops, {} consolidations ({} nodes, {} pods evicted), \
             {} pods pending",
            self.consolidation,
            self.cost_per_hour,
            self.total_cost,
            self.loops,
            self.consolidations,
            self.nodes_consolidated,
            self.pods_evicted,
            self.pods_pending
        )?;
        if let Some(d) = &self.vs_first {
            write!(
                f,
                "; vs {}: {}/h, {} in all",
                d.consolidation,
                dollars(d.cost_per_hour),
                dollars(d.total_cost)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_read_off_a_name_and_an_optional_share() {
        let p = parse_policies(" off ;WhenEmptyOrUnderutilized:3%;WhenEmpty").unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(
            (p[0].label.as_str(), p[0].policy),
            ("off", ConsolidationPolicy::Never)
        );
        assert_eq!(p[1].policy, ConsolidationPolicy::WhenEmptyOrUnderutilized);
        assert_eq!(p[1].min_savings, Some(0.03));
        assert_eq!(
            (p[2].policy, p[2].min_savings),
            (ConsolidationPolicy::WhenEmpty, None)
        );
        for (text, words) in [
            ("off;;WhenEmpty", ["policy 2", "empty"]),
            ("off;Always", ["policy 2", "\"Always\""]),
            ("WhenEmpty:lots", ["policy 1", "minimum saving"]),
            ("WhenEmpty:150%", ["policy 1", "\"WhenEmpty:150%\""]),
        ] {
            let e = parse_policies(text).unwrap_err().to_string();
            for w in words {
                assert!(e.contains(w), "{text}: {e}");
            }
            assert!(e.starts_with("--compare-consolidation"), "{e}");
        }
    }
}
