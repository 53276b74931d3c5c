//! metrics-server's objects (`metrics.k8s.io/v1beta1` `NodeMetrics` and `PodMetrics`), for
//! `LowNodeUtilization`'s `metricsUtilization`: read from the API by `run` and `deschedule`
//! ([`collect`], polled as the descheduler's metrics collector polls), from a dump by `simulate`,
//! and turned into the core's typed usage (`deschedule::actual`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

use crate::deschedule::actual::{Measured, Usage};
use crate::model::quantity::{parse_cpu_milli, parse_units};

/// The API group and version of metrics-server's objects.
pub const API_VERSION: &str = "metrics.k8s.io/v1beta1";

/// A node's usage as metrics-server reports it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeMetrics {
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub usage: BTreeMap<String, Quantity>,
}

/// A pod's usage, per container, as metrics-server reports it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodMetrics {
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub containers: Vec<ContainerMetrics>,
}

/// One container's usage.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ContainerMetrics {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub usage: BTreeMap<String, Quantity>,
}

/// A list of either, as the API answers a list.
#[derive(Debug, Clone, Deserialize)]
pub struct MetricsList<T> {
    #[serde(default = "Vec::new")]
    pub items: Vec<T>,
}

/// A usage quantity: `cpu` in millicores, anything else in whole units; negative is refused.
fn amount(name: &str, q: &Quantity) -> Result<i64, String> {
    let v = if name == "cpu" {
        parse_cpu_milli(&q.0)
    } else {
        parse_units(&q.0)
    }
    .map_err(|e| format!("usage.{name}: {e}"))?;
    if v < 0 {
        return Err(format!("usage.{name}: {:?} is negative", q.0));
    }
    Ok(v)
}

/// Refuses an object of another API group (a dump's `apiVersion`, when written).
fn check_version(v: &Option<String>) -> Result<(), String> {
    match v.as_deref() {
        None | Some(API_VERSION) => Ok(()),
        Some(other) => Err(format!("apiVersion {other} (expected {API_VERSION})")),
    }
}

/// A node's name and usage; cpu or memory left out counts as none (as the descheduler reads a
/// node's usage). Errors name the field.
pub fn node_sample(n: &NodeMetrics) -> Result<(String, Measured), String> {
    check_version(&n.api_version)?;
    let name = n.metadata.name.clone().ok_or("metadata.name: missing")?;
    let get = |r: &str| n.usage.get(r).map_or(Ok(0), |q| amount(r, q));
    Ok((
        name,
        Measured {
            cpu_milli: get("cpu")?,
            memory: get("memory")?,
        },
    ))
}

/// A pod's key (`namespace/name`) and the sum of its containers' usage; None when a container lacks
/// cpu or memory (the descheduler does not evict such a pod by usage). Errors name the field.
pub fn pod_usage(p: &PodMetrics) -> Result<(String, Option<Measured>), String> {
    check_version(&p.api_version)?;
    let name = p.metadata.name.as_deref().ok_or("metadata.name: missing")?;
    let key = crate::model::workload::pod_key(crate::k8s::namespace_of(&p.metadata), name);
    let mut sum = Measured::default();
    for (i, c) in p.containers.iter().enumerate() {
        let at = |e: String| format!("containers[{i}].{e}");
        let (Some(cpu), Some(memory)) = (c.usage.get("cpu"), c.usage.get("memory")) else {
            return Ok((key, None));
        };
        sum.cpu_milli = sum
            .cpu_milli
            .saturating_add(amount("cpu", cpu).map_err(at)?);
        sum.memory = sum
            .memory
            .saturating_add(amount("memory", memory).map_err(at)?);
    }
    Ok((key, Some(sum)))
}

