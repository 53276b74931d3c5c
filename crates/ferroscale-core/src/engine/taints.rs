//! Which taints a node has only for a while, as upstream's taint configuration reads them: start-up taints
//! (the `startup-taint.`/`ignore-taint.` prefixes and the keys of `--startup-taint` and its older name
//! `--ignore-taint`) mean the node is still starting; status taints (the `status-taint.` prefix and the
//! keys of `--status-taint`) report a state. Both are left out of templates: a new node loses them, and
//! the pods waiting for it do not tolerate them.

use crate::labels;
use crate::model::Taint;

/// The taint keys given by flags, besides the prefixes every cluster has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaintConfig {
    /// `--startup-taint` and `--ignore-taint`.
    pub startup: Vec<String>,
    /// `--status-taint`.
    pub status: Vec<String>,
}

impl TaintConfig {
    /// Whether `t` means its node is still starting.
    pub fn is_startup(&self, t: &Taint) -> bool {
        self.is_startup_key(&t.key)
    }

    /// [`Self::is_startup`] by the taint's key alone (a start-up taint is one whatever its effect).
    pub fn is_startup_key(&self, key: &str) -> bool {
        labels::STARTUP_TAINT_PREFIXES
            .iter()
            .any(|p| key.starts_with(p))
            || self.startup.iter().any(|k| k == key)
    }

    /// Whether `t` reports a status.
    pub fn is_status(&self, t: &Taint) -> bool {
        t.key.starts_with(labels::STATUS_TAINT_PREFIX) || self.status.contains(&t.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::no_schedule;

    #[test]
    fn prefixes_always_count_and_flags_add_keys() {
        let none = TaintConfig::default();
        let cni = no_schedule("startup-taint.cluster-autoscaler.kubernetes.io/cni", "");
        let agent = no_schedule("example.com/agent-not-ready", "");
        let gpu = no_schedule("example.com/gpu-health", "");
        assert!(none.is_startup(&cni));
        assert!(!none.is_startup(&agent));
        assert!(!none.is_status(&gpu));
        let flags = TaintConfig {
            startup: vec!["example.com/agent-not-ready".into()],
            status: vec!["example.com/gpu-health".into()],
        };
        assert!(flags.is_startup(&agent));
        assert!(flags.is_status(&gpu));
        assert!(!flags.is_startup(&gpu));
    }
}
