//! What the core's tests build again and again, in one place: resources, labels, nodes, pods, groups,
//! PodDisruptionBudgets, and a world to run a loop on. Each builder starts from the type's default (a
//! node with only its name, a pod with only its namespace and name, an empty group) so a test says every
//! value it relies on; chained setters add the rest.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::clock::FixedClock;
use crate::engine::predicates::NodeInfo;
use crate::engine::reasons::Doubt;
use crate::engine::{run_once, Decisions, Memory, Settings, World};
use crate::labels;
use crate::model::lifecycle::DisruptionReason;
use crate::model::volumes::Claim;
use crate::model::workload::{LabelSelector, Node, Pdb, Pod};
use crate::model::{
    Instance, InstanceState, NodeGroup, Resources, Taint, TaintEffect, TemplateNode,
};

pub const MIB: i64 = 1 << 20;
pub const GIB: i64 = 1 << 30;

/// CPU (millicores), memory (bytes) and pod slots.
pub fn resources(cpu_milli: i64, memory: i64, pods: i64) -> Resources {
    Resources {
        cpu_milli,
        memory,
        pods,
        ..Default::default()
    }
}

/// A label map from pairs.
/// A label or node-affinity requirement `key op values`.
pub fn req(
    key: &str,
    op: crate::model::workload::SelectorOp,
    values: &[&str],
) -> crate::model::workload::Requirement {
    crate::model::workload::Requirement {
        key: key.into(),
        op,
        values: values.iter().map(|v| v.to_string()).collect(),
    }
}

/// Why the loop's decisions left `pod` (`namespace/name`) pending; panics if they did not.
pub fn why<'a>(d: &'a Decisions, pod: &str) -> &'a crate::engine::reasons::Pending {
    &d.pending
        .iter()
        .find(|(p, _)| p == pod)
        .unwrap_or_else(|| panic!("{pod} not pending: {d:?}"))
        .1
}

pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A selector matching these labels.
pub fn selector(pairs: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        match_labels: labels(pairs),
        requirements: vec![],
    }
}

/// A `NoSchedule` taint.
pub fn no_schedule(key: &str, value: &str) -> Taint {
    Taint {
        key: key.into(),
        value: value.into(),
        effect: TaintEffect::NoSchedule,
    }
}

/// A node named `name` and nothing else set: no labels, no resources, not ready.
pub fn node(name: impl Into<String>) -> NodeBuilder {
    NodeBuilder(Node {
        name: name.into(),
        ..Default::default()
    })
}

/// A node under construction.
pub struct NodeBuilder(Node);

impl NodeBuilder {
    pub fn allocatable(mut self, r: Resources) -> Self {
        self.0.allocatable = r;
        self
    }

    pub fn capacity(mut self, r: Resources) -> Self {
        self.0.capacity = r;
        self
    }

    /// Capacity and allocatable both `r`.
    pub fn sized(self, r: Resources) -> Self {
        self.capacity(r.clone()).allocatable(r)
    }

    /// `n` NVIDIA GPUs allocatable.
    pub fn gpus(mut self, n: i64) -> Self {
        self.0
            .allocatable
            .extended
            .insert(labels::NVIDIA_GPU.into(), n);
        self
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.0.labels.insert(key.into(), value.into());
        self
    }

    pub fn labels(mut self, pairs: &[(&str, &str)]) -> Self {
        self.0.labels.extend(labels(pairs));
        self
    }

    /// Its `kubernetes.io/hostname` label: its name.
    pub fn hostname(self) -> Self {
        let name = self.0.name.clone();
        self.label(labels::HOSTNAME, &name)
    }

    pub fn taint(mut self, t: Taint) -> Self {
        self.0.taints.push(t);
        self
    }

    pub fn ready(mut self) -> Self {
        self.0.ready = true;
        self
    }

    /// Created at `at`, and first seen then (as a clock in step with the API server's sees it).
    pub fn created(mut self, at: i64) -> Self {
        self.0.created = at;
        self.0.seen = at;
        self
    }

    /// First seen by the loop at `at`, whatever its creation time says (a skewed API server clock).
    pub fn seen(mut self, at: i64) -> Self {
        self.0.seen = at;
        self
    }

    pub fn provider_id(mut self, id: impl Into<String>) -> Self {
        self.0.provider_id = id.into();
        self
    }

    /// CSI driver `driver` attaches at most `n` volumes.
    pub fn volume_limit(mut self, driver: &str, n: i64) -> Self {
        self.0.volume_limits.insert(driver.into(), n);
        self
    }

