//! What really happened in a recorded timeline, followed beside its replay: the real nodes (by group,
//! for their cost), the real pods waiting for a node, and how long each waited.

use std::collections::{BTreeMap, HashMap, HashSet};

use k8s_openapi::api::core::v1 as core;
use serde_json::Value;

use crate::cloud::memory::MemoryConfig;
use crate::k8s::documents::Objects;
use crate::k8s::pod_status::pod_terminal;
use crate::labels;
use crate::model::instance_id;
use crate::trace::Change;

/// A pod's key: (namespace, name).
pub type PodKey = (String, String);

/// What a real node is priced by: its group, found from its labels or its instance.
#[derive(Debug, Clone, Default)]
struct RealNode {
    group_label: Option<String>,
    eks_nodegroup: Option<String>,
    provider_id: String,
    group: Option<String>,
}

impl RealNode {
    fn of(labels: Option<&BTreeMap<String, String>>, provider_id: Option<&str>) -> Self {
        let label = |k: &str| labels.and_then(|l| l.get(k)).cloned();
        RealNode {
            group_label: label(labels::NODE_GROUP),
            eks_nodegroup: label(labels::EKS_NODEGROUP),
            provider_id: provider_id.unwrap_or_default().to_string(),
            group: None,
        }
    }
}

/// The real cluster as the timeline records it.
#[derive(Debug, Default)]
pub struct Real {
    nodes: HashMap<String, RealNode>,
    /// Pods created and not bound yet, with when they were created (Unix seconds).
    waiting: HashMap<PodKey, i64>,
    /// Seconds each pod created after the start waited for a node.
    pub waits: Vec<i64>,
    pub launched: u64,
    pub removed: u64,
    /// For each node launched after the start, with its group: seconds from the oldest pod then
    /// waiting being created to the node registering (what `--provision-delay` stands for).
    pub provision_delays: Vec<(Option<String>, i64)>,
    /// For each node launched after the start, with its group: seconds from registering to Ready.
    pub ready_delays: Vec<(Option<String>, i64)>,
    /// Nodes launched after the start not Ready yet, with when they registered.
    starting: HashMap<String, i64>,
    /// How the timeline's nodes are told apart by group: the groups' names, their listed instances.
    groups: HashSet<String>,
    instances: HashMap<String, String>,
}

/// An RFC 3339 time as Unix seconds.
fn time_of(v: &Value) -> Option<i64> {
    v.as_str()?
        .parse::<k8s_openapi::jiff::Timestamp>()
        .ok()
        .map(|t| t.as_second())
}

/// Since when a node object says it is Ready (its condition's last transition), if it is.
fn ready_since(node: &Value) -> Option<i64> {
    let conditions = node["status"]["conditions"].as_array()?;
    let ready = conditions
        .iter()
        .find(|c| c["type"] == "Ready" && c["status"] == "True")?;
    Some(time_of(&ready["lastTransitionTime"]).unwrap_or(i64::MIN))
}

fn created(pod: &core::Pod, at: i64) -> i64 {
    pod.metadata
        .creation_timestamp
        .as_ref()
        .map_or(at, |t| t.0.as_second())
}

fn bound(pod: &core::Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
}

impl Real {
    /// The real cluster at the start.
    pub fn starting(start: &Objects) -> Real {
        let mut real = Real::default();
        for n in &start.nodes {
            let node = RealNode::of(
                n.metadata.labels.as_ref(),
                n.spec.as_ref().and_then(|s| s.provider_id.as_deref()),
            );
            real.nodes
                .insert(n.metadata.name.clone().unwrap_or_default(), node);
        }
        for p in &start.pods {
            if !bound(p) && !pod_terminal(p) {
                let key = (
                    p.metadata.namespace.clone().unwrap_or_default(),
                    p.metadata.name.clone().unwrap_or_default(),
                );
                real.waiting.insert(key, created(p, 0));
            }
        }
        real
    }

    /// Tells the nodes' groups by `config`'s (a node's `ferroscale.io/node-group` or EKS node group
    /// label naming one, or its instance listed in one).
    pub fn set_groups(&mut self, config: &MemoryConfig) {
        self.groups = config.node_groups.iter().map(|g| g.name.clone()).collect();
        self.instances = config
            .node_groups
            .iter()
            .flat_map(|g| g.instances.iter().map(|i| (i.id.clone(), g.name.clone())))
            .collect();
        let nodes: Vec<String> = self.nodes.keys().cloned().collect();
        for n in nodes {
            self.resolve(&n);
        }
    }

    fn resolve(&mut self, name: &str) {
        let Some(node) = self.nodes.get(name) else {
            return;
        };
        let known = |g: &Option<String>| g.clone().filter(|g| self.groups.contains(g));
        let group = known(&node.group_label)
            .or_else(|| known(&node.eks_nodegroup))
            .or_else(|| self.instances.get(instance_id(&node.provider_id)).cloned());
        if let Some(node) = self.nodes.get_mut(name) {
            node.group = group;
        }
    }

    /// A node's change at `at`.
    pub fn node(&mut self, name: &str, change: Change, object: &Value, at: i64) {
        match change {
            Change::Deleted => {
                self.starting.remove(name);
                if self.nodes.remove(name).is_some() {
                    self.removed += 1;
                }
            }
            Change::Added | Change::Modified => {
                let labels: Option<BTreeMap<String, String>> =
                    serde_json::from_value(object["metadata"]["labels"].clone()).ok();
                let node = RealNode::of(labels.as_ref(), object["spec"]["providerID"].as_str());
                let registered = time_of(&object["metadata"]["creationTimestamp"]).unwrap_or(at);
                let new = self.nodes.insert(name.to_string(), node).is_none();
                self.resolve(name);
                let group = self.nodes.get(name).and_then(|n| n.group.clone());
                if new {
                    self.launched += 1;
                    if let Some(oldest) = self.waiting.values().min() {
                        let delay = (registered - oldest).max(0);
                        self.provision_delays.push((group.clone(), delay));
                    }
                    self.starting.insert(name.to_string(), registered);
                }
                if let Some(ready) = ready_since(object) {
                    if let Some(registered) = self.starting.remove(name) {
                        let delay = (ready.max(registered) - registered).max(0);
                        self.ready_delays.push((group, delay));
                    }
                }
            }
        }
    }

    /// A pod's change at `at`.
    pub fn pod(&mut self, key: &PodKey, change: Change, pod: &core::Pod, at: i64) {
        match change {
            Change::Deleted => {
                self.waiting.remove(key);
            }
            _ if pod_terminal(pod) => {
                self.waiting.remove(key);
            }
            _ if bound(pod) => {
                if let Some(since) = self.waiting.remove(key) {
                    self.waits.push((at - since).max(0));
                }
            }
            Change::Added => {
                self.waiting.insert(key.clone(), created(pod, at));
            }
            Change::Modified => {}
        }
    }

    /// The real nodes now, by group (`-` for nodes of no group of the node-groups file).
    pub fn by_group(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for n in self.nodes.values() {
            *out.entry(n.group.clone().unwrap_or_else(|| "-".into()))
                .or_default() += 1;
        }
        out
    }

    /// Real pods waiting for a node now.
    pub fn pending(&self) -> usize {
        self.waiting.len()
    }
}
