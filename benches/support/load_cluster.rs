//! The cluster the `load` bench serves (100 groups × 50 nodes) and the mix of calls CA makes on it.

use std::collections::BTreeSet;
use std::fmt::Write as _;

pub const GROUPS: usize = 100;
pub const NODES_PER_GROUP: usize = 50;
/// Every n-th group has autoscaling options of its own; the others answer GetOptions with UNIMPLEMENTED.
pub const OPTIONS_EVERY: usize = 10;
pub const ZONES: [&str; 3] = ["us-east-1a", "us-east-1b", "us-east-1c"];
pub const TYPES: [(&str, u32, &str, f64); 4] = [
    ("m5.xlarge", 4, "16Gi", 0.192),
    ("c5.2xlarge", 8, "16Gi", 0.34),
    ("r5.large", 2, "16Gi", 0.126),
    ("m5.4xlarge", 16, "64Gi", 0.768),
];

/// The reads of the mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rpc {
    ForNode,
    TargetSize,
    Nodes,
    TemplateNodeInfo,
    GetOptions,
    Groups,
}

impl Rpc {
    /// The RPC's name in the protocol.
    pub fn name(self) -> &'static str {
        match self {
            ForNode => "NodeGroupForNode",
            TargetSize => "NodeGroupTargetSize",
            Nodes => "NodeGroupNodes",
            TemplateNodeInfo => "NodeGroupTemplateNodeInfo",
            GetOptions => "NodeGroupGetOptions",
            Groups => "NodeGroups",
        }
    }
}

use Rpc::*;

/// 20 requests of the mix: 60% NodeGroupForNode, 10% each TargetSize, Nodes and GetOptions, 5% each
/// TemplateNodeInfo and NodeGroups. A real loop over 5,000 nodes in 100 groups is closer to 95%
/// NodeGroupForNode, so this mix leans on the heavier per-group calls; the lookup-only round is the other
/// end.
pub const MIX: [Rpc; 20] = [
    ForNode,
    ForNode,
    TargetSize,
    ForNode,
    Nodes,
    ForNode,
    TemplateNodeInfo,
    ForNode,
    GetOptions,
    ForNode,
    ForNode,
    TargetSize,
    ForNode,
    Nodes,
    ForNode,
    GetOptions,
    ForNode,
    ForNode,
    Groups,
    ForNode,
];

pub const LOOKUP_ONLY: [Rpc; 1] = [ForNode];

pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a valid value")),
        Err(_) => default,
    }
}

/// The memory-cloud config, and the groups that have options of their own.
pub fn memory_config() -> (String, BTreeSet<String>) {
    let mut yaml = String::from("nodeGroups:\n");
    let mut with_options = BTreeSet::new();
    for g in 0..GROUPS {
        let name = format!("group-{g:03}");
        let (instance_type, cpu, memory, price) = TYPES[g % TYPES.len()];
        let zone = ZONES[g % ZONES.len()];
        let _ = write!(
            yaml,
            "  - name: {name}\n    minSize: 0\n    maxSize: 200\n    targetSize: {NODES_PER_GROUP}\n    \
             pricePerHour: {price}\n    capacity: {{cpu: {cpu}, memory: {memory}, pods: 58}}\n    \
             labels: {{topology.kubernetes.io/zone: {zone}, node.kubernetes.io/instance-type: {instance_type}, \
             eks.amazonaws.com/nodegroup: {name}, eks.amazonaws.com/capacityType: ON_DEMAND}}\n"
        );
        if g % 7 == 3 {
            yaml.push_str("    taints: [{key: dedicated, value: batch, effect: NoSchedule}]\n");
        }
        if g % OPTIONS_EVERY == 0 {
            yaml.push_str(
                "    options: {scaleDownUtilizationThreshold: 0.4, scaleDownUnneededTime: 5m, \
                 maxNodeProvisionTime: 10m}\n",
            );
            with_options.insert(name);
        }
    }
    (yaml, with_options)
}
