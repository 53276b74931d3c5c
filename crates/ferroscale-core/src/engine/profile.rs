//! The arguments of kube-scheduler's default profile that the scheduling simulation honours (read by
//! `run` and `simulate` from `--scheduler-config-file`): NodeAffinity's `addedAffinity` and
//! NodeResourcesFit's `ignoredResources` and `ignoredResourceGroups`. They are applied to each pod as the
//! loop reads it, so every filter, estimate and drain simulation sees the pod as the scheduler does.

use std::collections::BTreeSet;

use crate::model::workload::{Pod, Requirement};

/// A scheduler profile's plugin arguments; the default is kube-scheduler's default profile.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchedulerProfile {
    /// NodeAffinity's `addedAffinity`: a required node selector (OR of terms, each an AND of
    /// requirements) every pod must match besides its own (empty: none).
    pub added_affinity: Vec<Vec<Requirement>>,
    /// NodeResourcesFit's `ignoredResources`: extended resources the fit filter does not check.
    pub ignored_resources: BTreeSet<String>,
    /// NodeResourcesFit's `ignoredResourceGroups`: extended resources whose name before `/` is one of
    /// these are not checked.
    pub ignored_resource_groups: BTreeSet<String>,
}

impl SchedulerProfile {
    /// Whether pods are read as they are (the default profile): no copy of any pod is made.
    pub fn is_default(&self) -> bool {
        self.added_affinity.is_empty()
            && self.ignored_resources.is_empty()
            && self.ignored_resource_groups.is_empty()
    }

    /// Whether the fit filter leaves resource `name` unchecked: an extended resource (a qualified
    /// name outside `kubernetes.io/`) ignored by name or by its group.
    pub fn ignores(&self, name: &str) -> bool {
        let Some((group, _)) = name.split_once('/') else {
            return false;
        };
        if group == "kubernetes.io" || group.ends_with(".kubernetes.io") {
            return false;
        }
        self.ignored_resources.contains(name) || self.ignored_resource_groups.contains(group)
    }

    /// The pod as this profile's filters see it: its required node affinity ANDed with the added
    /// affinity (every pair of terms joined), its ignored resources not requested.
    pub fn apply(&self, pod: &Pod) -> Pod {
        let mut p = pod.clone();
        if !self.added_affinity.is_empty() {
            p.node_affinity = if pod.node_affinity.is_empty() {
                self.added_affinity.clone()
            } else {
                pod.node_affinity
                    .iter()
                    .flat_map(|own| {
                        self.added_affinity
                            .iter()
                            .map(move |added| own.iter().chain(added).cloned().collect::<Vec<_>>())
                    })
                    .collect()
            };
        }
        p.requests.extended.retain(|name, _| !self.ignores(name));
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::workload::SelectorOp;

    fn req(key: &str, v: &str) -> Requirement {
        Requirement {
            key: key.into(),
            op: SelectorOp::In,
            values: vec![v.into()],
        }
    }

    #[test]
    fn added_affinity_is_anded_with_the_pods_own() {
        let profile = SchedulerProfile {
            added_affinity: vec![vec![req("zone", "a")], vec![req("zone", "b")]],
            ..Default::default()
        };
        let pod = Pod {
            node_affinity: vec![vec![req("disk", "ssd")]],
            ..Default::default()
        };
        let p = profile.apply(&pod);
        assert_eq!(
            p.node_affinity,
            vec![
                vec![req("disk", "ssd"), req("zone", "a")],
                vec![req("disk", "ssd"), req("zone", "b")]
            ]
        );
        assert_eq!(
            profile.apply(&Pod::default()).node_affinity,
            profile.added_affinity
        );
    }

    #[test]
    fn only_extended_resources_are_ignored() {
        let profile = SchedulerProfile {
            ignored_resources: ["example.com/aaa".to_string()].into(),
            ignored_resource_groups: ["example.org".to_string(), "kubernetes.io".to_string()]
                .into(),
            ..Default::default()
        };
        assert!(profile.ignores("example.com/aaa"));
        assert!(!profile.ignores("example.com/bbb"));
        assert!(profile.ignores("example.org/x"));
        assert!(!profile.ignores("kubernetes.io/x"));
        assert!(!profile.ignores("memory"));
    }
}
