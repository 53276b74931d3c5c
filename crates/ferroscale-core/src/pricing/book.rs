//! Which hourly price applies to a node group (pure): on-demand, spot, or a weighted mix of both, from a
//! book of instance-type prices and how the group buys its capacity.
//!
//! - On-demand: the first type the group may launch that has a price (`prioritized`, AWS's default
//!   on-demand allocation), or the cheapest of them (`lowest-price`).
//! - Spot: the cheapest latest spot price over the group's types in its zones (AWS's spot allocation
//!   strategies all favour low prices); with no spot price known the on-demand price stands in.
//! - Mix: below `OnDemandBaseCapacity` the next node is on-demand; above it a node costs
//!   `p × on-demand + (1 − p) × spot`, p = `OnDemandPercentageAboveBaseCapacity` / 100.
//! - The price file then adjusts on-demand prices per type and the result per group.

use std::collections::BTreeMap;

use super::overrides::PriceOverrides;

/// Hourly prices by instance type, as last read from the price source.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceBook {
    /// On-demand USD per hour by instance type.
    pub on_demand: BTreeMap<String, f64>,
    /// Latest spot USD per hour by instance type, then availability zone.
    pub spot: BTreeMap<String, BTreeMap<String, f64>>,
}

/// How a group buys its capacity (an Auto Scaling group's launch settings and MixedInstancesPolicy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Purchase {
    /// Instance types the group may launch, in the group's order of preference.
    pub instance_types: Vec<String>,
    /// Availability zones the group launches into.
    pub zones: Vec<String>,
    /// On-demand instances before any spot instance.
    pub on_demand_base: i32,
    /// Share of on-demand instances above the base, 0..=100 (100: on-demand only, 0: spot only).
    pub on_demand_percent_above_base: i32,
    /// On-demand launches take the cheapest type rather than the first.
    pub on_demand_lowest_price: bool,
    /// The group's instances whose type is known: (provider id, instance type, zone), each priced by
    /// its own type and zone rather than at the group's price.
    pub instances: Vec<(String, String, String)>,
    /// Provider id → whether the instance is spot, where the cloud told (a mixed-instances group's
    /// instances): such an instance is priced as what it is, not at its type's blend.
    pub spot: std::collections::BTreeMap<String, bool>,
}

impl Purchase {
    /// A group that launches on-demand instances only.
    pub fn on_demand(instance_types: Vec<String>, zones: Vec<String>) -> Self {
        Purchase {
            instance_types,
            zones,
            on_demand_base: 0,
            on_demand_percent_above_base: 100,
            on_demand_lowest_price: false,
            instances: Vec::new(),
            spot: Default::default(),
        }
    }

    /// A group that launches spot instances only (a spot launch template or configuration).
    pub fn spot(instance_types: Vec<String>, zones: Vec<String>) -> Self {
        Purchase {
            on_demand_percent_above_base: 0,
            ..Purchase::on_demand(instance_types, zones)
        }
    }

    /// Share of on-demand capacity in the next node of a group now at `target` nodes.
    pub fn on_demand_share(&self, target: i32) -> f64 {
        if target < self.on_demand_base {
            1.0
        } else {
            f64::from(self.on_demand_percent_above_base.clamp(0, 100)) / 100.0
        }
    }
}

impl PriceBook {
    /// On-demand price of the group's instances after the price file's type entries.
    fn on_demand_price(&self, p: &Purchase, overrides: &PriceOverrides) -> Option<f64> {
        let mut prices = p
            .instance_types
            .iter()
            .filter_map(|t| overrides.on_demand(Some(t.as_str()), self.on_demand.get(t).copied()));
        if p.on_demand_lowest_price {
            prices.reduce(f64::min)
        } else {
            prices.next()
        }
    }

    /// Cheapest spot price of the group's types in its zones (any zone when none of its zones is known).
    fn spot_price(&self, p: &Purchase) -> Option<f64> {
        p.instance_types
            .iter()
            .filter_map(|t| self.spot.get(t))
            .flat_map(|by_zone| {
                let in_zones: Vec<f64> = p
                    .zones
                    .iter()
                    .filter_map(|z| by_zone.get(z).copied())
                    .collect();
                if in_zones.is_empty() {
                    by_zone.values().copied().collect()
                } else {
                    in_zones
                }
            })
            .reduce(f64::min)
    }

    /// Each known instance's hourly price by its own type and zone, after the price file: on-demand in
    /// an on-demand group, spot (else on-demand) in a spot group; in a mixed-instances group, spot or
    /// on-demand as the cloud said the instance is (`spot`), and where it did not, its type's on-demand
    /// and spot prices weighed as the group launches above its base.
    pub fn instance_prices(
        &self,
        group: &str,
        p: &Purchase,
        overrides: &PriceOverrides,
    ) -> std::collections::BTreeMap<String, f64> {
        let share = f64::from(p.on_demand_percent_above_base.clamp(0, 100)) / 100.0;
        p.instances
            .iter()
            .filter_map(|(id, ty, zone)| {
                let od = overrides.on_demand(Some(ty.as_str()), self.on_demand.get(ty).copied());
                let spot = self.spot.get(ty).and_then(|z| z.get(zone)).copied();
                let price = if let Some(is_spot) = p.spot.get(id) {
                    if *is_spot {
                        spot.or(od)
                    } else {
                        od
                    }
                } else if share >= 1.0 {
                    od
                } else if share <= 0.0 && p.on_demand_base <= 0 {
                    spot.or(od)
                } else {
                    match (spot, od) {
                        (Some(s), Some(o)) => Some(share * o + (1.0 - share) * s),
                        (s, o) => o.or(s),
                    }
                };
                Some((id.clone(), overrides.group(group, price)?))
            })
            .collect()
    }

