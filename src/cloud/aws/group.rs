//! An Auto Scaling group as CA sees it: provider ids, instance states, how it buys capacity.

use super::types::AsgInfo;
use crate::model::{provider_id, Instance, InstanceState, NodeGroup};
use crate::pricing::Purchase;

/// How a group buys capacity: its mixed-instances distribution, else spot when its launch template or
/// configuration asks for spot, else on-demand.
pub fn purchase(info: &AsgInfo, spot: &std::collections::BTreeMap<String, bool>) -> Purchase {
    let (types, zones) = (info.instance_types.clone(), info.availability_zones.clone());
    let instances: Vec<(String, String, String)> = info
        .instances
        .iter()
        .filter_map(|i| {
            let ty = i.instance_type.clone()?;
            let id = provider_id::aws(&i.availability_zone, &i.instance_id);
            Some((id, ty, i.availability_zone.clone()))
        })
        .collect();
    let p = match &info.distribution {
        Some(d) => Purchase {
            on_demand_base: d.on_demand_base,
            on_demand_percent_above_base: d.on_demand_percent_above_base,
            on_demand_lowest_price: d.on_demand_lowest_price,
            ..Purchase::on_demand(types, zones)
        },
        None if info.spot_launch => Purchase::spot(types, zones),
        None => Purchase::on_demand(types, zones),
    };
    let spot = instances
        .iter()
        .filter_map(|(id, _, _)| Some((id.clone(), *spot.get(id)?)))
        .collect();
    Purchase {
        instances,
        spot,
        ..p
    }
}

/// The group's instances with CA's provider ids and states.
pub fn instances_of(info: &AsgInfo) -> Vec<Instance> {
    info.instances
        .iter()
        .map(|i| Instance {
            id: provider_id::aws(&i.availability_zone, &i.instance_id),
            state: lifecycle_state(&i.lifecycle_state),
            error: None,
        })
        .collect()
}

/// CA's view of an Auto Scaling lifecycle state.
fn lifecycle_state(state: &str) -> InstanceState {
    if state.starts_with("Pending") || state.starts_with("Warmed") {
        InstanceState::Creating
    } else if state.starts_with("Terminat") || state.starts_with("Detach") {
        InstanceState::Deleting
    } else {
        InstanceState::Running
    }
}

/// `known` with what AWS just said of the group's bounds, desired capacity and instances: what a read
/// of the group alone can tell (template, options and price stay as they were).
pub fn with_sizes(known: &NodeGroup, info: &AsgInfo) -> NodeGroup {
    let mut g = NodeGroup::clone(known);
    g.min_size = info.min_size;
    g.max_size = info.max_size;
    g.instances = instances_of(info);
    g.lifecycle.instance_revisions = super::lifecycle::instance_revisions(info);
    g.set_target(info.desired_capacity);
    g
}
