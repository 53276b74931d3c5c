//! Prices of nodes and pods from the node groups' hourly prices (pure; the AWS price source feeds the same
//! `price_per_hour` later).
//!
//! - A node costs its group's hourly price; a node of no group is priced by a group with the same
//!   `node.kubernetes.io/instance-type`.
//! - A pod costs its requests at the cheapest per-unit rates in the cluster: each priced group's hourly
//!   price is split half to its vCPUs and half to its GiB of memory, and the lowest rate per vCPU-hour and
//!   per GiB-hour is taken ("what the pod would cost on the most efficient capacity we have"). GPU requests
//!   add the cheapest whole-node price per GPU among GPU groups.

use crate::error::{Error, Result};
use crate::model::{Resources, Snapshot};

const INSTANCE_TYPE_LABEL: &str = "node.kubernetes.io/instance-type";
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
    let instance_type = labels.get(INSTANCE_TYPE_LABEL);
    instance_type
        .and_then(|t| {
            snapshot
                .groups()
                .filter(|g| g.template.labels.get(INSTANCE_TYPE_LABEL) == Some(t))
                .find_map(|g| g.price_per_hour)
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
