//! Prices from AWS: on-demand from the Pricing API (`GetProducts` on service `AmazonEC2`, one call per
//! instance type, filtered to Linux, shared tenancy, no pre-installed software, capacity status `Used`),
//! spot from EC2's spot price history (latest per instance type and zone, Linux/UNIX). The PriceList
//! documents are parsed here (pure, tested on AWS's documented format).

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_pricing::types::{Filter, FilterType};

use super::api::Api;
use crate::error::{Error, Result};
use crate::pricing::PriceBook;

/// GetProducts calls in flight at once (the Pricing API allows a few requests per second).
const PRICE_CALLS_IN_FLIGHT: usize = 4;
/// Types per DescribeSpotPriceHistory call, so the answer stays a few pages.
const SPOT_TYPES_PER_CALL: usize = 50;

/// The lowest positive on-demand USD hourly price in one PriceList document
/// (`terms.OnDemand.*.priceDimensions.*.pricePerUnit.USD`, unit `Hrs`).
pub fn on_demand_price(price_list_item: &str) -> Result<Option<f64>> {
    let doc: serde_json::Value =
        serde_json::from_str(price_list_item).map_err(|e| Error::Pricing {
            reason: format!("pricing/GetProducts: bad PriceList item: {e}"),
        })?;
    let Some(terms) = doc.pointer("/terms/OnDemand").and_then(|t| t.as_object()) else {
        return Ok(None);
    };
    let prices = terms
        .values()
        .filter_map(|term| term.get("priceDimensions")?.as_object())
        .flat_map(|dims| dims.values())
        .filter(|d| d.get("unit").and_then(|u| u.as_str()) == Some("Hrs"))
        .filter_map(|d| {
            d.pointer("/pricePerUnit/USD")?
                .as_str()?
                .parse::<f64>()
                .ok()
        })
        .filter(|p| p.is_finite() && *p > 0.0);
    Ok(prices.reduce(f64::min))
}

fn term(field: &str, value: &str) -> Result<Filter> {
    Filter::builder()
        .r#type(FilterType::TermMatch)
        .field(field)
        .value(value)
        .build()
        .map_err(|e| Error::Pricing {
            reason: format!("filter {field}: {e}"),
        })
}

impl Api {
    /// On-demand Linux price of one instance type in `region`, or None when AWS lists none.
    pub async fn on_demand_price(&self, instance_type: &str, region: &str) -> Result<Option<f64>> {
        let filters = vec![
            term("instanceType", instance_type)?,
            term("regionCode", region)?,
            term("operatingSystem", "Linux")?,
            term("tenancy", "Shared")?,
            term("preInstalledSw", "NA")?,
            term("capacitystatus", "Used")?,
        ];
        let mut best: Option<f64> = None;
        let mut token = None;
        loop {
            let page = self
                .call(
                    "pricing/GetProducts",
                    self.pricing
                        .get_products()
                        .service_code("AmazonEC2")
                        .format_version("aws_v1")
                        .set_filters(Some(filters.clone()))
                        .set_next_token(token.take())
                        .send(),
                )
                .await?;
            for item in page.price_list() {
                if let Some(p) = on_demand_price(item)? {
                    best = Some(best.map_or(p, |b: f64| b.min(p)));
                }
            }
            match page.next_token() {
                Some(t) if !t.is_empty() => token = Some(t.to_string()),
                _ => return Ok(best),
            }
        }
    }

