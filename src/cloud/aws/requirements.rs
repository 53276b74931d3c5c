//! Attribute-based instance selection: a mixed-instances policy whose one override (or whose launch
//! template) names `InstanceRequirements` (vCPUs, memory, accelerators, ...) instead of instance types. As upstream's AWS
//! provider: the types AWS may launch are asked of EC2 (module `attribute_types`), the first one stands
//! for the group (labels, pods), and the template's cpu, memory and NVIDIA GPUs are the requirements'
//! minimums ([`Floor`]), what every type AWS may pick has. This module reads the requirements (plain
//! data, no AWS calls).

use std::hash::{Hash, Hasher};

use aws_sdk_autoscaling::types as asg;
use aws_sdk_ec2::types as ec2;

/// A group's instance requirements as EC2 takes them, compared and hashed by their text (SDK types are
/// neither `Eq` nor `Hash`).
#[derive(Debug, Clone)]
pub struct Requirements {
    request: ec2::InstanceRequirementsRequest,
    key: String,
    pub floor: Floor,
}

impl Requirements {
    /// The requirements as GetInstanceTypesFromInstanceRequirements takes them.
    pub fn request(&self) -> &ec2::InstanceRequirementsRequest {
        &self.request
    }
}

impl PartialEq for Requirements {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Requirements {}

impl Hash for Requirements {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key.hash(state)
    }
}

/// What every instance type meeting the requirements has at least: the template's capacity (upstream's
/// `updateCapacityWithRequirementsOverrides`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Floor {
    pub vcpus: Option<i64>,
    pub memory_mib: Option<i64>,
    /// `AcceleratorCount.Min` when the requirements ask for NVIDIA GPUs.
    pub nvidia_gpus: Option<i64>,
}

/// The requirements of a policy's overrides: only when there is exactly one override and it names
/// requirements (upstream's rule).
pub fn from_overrides(overrides: &[asg::LaunchTemplateOverrides]) -> Option<Requirements> {
    match overrides {
        [only] => only.instance_requirements().map(convert),
        _ => None,
    }
}

macro_rules! range {
    ($from:expr, $to:ty) => {
        $from
            .as_ref()
            .map(|r| <$to>::builder().set_min(r.min).set_max(r.max).build())
    };
}

macro_rules! names {
    ($from:expr, $to:ty) => {
        $from
            .as_ref()
            .map(|v| v.iter().map(|e| <$to>::from(e.as_str())).collect())
    };
}

/// Requirements (Auto Scaling's or a launch template's: their fields have the same names) as EC2's
/// request, every field carried over, and their floor; `$more` sets what only one kind has.
macro_rules! requirements {
    ($r:expr, $more:expr) => {{
        let r = $r;
        let performance = r.baseline_performance_factors.as_ref().map(|b| {
            ec2::BaselinePerformanceFactorsRequest::builder()
                .set_cpu(b.cpu.as_ref().map(|c| {
                    ec2::CpuPerformanceFactorRequest::builder()
                        .set_references(c.references.as_ref().map(|refs| {
                            refs.iter()
                                .map(|f| {
                                    ec2::PerformanceFactorReferenceRequest::builder()
                                        .set_instance_family(f.instance_family.clone())
                                        .build()
                                })
                                .collect()
                        }))
                        .build()
                }))
                .build()
        });
        let request = ec2::InstanceRequirementsRequest::builder()
            .set_v_cpu_count(range!(r.v_cpu_count, ec2::VCpuCountRangeRequest))
            .set_memory_mib(range!(r.memory_mib, ec2::MemoryMiBRequest))
            .set_cpu_manufacturers(names!(r.cpu_manufacturers, ec2::CpuManufacturer))
            .set_memory_gib_per_v_cpu(range!(r.memory_gib_per_v_cpu, ec2::MemoryGiBPerVCpuRequest))
            .set_excluded_instance_types(r.excluded_instance_types.clone())
            .set_instance_generations(names!(r.instance_generations, ec2::InstanceGeneration))
            .set_spot_max_price_percentage_over_lowest_price(
                r.spot_max_price_percentage_over_lowest_price,
            )
            .set_max_spot_price_as_percentage_of_optimal_on_demand_price(
                r.max_spot_price_as_percentage_of_optimal_on_demand_price,
            )
            .set_on_demand_max_price_percentage_over_lowest_price(
                r.on_demand_max_price_percentage_over_lowest_price,
            )
            .set_bare_metal(r.bare_metal.as_ref().map(|v| v.as_str().into()))
            .set_burstable_performance(r.burstable_performance.as_ref().map(|v| v.as_str().into()))
            .set_require_hibernate_support(r.require_hibernate_support)
            .set_network_interface_count(range!(
                r.network_interface_count,
                ec2::NetworkInterfaceCountRequest
            ))
            .set_local_storage(r.local_storage.as_ref().map(|v| v.as_str().into()))
            .set_local_storage_types(names!(r.local_storage_types, ec2::LocalStorageType))
            .set_total_local_storage_gb(range!(
                r.total_local_storage_gb,
                ec2::TotalLocalStorageGbRequest
            ))
            .set_baseline_ebs_bandwidth_mbps(range!(
                r.baseline_ebs_bandwidth_mbps,
                ec2::BaselineEbsBandwidthMbpsRequest
            ))
            .set_accelerator_types(names!(r.accelerator_types, ec2::AcceleratorType))
            .set_accelerator_count(range!(r.accelerator_count, ec2::AcceleratorCountRequest))
            .set_accelerator_manufacturers(names!(
                r.accelerator_manufacturers,
                ec2::AcceleratorManufacturer
            ))
            .set_accelerator_names(names!(r.accelerator_names, ec2::AcceleratorName))
            .set_accelerator_total_memory_mib(range!(
                r.accelerator_total_memory_mib,
                ec2::AcceleratorTotalMemoryMiBRequest
            ))
            .set_network_bandwidth_gbps(range!(
                r.network_bandwidth_gbps,
                ec2::NetworkBandwidthGbpsRequest
            ))
            .set_allowed_instance_types(r.allowed_instance_types.clone())
            .set_baseline_performance_factors(performance);
        let request = $more(request).build();
        let named = |v: Option<Vec<&str>>, want: &str| v.is_some_and(|v| v.contains(&want));
        let nvidia_gpu = named(
            r.accelerator_manufacturers
                .as_ref()
                .map(|v| v.iter().map(|m| m.as_str()).collect()),
            "nvidia",
        ) && named(
            r.accelerator_types
                .as_ref()
                .map(|v| v.iter().map(|t| t.as_str()).collect()),
            "gpu",
        );
        let floor = Floor {
            vcpus: r.v_cpu_count.as_ref().and_then(|c| c.min).map(i64::from),
            memory_mib: r.memory_mib.as_ref().and_then(|m| m.min).map(i64::from),
            nvidia_gpus: nvidia_gpu
                .then(|| r.accelerator_count.as_ref().and_then(|c| c.min))
                .flatten()
                .map(i64::from),
        };
        Requirements {
            key: format!("{request:?}"),
            request,
            floor,
        }
    }};
}

