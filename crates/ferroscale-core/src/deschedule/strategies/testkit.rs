//! What the strategies' tests share: the descheduler's test nodes and pods (`test.BuildTestNode`,
//! `test.BuildTestPod`), a run of one strategy on them, and its `nodeFit` as the scheduler's filters
//! answer it.

use crate::deschedule::args::{Expression, Namespaces, Selector};
use crate::deschedule::fixtures::{DeschedulerPod, Fixture};
use crate::deschedule::{Evictor, EvictorArgs, PluginArgs, Proposal, View};
use crate::fixtures::{node, pod, resources, NodeBuilder, PodBuilder};
use crate::model::workload::{Node, Pod, Toleration, TolerationValue};
use crate::model::{Taint, TaintEffect};

use super::fit::Fit;

/// `system-cluster-critical`'s priority (the descheduler's `utils.SystemCriticalPriority`).
pub const SYSTEM_CRITICAL: i32 = 2_000_000_000;

/// A ready node with `cpu_milli`, `memory` bytes and `pods` slots allocatable, no labels.
pub fn test_node(name: &str, cpu_milli: i64, memory: i64, pods: i64) -> NodeBuilder {
    node(name)
        .allocatable(resources(cpu_milli, memory, pods))
        .ready()
}

/// A pod of namespace `default` requesting 100m cpu, bound to `node` (`""`: unbound).
pub fn test_pod(name: &str, node: &str) -> PodBuilder {
    let p = pod("default", name).requests(resources(100, 0, 1));
    if node.is_empty() {
        p
    } else {
        p.on(node)
    }
}

/// [`test_pod`] owned by a pod (the descheduler's `SetNormalOwnerRef`).
pub fn owned_pod(name: &str, node: &str) -> PodBuilder {
    test_pod(name, node).owner("Pod", "")
}

pub fn taint(key: &str, value: &str, effect: TaintEffect) -> Taint {
    Taint {
        key: key.into(),
        value: value.into(),
        effect,
    }
}

/// `operator: Equal` (none written) on `key=value` for `effect`.
pub fn toleration(key: &str, value: &str, effect: TaintEffect) -> Toleration {
    Toleration {
        key: key.into(),
        value: Some(TolerationValue::Equal(value.into())),
        effect: Some(effect),
    }
}

/// The strategy's proposals on these nodes and pods with these evictor arguments.
pub fn run(
    args: PluginArgs,
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    evictor: EvictorArgs,
) -> Vec<Proposal> {
    let f = Fixture::new(nodes, pods);
    let cluster = f.cluster();
    let view = View::new(&cluster);
    let e = Evictor::new(&evictor, &view);
    super::propose(&args, &view, &e)
}

/// The proposals' pod names, in order.
pub fn names(p: &[Proposal]) -> Vec<String> {
    p.iter().map(|p| p.pod.name.clone()).collect()
}

/// The proposals' pod names that pass the evictor's `nodeFit` (fit some other node), the scheduler's
/// filters answering on the cluster as it is.
pub fn node_fit(nodes: Vec<Node>, pods: Vec<Pod>, proposals: &[Proposal]) -> Vec<String> {
    let f = Fixture::new(nodes, pods);
    let cluster = f.cluster();
    let view = View::new(&cluster);
    let fit = Fit::new(&view);
    proposals
        .iter()
        .filter(|p| fit.fits_any_other(&p.pod))
        .map(|p| p.pod.name.clone())
        .collect()
}

/// How many of `proposals` a limit of `limit` evictions lets through (taken in order).
pub fn limited(proposals: &[Proposal], limit: usize) -> usize {
    proposals.len().min(limit)
}

/// The selectors the descheduler's `validation_test.go` files use: a valid one
/// (`matchLabels: {role.kubernetes.io/node: ""}`) and an invalid one (an `In` expression on key `""`
/// without values).
pub fn validation_selectors() -> (Selector, Selector) {
    let valid = Selector {
        match_labels: [("role.kubernetes.io/node".to_string(), String::new())].into(),
        ..Default::default()
    };
    let invalid = Selector {
        match_expressions: vec![Expression {
            key: String::new(),
            operator: "In".into(),
            values: vec![],
        }],
        ..Default::default()
    };
    (valid, invalid)
}

/// `namespaces: {include: [default]}`, and with `exclude: [kube-system]` too when `both`.
pub fn validation_namespaces(both: bool) -> Namespaces {
    Namespaces {
        include: vec!["default".into()],
        exclude: if both {
            vec!["kube-system".into()]
        } else {
            vec![]
        },
    }
}
