//! Which Auto Scaling group an instance belongs to as AWS says now (DescribeAutoScalingInstances), for
//! interruption notices about instances the last refresh did not see.

use std::collections::HashMap;

use super::api::Api;
use super::AwsCloud;
use crate::error::Result;

/// Most instance ids one DescribeAutoScalingInstances call takes.
const IDS_PER_CALL: usize = 50;

impl Api {
    /// The Auto Scaling group of each of `instance_ids` that is in one (others are left out).
    pub async fn instance_groups(
        &self,
        instance_ids: &[String],
    ) -> Result<HashMap<String, String>> {
        let mut owners = HashMap::new();
        for chunk in instance_ids.chunks(IDS_PER_CALL) {
            let out = self
                .call(
                    "autoscaling/DescribeAutoScalingInstances",
                    self.asg
                        .describe_auto_scaling_instances()
                        .set_instance_ids(Some(chunk.to_vec()))
                        .max_records(IDS_PER_CALL as i32)
                        .send(),
                )
                .await?;
            for i in out.auto_scaling_instances() {
                if let (Some(id), Some(group)) = (i.instance_id(), i.auto_scaling_group_name()) {
                    owners.insert(id.to_string(), group.to_string());
                }
            }
        }
        Ok(owners)
    }
}

impl AwsCloud {
    /// [`crate::cloud::Cloud::owners`]: AWS's answer now, kept to the groups this cloud manages.
    pub(super) async fn fresh_owners(
        &self,
        instance_ids: &[String],
    ) -> Result<HashMap<String, String>> {
        if instance_ids.is_empty() {
            return Ok(HashMap::new());
        }
        let mut owners = self.api.instance_groups(instance_ids).await?;
        let snapshot = self.state.load();
        owners.retain(|_, group| snapshot.group(group).is_ok());
        Ok(owners)
    }
}
