//! What each instance of a memory-cloud group costs: its own `pricePerHour`, else the group's
//! `spotPricePerHour` or `onDemandPricePerHour` by the instance's `lifecycle`, so a mixed-instances
//! group's spot and on-demand nodes are each priced as what they are, not at the group's blend.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::labels;
use crate::pricing::PriceOverrides;

/// How an instance was bought.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InstanceLifecycle {
    Spot,
    OnDemand,
}

impl InstanceLifecycle {
    /// What a node's capacity-type label says (`karpenter.sh/capacity-type: spot`,
    /// `eks.amazonaws.com/capacityType: ON_DEMAND`), if it says.
    pub fn of_labels(l: &BTreeMap<String, String>) -> Option<InstanceLifecycle> {
        let v = l
            .get(labels::KARPENTER_CAPACITY_TYPE)
            .or_else(|| l.get(labels::EKS_CAPACITY_TYPE))?
            .to_ascii_lowercase()
            .replace('_', "-");
        match v.as_str() {
            "spot" => Some(InstanceLifecycle::Spot),
            "on-demand" => Some(InstanceLifecycle::OnDemand),
            _ => None,
        }
    }
}

/// A group's prices as its config gives them.
#[derive(Debug, Clone, Copy)]
pub struct GroupPrices<'a> {
    pub group: &'a str,
    pub instance_type: Option<&'a str>,
    /// `pricePerHour`: the next node's (a mixed group's blend).
    pub price: Option<f64>,
    /// `onDemandPricePerHour`, `spotPricePerHour`.
    pub on_demand: Option<f64>,
    pub spot: Option<f64>,
}

/// The hourly price of an instance of a group priced `g` with its `own` price and its `lifecycle`,
/// after the price file: on-demand prices take the instance type's entry, spot prices (market prices)
/// do not, and the group's entry applies to both. None: priced as its group.
pub fn instance_price(
    g: GroupPrices,
    lifecycle: Option<InstanceLifecycle>,
    own: Option<f64>,
    overrides: &PriceOverrides,
) -> Option<f64> {
    let price = match (own, lifecycle) {
        (Some(p), _) => p,
        (None, Some(InstanceLifecycle::Spot)) => g.spot?,
        (None, Some(InstanceLifecycle::OnDemand)) => {
            overrides.on_demand(g.instance_type, Some(g.on_demand.or(g.price)?))?
        }
        (None, None) => return None,
    };
    overrides.group(g.group, Some(price))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::memory::MemoryConfig;

    #[test]
    fn spot_and_on_demand_instances_are_priced_each_as_it_is() {
        let config = MemoryConfig::parse(
            "nodeGroups:\n  - {name: mixed, minSize: 0, maxSize: 5, capacity: {cpu: 2, memory: 8Gi},\n     \
             pricePerHour: 0.0656, onDemandPricePerHour: 0.096, spotPricePerHour: 0.035,\n     \
             instances: [{id: i-s, lifecycle: spot}, {id: i-o, lifecycle: on-demand}, {id: i-x}, {id: i-p, pricePerHour: 0.2}]}\n",
        )
        .unwrap();
        let g = &config.node_groups[0];
        let prices =
            super::super::config::listed_prices(g, "memory:///mixed/", &PriceOverrides::default());
        let of = |id: &str| prices.get(&format!("memory:///mixed/{id}")).copied();
        assert_eq!(of("i-s"), Some(0.035));
        assert_eq!(of("i-o"), Some(0.096));
        assert_eq!(of("i-x"), None, "no lifecycle: the group's price");
        assert_eq!(of("i-p"), Some(0.2), "its own price first");
        let labelled = |k: &str, v: &str| {
            InstanceLifecycle::of_labels(&[(k.to_string(), v.to_string())].into())
        };
        assert_eq!(
            labelled(labels::EKS_CAPACITY_TYPE, "SPOT"),
            Some(InstanceLifecycle::Spot)
        );
        assert_eq!(
            labelled(labels::EKS_CAPACITY_TYPE, "ON_DEMAND"),
            Some(InstanceLifecycle::OnDemand)
        );
        assert_eq!(
            labelled(labels::KARPENTER_CAPACITY_TYPE, "on-demand"),
            Some(InstanceLifecycle::OnDemand)
        );
        assert_eq!(labelled("other", "spot"), None);
    }
}