    /// Hourly price of the next node of group `group` (now at `target` nodes), after the price file.
    pub fn group_price(
        &self,
        group: &str,
        p: &Purchase,
        target: i32,
        overrides: &PriceOverrides,
    ) -> Option<f64> {
        let share = p.on_demand_share(target);
        let on_demand = || self.on_demand_price(p, overrides);
        let price = if share >= 1.0 {
            on_demand()
        } else {
            let od = on_demand();
            match (self.spot_price(p).or(od), od) {
                (Some(spot), Some(od)) => Some(share * od + (1.0 - share) * spot),
                (spot, _) => spot,
            }
        };
        overrides.group(group, price)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book() -> PriceBook {
        let mut b = PriceBook::default();
        b.on_demand.insert("m5.large".into(), 0.096);
        b.on_demand.insert("m5a.large".into(), 0.086);
        for (t, z, p) in [
            ("m5.large", "us-east-1a", 0.040),
            ("m5.large", "us-east-1b", 0.035),
            ("m5a.large", "us-east-1a", 0.038),
            ("m5a.large", "eu-west-1a", 0.001),
        ] {
            b.spot.entry(t.into()).or_default().insert(z.into(), p);
        }
        b
    }

    fn types() -> Vec<String> {
        vec!["m5.large".into(), "m5a.large".into()]
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[test]
    fn on_demand_takes_the_first_type_or_the_cheapest() {
        let mut p = Purchase::on_demand(types(), vec!["us-east-1a".into()]);
        let none = PriceOverrides::default();
        assert!(close(book().group_price("g", &p, 0, &none), 0.096));
        p.on_demand_lowest_price = true;
        assert!(close(book().group_price("g", &p, 0, &none), 0.086));
    }

    #[test]
    fn spot_takes_the_cheapest_in_the_groups_zones() {
        let none = PriceOverrides::default();
        let p = Purchase::spot(types(), vec!["us-east-1a".into(), "us-east-1b".into()]);
        // 0.001 is in a zone the group does not use.
        assert!(close(book().group_price("g", &p, 5, &none), 0.035));
        let unknown = Purchase::spot(vec!["m5.large".into()], vec!["ap-south-1a".into()]);
        assert!(close(book().group_price("g", &unknown, 5, &none), 0.035));
        let no_spot = Purchase::spot(vec!["c9.large".into()], vec![]);
        assert_eq!(book().group_price("g", &no_spot, 5, &none), None);
    }

    #[test]
    fn mixed_groups_weigh_on_demand_above_the_base() {
        let none = PriceOverrides::default();
        let p = Purchase {
            on_demand_base: 2,
            on_demand_percent_above_base: 25,
            ..Purchase::on_demand(types(), vec!["us-east-1a".into()])
        };
        // Below the base the next node is on-demand.
        assert!(close(book().group_price("g", &p, 1, &none), 0.096));
        // 25% × 0.096 + 75% × 0.038 (m5a.large is the cheapest spot in us-east-1a).
        assert!(close(
            book().group_price("g", &p, 2, &none),
            0.25 * 0.096 + 0.75 * 0.038
        ));
    }

    #[test]
    fn each_instance_is_priced_by_its_own_type_and_zone() {
        let none = PriceOverrides::default();
        let instances = vec![
            (
                "a".to_string(),
                "m5.large".to_string(),
                "us-east-1b".to_string(),
            ),
            ("b".into(), "m5a.large".into(), "us-east-1a".into()),
            ("c".into(), "c9.large".into(), "us-east-1a".into()),
        ];
        let od = Purchase {
            instances: instances.clone(),
            ..Purchase::on_demand(types(), vec![])
        };
        let prices = book().instance_prices("g", &od, &none);
        assert_eq!(prices.get("a"), Some(&0.096));
        assert_eq!(prices.get("b"), Some(&0.086));
        assert_eq!(prices.get("c"), None, "no price known: the group's");
        let spot = Purchase {
            instances: instances.clone(),
            ..Purchase::spot(types(), vec![])
        };
        let prices = book().instance_prices("g", &spot, &none);
        assert_eq!(prices.get("a"), Some(&0.035), "its own zone's spot price");
        assert_eq!(prices.get("b"), Some(&0.038));
        let mixed = Purchase {
            on_demand_percent_above_base: 25,
            instances,
            ..Purchase::on_demand(types(), vec![])
        };
        let prices = book().instance_prices("g", &mixed, &none);
        assert!(close(prices.get("b").copied(), 0.25 * 0.086 + 0.75 * 0.038));
        // Where the cloud told each instance's market, each is priced as what it is.
        let told = Purchase {
            spot: [("a".to_string(), true), ("b".to_string(), false)].into(),
            ..mixed
        };
        let prices = book().instance_prices("g", &told, &none);
        assert_eq!(prices.get("a"), Some(&0.035), "spot");
        assert_eq!(prices.get("b"), Some(&0.086), "on-demand");
    }

    #[test]
    fn the_price_file_adjusts_types_then_groups() {
        let o = PriceOverrides::parse(
            "instanceTypes:\n  m5.large: {discount: 0.5}\nnodeGroups:\n  fixed: {pricePerHour: 0.01}",
        )
        .unwrap();
        let p = Purchase::on_demand(types(), vec![]);
        assert!(close(book().group_price("g", &p, 0, &o), 0.048));
        assert!(close(book().group_price("fixed", &p, 0, &o), 0.01));
        // Spot prices are market prices: the type discount leaves them alone.
        let s = Purchase::spot(vec!["m5.large".into()], vec!["us-east-1b".into()]);
        assert!(close(book().group_price("g", &s, 0, &o), 0.035));
    }
}
