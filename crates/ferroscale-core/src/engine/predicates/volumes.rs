//! The scheduler's volume filters (VolumeBinding, VolumeZone, NodeVolumeLimits) on claims the adapter
//! has resolved: a claim that must bind first keeps the pod everywhere, a bound volume keeps it to the
//! nodes its affinity and zone labels admit, a claim provisioned on first use to its class's allowed
//! topologies, and a node attaches no more volumes per CSI driver than its CSINode allows.

use std::collections::BTreeMap;

use super::{Cluster, NodeInfo, Unfit};
use crate::model::volumes::{terms_admit, zones_admit, ClaimState};
use crate::model::workload::Pod;

/// The first claim that keeps the pod off every node, as the scheduler's PreFilter refuses it.
pub(super) fn waiting(pod: &Pod) -> Result<(), Unfit> {
    match pod.claims.iter().find_map(|c| match c.state {
        ClaimState::Waiting(w) => Some((c, w)),
        _ => None,
    }) {
        Some((c, wait)) => Err(Unfit::ClaimWaiting {
            claim: c.key.clone(),
            wait,
        }),
        None => Ok(()),
    }
}

/// The scheduler's VolumeRestrictions filter on `ReadWriteOncePod` claims: a claim another pod on any
/// node uses keeps this pod off every node.
pub(super) fn exclusive(pod: &Pod, nodes: Cluster) -> Result<(), Unfit> {
    for c in pod.claims.iter().filter(|c| c.exclusive) {
        let used = nodes.iter().any(|n| {
            n.pods.iter().any(|o| {
                (o.namespace != pod.namespace || o.name != pod.name)
                    && o.claims.iter().any(|oc| oc.key == c.key)
            })
        });
        if used {
            return Err(Unfit::ClaimInUse(c.key.clone()));
        }
    }
    Ok(())
}

