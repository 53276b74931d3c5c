//! The autoscaler's status as upstream's `ClusterAutoscalerStatus` (`clusterstate/api`) models it: the
//! cluster's and each group's health, scale-up and scale-down conditions, each with when it was last
//! probed and since when it holds, and the groups' backoffs. The engine computes it from one loop's
//! world, decisions and memory, so every reader (the status ConfigMap, metrics, logs) sees the same
//! typed answer; how it is stored is the adapter's business.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::context::World;
use super::decisions::{Decisions, Disruption};
use super::health::{NodeReadiness, Readiness};
use super::memory::Memory;
use super::settings::Settings;
use super::taints::TaintConfig;
use crate::model::duration::secs;
use crate::model::workload::Node;
use crate::model::NodeGroup;

/// A condition status name that is not one of upstream's for that condition.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown {condition} condition status {status:?}")]
pub struct UnknownStatus {
    pub condition: &'static str,
    pub status: String,
}

/// An enum of condition statuses whose variants are named as upstream's `ClusterAutoscalerConditionStatus`
/// values, which `Display` and `FromStr` use.
macro_rules! condition_status {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Upstream's name of the status.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => stringify!($variant)),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownStatus;
            fn from_str(s: &str) -> Result<Self, UnknownStatus> {
                match s {
                    $(stringify!($variant) => Ok($name::$variant),)+
                    _ => Err(UnknownStatus {
                        condition: stringify!($name),
                        status: s.to_string(),
                    }),
                }
            }
        }
    };
}

condition_status! {
    /// The cluster's or a group's health.
    Health {
        Healthy,
        /// The cluster: too many nodes unready, the loop does nothing. A group: more of the nodes its
        /// target expects are missing or unready than the thresholds allow.
        Unhealthy,
    }
}

condition_status! {
    /// Whether the cluster is growing.
    ClusterScaleUp {
        /// Pods no node takes and no scale-up was decided for them.
        Needed,
        /// A scale-up was decided, or a group's target exceeds its registered nodes.
        InProgress,
        NoActivity,
    }
}

condition_status! {
    /// Whether a group is growing.
    GroupScaleUp {
        /// Its target exceeds its registered nodes.
        InProgress,
        NoActivity,
        /// Scale-ups failed: it is not grown until the backoff ends.
        Backoff,
    }
}

condition_status! {
    /// Whether nodes are unneeded (candidates to remove once unneeded long enough).
    ScaleDown {
        CandidatesPresent,
        NoCandidates,
    }
}

/// A condition's status, when it was last probed and since when it has held (Unix seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Condition<S> {
    pub status: S,
    pub last_probe_time: i64,
    pub last_transition_time: i64,
}

impl<S: Copy + PartialEq> Condition<S> {
    /// `status` as probed at `now`; its transition time is carried over from `previous` while the
    /// status is unchanged, so readers see how long it has held.
    pub fn probed(status: S, now: i64, previous: Option<&Condition<S>>) -> Self {
        Condition {
            status,
            last_probe_time: now,
            last_transition_time: previous
                .filter(|p| p.status == status)
                .map_or(now, |p| p.last_transition_time),
        }
    }
}

/// Registered nodes not ready (upstream's `RegisteredUnreadyNodeCount`; field names are upstream's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnreadyCount {
    pub total: usize,
    /// Unready for a missing resource (a GPU not yet advertised); ferroscale counts none.
    pub resource_unready: usize,
}

/// Nodes registered in Kubernetes (upstream's `RegisteredNodeCount`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisteredCount {
    pub total: usize,
    pub ready: usize,
    /// Not ready yet and younger than `maxNodeStartupTime`.
    pub not_started: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub being_deleted: usize,
    pub unready: UnreadyCount,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Nodes by state (upstream's `NodeCount`): registered ones, and instances without a node
/// (long-unregistered past `maxNodeProvisionTime`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeCount {
    pub registered: RegisteredCount,
    pub long_unregistered: usize,
    pub unregistered: usize,
}

impl NodeCount {
    /// Counts one registered node: ready, not started (unready, first seen less than `startup` seconds
    /// before `now`) or unready.
    fn register(
        &mut self,
        node: &Node,
        startup: std::time::Duration,
        now: i64,
        taints: &TaintConfig,
    ) {
        self.registered.total += 1;
        let r = &mut self.registered;
        *match NodeReadiness::of(node, startup, now, taints) {
            NodeReadiness::Ready => &mut r.ready,
            NodeReadiness::NotStarted => &mut r.not_started,
            NodeReadiness::Unready => &mut r.unready.total,
        } += 1;
    }