/// Auto Scaling's requirements (a mixed-instances policy's override) as EC2's request.
fn convert(r: &asg::InstanceRequirements) -> Requirements {
    requirements!(r, |b| b)
}

/// A launch template's own requirements (used when no override names types or requirements).
pub fn from_template(r: &ec2::InstanceRequirements) -> Requirements {
    requirements!(r, |b: ec2::builders::InstanceRequirementsRequestBuilder| b
        .set_require_encryption_in_transit(r.require_encryption_in_transit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn override_with(r: asg::InstanceRequirements) -> asg::LaunchTemplateOverrides {
        asg::LaunchTemplateOverrides::builder()
            .instance_requirements(r)
            .build()
    }

    fn gpu_requirements() -> asg::InstanceRequirements {
        asg::InstanceRequirements::builder()
            .v_cpu_count(asg::VCpuCountRequest::builder().min(4).max(16).build())
            .memory_mib(asg::MemoryMiBRequest::builder().min(16384).build())
            .accelerator_manufacturers(asg::AcceleratorManufacturer::Nvidia)
            .accelerator_types(asg::AcceleratorType::Gpu)
            .accelerator_count(asg::AcceleratorCountRequest::builder().min(1).build())
            .excluded_instance_types("p3.*")
            .build()
    }

    #[test]
    fn one_override_with_requirements_gives_ec2_request_and_floor() {
        let r = from_overrides(&[override_with(gpu_requirements())]).unwrap();
        assert_eq!(
            r.floor,
            Floor {
                vcpus: Some(4),
                memory_mib: Some(16384),
                nvidia_gpus: Some(1)
            }
        );
        let v = r.request.v_cpu_count().unwrap();
        assert_eq!((v.min(), v.max()), (Some(4), Some(16)));
        assert_eq!(r.request.excluded_instance_types(), ["p3.*"]);
        assert_eq!(
            r.request.accelerator_manufacturers(),
            [ec2::AcceleratorManufacturer::Nvidia]
        );
        assert_eq!(
            r,
            from_overrides(&[override_with(gpu_requirements())]).unwrap()
        );
    }

    #[test]
    fn a_launch_templates_requirements_read_the_same() {
        let r = from_template(
            &ec2::InstanceRequirements::builder()
                .v_cpu_count(ec2::VCpuCountRange::builder().min(4).max(16).build())
                .memory_mib(ec2::MemoryMiB::builder().min(16384).build())
                .accelerator_manufacturers(ec2::AcceleratorManufacturer::Nvidia)
                .accelerator_types(ec2::AcceleratorType::Gpu)
                .accelerator_count(ec2::AcceleratorCount::builder().min(1).build())
                .excluded_instance_types("p3.*")
                .require_encryption_in_transit(true)
                .build(),
        );
        let from_override = from_overrides(&[override_with(gpu_requirements())]).unwrap();
        assert_eq!(r.floor, from_override.floor);
        assert_eq!(r.request.require_encryption_in_transit(), Some(true));
        assert_eq!(r.request.excluded_instance_types(), ["p3.*"]);
        assert_ne!(
            r, from_override,
            "they differ in require_encryption_in_transit"
        );
    }

    #[test]
    fn gpus_count_only_for_nvidia_gpus_and_two_overrides_are_not_requirements() {
        let amd = asg::InstanceRequirements::builder()
            .v_cpu_count(asg::VCpuCountRequest::builder().min(2).build())
            .memory_mib(asg::MemoryMiBRequest::builder().min(4096).build())
            .accelerator_manufacturers(asg::AcceleratorManufacturer::Amd)
            .accelerator_types(asg::AcceleratorType::Gpu)
            .accelerator_count(asg::AcceleratorCountRequest::builder().min(1).build())
            .build();
        let r = from_overrides(&[override_with(amd.clone())]).unwrap();
        assert_eq!(r.floor.nvidia_gpus, None);
        assert!(from_overrides(&[override_with(amd.clone()), override_with(amd)]).is_none());
        let typed = asg::LaunchTemplateOverrides::builder()
            .instance_type("m5.large")
            .build();
        assert!(from_overrides(&[typed]).is_none());
    }
}
