//! Whether each instance of a mixed-instances group is spot or on-demand: EC2's `InstanceLifecycle`
//! (DescribeInstances), which the Auto Scaling group's data does not carry. Only mixed groups are asked
//! about (a spot or on-demand group's instances are what the group buys), and only instances not seen
//! before: an instance's market never changes, so the answer is kept as long as the instance is.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_ec2::types::InstanceLifecycleType;
use parking_lot::Mutex;

use super::api::Api;
use super::instance_status::describe_instances;
use super::types::AsgInfo;
use crate::error::Result;
use crate::model::provider_id;

/// What EC2 said of each instance asked about: `true` for spot.
#[derive(Default)]
pub struct Markets {
    known: Mutex<HashMap<String, bool>>,
}

impl Markets {
    /// Each instance of the mixed-instances groups in `groups` whose market EC2 told, by provider id:
    /// `true` for spot. Instances not known yet are asked about (a failed call is logged; their
    /// groups' blend prices them until a later refresh asks again).
    pub async fn of_groups<'a>(
        &self,
        api: &Api,
        groups: impl IntoIterator<Item = &'a AsgInfo>,
    ) -> BTreeMap<String, bool> {
        let mixed: Vec<&AsgInfo> = groups
            .into_iter()
            .filter(|g| g.distribution.is_some())
            .collect();
        let ids: Vec<String> = mixed
            .iter()
            .flat_map(|g| g.instances.iter().map(|i| i.instance_id.clone()))
            .collect();
        let unknown: Vec<String> = {
            let mut known = self.known.lock();
            known.retain(|id, _| ids.contains(id));
            ids.iter()
                .filter(|id| !known.contains_key(*id))
                .cloned()
                .collect()
        };
        if !unknown.is_empty() {
            match lifecycles(api, &unknown).await {
                Ok(found) => self.known.lock().extend(found),
                Err(e) => {
                    tracing::warn!(error = %e, "reading instances' markets failed; mixed groups' instances are priced at their blend")
                }
            }
        }
        let known = self.known.lock();
        mixed
            .iter()
            .flat_map(|g| &g.instances)
            .filter_map(|i| {
                let spot = *known.get(&i.instance_id)?;
                Some((provider_id::aws(&i.availability_zone, &i.instance_id), spot))
            })
            .collect()
    }
}

/// Each of `ids` EC2 describes: whether it is spot.
async fn lifecycles(api: &Api, ids: &[String]) -> Result<HashMap<String, bool>> {
    let mut out = HashMap::new();
    describe_instances(api, ids, |i| {
        if let Some(id) = i.instance_id() {
            let spot = i.instance_lifecycle() == Some(&InstanceLifecycleType::Spot);
            out.insert(id.to_string(), spot);
        }
    })
    .await?;
    Ok(out)
}
