//! The user's price file (`--price-overrides FILE`): Savings Plans, reserved instances and negotiated
//! rates that no public price list knows. Per instance type or per node group, an hourly price or a
//! discount off the price ferroscale would otherwise use.
//!
//! ```yaml
//! discount: 0.05              # off every on-demand price (e.g. an enterprise discount)
//! instanceTypes:
//!   m5.large: {pricePerHour: 0.062}
//!   c5.xlarge: {discount: 0.28}
//! nodeGroups:
//!   reserved-gpu: {pricePerHour: 0.0}
//!   batch: {discount: 0.1}
//! ```
//!
//! Order: an instance type's entry replaces (price) or discounts its on-demand price, the top-level
//! `discount` applies to on-demand prices without an entry of their own; spot prices are market prices and
//! are left alone; a node group's entry then replaces or discounts whatever the group's price came to.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::error::{Error, Result};

/// One entry: exactly one of an hourly price or a discount.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Adjustment {
    /// USD per hour, replacing the listed price.
    Price(f64),
    /// Fraction off the listed price, in [0, 1).
    Discount(f64),
}

impl Adjustment {
    /// The adjusted price; a discount of an unknown price stays unknown.
    pub fn apply(self, price: Option<f64>) -> Option<f64> {
        match self {
            Adjustment::Price(p) => Some(p),
            Adjustment::Discount(d) => price.map(|p| p * (1.0 - d)),
        }
    }
}

/// The parsed price file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceOverrides {
    pub discount: Option<f64>,
    pub instance_types: BTreeMap<String, Adjustment>,
    pub node_groups: BTreeMap<String, Adjustment>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileEntry {
    price_per_hour: Option<f64>,
    discount: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    discount: Option<f64>,
    #[serde(default)]
    instance_types: BTreeMap<String, FileEntry>,
    #[serde(default)]
    node_groups: BTreeMap<String, FileEntry>,
}

fn check_discount(d: f64, field: &str) -> Result<f64> {
    if (0.0..1.0).contains(&d) {
        Ok(d)
    } else {
        Err(Error::Config(format!(
            "{field}: a discount is a fraction in [0, 1), got {d}"
        )))
    }
}

fn entry(e: FileEntry, field: &str) -> Result<Adjustment> {
    match (e.price_per_hour, e.discount) {
        (Some(p), None) if p.is_finite() && p >= 0.0 => Ok(Adjustment::Price(p)),
        (Some(p), None) => Err(Error::Config(format!(
            "{field}.pricePerHour: must be a number >= 0, got {p}"
        ))),
        (None, Some(d)) => Ok(Adjustment::Discount(check_discount(
            d,
            &format!("{field}.discount"),
        )?)),
        _ => Err(Error::Config(format!(
            "{field}: give exactly one of pricePerHour or discount"
        ))),
    }
}

impl PriceOverrides {
    /// Parses the YAML text of a price file; errors name the offending key.
    pub fn parse(text: &str) -> Result<Self> {
        crate::bounds::PRICE_OVERRIDES.check_yaml(text)?;
        let file: File = if text.trim().is_empty() {
            File::default()
        } else {
            serde_norway::from_str(text).map_err(|e| Error::Config(e.to_string()))?
        };
        let adjustments = |m: BTreeMap<String, FileEntry>, section: &str| {
            m.into_iter()
                .map(|(k, e)| {
                    let a = entry(e, &format!("{section}.{k}"))?;
                    Ok((k, a))
                })
                .collect::<Result<BTreeMap<_, _>>>()
        };
        Ok(PriceOverrides {
            discount: file
                .discount
                .map(|d| check_discount(d, "discount"))
                .transpose()?,
            instance_types: adjustments(file.instance_types, "instanceTypes")?,
            node_groups: adjustments(file.node_groups, "nodeGroups")?,
        })
    }

    /// Reads and parses a price file; errors name the file and the key.
    pub fn load(path: &std::path::Path) -> Result<Self> {
        let text = std::fs::File::open(path)
            .and_then(|f| {
                let len = f.metadata().ok().map(|m| m.len());
                crate::bounds::PRICE_OVERRIDES.read(f, len)
            })
            .map_err(|e| {
                Error::Config(format!(
                    "cannot read --price-overrides {}: {e}",
                    path.display()
                ))
            })?;
        Self::parse(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display())))
    }

    /// The on-demand price of an instance type after the file's type entry or its global discount.
    pub fn on_demand(&self, instance_type: Option<&str>, listed: Option<f64>) -> Option<f64> {
        match instance_type.and_then(|t| self.instance_types.get(t)) {
            Some(a) => a.apply(listed),
            None => match self.discount {
                Some(d) => Adjustment::Discount(d).apply(listed),
                None => listed,
            },
        }
    }

    /// A node group's final price after the file's group entry.
    pub fn group(&self, group: &str, price: Option<f64>) -> Option<f64> {
        match self.node_groups.get(group) {
            Some(a) => a.apply(price),
            None => price,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "
discount: 0.05
instanceTypes:
  m5.large: {pricePerHour: 0.062}
  c5.xlarge: {discount: 0.25}
nodeGroups:
  reserved: {pricePerHour: 0}
  batch: {discount: 0.5}
";

    #[test]
    fn type_entries_replace_or_discount_and_the_global_discount_covers_the_rest() {
        let o = PriceOverrides::parse(FILE).unwrap();
        assert_eq!(o.on_demand(Some("m5.large"), Some(0.096)), Some(0.062));
        assert_eq!(o.on_demand(Some("m5.large"), None), Some(0.062));
        assert_eq!(o.on_demand(Some("c5.xlarge"), Some(0.5)), Some(0.375));
        assert_eq!(o.on_demand(Some("r5.large"), Some(2.0)), Some(1.9));
        assert_eq!(o.on_demand(Some("r5.large"), None), None);
        assert_eq!(o.group("reserved", Some(3.0)), Some(0.0));
        assert_eq!(o.group("batch", Some(0.5)), Some(0.25));
        assert_eq!(o.group("other", Some(0.3)), Some(0.3));
    }

    #[test]
    fn bad_entries_name_the_key() {
        for (text, wanted) in [
            ("nodeGroups:\n  g: {discount: 1.5}", "nodeGroups.g.discount"),
            (
                "instanceTypes:\n  m5.large: {pricePerHour: -1}",
                "instanceTypes.m5.large.pricePerHour",
            ),
            (
                "instanceTypes:\n  m5.large: {pricePerHour: 1, discount: 0.1}",
                "instanceTypes.m5.large: give exactly one",
            ),
            ("nodeGroups:\n  g: {}", "nodeGroups.g: give exactly one"),
            ("discount: -0.1", "discount:"),
            ("instanceType: {}", "unknown field `instanceType`"),
        ] {
            let e = PriceOverrides::parse(text).unwrap_err().to_string();
            assert!(e.contains(wanted), "{text:?}: {e}");
        }
    }
}