/// The usage a dump's metrics objects say (`simulate`): None when it holds none (a
/// `metricsUtilization` then has nothing to read); an object that does not read is the error,
/// naming it.
pub fn dump_usage(
    nodes: &[NodeMetrics],
    pods: &[PodMetrics],
) -> crate::error::Result<Option<Usage>> {
    if nodes.is_empty() && pods.is_empty() {
        return Ok(None);
    }
    let named = |kind: &str, m: &ObjectMeta, e: String| {
        crate::error::Error::config(format!(
            "{kind} {}: {e}",
            m.name.as_deref().unwrap_or_default()
        ))
    };
    let mut usage = Usage::default();
    let samples = nodes
        .iter()
        .map(|n| node_sample(n).map_err(|e| named("NodeMetrics", &n.metadata, e)))
        .collect::<crate::error::Result<Vec<_>>>()?;
    usage.collect(samples);
    let pods = pods
        .iter()
        .map(|p| pod_usage(p).map_err(|e| named("PodMetrics", &p.metadata, e)))
        .collect::<crate::error::Result<Vec<_>>>()?;
    usage.set_pods(pods);
    Ok(Some(usage))
}

/// One collection from the API (`run`, `deschedule`): every NodeMetrics into `usage` (smoothed; a
/// node missing keeps its value, one that does not read is logged and left) and the PodMetrics
/// as they are now. A list that fails is the error (the caller keeps what it had).
pub async fn collect(client: &kube::Client, usage: &mut Usage) -> Result<(), kube::Error> {
    let nodes: MetricsList<NodeMetrics> = list(client, "nodes").await?;
    let samples: Vec<_> = nodes
        .items
        .iter()
        .filter_map(|n| {
            node_sample(n)
                .map_err(|e| tracing::warn!(error = e, "a NodeMetrics does not read; left out"))
                .ok()
        })
        .collect();
    usage.collect(samples);
    refresh_pods(client, usage).await
}

/// The pods' usage as metrics-server reports it now.
pub async fn refresh_pods(client: &kube::Client, usage: &mut Usage) -> Result<(), kube::Error> {
    let pods: MetricsList<PodMetrics> = list(client, "pods").await?;
    usage.set_pods(pods.items.iter().filter_map(|p| {
        pod_usage(p)
            .map_err(|e| tracing::warn!(error = e, "a PodMetrics does not read; left out"))
            .ok()
    }));
    Ok(())
}

/// Only the node metrics, smoothed into `usage` (the collector's periodic poll).
pub async fn collect_nodes(client: &kube::Client, usage: &mut Usage) -> Result<(), kube::Error> {
    let nodes: MetricsList<NodeMetrics> = list(client, "nodes").await?;
    usage.collect(nodes.items.iter().filter_map(|n| node_sample(n).ok()));
    Ok(())
}

async fn list<T: serde::de::DeserializeOwned>(
    client: &kube::Client,
    plural: &str,
) -> Result<MetricsList<T>, kube::Error> {
    let req = axum::http::Request::get(format!("/apis/{API_VERSION}/{plural}"))
        .body(Vec::new())
        .map_err(kube::Error::HttpError)?;
    client.request(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_sums_its_containers_and_one_without_memory_has_no_usage() {
        let p: PodMetrics = serde_json::from_str(
            r#"{"metadata":{"name":"a","namespace":"shop"},"containers":[
                {"name":"x","usage":{"cpu":"250m","memory":"1Gi"}},
                {"name":"y","usage":{"cpu":"1500000n","memory":"1024Ki"}}]}"#,
        )
        .unwrap();
        let (key, u) = pod_usage(&p).unwrap();
        assert_eq!(key, "shop/a");
        assert_eq!(
            u,
            Some(Measured {
                cpu_milli: 252,
                memory: (1 << 30) + (1 << 20)
            })
        );
        let p: PodMetrics = serde_json::from_str(
            r#"{"metadata":{"name":"a"},"containers":[{"name":"x","usage":{"cpu":"1"}}]}"#,
        )
        .unwrap();
        assert_eq!(pod_usage(&p).unwrap(), ("default/a".into(), None));
        let n: NodeMetrics =
            serde_json::from_str(r#"{"metadata":{"name":"n"},"usage":{"cpu":"-1"}}"#).unwrap();
        assert!(node_sample(&n).unwrap_err().contains("usage.cpu"));
    }
}
