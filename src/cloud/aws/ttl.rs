//! Every cache lifetime and AWS deadline of the AWS cloud, in one place.

use std::time::Duration;

/// Default minimum time between two snapshots of the Auto Scaling groups (`--aws-refresh-interval`).
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(60);
/// Share of the refresh interval added or removed at random, so replicas do not refresh in lockstep.
pub const REFRESH_JITTER: f64 = 0.1;
/// After a failed refresh, the next Refresh call may try again this soon (AWS coming back is noticed fast).
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(5);
/// Instance type facts (vCPUs, memory, ENIs) change only when AWS launches new types.
pub const INSTANCE_TYPES_TTL: Duration = Duration::from_secs(12 * 3600);
/// Launch template versions named by number never change; `$Default`/`$Latest` are re-read this often.
pub const LAUNCH_TEMPLATE_MOVING_VERSION_TTL: Duration = Duration::from_secs(600);
/// Numbered launch template versions and launch configurations are immutable: keep them long.
pub const LAUNCH_TEMPLATE_FIXED_VERSION_TTL: Duration = Duration::from_secs(24 * 3600);
/// The instance types meeting a group's instance requirements (attribute-based selection) change only
/// when AWS launches new types or the requirements change (a new key): upstream's 20 minutes.
pub const INSTANCE_REQUIREMENTS_TTL: Duration = Duration::from_secs(20 * 60);
/// An AMI's architecture and virtualization type never change.
pub const IMAGE_TTL: Duration = Duration::from_secs(24 * 3600);
/// An EKS managed node group's labels, taints and tags (DescribeNodegroup), failed reads included, as
/// upstream's managed node group cache...
pub const EKS_NODEGROUP_TTL: Duration = Duration::from_secs(6 * 60);
/// ...each entry expiring up to this much earlier at random, so the groups are not all read in one refresh.
pub const EKS_NODEGROUP_TTL_JITTER: Duration = Duration::from_secs(60);
/// Deadline of one AWS call, retries included, well under CA's 5 s per-RPC deadline.
pub const AWS_OPERATION_TIMEOUT: Duration = Duration::from_secs(4);
/// Deadline of one attempt of an AWS call.
pub const AWS_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);
/// Without a scale-up of ours to anchor on, failed launches this recent still mark placeholders.
pub const FAILED_ACTIVITY_LOOKBACK: Duration = Duration::from_secs(15 * 60);
/// Default age after which on-demand and spot prices are read again (`--pricing-refresh-interval`).
pub const DEFAULT_PRICE_REFRESH_INTERVAL: Duration = Duration::from_secs(12 * 3600);
/// After a failed price read, prices are not asked for again this soon (the last good ones are served).
pub const PRICE_RETRY_AFTER_FAILURE: Duration = Duration::from_secs(300);
/// Deadline of one Pricing API call: prices are read off CA's path, so a slow answer may take longer.
pub const PRICE_OPERATION_TIMEOUT: Duration = Duration::from_secs(30);
/// Deadline of one attempt of a Pricing API call.
pub const PRICE_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// The price task never sleeps less than this between reads (a zero interval does not spin).
pub const PRICE_TASK_MIN_SLEEP: Duration = Duration::from_secs(1);
/// The background refresh checks the state's age at least this rarely.
pub const MIN_BACKGROUND_INTERVAL: Duration = Duration::from_secs(10);
/// Without CA's Refresh calls, the state is read again in the background once it is this many refresh
/// intervals old, so a lone replica taken out of its Service by a failing readiness probe recovers.
pub const BACKGROUND_REFRESH_AFTER: u32 = 2;
/// `/readyz` fails once the served state is this many refresh intervals old.
pub const STALE_AFTER_INTERVALS: u32 = 5;
/// Refresh intervals below this count as this for staleness (tests refresh on every call).
pub const MIN_STALENESS_INTERVAL: Duration = Duration::from_secs(1);
/// How long a terminated instance is remembered, so a retried DeleteNodes of it succeeds.
pub const TERMINATED_MEMORY: Duration = Duration::from_secs(3600);
/// An instance's fate EC2 confirmed for an interruption notice (its spot request marked for termination,
/// its state stopping, a scheduled event) is not asked for again this soon: the two minutes of a spot
/// warning. A contradiction is never kept.
pub const NOTICE_CONFIRMED_TTL: Duration = Duration::from_secs(120);
