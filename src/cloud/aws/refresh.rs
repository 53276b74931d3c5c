//! Reading every managed group from AWS into a new snapshot. DescribeAutoScalingGroups decides which
//! groups exist (a group disappears only when AWS no longer lists it); a group whose other data cannot
//! be read this time (its launch template, instance types, scaling activities) keeps its last good data
//! with the sizes and instances just read.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::SystemTime;

use super::api::RawGroup;
use super::eks::ManagedNodegroup;
use super::group::{instances_of, purchase, with_sizes};
use super::instance_types::TypeFacts;
use super::price_keeper::{self, Purchases};
use super::types::{AsgInfo, InstanceTypeInfo};
use super::{activities, template, ttl, AwsCloud};
use crate::error::{Error, Result};
use crate::model::{provider_id, InstanceError, NodeGroup, Snapshot};

/// The managed groups as AWS lists them, with `--nodes` bounds applied.
async fn discover(cloud: &AwsCloud) -> Result<BTreeMap<String, RawGroup>> {
    let mut raw: BTreeMap<String, RawGroup> = BTreeMap::new();
    for d in &cloud.settings.auto_discovery {
        for g in cloud.api.groups_by_tags(&d.tags).await? {
            if d.matches(&g.info.tags) {
                raw.insert(g.info.name.clone(), g);
            }
        }
    }
    let names: Vec<String> = cloud
        .settings
        .nodes
        .iter()
        .map(|n| n.name.clone())
        .collect();
    if !names.is_empty() {
        for g in cloud.api.groups_by_name(&names).await? {
            raw.insert(g.info.name.clone(), g);
        }
    }
    for g in raw.values_mut() {
        apply_bounds(cloud, &mut g.info);
    }
    for n in &cloud.settings.nodes {
        if !raw.contains_key(&n.name) {
            tracing::warn!(group = %n.name, "--nodes names an Auto Scaling group that does not exist");
        }
    }
    Ok(raw)
}

/// `--nodes MIN:MAX:NAME` bounds win over the group's own.
pub(super) fn apply_bounds(cloud: &AwsCloud, info: &mut AsgInfo) {
    if let Some(n) = cloud.settings.nodes.iter().find(|n| n.name == info.name) {
        info.min_size = n.min;
        info.max_size = n.max;
    }
}

/// Reads every managed group from AWS and builds a new snapshot, priced with the prices at hand.
pub(super) async fn load(cloud: &AwsCloud) -> Result<(Snapshot, Purchases)> {
    let mut raw = discover(cloud).await?;
    let previous = cloud.state.load();
    let mut failed = cloud.launch.resolve(&cloud.api, &mut raw).await;
    let (types, types_error) = cloud.instance_types.facts(&cloud.api, &raw).await;
    if let Some(e) = &types_error {
        tracing::warn!(error = %e, "reading instance types failed; groups using new types keep their last good template");
    }
    // The types the groups launch, and those their instances run (launched before a template change):
    // each instance is priced by its own type.
    let in_use: BTreeSet<String> = raw
        .values()
        .flat_map(|g| {
            let running = g
                .info
                .instances
                .iter()
                .filter_map(|i| i.instance_type.clone());
            g.info.instance_types.iter().cloned().chain(running)
        })
        .collect();
    cloud.prices.want(in_use);
    let managed = cloud.managed_nodegroups.of_groups(&cloud.api, &raw).await;
    let spot = cloud
        .markets
        .of_groups(&cloud.api, raw.values().map(|g| &g.info))
        .await;
    let last_purchases = cloud.purchases();
    let mut purchases = Purchases::new();
    let mut groups = Vec::with_capacity(raw.len());
    for (name, g) in raw {
        let last = previous.group(&name).ok();
        let built = match failed.remove(&name) {
            Some(e) => Err(e),
            None => {
                let last_error = last.and_then(|l| l.launch_error.clone());
                let mng = managed.get(&name).map(Arc::as_ref);
                node_group(cloud, &g.info, &types, mng, last_error).await
            }
        };
        match (built, last) {
            (Ok(group), _) => {
                purchases.insert(name, purchase(&g.info, &spot));
                groups.push(group);
            }
            (Err(e), Some(last)) => {
                tracing::warn!(group = %name, error = %e, "could not read all of the group's data; keeping its last good template");
                groups.push(with_sizes(last, &g.info));
                if let Some(p) = last_purchases.get(&name) {
                    purchases.insert(name, p.clone());
                }
            }
            (Err(e), None) => {
                tracing::warn!(group = %name, error = %e, "Auto Scaling group left out of this snapshot")
            }
        }
    }
    let mut snapshot = Snapshot::new(groups);
    price_keeper::apply(
        &mut snapshot,
        &cloud.prices.book(),
        &purchases,
        &cloud.settings.pricing,
    );
    Ok((snapshot, purchases))
}

/// One group from AWS's data, with its EKS managed node group if known. A failed read of its scaling
/// activities keeps `last_error` (the group's last known launch error) rather than dropping the group.
async fn node_group(
    cloud: &AwsCloud,
    info: &AsgInfo,
    types: &TypeFacts,
    managed: Option<&ManagedNodegroup>,
    last_error: Option<InstanceError>,
) -> Result<NodeGroup> {
    let known: Vec<&InstanceTypeInfo> = info
        .instance_types
        .iter()
        .filter_map(|t| types.get(t).map(Arc::as_ref))
        .collect();
    if known.is_empty() {
        return Err(Error::GroupData {
            group: info.name.clone(),
            reason: format!(
                "no known instance type (launch types: {:?})",
                info.instance_types
            ),
        });
    }
    let template =
        template::build_template(info, &cloud.region, &known, managed).map_err(|reason| {
            Error::GroupData {
                group: info.name.clone(),
                reason,
            }
        })?;
    let options = template::options_from_tags(&info.name, &info.tags);
    let zone = info
        .availability_zones
        .first()
        .cloned()
        .unwrap_or_else(|| format!("{}a", cloud.region));
    let instances = instances_of(info);
    let launch_error = if (info.desired_capacity.max(0) as usize) > instances.len() {
        let since = cloud
            .last_scale_up
            .lock()
            .get(&info.name)
            .copied()
            .unwrap_or_else(|| SystemTime::now() - ttl::FAILED_ACTIVITY_LOOKBACK);
        match cloud.api.failed_launch_since(&info.name, since).await {
            Ok(message) => message.map(|m| activities::classify(&m)),
            Err(e) => {
                tracing::warn!(group = %info.name, error = %e, "reading scaling activities failed; keeping the last known launch error");
                last_error
            }
        }
    } else {
        None
    };
    Ok(NodeGroup {
        id: info.name.clone(),
        min_size: info.min_size,
        max_size: info.max_size,
        target_size: info.desired_capacity,
        instances,
        template: Arc::new(template),
        options,
        price_per_hour: None,
        instance_prices: Default::default(),
        launch_error,
        provider_id_prefix: provider_id::prefix(provider_id::AWS, &zone),
        lifecycle: super::lifecycle::lifecycle_of(info),
    })
}
