//! Attribute-based instance selection: a mixed-instances policy whose one override names
//! `InstanceRequirements` (vCPUs, memory, accelerators, ...) instead of instance types. As upstream's AWS
//! provider: the types AWS may launch are asked of EC2 (`GetInstanceTypesFromInstanceRequirements`, for the
//! architecture and virtualization type of the launch template's image, `DescribeImages`), the first one
//! stands for the group (labels, pods), and the template's cpu, memory and NVIDIA GPUs are the
//! requirements' minimums, what every type AWS may pick has. Both answers are cached ([`super::ttl`]).

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use aws_sdk_autoscaling::types as asg;
use aws_sdk_ec2::types as ec2;

use super::api::Api;
use super::ttl;
use crate::error::{Error, Result};

/// A group's instance requirements as EC2 takes them, compared and hashed by their text (SDK types are
/// neither `Eq` nor `Hash`).
#[derive(Debug, Clone)]
pub struct Requirements {
    request: ec2::InstanceRequirementsRequest,
    key: String,
    pub floor: Floor,
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

/// Auto Scaling's requirements as EC2's request, every field carried over.
fn convert(r: &asg::InstanceRequirements) -> Requirements {
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
        .set_baseline_performance_factors(performance)
        .build();
    let nvidia_gpu = r
        .accelerator_manufacturers()
        .contains(&asg::AcceleratorManufacturer::Nvidia)
        && r.accelerator_types().contains(&asg::AcceleratorType::Gpu);
    let floor = Floor {
        vcpus: r.v_cpu_count().and_then(|c| c.min()).map(i64::from),
        memory_mib: r.memory_mib().and_then(|m| m.min()).map(i64::from),
        nvidia_gpus: nvidia_gpu
            .then(|| r.accelerator_count().and_then(|c| c.min()))
            .flatten()
            .map(i64::from),
    };
    Requirements {
        key: format!("{request:?}"),
        request,
        floor,
    }
}

/// An image's architecture and virtualization type, which the instance types must support.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Image {
    architectures: Vec<String>,
    virtualization: Vec<String>,
}

/// Cached answers of DescribeImages and GetInstanceTypesFromInstanceRequirements.
pub struct Resolver {
    images: moka::future::Cache<String, Arc<Image>>,
    types: moka::future::Cache<(Requirements, String), Arc<Vec<String>>>,
}

impl Default for Resolver {
    fn default() -> Self {
        Resolver {
            images: moka::future::Cache::builder()
                .time_to_live(ttl::IMAGE_TTL)
                .build(),
            types: moka::future::Cache::builder()
                .time_to_live(ttl::INSTANCE_REQUIREMENTS_TTL)
                .build(),
        }
    }
}

impl Resolver {
    /// The instance types meeting `req` for the image `image_id` launches, in EC2's order (never empty);
    /// `group` names the Auto Scaling group in errors.
    pub async fn types(
        &self,
        api: &Api,
        group: &str,
        req: &Requirements,
        image_id: &str,
    ) -> Result<Arc<Vec<String>>> {
        let key = (req.clone(), image_id.to_string());
        if let Some(t) = self.types.get(&key).await {
            return Ok(t);
        }
        let image = self.image(api, group, image_id).await?;
        let found = Arc::new(types_for(api, &req.request, &image).await?);
        if found.is_empty() {
            return Err(Error::GroupData {
                group: group.to_string(),
                reason: format!("no instance type meets the instance requirements for image {image_id}"),
            });
        }
        self.types.insert(key, found.clone()).await;
        Ok(found)
    }

    async fn image(&self, api: &Api, group: &str, image_id: &str) -> Result<Arc<Image>> {
        if let Some(i) = self.images.get(image_id).await {
            return Ok(i);
        }
        let out = api
            .call(
                "ec2/DescribeImages",
                api.ec2.describe_images().image_ids(image_id).send(),
            )
            .await?;
        let image = Image {
            architectures: out
                .images()
                .iter()
                .filter_map(|i| i.architecture().map(|a| a.as_str().to_string()))
                .collect(),
            virtualization: out
                .images()
                .iter()
                .filter_map(|i| i.virtualization_type().map(|v| v.as_str().to_string()))
                .collect(),
        };
        if image.architectures.is_empty() {
            return Err(Error::GroupData {
                group: group.to_string(),
                reason: format!("launch template image {image_id} not found"),
            });
        }
        let image = Arc::new(image);
        self.images
            .insert(image_id.to_string(), image.clone())
            .await;
        Ok(image)
    }
}

/// Every page of GetInstanceTypesFromInstanceRequirements.
async fn types_for(
    api: &Api,
    req: &ec2::InstanceRequirementsRequest,
    image: &Image,
) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut token = None;
    loop {
        let page = api
            .call(
                "ec2/GetInstanceTypesFromInstanceRequirements",
                api.ec2
                    .get_instance_types_from_instance_requirements()
                    .set_architecture_types(Some(
                        image
                            .architectures
                            .iter()
                            .map(|a| ec2::ArchitectureType::from(a.as_str()))
                            .collect(),
                    ))
                    .set_virtualization_types(Some(
                        image
                            .virtualization
                            .iter()
                            .map(|v| ec2::VirtualizationType::from(v.as_str()))
                            .collect(),
                    ))
                    .instance_requirements(req.clone())
                    .set_next_token(token.take())
                    .send(),
            )
            .await?;
        out.extend(
            page.instance_types()
                .iter()
                .filter_map(|t| t.instance_type().map(str::to_string)),
        );
        match page.next_token() {
            Some(t) if !t.is_empty() => token = Some(t.to_string()),
            _ => return Ok(out),
        }
    }
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
        assert_eq!(r, from_overrides(&[override_with(gpu_requirements())]).unwrap());
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
