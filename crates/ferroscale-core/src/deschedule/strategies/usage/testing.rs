//! What the strategies' tests build, in the terms of the descheduler's test helpers: nodes with cpu
//! (millicores), memory (bytes) and pod slots; pods requesting cpu and memory in `default`; the
//! owners, priorities and marks its cases give them; and one strategy run with an evictor's args.

use crate::deschedule::fixtures::{DeschedulerPod, Fixture};
use crate::deschedule::PluginArgs;
use crate::deschedule::{strategies, Evictor, EvictorArgs, View};
use crate::fixtures::{node, pod, resources, NodeBuilder, PodBuilder};
use crate::model::workload::{Node, Pod, Requirement, SelectorOp, Toleration, TolerationValue};
use crate::model::{Taint, TaintEffect};

/// The descheduler's `SystemCriticalPriority`.
pub const SYSTEM_CRITICAL: i32 = 2_000_000_000;
/// The descheduler's tests' `lowPriority` and `highPriority`.
pub const LOW: i32 = 0;
pub const HIGH: i32 = 10_000;
/// The descheduler's tests' extended resource.
pub const EXT: &str = "example.com/foo";

/// `BuildTestNode(name, cpu, memory, pods)`.
pub fn tnode(name: &str, cpu_milli: i64, memory: i64, pods: i64) -> NodeBuilder {
    let r = resources(cpu_milli, memory, pods);
    node(name).allocatable(r.clone()).capacity(r).ready()
}

/// `BuildTestPod(name, cpu, memory, node)` in namespace `default`.
pub fn tpod(name: &str, cpu_milli: i64, memory: i64, on: &str) -> PodBuilder {
    pod("default", name)
        .requests(resources(cpu_milli, memory, 1))
        .on(on)
}

/// Helpers on pods the descheduler's tests use.
pub trait TestPod: Sized {
    /// `SetRSOwnerRef`: owned by ReplicaSet `replicaset-1`.
    fn rs(self) -> Self;
    /// `SetDSOwnerRef`.
    fn ds(self) -> Self;
    /// `SetNormalOwnerRef`: owned by a `Pod` without a name.
    fn normal(self) -> Self;
    /// `SetHostPathEmptyDirVolumeSource`: a local volume.
    fn local_storage(self) -> Self;
    /// In `kube-system` with the system-critical priority.
    fn critical(self) -> Self;
    fn namespace(self, ns: &str) -> Self;
    fn selector(self, key: &str, value: &str) -> Self;
    /// A required node affinity of one term.
    fn affinity(self, term: Vec<Requirement>) -> Self;
    fn tolerate(self, key: &str, value: &str, effect: Option<TaintEffect>) -> Self;
    /// An extended resource request.
    fn ext(self, name: &str, n: i64) -> Self;
    /// `MakeBestEffortPod`: no requests.
    fn best_effort(self) -> Self;
}

impl TestPod for PodBuilder {
    fn rs(self) -> Self {
        self.owner("ReplicaSet", "replicaset-1")
    }
    fn ds(self) -> Self {
        self.owner("DaemonSet", "")
    }
    fn normal(self) -> Self {
        self.owner("Pod", "")
    }
    fn local_storage(self) -> Self {
        self.with(|p| p.meta.local_volumes.push("sample".into()))
    }
    fn critical(self) -> Self {
        self.namespace("kube-system").priority(SYSTEM_CRITICAL)
    }
    fn namespace(self, ns: &str) -> Self {
        let ns = ns.to_string();
        self.with(|p| p.namespace = ns.as_str().into())
    }
    fn selector(self, key: &str, value: &str) -> Self {
        let (k, v) = (key.to_string(), value.to_string());
        self.with(|p| {
            p.node_selector.insert(k, v);
        })
    }
    fn affinity(self, term: Vec<Requirement>) -> Self {
        self.with(|p| p.node_affinity.push(term))
    }
    fn tolerate(self, key: &str, value: &str, effect: Option<TaintEffect>) -> Self {
        let t = Toleration {
            key: key.into(),
            value: Some(TolerationValue::Equal(value.into())),
            effect,
        };
        self.with(|p| p.tolerations.push(t))
    }
    fn ext(self, name: &str, n: i64) -> Self {
        let name = name.to_string();
        self.with(|p| {
            p.requests.extended.insert(name, n);
        })
    }
    fn best_effort(self) -> Self {
        self.with(|p| {
            p.requests.cpu_milli = 0;
            p.requests.memory = 0;
        })
    }
}

/// A node selector requirement.
pub fn req(key: &str, op: SelectorOp, values: &[&str]) -> Requirement {
    Requirement {
        key: key.into(),
        op,
        values: values.iter().map(|v| v.to_string()).collect(),
    }
}

pub fn taint(key: &str, value: &str, effect: TaintEffect) -> Taint {
    Taint {
        key: key.into(),
        value: value.into(),
        effect,
    }
}

/// An extended resource on a node.
pub fn with_ext(n: NodeBuilder, name: &str, count: i64) -> NodeBuilder {
    let name = name.to_string();
    n.with(|node: &mut Node| {
        node.allocatable.extended.insert(name.clone(), count);
        node.capacity.extended.insert(name, count);
    })
}

/// The pods a strategy proposes to evict, by name, in order.
pub fn run(
    args: PluginArgs,
    evictor: EvictorArgs,
    nodes: Vec<Node>,
    pods: Vec<Pod>,
) -> Vec<String> {
    let f = Fixture::new(nodes, pods);
    let cluster = f.cluster();
    let view = View::new(&cluster);
    let evictor = Evictor::new(&evictor, &view);
    strategies::propose(&args, &view, &evictor)
        .into_iter()
        .map(|p| p.pod.name.clone())
        .collect()
}

/// The evictor's args with `nodeFit` set.
pub fn node_fit() -> EvictorArgs {
    EvictorArgs {
        node_fit: true,
        ..Default::default()
    }
}