    /// Any other change to the node.
    #[allow(dead_code)]
    pub fn with(mut self, f: impl FnOnce(&mut Node)) -> Self {
        f(&mut self.0);
        self
    }

    pub fn build(self) -> Node {
        self.0
    }

    /// The node with no pod placed on it yet.
    pub fn info(self) -> NodeInfo {
        NodeInfo::new(self.0)
    }

    /// The node with `pods` placed on it.
    pub fn info_with(self, pods: impl IntoIterator<Item = Pod>) -> NodeInfo {
        let mut info = NodeInfo::new(self.0);
        for p in pods {
            info.add(p);
        }
        info
    }

    /// A group template of this node's name, labels, taints and resources.
    pub fn template(self) -> TemplateNode {
        let n = self.0;
        TemplateNode {
            name: n.name,
            labels: (*n.labels).clone(),
            taints: n.taints,
            capacity: n.capacity,
            allocatable: n.allocatable,
            volume_limits: n.volume_limits,
        }
    }
}

/// A pod `namespace/name` and nothing else set: no requests, unbound, no owner.
pub fn pod(namespace: &str, name: impl Into<String>) -> PodBuilder {
    PodBuilder(Pod {
        namespace: namespace.into(),
        name: name.into(),
        ..Default::default()
    })
}

/// A pod under construction.
pub struct PodBuilder(Pod);

impl PodBuilder {
    pub fn requests(mut self, r: Resources) -> Self {
        self.0.requests = r;
        self
    }

    /// `n` NVIDIA GPUs requested.
    pub fn gpus(mut self, n: i64) -> Self {
        self.0
            .requests
            .extended
            .insert(labels::NVIDIA_GPU.into(), n);
        self
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.0.labels.insert(key.into(), value.into());
        self
    }

    /// Bound to node `node`.
    pub fn on(mut self, node: &str) -> Self {
        self.0.node_name = Some(node.into());
        self
    }

    /// Controlled by an owner of `kind` (`ReplicaSet`, `DaemonSet`, ...).
    pub fn controller(mut self, kind: &str) -> Self {
        self.0.meta.controller = Some(kind.into());
        self
    }

    pub fn created(mut self, at: i64) -> Self {
        self.0.meta.created = at;
        self
    }

    pub fn priority(mut self, p: i32) -> Self {
        self.0.meta.priority = p;
        self
    }

    /// Marked unschedulable by the scheduler: it asks for a scale-up.
    pub fn unschedulable(mut self) -> Self {
        self.0.meta.unschedulable = true;
        self
    }

    /// Annotated `cluster-autoscaler.kubernetes.io/daemonset-pod: "true"`.
    pub fn daemon_set_annotation(mut self) -> Self {
        self.0.meta.daemon_set_annotation = true;
        self
    }

    /// A static pod's mirror.
    pub fn mirror(mut self) -> Self {
        self.0.meta.mirror = true;
        self
    }

    pub fn claims(mut self, claims: Vec<Claim>) -> Self {
        self.0.claims = claims;
        self
    }

    /// Any other change to the pod.
    pub fn with(mut self, f: impl FnOnce(&mut Pod)) -> Self {
        f(&mut self.0);
        self
    }

    pub fn build(self) -> Pod {
        self.0
    }

    /// `n` copies named `<name>-0` to `<name>-{n-1}`.
    pub fn copies(self, n: usize) -> Vec<Pod> {
        (0..n)
            .map(|i| Pod {
                name: format!("{}-{i}", self.0.name),
                ..self.0.clone()
            })
            .collect()
    }
}

/// A group `id` of an empty template, its provider ids under `aws:///z/`, sized 0 to 0, no instances.
pub fn group(id: &str) -> GroupBuilder {
    GroupBuilder(NodeGroup::new(id, TemplateNode::default(), "aws:///z/"))
}

/// A group under construction.
pub struct GroupBuilder(NodeGroup);

impl GroupBuilder {
    pub fn sizes(mut self, min: i32, max: i32, target: i32) -> Self {
        self.0.min_size = min;
        self.0.max_size = max;
        self.0.target_size = target;
        self
    }

    pub fn template(mut self, t: TemplateNode) -> Self {
        self.0.template = Arc::new(t);
        self
    }

