//! Which Auto Scaling group an instance belongs to as AWS says now (DescribeAutoScalingInstances), for
//! interruption notices about instances the last refresh did not see.

use std::collections::HashMap;

use super::AwsCloud;
use crate::error::Result;

/// Most instance ids one DescribeAutoScalingInstances call takes.
const IDS_PER_CALL: usize = 50;

/// [`crate::cloud::Cloud::owners`]: the group of each of `instance_ids` as AWS answers now, kept to
/// the groups `cloud` manages.
pub(super) async fn fresh(
    cloud: &AwsCloud,
    instance_ids: &[String],
) -> Result<HashMap<String, String>> {
    let mut owners = HashMap::new();
    for chunk in instance_ids.chunks(IDS_PER_CALL) {
        let out = cloud
            .api
            .call(
                "autoscaling/DescribeAutoScalingInstances",
                cloud
                    .api
                    .asg
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
    let snapshot = cloud.state.load();
    owners.retain(|_, group| snapshot.group(group).is_ok());
    Ok(owners)
}
