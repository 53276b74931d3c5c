//! What each generation of upstream's externalgrpc client reads of a `NodeGroupGetOptions` answer, read
//! from its `GetOptions` (kubernetes/autoscaler `cloudprovider/externalgrpc/externalgrpc_node_group.go`):
//!
//! | CA | sends defaults in | reads of an OK answer | reads as zero |
//! |---|---|---|---|
//! | ≤ 1.34 | `scaleDownUnneededTime`, `scaleDownUnreadyTime`, `MaxNodeProvisionTime` (meta/v1 Duration) | both thresholds, those three durations | `ignoreDaemonSetsUtilization`, `zeroOrMaxNodeScaling`, `MaxNodeStartupTime` |
//! | ≥ 1.35 | `scaleDown{Unneeded,Unready}Duration`, `MaxNodeProvisionDuration` (protobuf Duration) | the above, `zeroOrMaxNodeScaling`, `ignoreDaemonSetsUtilization` | `MaxNodeStartupTime` |
//!
//! No released client has a field for the start-up time, so any OK answer makes CA treat that group's
//! nodes as unready the moment they register unready (kubernetes/autoscaler#10245). An OK answer is
//! therefore given only when the group's own options change something the calling client reads; else
//! `UNIMPLEMENTED`, and CA keeps every default, start-up time included.

use crate::model::OptionValues;
use crate::proto::externalgrpc as pb;

/// Which client asked, told by the fields its defaults came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// CA ≤ 1.34: meta/v1 durations only.
    Old,
    /// CA ≥ 1.35 (and 1.34.2+, which sends both forms).
    New,
}

impl Generation {
    #[allow(deprecated)]
    pub fn of(defaults: Option<&pb::NodeGroupAutoscalingOptions>) -> Self {
        match defaults {
            Some(d)
                if d.scale_down_unneeded_duration.is_none()
                    && d.scale_down_unready_duration.is_none()
                    && d.max_node_provision_duration.is_none()
                    && (d.scale_down_unneeded_time.is_some()
                        || d.scale_down_unready_time.is_some()
                        || d.max_node_provision_time.is_some()) =>
            {
                Generation::Old
            }
            _ => Generation::New,
        }
    }

    /// Whether `merged` differs from `defaults` in a field this client reads.
    pub fn reads_a_change(self, defaults: &OptionValues, merged: &OptionValues) -> bool {
        let both = defaults.scale_down_utilization_threshold
            != merged.scale_down_utilization_threshold
            || defaults.scale_down_gpu_utilization_threshold
                != merged.scale_down_gpu_utilization_threshold
            || defaults.scale_down_unneeded_time != merged.scale_down_unneeded_time
            || defaults.scale_down_unready_time != merged.scale_down_unready_time
            || defaults.max_node_provision_time != merged.max_node_provision_time;
        both || (self == Generation::New
            && (defaults.zero_or_max_node_scaling != merged.zero_or_max_node_scaling
                || defaults.ignore_daemonsets_utilization != merged.ignore_daemonsets_utilization))
    }
}
