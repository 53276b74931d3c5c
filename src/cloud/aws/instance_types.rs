//! EC2 instance types (vCPUs, memory, ENIs, GPUs) from DescribeInstanceTypes, cached for
//! [`super::ttl::INSTANCE_TYPES_TTL`]; a type not seen before is fetched when a group starts using it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use super::api::{Api, RawGroup};
use super::ttl;
use super::types::InstanceTypeInfo;
use crate::error::Error;

/// Facts by instance type name.
pub type TypeFacts = HashMap<String, Arc<InstanceTypeInfo>>;

/// Cached instance type facts.
pub struct InstanceTypes {
    cache: moka::future::Cache<String, Arc<InstanceTypeInfo>>,
}

impl Default for InstanceTypes {
    fn default() -> Self {
        InstanceTypes {
            cache: moka::future::Cache::builder()
                .time_to_live(ttl::INSTANCE_TYPES_TTL)
                .build(),
        }
    }
}

impl InstanceTypes {
    /// Facts of every type the groups use. When AWS cannot be read, the cached ones and the error: the
    /// groups whose types are missing keep their last good data.
    pub async fn facts(
        &self,
        api: &Api,
        raw: &BTreeMap<String, RawGroup>,
    ) -> (TypeFacts, Option<Error>) {
        let wanted: BTreeSet<&String> = raw.values().flat_map(|g| &g.info.instance_types).collect();
        let mut out = HashMap::new();
        let mut missing = Vec::new();
        for name in wanted {
            match self.cache.get(name).await {
                Some(t) => {
                    out.insert(name.clone(), t);
                }
                None => missing.push(name.clone()),
            }
        }
        if missing.is_empty() {
            return (out, None);
        }
        match api.instance_types(&missing).await {
            Ok(found) => {
                for t in found {
                    let t = Arc::new(t);
                    self.cache.insert(t.name.clone(), t.clone()).await;
                    out.insert(t.name.clone(), t);
                }
                (out, None)
            }
            Err(e) => (out, Some(e)),
        }
    }
}
