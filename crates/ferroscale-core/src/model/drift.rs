//! A group's drift policy (`drift: Replace` in the memory cloud, the ASG tag `ferroscale.io/drift`,
//! `--drift` for groups that set none): whether a node launched from another revision than its group's
//! current one is replaced. Off by default, as consolidation is: a cluster-autoscaler user sees no
//! replacement they did not ask for. (Expiry is opt-in by its lifetime, off unless one is set.)

use std::fmt;

/// What is done with a group's drifted nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DriftPolicy {
    /// Nothing: cluster-autoscaler's behaviour. `simulate` still says which nodes have drifted.
    #[default]
    Never,
    /// Replaced surge first, oldest first, within the group's disruption budget and window.
    Replace,
}

impl DriftPolicy {
    /// The policy's name, as tags, files and flags spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            DriftPolicy::Never => "Never",
            DriftPolicy::Replace => "Replace",
        }
    }

    /// The policy named `text`.
    pub fn parse(text: &str) -> Result<DriftPolicy, String> {
        [DriftPolicy::Never, DriftPolicy::Replace]
            .into_iter()
            .find(|p| p.as_str() == text.trim())
            .ok_or_else(|| format!("{text:?}: not a drift policy (Never, Replace)"))
    }

    /// Whether drifted nodes are replaced.
    pub fn enabled(self) -> bool {
        self == DriftPolicy::Replace
    }
}

impl fmt::Display for DriftPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_is_read_by_name_and_never_is_the_default() {
        assert_eq!(DriftPolicy::parse("Replace"), Ok(DriftPolicy::Replace));
        assert_eq!(DriftPolicy::parse(" Never "), Ok(DriftPolicy::Never));
        assert!(DriftPolicy::parse("replace").is_err(), "names are exact");
        assert!(DriftPolicy::parse("Always").is_err());
        assert!(!DriftPolicy::default().enabled());
        assert!(DriftPolicy::Replace.enabled());
    }
}