    fn add(&mut self, other: &NodeCount) {
        self.registered.total += other.registered.total;
        self.registered.ready += other.registered.ready;
        self.registered.not_started += other.registered.not_started;
        self.registered.unready.total += other.registered.unready.total;
        self.unregistered += other.unregistered;
        self.long_unregistered += other.long_unregistered;
    }
}

/// Why a group is backed off (upstream's `BackoffInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackoffInfo {
    /// Upstream's error code of the last failure (`cloudProviderError`, `timeout`, or the cloud's
    /// launch error code).
    pub error_code: String,
    /// Backed off until (Unix seconds).
    pub until: i64,
}

/// The conditions of the whole cluster (upstream's `ClusterWideStatus`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterWideStatus {
    pub health: Condition<Health>,
    /// All nodes, those of no group included.
    pub node_counts: NodeCount,
    pub scale_up: Condition<ClusterScaleUp>,
    pub scale_down: Condition<ScaleDown>,
    /// Nodes unneeded now.
    pub candidates: usize,
}

/// One group's conditions (upstream's `NodeGroupStatus`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeGroupStatus {
    pub name: String,
    pub health: Condition<Health>,
    pub node_counts: NodeCount,
    /// The cloud's target size (upstream's `cloudProviderTarget`).
    pub target_size: i32,
    pub min_size: i32,
    pub max_size: i32,
    pub scale_up: Condition<GroupScaleUp>,
    /// Set while the group is backed off.
    pub backoff: Option<BackoffInfo>,
    pub scale_down: Condition<ScaleDown>,
    /// Its nodes unneeded now.
    pub candidates: usize,
}

impl NodeGroupStatus {
    /// Whether the group's health condition is `Healthy`.
    pub fn healthy(&self) -> bool {
        self.health.status == Health::Healthy
    }
}

/// The autoscaler's status after a loop (upstream's `ClusterAutoscalerStatus`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterAutoscalerStatus {
    /// When it was computed (Unix seconds).
    pub time: i64,
    /// Why the loop did nothing, held scale-down back or failed; empty when none of these.
    pub message: String,
    /// None until a loop has read the cloud (the first loops failed).
    pub cluster_wide: Option<ClusterWideStatus>,
    pub node_groups: Vec<NodeGroupStatus>,
    /// ferroscale's own: nodes taken out of service this loop other than by scale-down (interruptions,
    /// drift, expiry).
    pub disruptions: Vec<Disruption>,
}

/// `CandidatesPresent` when there are any, `NoCandidates` otherwise.
fn scale_down(
    candidates: usize,
    now: i64,
    previous: Option<&Condition<ScaleDown>>,
) -> Condition<ScaleDown> {
    let status = if candidates > 0 {
        ScaleDown::CandidatesPresent
    } else {
        ScaleDown::NoCandidates
    };
    Condition::probed(status, now, previous)
}

impl ClusterAutoscalerStatus {
    /// The status after one loop, as upstream's cluster state registry counts: registered nodes that
    /// are ready, not started (unready and younger than `maxNodeStartupTime`) or unready; instances
    /// without a node (unregistered, and long-unregistered past `maxNodeProvisionTime`); a group's
    /// scale-up `InProgress` while its target exceeds its registered nodes, `Backoff` after failures;
    /// scale-down candidates are nodes unneeded now. Transition times come from `previous`.
    pub fn compute(
        world: &World,
        decisions: &Decisions,
        memory: &Memory,
        settings: &Settings,
        now: i64,
        previous: Option<&ClusterAutoscalerStatus>,
    ) -> ClusterAutoscalerStatus {
        let registered: HashSet<&str> =
            world.nodes.iter().map(|n| n.provider_id.as_str()).collect();
        let groups: Vec<NodeGroupStatus> = world
            .groups
            .iter()
            .map(|g| {
                let prev = previous.and_then(|p| p.group(&g.id));
                group_status(g, world, &registered, memory, settings, now, prev)
            })
            .collect();
        let mut total = NodeCount::default();
        for g in &groups {
            total.add(&g.node_counts);
        }
        // Nodes of no group count in the cluster's totals too; with no group's start-up time, a node
        // of none is unready as soon as it is not ready.
        for n in world
            .nodes
            .iter()
            .filter(|n| !world.node_groups.contains_key(&n.name))
        {
            total.register(n, std::time::Duration::ZERO, now, &settings.taints);
        }
        let prev = previous.and_then(|p| p.cluster_wide.as_ref());
        let health = if decisions.unhealthy.is_some() {
            Health::Unhealthy
        } else {
            Health::Healthy
        };
        let growing = groups
            .iter()
            .any(|g| g.scale_up.status == GroupScaleUp::InProgress);
        let up = if growing || !decisions.scale_up.is_empty() {
            ClusterScaleUp::InProgress
        } else if decisions.unschedulable().next().is_none() {
            ClusterScaleUp::NoActivity
        } else {
            ClusterScaleUp::Needed
        };
        let candidates = groups.iter().map(|g| g.candidates).sum();
        ClusterAutoscalerStatus {
            time: now,
            message: message(decisions),
            cluster_wide: Some(ClusterWideStatus {
                health: Condition::probed(health, now, prev.map(|p| &p.health)),
                node_counts: total,
                scale_up: Condition::probed(up, now, prev.map(|p| &p.scale_up)),
                scale_down: scale_down(candidates, now, prev.map(|p| &p.scale_down)),
                candidates,
            }),
            node_groups: groups,
            disruptions: decisions.disruptions.clone(),
        }
    }

