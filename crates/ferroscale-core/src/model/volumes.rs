//! What a pod's PersistentVolumeClaims ask of the node it lands on, already resolved by the adapter from
//! the claim, its PersistentVolume and its StorageClass, so the scheduler's volume filters
//! (VolumeBinding, VolumeZone, NodeVolumeLimits) are pure functions of a pod and a node.

use std::collections::BTreeMap;

use super::selector::Requirement;
use crate::labels;

/// One claim a pod mounts, named `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Claim {
    pub key: String,
    pub state: ClaimState,
    /// Access mode `ReadWriteOncePod`: no other pod may use the claim while this one does.
    pub exclusive: bool,
    /// The claim of a generic ephemeral volume (`ephemeral:`, not `persistentVolumeClaim:`): the
    /// descheduler's `PodsWithPVC` protection does not look at it.
    pub ephemeral: bool,
    /// The claim's `spec.storageClassName`, when it exists and names one.
    pub class: Option<String>,
}

/// Where a claim's volume can be used.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClaimState {
    /// Bound to a PersistentVolume, which nodes can reach through its required node affinity (OR of
    /// terms, empty: any node) and its legacy zone and region labels.
    Bound {
        volume: String,
        node_affinity: Vec<Vec<Requirement>>,
        /// Topology labels of the volume (`topology.kubernetes.io/zone` and the beta names) with the
        /// values it allows (a `__`-separated label is several values).
        zones: Vec<(String, Vec<String>)>,
        /// CSI driver the volume attaches through, for attach limits.
        driver: Option<String>,
    },
    /// Not bound yet, with `WaitForFirstConsumer` binding: a volume is provisioned where the pod lands,
    /// within the class's allowed topologies (OR of terms, empty: anywhere).
    Delayed {
        class: String,
        allowed: Vec<Vec<Requirement>>,
        driver: Option<String>,
        /// None when the class provisions volumes. A class without a provisioner (none, or
        /// `kubernetes.io/no-provisioner`) cannot: the claim binds only to an available volume that
        /// fits it, so these are the node affinities of those volumes (each an OR of terms, empty:
        /// any node), and a node none admits cannot take the pod.
        volumes: Option<Vec<Vec<Vec<Requirement>>>>,
    },
    /// Not bound, and the pod cannot be placed until it is: `Immediate` binding, a claim that does not
    /// exist, or one whose volume is lost.
    Waiting(Wait),
}

/// Why a claim keeps its pod from every node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Wait {
    /// `Immediate` binding: the volume controller binds it before the scheduler places the pod.
    Immediate,
    /// No such claim.
    Missing,
    /// Bound to a volume that does not exist.
    Lost,
    /// Unbound, naming a storage class that does not exist (or none, with no default class).
    NoClass,
    /// The claim of a generic ephemeral volume exists but was not made for this pod (another owns it).
    NotOwned,
}

impl Wait {
    pub fn as_str(self) -> &'static str {
        match self {
            Wait::Immediate => "unbound with Immediate binding",
            Wait::Missing => "not found",
            Wait::Lost => "bound to a volume that does not exist",
            Wait::NoClass => "unbound and its storage class does not exist",
            Wait::NotOwned => "was not created for the pod",
        }
    }
}

impl Claim {
    /// The CSI driver that attaches this claim's volume and the id its attachment is counted by (one
    /// volume used by several pods on a node counts once).
    pub fn attachment(&self) -> Option<(&str, &str)> {
        match &self.state {
            ClaimState::Bound { volume, driver, .. } => Some((driver.as_deref()?, volume)),
            ClaimState::Delayed { driver, .. } => Some((driver.as_deref()?, &self.key)),
            ClaimState::Waiting(_) => None,
        }
    }
}

/// Zone and region labels, GA and beta, which the scheduler's VolumeZone filter reads.
const TOPOLOGY_LABELS: [&str; 4] = [
    labels::ZONE,
    labels::REGION,
    labels::ZONE_BETA,
    labels::REGION_BETA,
];

/// The GA name of a beta topology label: a volume labelled the old way matches a node labelled the new.
fn ga(key: &str) -> Option<&'static str> {
    match key {
        labels::ZONE_BETA => Some(labels::ZONE),
        labels::REGION_BETA => Some(labels::REGION),
        _ => None,
    }
}

/// A volume's topology labels as the VolumeZone filter reads them.
pub fn volume_zones(volume_labels: &BTreeMap<String, String>) -> Vec<(String, Vec<String>)> {
    volume_labels
        .iter()
        .filter(|(k, _)| TOPOLOGY_LABELS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.split("__").map(str::to_string).collect()))
        .collect()
}

/// The VolumeZone filter: a node without any zone or region label takes any volume; otherwise each of
/// the volume's topology labels must name the node's value (under the same key, or the GA key for a
/// beta one).
pub fn zones_admit(zones: &[(String, Vec<String>)], node: &BTreeMap<String, String>) -> bool {
    if zones.is_empty() || !TOPOLOGY_LABELS.iter().any(|k| node.contains_key(*k)) {
        return true;
    }
    zones.iter().all(|(key, values)| {
        let value = node.get(key).or_else(|| ga(key).and_then(|t| node.get(t)));
        value.is_some_and(|v| values.contains(v))
    })
}

/// Whether a node's labels (and its name, None for a template: [`Requirement::admits_node`]) satisfy an
/// OR of requirement terms, each an AND (empty: no constraint).
pub fn terms_admit(
    terms: &[Vec<Requirement>],
    node: &BTreeMap<String, String>,
    name: Option<&str>,
) -> bool {
    terms.is_empty()
        || terms
            .iter()
            .any(|t| t.iter().all(|r| r.admits_node(node, name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::labels;

    #[test]
    fn zone_labels_restrict_only_zoned_nodes() {
        let zones = volume_zones(&labels(&[
            (labels::ZONE, "us-east-1a__us-east-1b"),
            ("other", "x"),
        ]));
        assert_eq!(zones.len(), 1);
        assert!(zones_admit(
            &zones,
            &labels(&[(labels::ZONE, "us-east-1b")])
        ));
        assert!(!zones_admit(
            &zones,
            &labels(&[(labels::ZONE, "us-east-1c")])
        ));
        let beta = volume_zones(&labels(&[(labels::ZONE_BETA, "us-east-1a")]));
        assert!(
            zones_admit(&beta, &labels(&[(labels::ZONE, "us-east-1a")])),
            "a beta-labelled volume matches a GA-labelled node"
        );
        assert!(
            !zones_admit(&zones, &labels(&[(labels::REGION, "us-east-1")])),
            "a zoned node without the volume's key conflicts"
        );
        assert!(zones_admit(
            &zones,
            &labels(&[("kubernetes.io/os", "linux")])
        ));
    }
}
