//! What ferroscale keeps of AWS's answers: plain data, converted from the SDK types once per refresh.

use std::collections::BTreeMap;

/// An EC2 instance type as DescribeInstanceTypes reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceTypeInfo {
    /// e.g. `c5d.large`.
    pub name: String,
    pub vcpus: i64,
    pub memory_mib: i64,
    /// Number of GPUs (0 when none).
    pub gpus: i64,
    /// GPU manufacturer as AWS spells it (`NVIDIA`, `AMD`, ...).
    pub gpu_manufacturer: Option<String>,
    /// GPU model as AWS spells it (`T4`, `A10G`, ...).
    pub gpu_name: Option<String>,
    /// Processor architectures as AWS spells them (`x86_64`, `arm64`, `i386`, `x86_64_mac`).
    pub architectures: Vec<String>,
    /// Maximum network interfaces.
    pub max_enis: i64,
    /// IPv4 addresses per network interface.
    pub ipv4_per_eni: i64,
    /// Local instance-store size in GB, if any.
    pub instance_storage_gb: Option<i64>,
}

/// One instance of an Auto Scaling group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsgInstance {
    pub instance_id: String,
    pub availability_zone: String,
    /// Lifecycle state as AWS spells it (`Pending`, `InService`, `Terminating:Wait`, ...).
    pub lifecycle_state: String,
    pub instance_type: Option<String>,
    /// The launch configuration or template version it was launched from (`lifecycle`'s revision).
    pub revision: Option<String>,
}

/// An Auto Scaling group with the instance types its launches may use, resolved from its launch
/// configuration, launch template version or mixed-instances policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsgInfo {
    pub name: String,
    pub min_size: i32,
    pub max_size: i32,
    pub desired_capacity: i32,
    pub tags: BTreeMap<String, String>,
    pub availability_zones: Vec<String>,
    pub instances: Vec<AsgInstance>,
    /// Instance types the group may launch (one, or the overrides of a mixed-instances policy).
    pub instance_types: Vec<String>,
    /// The InstancesDistribution of a mixed-instances policy.
    pub distribution: Option<Distribution>,
    /// The launch template or configuration asks for spot capacity.
    pub spot_launch: bool,
    /// The revision new instances launch from, once resolved.
    pub revision: Option<String>,
    /// Revisions of the launch templates a mixed-instances policy's overrides name, once resolved:
    /// instances of their types launch from those, and are as current.
    pub override_revisions: std::collections::BTreeSet<String>,
    /// What every type of an attribute-based group has at least (its instance requirements' minimums).
    pub requirements_floor: Option<super::requirements::Floor>,
}

/// How a mixed-instances group splits on-demand and spot capacity (AWS's InstancesDistribution).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distribution {
    pub on_demand_base: i32,
    /// 0..=100; AWS's default is 100.
    pub on_demand_percent_above_base: i32,
    /// `OnDemandAllocationStrategy = lowest-price` (AWS's default is `prioritized`).
    pub on_demand_lowest_price: bool,
}

/// What a launch configuration or template version says about the instances it launches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchFacts {
    pub instance_type: Option<String>,
    /// A spot price (configuration) or spot market options (template).
    pub spot: bool,
    /// A template version's revision (id and version number).
    pub revision: Option<String>,
    /// The AMI a template version launches (attribute-based selection needs its architecture).
    pub image_id: Option<String>,
    /// A template version's instance requirements, in place of an instance type.
    pub requirements: Option<super::requirements::Requirements>,
}