    /// Provider ids (of instances and placeholders) start with `prefix`.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.0.provider_id_prefix = prefix.into();
        self
    }

    /// An instance `<prefix><name>` in `state`.
    pub fn instance(mut self, name: &str, state: InstanceState) -> Self {
        self.0.instances.push(Instance {
            id: format!("{}{name}", self.0.provider_id_prefix),
            state,
            error: None,
        });
        self
    }

    /// `n` running instances, `<prefix>i-0` to `<prefix>i-{n-1}`.
    pub fn running(self, n: usize) -> Self {
        (0..n).fold(self, |g, k| {
            g.instance(&format!("i-{k}"), InstanceState::Running)
        })
    }

    /// Its hourly price.
    pub fn price(mut self, per_hour: f64) -> Self {
        self.0.price_per_hour = Some(per_hour);
        self
    }

    pub fn build(self) -> NodeGroup {
        self.0
    }

    pub fn arc(self) -> Arc<NodeGroup> {
        Arc::new(self.0)
    }
}

/// A ready worker node `name` of 4 cpu, 16 GiB and 110 pod slots, labelled with its hostname, whose
/// provider id `aws:///z/<name>` is the instance `name` of a `group(..)`.
pub fn worker(name: &str) -> NodeBuilder {
    node(name)
        .hostname()
        .sized(resources(4000, 16 * GIB, 110))
        .provider_id(format!("aws:///z/{name}"))
        .ready()
}

/// A pod `shop/<name>` of app `web`, controlled by a ReplicaSet, asking `cpu_milli` and 1 GiB.
pub fn web(name: &str, cpu_milli: i64) -> PodBuilder {
    pod("shop", name)
        .label("app", "web")
        .controller("ReplicaSet")
        .requests(resources(cpu_milli, GIB, 1))
}

/// A world of one group `id` (min `min`, max 10, its target its node count) whose instances are the
/// `worker`s named, each running its web pods (name, millicores).
pub fn pool(id: &str, min: i32, nodes: &[(&str, &[(&str, i64)])]) -> TestWorld {
    let g = nodes.iter().fold(
        group(id).sizes(min, 10, nodes.len() as i32),
        |g, (name, _)| g.instance(name, InstanceState::Running),
    );
    let mut world = TestWorld::default().group(g.build());
    for (name, pods) in nodes {
        world = world.node_of(id, worker(name).build());
        for (p, cpu) in *pods {
            world = world.pod(web(p, *cpu).on(name).build());
        }
    }
    world
}

/// A budget `namespace/name` over pods labelled `app=<app>`, allowing `allowed` disruptions.
pub fn pdb(namespace: &str, name: &str, app: &str, allowed: i32) -> Pdb {
    Pdb {
        namespace: namespace.into(),
        name: name.into(),
        selector: selector(&[("app", app)]),
        disruptions_allowed: allowed,
    }
}

/// What a loop sees, owned: `world()` lends it as the engine's `World`.
#[derive(Default)]
pub struct TestWorld {
    pub nodes: Vec<Node>,
    pub node_groups: HashMap<String, String>,
    pub pods: Vec<Arc<Pod>>,
    pub pdbs: Vec<Pdb>,
    pub daemon_pods: Vec<Pod>,
    pub groups: Vec<Arc<NodeGroup>>,
    pub removing: HashMap<String, bool>,
    pub doubts: Vec<Doubt>,
    pub interrupted: HashMap<String, DisruptionReason>,
}

impl TestWorld {
    pub fn group(mut self, g: NodeGroup) -> Self {
        self.groups.push(Arc::new(g));
        self
    }

    /// A node of group `group`.
    pub fn node_of(mut self, group: &str, n: Node) -> Self {
        self.node_groups.insert(n.name.clone(), group.into());
        self.nodes.push(n);
        self
    }

    pub fn pod(mut self, p: Pod) -> Self {
        self.pods.push(Arc::new(p));
        self
    }

    pub fn pdb(mut self, b: Pdb) -> Self {
        self.pdbs.push(b);
        self
    }

    /// Group `id`, to change (the world's copy).
    pub fn group_mut(&mut self, id: &str) -> &mut NodeGroup {
        let g = self
            .groups
            .iter_mut()
            .find(|g| g.id == id)
            .expect("the group");
        Arc::make_mut(g)
    }

    pub fn world(&self) -> World<'_> {
        World {
            nodes: &self.nodes,
            node_groups: &self.node_groups,
            pods: &self.pods,
            pdbs: &self.pdbs,
            daemon_pods: &self.daemon_pods,
            groups: &self.groups,
            removing: &self.removing,
            doubts: &self.doubts,
            interrupted: &self.interrupted,
        }
    }

    /// One loop at `now`, on a clock that stands still (no time budget runs out).
    pub fn run_once(&self, settings: &Settings, memory: &mut Memory, now: i64) -> Decisions {
        run_once(&self.world(), settings, memory, now, &FixedClock::default())
    }
}