/// Disk conflicts and attach limits first (as the scheduler's order has them), then where each volume
/// can be used.
pub(super) fn fits(pod: &Pod, info: &NodeInfo) -> Result<(), Unfit> {
    if pod.claims.is_empty() && pod.inline_volumes.is_empty() {
        return Ok(());
    }
    // An inline EBS volume mounted by a pod already on the node conflicts (VolumeRestrictions).
    if let Some((_, id)) = pod.inline_volumes.iter().find(|(_, id)| {
        info.pods
            .iter()
            .any(|o| o.inline_volumes.iter().any(|(_, other)| other == id))
    }) {
        return Err(Unfit::DiskConflict(id.clone()));
    }
    let node = &info.node;
    if !node.volume_limits.is_empty() {
        let mut more: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (driver, id) in pod.attachments() {
            let known = info
                .attached
                .get(driver)
                .is_some_and(|ids| ids.contains(id));
            let new = more.entry(driver).or_default();
            if !known && !new.contains(&id) {
                new.push(id);
            }
        }
        for (driver, new) in more {
            let Some(&limit) = node.volume_limits.get(driver) else {
                continue;
            };
            let now = info.attached.get(driver).map_or(0, |ids| ids.len());
            if !new.is_empty() && (now + new.len()) as i64 > limit {
                return Err(Unfit::VolumeLimit {
                    driver: driver.to_string(),
                    limit,
                });
            }
        }
    }
    for c in &pod.claims {
        match &c.state {
            ClaimState::Bound {
                node_affinity,
                zones,
                ..
            } => {
                if !terms_admit(node_affinity, &node.labels, node.field_name()) {
                    return Err(Unfit::VolumeNodeAffinity(c.key.clone()));
                }
                if !zones_admit(zones, &node.labels) {
                    return Err(Unfit::VolumeZone(c.key.clone()));
                }
            }
            ClaimState::Delayed {
                class,
                allowed,
                volumes,
                ..
            } => {
                if !terms_admit(allowed, &node.labels, node.field_name()) {
                    return Err(Unfit::VolumeTopology {
                        claim: c.key.clone(),
                        class: class.clone(),
                    });
                }
                if volumes.as_ref().is_some_and(|vs| {
                    !vs.iter()
                        .any(|v| terms_admit(v, &node.labels, node.field_name()))
                }) {
                    return Err(Unfit::NoVolume(c.key.clone()));
                }
            }
            ClaimState::Waiting(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{fits_node, Unfit};
    use crate::fixtures::{node, pod, resources, NodeBuilder};
    use crate::labels;
    use crate::model::volumes::{Claim, ClaimState, Wait};
    use crate::model::workload::{Pod, Requirement, SelectorOp};

    /// A node of 4 cpu, 8 GiB and 110 pod slots in `zone`.
    fn zoned(zone: &str) -> NodeBuilder {
        node(format!("n-{zone}"))
            .label(labels::ZONE, zone)
            .allocatable(resources(4000, 8 << 30, 110))
    }

    /// A pod `shop/<name>` mounting `claims`.
    fn mounting(name: &str, claims: Vec<Claim>) -> Pod {
        pod("shop", name)
            .requests(resources(0, 0, 1))
            .claims(claims)
            .build()
    }

    fn in_zone(zone: &str) -> Vec<Vec<Requirement>> {
        vec![vec![Requirement {
            key: labels::ZONE.into(),
            op: SelectorOp::In,
            values: vec![zone.into()],
        }]]
    }

    fn bound(claim: &str, volume: &str, zone: &str) -> Claim {
        Claim {
            key: format!("shop/{claim}"),
            state: ClaimState::Bound {
                volume: volume.into(),
                node_affinity: in_zone(zone),
                zones: vec![],
                driver: Some("ebs.csi.aws.com".into()),
            },
            exclusive: false,
            ephemeral: false,
            class: None,
        }
    }

    #[test]
    fn a_bound_volume_keeps_its_pod_in_its_zone() {
        let p = mounting("db-0", vec![bound("data-0", "pv-0", "us-east-1a")]);
        assert_eq!(fits_node(&p, &zoned("us-east-1a").info()), Ok(()));
        let err = fits_node(&p, &zoned("us-east-1b").info()).unwrap_err();
        assert_eq!(err, Unfit::VolumeNodeAffinity("shop/data-0".into()));
        assert_eq!(
            err.to_string(),
            "volume node affinity conflict: pvc shop/data-0"
        );
    }

    #[test]
    fn a_delayed_claim_follows_its_class_topology_and_a_waiting_one_fits_nowhere() {
        let delayed = mounting(
            "db-0",
            vec![Claim {
                key: "shop/data-0".into(),
                state: ClaimState::Delayed {
                    class: "gp3-b".into(),
                    allowed: in_zone("us-east-1b"),
                    driver: Some("ebs.csi.aws.com".into()),
                    volumes: None,
                },
                exclusive: false,
                ephemeral: false,
                class: None,
            }],
        );
        assert!(fits_node(&delayed, &zoned("us-east-1b").info()).is_ok());
        assert!(matches!(
            fits_node(&delayed, &zoned("us-east-1a").info()),
            Err(Unfit::VolumeTopology { .. })
        ));
        let waiting = mounting(
            "db-1",
            vec![Claim {
                key: "shop/data-1".into(),
                state: ClaimState::Waiting(Wait::Immediate),
                exclusive: false,
                ephemeral: false,
                class: None,
            }],
        );
        assert_eq!(
            fits_node(&waiting, &zoned("us-east-1a").info())
                .unwrap_err()
                .to_string(),
            "pvc shop/data-1 unbound with Immediate binding"
        );
    }

    #[test]
    fn attach_limits_count_distinct_volumes_per_driver() {
        let mut n = zoned("us-east-1a")
            .volume_limit("ebs.csi.aws.com", 2)
            .info();
        n.add(mounting("a", vec![bound("data-a", "pv-a", "us-east-1a")]));
        // The same volume again costs no attachment.
        let same = mounting("a2", vec![bound("data-a", "pv-a", "us-east-1a")]);
        assert!(fits_node(&same, &n).is_ok());
        let b = mounting("b", vec![bound("data-b", "pv-b", "us-east-1a")]);
        assert!(fits_node(&b, &n).is_ok());
        n.add(&b);
        let c = mounting("c", vec![bound("data-c", "pv-c", "us-east-1a")]);
        assert_eq!(
            fits_node(&c, &n),
            Err(Unfit::VolumeLimit {
                driver: "ebs.csi.aws.com".into(),
                limit: 2
            })
        );
        assert!(
            fits_node(&c, &zoned("us-east-1a").info()).is_ok(),
            "no CSINode: no limit"
        );
    }
}