    /// The status after a loop that could not read the cloud: the last one (the groups as last seen)
    /// with the error as its message, so the status never goes silently stale.
    pub fn failed(
        previous: Option<&ClusterAutoscalerStatus>,
        now: i64,
        error: &str,
    ) -> ClusterAutoscalerStatus {
        ClusterAutoscalerStatus {
            time: now,
            message: error.to_string(),
            ..previous.cloned().unwrap_or_default()
        }
    }

    /// The status of the group `name`, if the loop saw it.
    pub fn group(&self, name: &str) -> Option<&NodeGroupStatus> {
        self.node_groups.iter().find(|g| g.name == name)
    }
}

/// Why the loop did nothing, or held scale-down back.
fn message(decisions: &Decisions) -> String {
    match (&decisions.unhealthy, decisions.held_back.as_slice()) {
        (Some(u), _) => u.to_string(),
        (None, []) => String::new(),
        (None, doubts) => format!(
            "scale-down held back: {}",
            doubts
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        ),
    }
}

/// One group's status; `registered` holds the provider ids of the cluster's nodes.
fn group_status(
    g: &NodeGroup,
    world: &World,
    registered: &HashSet<&str>,
    memory: &Memory,
    settings: &Settings,
    now: i64,
    previous: Option<&NodeGroupStatus>,
) -> NodeGroupStatus {
    let opts = settings.options_of(g);
    let provision = secs(opts.max_node_provision_time);
    let mut counts = NodeCount::default();
    let in_group = |name: &String| world.node_groups.get(name) == Some(&g.id);
    for n in world.nodes.iter().filter(|n| in_group(&n.name)) {
        counts.register(n, opts.max_node_startup_time, now, &settings.taints);
    }
    for i in g
        .instances
        .iter()
        .filter(|i| !registered.contains(i.id.as_str()))
    {
        counts.unregistered += 1;
        let since = memory.unregistered_since.get(&i.id).copied().unwrap_or(now);
        if now.saturating_sub(since) >= provision {
            counts.long_unregistered += 1;
        }
    }
    let readiness = Readiness {
        ready: counts.registered.ready,
        unready: counts.registered.unready.total,
        not_started: counts.registered.not_started,
        provisioning: counts.unregistered - counts.long_unregistered,
    };
    let health = if readiness.healthy(g.target_size, settings) {
        Health::Healthy
    } else {
        Health::Unhealthy
    };
    let backoff = memory.backoff_of(&g.id, now).map(|b| BackoffInfo {
        error_code: b.reason.clone(),
        until: b.until,
    });
    let up = if backoff.is_some() {
        GroupScaleUp::Backoff
    } else if g.target_size.max(0) as usize > counts.registered.total {
        GroupScaleUp::InProgress
    } else {
        GroupScaleUp::NoActivity
    };
    let candidates = memory.unneeded_since.keys().filter(|n| in_group(n)).count();
    NodeGroupStatus {
        name: g.id.clone(),
        health: Condition::probed(health, now, previous.map(|p| &p.health)),
        node_counts: counts,
        target_size: g.target_size,
        min_size: g.min_size,
        max_size: g.max_size,
        scale_up: Condition::probed(up, now, previous.map(|p| &p.scale_up)),
        backoff,
        scale_down: scale_down(candidates, now, previous.map(|p| &p.scale_down)),
        candidates,
    }
}

#[cfg(test)]
mod tests;
