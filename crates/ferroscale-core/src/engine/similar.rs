//! Which node groups are alike, for `--balance-similar-node-groups`: upstream's comparator
//! (`processors/nodegroupset`, `IsCloudProviderNodeInfoSimilar` with the AWS provider's ignored labels).
//! Two groups are similar when their template nodes, each with the DaemonSet pods it would start, have
//! the same capacity (memory within `--memory-difference-ratio`, everything else exactly), allocatable
//! and free resources within `--max-allocatable-difference-ratio` and `--max-free-difference-ratio`, and
//! the same labels but for the ignored ones. With `--balancing-label`, only those labels are compared.

use std::collections::BTreeMap;

use super::predicates::NodeInfo;
use crate::labels;
use crate::model::Resources;

/// How similar groups are told: upstream's flags.
#[derive(Debug, Clone, PartialEq)]
pub struct Balancing {
    /// `--balancing-label`: when any is given, two groups are similar when each of these labels is set
    /// and equal on both, and nothing else is compared.
    pub labels: Vec<String>,
    /// `--balancing-ignore-label`: labels left out, besides upstream's set (`labels::BALANCING_IGNORED`).
    pub ignore_labels: Vec<String>,
    /// `--memory-difference-ratio`: most memory capacity may differ, as a share of the larger.
    pub memory_difference_ratio: f64,
    /// `--max-allocatable-difference-ratio`: most each allocatable resource may differ.
    pub max_allocatable_difference_ratio: f64,
    /// `--max-free-difference-ratio`: most each free resource (allocatable less the DaemonSet pods'
    /// requests) may differ.
    pub max_free_difference_ratio: f64,
}

impl Balancing {
    /// Upstream's defaults; the flags take theirs from here.
    pub const DEFAULT: Balancing = Balancing {
        labels: Vec::new(),
        ignore_labels: Vec::new(),
        memory_difference_ratio: 0.015,
        max_allocatable_difference_ratio: 0.05,
        max_free_difference_ratio: 0.05,
    };
}

/// The resources a node declares, by Kubernetes name (core ones only when set).
fn declared(r: &Resources) -> BTreeMap<&str, i64> {
    let mut m = BTreeMap::new();
    for (name, v) in [
        ("cpu", r.cpu_milli),
        ("memory", r.memory),
        ("pods", r.pods),
        ("ephemeral-storage", r.ephemeral_storage),
    ] {
        if v != 0 {
            m.insert(name, v);
        }
    }
    m.extend(r.extended.iter().map(|(k, v)| (k.as_str(), *v)));
    m
}

/// What is left of each requested resource (upstream lists cpu, memory, pods and ephemeral storage
/// always, extended resources when requested).
fn free(info: &NodeInfo) -> BTreeMap<&str, i64> {
    let (a, r) = (&info.node.allocatable, &info.requested);
    let mut m = BTreeMap::from([
        ("cpu", a.cpu_milli - r.cpu_milli),
        ("memory", a.memory - r.memory),
        ("pods", a.pods - r.pods),
        (
            "ephemeral-storage",
            a.ephemeral_storage - r.ephemeral_storage,
        ),
    ]);
    for (k, v) in &r.extended {
        m.insert(k, a.extended.get(k).copied().unwrap_or(0) - v);
    }
    m
}

/// Whether two quantities differ by at most `ratio` of the larger.
fn within(a: i64, b: i64, ratio: f64) -> bool {
    let (larger, smaller) = (a.max(b) as f64, a.min(b) as f64);
    larger - smaller <= larger * ratio
}

/// Whether both maps have the same resources, each pair passing `close`.
fn alike(
    a: &BTreeMap<&str, i64>,
    b: &BTreeMap<&str, i64>,
    close: impl Fn(&str, i64, i64) -> bool,
) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|(k, x)| b.get(k).is_some_and(|y| close(k, *x, *y)))
}

/// Whether the groups of these template nodes (with their DaemonSet pods) are similar.
pub fn similar(a: &NodeInfo, b: &NodeInfo, s: &Balancing) -> bool {
    let (la, lb) = (&a.node.labels, &b.node.labels);
    if !s.labels.is_empty() {
        return s
            .labels
            .iter()
            .all(|k| la.get(k).is_some_and(|v| lb.get(k) == Some(v)));
    }
    let capacity = alike(
        &declared(&a.node.capacity),
        &declared(&b.node.capacity),
        |k, x, y| {
            if k == "memory" {
                within(x, y, s.memory_difference_ratio)
            } else {
                x == y
            }
        },
    );
    let ratio = |r: f64| move |_: &str, x: i64, y: i64| within(x, y, r);
    let kept = |l: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        l.iter()
            .filter(|(k, _)| {
                !labels::BALANCING_IGNORED.contains(&k.as_str()) && !s.ignore_labels.contains(k)
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    capacity
        && alike(
            &declared(&a.node.allocatable),
            &declared(&b.node.allocatable),
            ratio(s.max_allocatable_difference_ratio),
        )
        && alike(&free(a), &free(b), ratio(s.max_free_difference_ratio))
        && kept(la) == kept(lb)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{node, resources, GIB};

    /// A node of `cpu` millicores, `memory` and 110 pod slots (capacity and allocatable), labelled.
    fn info(cpu: i64, memory: i64, labels: &[(&str, &str)]) -> NodeInfo {
        node("")
            .labels(labels)
            .sized(resources(cpu, memory, 110))
            .info()
    }

    #[test]
    fn zone_and_group_labels_are_ignored_others_compared() {
        let s = Balancing::DEFAULT;
        let a = info(2000, 8 * GIB, &[(labels::ZONE, "a"), ("lifecycle", "spot")]);
        let b = info(
            2000,
            8 * GIB,
            &[(labels::ZONE, "b"), (labels::NODE_GROUP, "b")],
        );
        assert!(similar(&a, &b, &s));
        let c = info(2000, 8 * GIB, &[("team", "x")]);
        assert!(!similar(&a, &c, &s));
        let s = Balancing {
            ignore_labels: vec!["team".into()],
            ..Balancing::DEFAULT
        };
        assert!(similar(&a, &c, &s), "--balancing-ignore-label");
    }

    #[test]
    fn capacity_must_match_memory_within_its_ratio() {
        let s = Balancing::DEFAULT;
        let a = info(2000, 1000 * GIB, &[]);
        assert!(similar(&a, &info(2000, 990 * GIB, &[]), &s), "1% apart");
        assert!(!similar(&a, &info(2000, 970 * GIB, &[]), &s), "3% apart");
        assert!(!similar(&a, &info(2010, 1000 * GIB, &[]), &s), "cpu exact");
    }

    #[test]
    fn balancing_labels_replace_every_other_check() {
        let s = Balancing {
            labels: vec!["pool".into()],
            ..Balancing::DEFAULT
        };
        let a = info(2000, 8 * GIB, &[("pool", "web")]);
        assert!(similar(&a, &info(8000, 32 * GIB, &[("pool", "web")]), &s));
        assert!(!similar(&a, &info(2000, 8 * GIB, &[("pool", "db")]), &s));
        assert!(!similar(&a, &info(2000, 8 * GIB, &[]), &s), "must be set");
    }

    #[test]
    fn free_resources_count_daemonset_requests() {
        let s = Balancing::DEFAULT;
        let a = info(2000, 8 * GIB, &[]);
        let mut b = info(2000, 8 * GIB, &[]);
        b.requested.cpu_milli = 500;
        assert!(!similar(&a, &b, &s), "1500m free against 2000m");
    }
}