    /// Latest Linux spot price per instance type and availability zone.
    pub async fn spot_prices(
        &self,
        types: &[String],
    ) -> Result<BTreeMap<String, BTreeMap<String, f64>>> {
        let mut latest: BTreeMap<(String, String), (i64, f64)> = BTreeMap::new();
        let now = aws_smithy_types::DateTime::from(std::time::SystemTime::now());
        for chunk in types.chunks(SPOT_TYPES_PER_CALL) {
            let mut token = None;
            loop {
                let page = self
                    .call(
                        "ec2/DescribeSpotPriceHistory",
                        self.ec2
                            .describe_spot_price_history()
                            .set_instance_types(Some(
                                chunk.iter().map(|t| t.as_str().into()).collect(),
                            ))
                            .product_descriptions("Linux/UNIX")
                            .product_descriptions("Linux/UNIX (Amazon VPC)")
                            // A start time of now returns the price in force now, per type and zone.
                            .start_time(now)
                            .set_next_token(token.take())
                            .send(),
                    )
                    .await?;
                for s in page.spot_price_history() {
                    let (Some(t), Some(z), Some(p)) = (
                        s.instance_type(),
                        s.availability_zone(),
                        s.spot_price().and_then(|p| p.parse::<f64>().ok()),
                    ) else {
                        continue;
                    };
                    let at = s.timestamp().map(|t| t.secs()).unwrap_or(0);
                    let key = (t.as_str().to_string(), z.to_string());
                    if latest.get(&key).is_none_or(|(seen, _)| at >= *seen) {
                        latest.insert(key, (at, p));
                    }
                }
                match page.next_token() {
                    Some(t) if !t.is_empty() => token = Some(t.to_string()),
                    _ => break,
                }
            }
        }
        let mut out: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
        for ((t, z), (_, p)) in latest {
            out.entry(t).or_default().insert(z, p);
        }
        Ok(out)
    }

    /// On-demand and spot prices of `types` in `region`; any failed call fails the whole read, so a
    /// price book is never half old and half new.
    pub async fn price_book(&self, types: &BTreeSet<String>, region: &str) -> Result<PriceBook> {
        let types: Vec<String> = types.iter().cloned().collect();
        let mut book = PriceBook::default();
        for chunk in types.chunks(PRICE_CALLS_IN_FLIGHT) {
            let mut calls = tokio::task::JoinSet::new();
            for t in chunk {
                let (api, t, region) = (self.clone(), t.clone(), region.to_string());
                calls.spawn(async move {
                    let p = api.on_demand_price(&t, &region).await;
                    (t, p)
                });
            }
            while let Some(done) = calls.join_next().await {
                let (t, price) = done.map_err(|e| Error::task("a pricing/GetProducts call", e))?;
                if let Some(p) = price? {
                    book.on_demand.insert(t, p);
                }
            }
        }
        book.spot = self.spot_prices(&types).await?;
        Ok(book)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shaped as AWS documents a GetProducts PriceList item (trimmed).
    const ITEM: &str = r#"{
      "product": {"productFamily": "Compute Instance",
                  "attributes": {"instanceType": "m5.large", "regionCode": "us-east-1",
                                 "operatingSystem": "Linux", "tenancy": "Shared"},
                  "sku": "SKU1"},
      "serviceCode": "AmazonEC2",
      "terms": {
        "OnDemand": {"SKU1.JRTCKXETXF": {"priceDimensions": {
            "SKU1.JRTCKXETXF.6YS6EN2CT7": {"unit": "Hrs", "pricePerUnit": {"USD": "0.0960000000"},
                                           "description": "$0.096 per On Demand Linux m5.large Instance Hour"}},
            "sku": "SKU1", "offerTermCode": "JRTCKXETXF", "termAttributes": {}}},
        "Reserved": {"SKU1.X": {"priceDimensions": {
            "SKU1.X.Y": {"unit": "Hrs", "pricePerUnit": {"USD": "0.0600000000"}}}}}
      }
    }"#;

    #[test]
    fn reads_the_on_demand_hourly_price_and_ignores_reserved_terms() {
        assert_eq!(on_demand_price(ITEM).unwrap(), Some(0.096));
    }

    #[test]
    fn zero_prices_and_missing_terms_are_no_price() {
        let zero = ITEM.replace("0.0960000000", "0.0000000000");
        assert_eq!(on_demand_price(&zero).unwrap(), None);
        assert_eq!(on_demand_price(r#"{"terms": {}}"#).unwrap(), None);
        assert!(on_demand_price("not json").is_err());
    }
}
