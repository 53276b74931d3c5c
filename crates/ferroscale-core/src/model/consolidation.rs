//! A group's consolidation policy (`consolidation: {policy, after}` in the memory cloud, the ASG tag
//! `ferroscale.io/consolidation`, `--consolidation` for groups that set none): whether its nodes may be
//! deleted or replaced by cheaper capacity, and how long a node must have been left alone first.

use std::fmt;
use std::time::Duration;

use super::duration::parse_go_duration;

/// Which of a group's nodes consolidation may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConsolidationPolicy {
    /// None: cluster-autoscaler's behaviour (scale-down only).
    #[default]
    Never,
    /// Nodes with nothing to evict are deleted.
    WhenEmpty,
    /// Also nodes whose pods fit on the other nodes, or on fewer or cheaper new ones.
    WhenEmptyOrUnderutilized,
}

impl ConsolidationPolicy {
    /// The policy's name, as tags, files and flags spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ConsolidationPolicy::Never => "Never",
            ConsolidationPolicy::WhenEmpty => "WhenEmpty",
            ConsolidationPolicy::WhenEmptyOrUnderutilized => "WhenEmptyOrUnderutilized",
        }
    }

    /// The policy named `text`.
    pub fn parse(text: &str) -> Result<ConsolidationPolicy, String> {
        [
            ConsolidationPolicy::Never,
            ConsolidationPolicy::WhenEmpty,
            ConsolidationPolicy::WhenEmptyOrUnderutilized,
        ]
        .into_iter()
        .find(|p| p.as_str() == text.trim())
        .ok_or_else(|| {
            format!(
                "{text:?}: not a consolidation policy (Never, WhenEmpty, WhenEmptyOrUnderutilized)"
            )
        })
    }
}

impl fmt::Display for ConsolidationPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A group's consolidation: the policy, and how long after its last pod change a node may be taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Consolidation {
    pub policy: ConsolidationPolicy,
    pub after: Duration,
}

impl Default for Consolidation {
    /// `Never`, after 10 minutes.
    fn default() -> Self {
        Consolidation {
            policy: ConsolidationPolicy::Never,
            after: Duration::from_secs(600),
        }
    }
}

impl Consolidation {
    /// `"WhenEmptyOrUnderutilized"` or `"WhenEmptyOrUnderutilized,after=10m"` (the tag's and the flag's
    /// format); `after` defaults to 10 minutes.
    pub fn parse(text: &str) -> Result<Consolidation, String> {
        let mut parts = text.split(',');
        let policy = ConsolidationPolicy::parse(parts.next().unwrap_or_default())?;
        let mut c = Consolidation {
            policy,
            ..Consolidation::default()
        };
        for part in parts {
            match part.trim().split_once('=') {
                Some(("after", d)) => {
                    c.after = parse_go_duration(d).map_err(|e| format!("after: {e}"))?
                }
                _ => {
                    return Err(format!(
                        "{part:?}: expected after=<duration>, e.g. after=10m"
                    ))
                }
            }
        }
        Ok(c)
    }

    /// Whether the group's nodes may be consolidated at all.
    pub fn enabled(self) -> bool {
        self.policy != ConsolidationPolicy::Never
    }
}

impl fmt::Display for Consolidation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},after={}s", self.policy, self.after.as_secs())
    }
}

/// A share as `--consolidation-min-savings` takes it: `"10%"` or `0.1`, within [0, 1].
pub fn parse_share(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    };
    match v {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("{text:?}: a share, 10% or 0.1, from 0 to 100%")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_format_reads_a_policy_and_an_optional_after() {
        let c = Consolidation::parse("WhenEmptyOrUnderutilized").unwrap();
        assert_eq!(c.policy, ConsolidationPolicy::WhenEmptyOrUnderutilized);
        assert_eq!(c.after, Duration::from_secs(600));
        let c = Consolidation::parse("WhenEmpty,after=1h").unwrap();
        assert_eq!(
            (c.policy, c.after),
            (ConsolidationPolicy::WhenEmpty, Duration::from_secs(3600))
        );
        assert_eq!(Consolidation::parse(&c.to_string()), Ok(c), "round trip");
        assert!(Consolidation::parse("Always").is_err());
        assert!(Consolidation::parse("WhenEmpty,before=1m").is_err());
        assert!(Consolidation::parse("WhenEmpty,after=ten").is_err());
        assert!(!Consolidation::default().enabled());
    }

    #[test]
    fn shares_read_as_percentages_or_fractions() {
        assert_eq!(parse_share("10%"), Ok(0.1));
        assert_eq!(parse_share("0.03"), Ok(0.03));
        assert!(parse_share("150%").is_err());
        assert!(parse_share("ten").is_err());
    }
}
