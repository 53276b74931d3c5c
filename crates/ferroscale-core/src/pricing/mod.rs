//! Prices of nodes, pods and node groups: one module used by the CloudProvider pricing RPCs, the expander
//! and the standalone loop. `book` decides a group's price from instance-type prices and how the group buys
//! capacity; `overrides` is the user's price file; the AWS cloud fills the book from the Pricing API and
//! spot price history (`cloud::aws::prices`), the memory cloud from its config.
//!
//! - A node costs its group's hourly price; a node of no group is priced by its
//!   `node.kubernetes.io/instance-type` label: the on-demand price of that type, else a group's price of it.
//! - A pod costs its requests at the cheapest per-unit rates in the cluster: each priced group's hourly
//!   price is split half to its vCPUs and half to its GiB of memory, and the lowest rate per vCPU-hour and
//!   per GiB-hour is taken ("what the pod would cost on the most efficient capacity we have"):
//!   `price = cpu_cores × min(price_g / 2 / vcpus_g) + memory_GiB × min(price_g / 2 / GiB_g)`.
//!   GPU requests add the cheapest whole-node price per GPU among GPU groups.

pub mod book;
pub mod overrides;

pub use book::{PriceBook, Purchase};
pub use overrides::PriceOverrides;

/// Where on-demand and spot prices come from (`--pricing-source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PricingSource {
    /// The AWS Pricing API (on-demand) and EC2 spot price history, adjusted by the price file.
    #[default]
    Aws,
    /// The price file alone, for isolated clusters with no route to the Pricing API.
    File,
}

impl PricingSource {
    /// Every source by name, as flags and files spell them.
    pub const NAMES: [&'static str; 2] = ["aws", "file"];
}

impl std::str::FromStr for PricingSource {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "aws" => Ok(PricingSource::Aws),
            "file" => Ok(PricingSource::File),
            _ => Err(format!("{s:?}: expected one of {:?}", Self::NAMES)),
        }
    }
}

use crate::error::{Error, Result};
use crate::labels;
use crate::model::{Resources, Snapshot};

const GIB: f64 = (1u64 << 30) as f64;

/// Hourly price of a node known by provider id and labels.
pub fn node_price_per_hour(
    snapshot: &Snapshot,
    provider_id: &str,
    labels: &std::collections::BTreeMap<String, String>,
    name: &str,
) -> Result<f64> {
    if let Some(g) = snapshot.group_for_provider_id(provider_id) {
        return g.price_per_hour.ok_or_else(|| {
            Error::NoPrice(format!(
                "node {name:?} (node group {:?} has no price)",
                g.id
            ))
        });
    }
    let instance_type = labels.get(labels::INSTANCE_TYPE);
    instance_type
        .and_then(|t| {
            snapshot.instance_price(t).or_else(|| {
                snapshot
                    .groups()
                .filter(|g| g.template.labels.get(labels::INSTANCE_TYPE) == Some(t))
                .find_map(|g| g.price_per_hour)
            })
        })
        .ok_or_else(|| {
            Error::NoPrice(format!(
                "node {name:?}: no node group owns provider id {provider_id:?} or prices instance type {:?}",
                instance_type.map(String::as_str).unwrap_or("")
            ))
        })
}

/// Cheapest (per vCPU-hour, per GiB-hour, per GPU-hour) rates over (hourly price, node capacity) pairs:
/// each price is split half to the vCPUs and half to the GiB of memory; a GPU node's whole price goes to its
/// GPUs. `None` where no pair has that resource.
pub fn cheapest_rates<'a>(
    priced: impl IntoIterator<Item = (f64, &'a Resources)>,
) -> (Option<f64>, Option<f64>, Option<f64>) {
    let mut cpu = f64::INFINITY;
    let mut mem = f64::INFINITY;
    let mut gpu = f64::INFINITY;
    for (price, cap) in priced {
        if cap.cpu_milli > 0 && cap.memory > 0 {
            cpu = cpu.min(price / 2.0 / (cap.cpu_milli as f64 / 1000.0));
            mem = mem.min(price / 2.0 / (cap.memory as f64 / GIB));
        }
        if cap.gpus() > 0 {
            gpu = gpu.min(price / cap.gpus() as f64);
        }
    }
    let finite = |x: f64| x.is_finite().then_some(x);
    (finite(cpu), finite(mem), finite(gpu))
}

/// Cheapest rates across the priced groups of a snapshot.
pub fn unit_rates(snapshot: &Snapshot) -> Option<(f64, f64, Option<f64>)> {
    let priced = snapshot
        .groups()
        .filter_map(|g| Some((g.price_per_hour?, &g.template.capacity)));
    match cheapest_rates(priced) {
        (Some(cpu), Some(mem), gpu) => Some((cpu, mem, gpu)),
        _ => None,
    }
}

/// Hourly price of a pod with these requests.
pub fn pod_price_per_hour(snapshot: &Snapshot, requests: &Resources, pod: &str) -> Result<f64> {
    let (cpu_rate, mem_rate, gpu_rate) = unit_rates(snapshot)
        .ok_or_else(|| Error::NoPrice(format!("pod {pod:?}: no node group has a price")))?;
    let mut price =
        requests.cpu_milli as f64 / 1000.0 * cpu_rate + requests.memory as f64 / GIB * mem_rate;
    if requests.gpus() > 0 {
        let rate = gpu_rate.ok_or_else(|| {
            Error::NoPrice(format!(
                "pod {pod:?}: requests GPUs but no GPU node group has a price"
            ))
        })?;
        price += requests.gpus() as f64 * rate;
    }
    Ok(price)
}
