//! The AWS calls the cloud makes, each timed into `cluster_autoscaler_aws_request_duration_seconds` and
//! counted, and their answers converted into the plain types of `types`. One function per AWS concept:
//! groups, launch configurations and templates, instance types, scaling activities, scaling.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use aws_sdk_autoscaling::types::{Filter, LifecycleState, ScalingActivityStatusCode};
use aws_sdk_ec2::types::InstanceType;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;

use super::types::{AsgInfo, AsgInstance, Distribution, InstanceTypeInfo, LaunchFacts};
use crate::error::Result;
use crate::metrics::{AwsLabels, Metrics};

/// The Pricing API's region: it answers only in a few regions, us-east-1 among them, for every region's
/// prices.
pub const PRICING_REGION: &str = "us-east-1";

/// Maximum names per DescribeAutoScalingGroups call.
const ASG_NAMES_PER_CALL: usize = 100;
/// Maximum names per DescribeLaunchConfigurations call.
const LAUNCH_CONFIGS_PER_CALL: usize = 50;
/// Maximum types per DescribeInstanceTypes call.
const INSTANCE_TYPES_PER_CALL: usize = 100;

/// The SDK clients with call accounting.
#[derive(Clone)]
pub struct Api {
    pub asg: aws_sdk_autoscaling::Client,
    pub ec2: aws_sdk_ec2::Client,
    /// EKS, for managed node groups' labels and taints.
    pub eks: aws_sdk_eks::Client,
    /// The Pricing API, always in [`PRICING_REGION`].
    pub pricing: aws_sdk_pricing::Client,
    metrics: Arc<Metrics>,
    calls: Arc<AtomicU64>,
}

/// How a group's launches pick their instance type, before it is resolved.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LaunchSource {
    Configuration(String),
    /// (template id or name, version).
    Template {
        id: Option<String>,
        name: Option<String>,
        version: String,
    },
    /// Overrides of a mixed-instances policy, with the template for when they name no type, the
    /// instance requirements of an attribute-based policy, and the launch templates overrides name for
    /// their own types (distinct, in order).
    Mixed {
        overrides: Vec<String>,
        requirements: Option<Box<super::requirements::Requirements>>,
        template: Option<Box<LaunchSource>>,
        override_templates: Vec<LaunchSource>,
    },
    Unknown,
}

/// A group as DescribeAutoScalingGroups returns it, before its instance types are resolved.
#[derive(Debug, Clone)]
pub struct RawGroup {
    pub info: AsgInfo,
    pub launch: LaunchSource,
}

impl Api {
    /// Clients from the SDK's configuration; `pricing_endpoint` overrides the Pricing API's endpoint only.
    pub fn new(
        config: &aws_config::SdkConfig,
        pricing_endpoint: Option<&str>,
        metrics: Arc<Metrics>,
    ) -> Self {
        // Prices are read off CA's path: a slow Pricing API may take longer than the Auto Scaling calls.
        let mut pricing = aws_sdk_pricing::config::Builder::from(config)
            .region(aws_config::Region::new(PRICING_REGION))
            .timeout_config(
                aws_config::timeout::TimeoutConfig::builder()
                    .operation_timeout(super::ttl::PRICE_OPERATION_TIMEOUT)
                    .operation_attempt_timeout(super::ttl::PRICE_ATTEMPT_TIMEOUT)
                    .build(),
            );
        if let Some(url) = pricing_endpoint {
            pricing = pricing.endpoint_url(url);
        }
        Api {
            asg: aws_sdk_autoscaling::Client::new(config),
            ec2: aws_sdk_ec2::Client::new(config),
            eks: aws_sdk_eks::Client::new(config),
            pricing: aws_sdk_pricing::Client::from_conf(pricing.build()),
            metrics,
            calls: Arc::new(AtomicU64::new(0)),
        }
    }

    /// AWS API calls made so far (every attempt group counts once).
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Makes one AWS call: counted, timed into the metric with its outcome (the AWS error code when it
    /// failed), and its error classified ([`super::errors::classify`]).
    pub(super) async fn call<T, E, R, F>(&self, endpoint: &'static str, fut: F) -> Result<T>
    where
        F: Future<Output = std::result::Result<T, SdkError<E, R>>>,
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
        R: std::fmt::Debug,
    {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let (out, status) = match fut.await {
            Ok(v) => (Ok(v), "success".to_string()),
            Err(e) => {
                let (status, error) = super::errors::classify(endpoint, &e);
                (Err(error), status)
            }
        };
        self.metrics
            .observe_aws(AwsLabels { endpoint, status }, started.elapsed());
        out
    }

    /// Groups matching all tag conditions (server-side filters), every page.
    pub async fn groups_by_tags(&self, tags: &[(String, Option<String>)]) -> Result<Vec<RawGroup>> {
        let filters: Vec<Filter> = tags
            .iter()
            .map(|(k, v)| match v {
                Some(v) => Filter::builder().name(format!("tag:{k}")).values(v).build(),
                None => Filter::builder().name("tag-key").values(k).build(),
            })
            .collect();
        self.describe_groups(None, Some(filters)).await
    }

    /// Groups by name, 100 names per call.
    pub async fn groups_by_name(&self, names: &[String]) -> Result<Vec<RawGroup>> {
        let mut out = Vec::new();
        for chunk in names.chunks(ASG_NAMES_PER_CALL) {
            out.extend(self.describe_groups(Some(chunk.to_vec()), None).await?);
        }
        Ok(out)
    }

    async fn describe_groups(
        &self,
        names: Option<Vec<String>>,
        filters: Option<Vec<Filter>>,
    ) -> Result<Vec<RawGroup>> {
        let mut out = Vec::new();
        let mut token = None;
        loop {
            let page = self
                .call(
                    "autoscaling/DescribeAutoScalingGroups",
                    self.asg
                        .describe_auto_scaling_groups()
                        .set_auto_scaling_group_names(names.clone())
                        .set_filters(filters.clone())
                        .max_records(ASG_NAMES_PER_CALL as i32)
                        .set_next_token(token.take())
                        .send(),
                )
                .await?;
            out.extend(page.auto_scaling_groups().iter().map(raw_group));
            match page.next_token() {
                Some(t) if !t.is_empty() => token = Some(t.to_string()),
                _ => return Ok(out),
            }
        }
    }

    /// Instance type and spot request of each launch configuration.
    pub async fn launch_configurations(
        &self,
        names: &[String],
    ) -> Result<BTreeMap<String, LaunchFacts>> {
        let mut out = BTreeMap::new();
        for chunk in names.chunks(LAUNCH_CONFIGS_PER_CALL) {
            let mut token = None;
            loop {
                let page = self
                    .call(
                        "autoscaling/DescribeLaunchConfigurations",
                        self.asg
                            .describe_launch_configurations()
                            .set_launch_configuration_names(Some(chunk.to_vec()))
                            .set_next_token(token.take())
                            .send(),
                    )
                    .await?;
                for lc in page.launch_configurations() {
                    if let Some(n) = lc.launch_configuration_name() {
                        let facts = LaunchFacts {
                            instance_type: lc.instance_type().map(str::to_string),
                            spot: lc.spot_price().is_some_and(|p| !p.is_empty()),
                            revision: Some(super::lifecycle::configuration_revision(n)),
                            image_id: lc.image_id().map(str::to_string),
                            requirements: None,
                        };
                        out.insert(n.to_string(), facts);
                    }
                }
                match page.next_token() {
                    Some(t) if !t.is_empty() => token = Some(t.to_string()),
                    _ => break,
                }
            }
        }
        Ok(out)
    }

    /// Instance type and market of one launch template version (`$Default`, `$Latest` or a number).
    pub async fn launch_template(
        &self,
        id: Option<&str>,
        name: Option<&str>,
        version: &str,
    ) -> Result<LaunchFacts> {
        let out = self
            .call(
                "ec2/DescribeLaunchTemplateVersions",
                self.ec2
                    .describe_launch_template_versions()
                    .set_launch_template_id(id.map(str::to_string))
                    .set_launch_template_name(if id.is_some() {
                        None
                    } else {
                        name.map(str::to_string)
                    })
                    .versions(version)
                    .send(),
            )
            .await?;
        let first = out.launch_template_versions().first();
        let data = first.and_then(|v| v.launch_template_data());
        Ok(LaunchFacts {
            revision: first.and_then(|v| {
                Some(super::lifecycle::template_revision(
                    v.launch_template_id()?,
                    v.version_number()?,
                ))
            }),
            image_id: data.and_then(|d| d.image_id()).map(str::to_string),
            requirements: data
                .and_then(|d| d.instance_requirements())
                .map(super::requirements::from_template),
            instance_type: data
                .and_then(|d| d.instance_type())
                .map(|t| t.as_str().to_string()),
            spot: data
                .and_then(|d| d.instance_market_options())
                .and_then(|m| m.market_type())
                == Some(&aws_sdk_ec2::types::MarketType::Spot),
        })
    }

    /// Facts of the named instance types, 100 per call; unknown names are left out.
    pub async fn instance_types(&self, names: &[String]) -> Result<Vec<InstanceTypeInfo>> {
        let mut out = Vec::new();
        for chunk in names.chunks(INSTANCE_TYPES_PER_CALL) {
            let mut token = None;
            loop {
                let page = self
                    .call(
                        "ec2/DescribeInstanceTypes",
                        self.ec2
                            .describe_instance_types()
                            .set_instance_types(Some(
                                chunk
                                    .iter()
                                    .map(|n| InstanceType::from(n.as_str()))
                                    .collect(),
                            ))
                            .set_next_token(token.take())
                            .send(),
                    )
                    .await?;
                out.extend(page.instance_types().iter().filter_map(instance_type_info));
                match page.next_token() {
                    Some(t) if !t.is_empty() => token = Some(t.to_string()),
                    _ => break,
                }
            }
        }
        Ok(out)
    }

    /// The newest failed launch of a group started after `since`, as (AWS status message, description).
    pub async fn failed_launch_since(
        &self,
        group: &str,
        since: SystemTime,
    ) -> Result<Option<String>> {
        let out = self
            .call(
                "autoscaling/DescribeScalingActivities",
                self.asg
                    .describe_scaling_activities()
                    .auto_scaling_group_name(group)
                    .max_records(20)
                    .send(),
            )
            .await?;
        let since = aws_smithy_types::DateTime::from(since);
        Ok(out
            .activities()
            .iter()
            .filter(|a| a.status_code() == Some(&ScalingActivityStatusCode::Failed))
            .filter(|a| a.start_time().is_some_and(|t| t.secs() >= since.secs()))
            .max_by_key(|a| a.start_time().map(|t| t.secs()))
            .map(|a| {
                a.status_message()
                    .or(a.description())
                    .unwrap_or("launch failed")
                    .to_string()
            }))
    }

    /// Sets a group's desired capacity, ignoring cooldowns (CA decides when).
    pub async fn set_desired_capacity(&self, group: &str, desired: i32) -> Result<()> {
        self.call(
            "autoscaling/SetDesiredCapacity",
            self.asg
                .set_desired_capacity()
                .auto_scaling_group_name(group)
                .desired_capacity(desired)
                .honor_cooldown(false)
                .send(),
        )
        .await
        .map(|_| ())
    }

    /// Terminates one instance and lowers the group's desired capacity by one.
    pub async fn terminate_instance(&self, instance_id: &str) -> Result<()> {
        self.call(
            "autoscaling/TerminateInstanceInAutoScalingGroup",
            self.asg
                .terminate_instance_in_auto_scaling_group()
                .instance_id(instance_id)
                .should_decrement_desired_capacity(true)
                .send(),
        )
        .await
        .map(|_| ())
    }
}

fn raw_group(g: &aws_sdk_autoscaling::types::AutoScalingGroup) -> RawGroup {
    let tags = g
        .tags()
        .iter()
        .filter_map(|t| Some((t.key()?.to_string(), t.value().unwrap_or("").to_string())))
        .collect();
    let instances = g
        .instances()
        .iter()
        .map(|i| AsgInstance {
            instance_id: i.instance_id().unwrap_or_default().to_string(),
            availability_zone: i.availability_zone().unwrap_or_default().to_string(),
            lifecycle_state: i
                .lifecycle_state()
                .map(LifecycleState::as_str)
                .unwrap_or("Pending")
                .to_string(),
            instance_type: i.instance_type().map(str::to_string),
            revision: match (i.launch_configuration_name(), i.launch_template()) {
                (Some(lc), _) => Some(super::lifecycle::configuration_revision(lc)),
                (None, Some(t)) => t
                    .launch_template_id()
                    .zip(t.version().and_then(|v| v.parse::<i64>().ok()))
                    .map(|(id, v)| super::lifecycle::template_revision(id, v)),
                (None, None) => None,
            },
        })
        .collect();
    let template_source =
        |t: &aws_sdk_autoscaling::types::LaunchTemplateSpecification| LaunchSource::Template {
            id: t.launch_template_id().map(str::to_string),
            name: t.launch_template_name().map(str::to_string),
            version: t.version().unwrap_or("$Default").to_string(),
        };
    let launch = if let Some(lc) = g.launch_configuration_name() {
        LaunchSource::Configuration(lc.to_string())
    } else if let Some(t) = g.launch_template() {
        template_source(t)
    } else if let Some(m) = g.mixed_instances_policy().and_then(|m| m.launch_template()) {
        LaunchSource::Mixed {
            overrides: m
                .overrides()
                .iter()
                .filter_map(|o| o.instance_type().map(str::to_string))
                .collect(),
            requirements: super::requirements::from_overrides(m.overrides()).map(Box::new),
            template: m
                .launch_template_specification()
                .map(|t| Box::new(template_source(t))),
            override_templates: m.overrides().iter().fold(Vec::new(), |mut out, o| {
                if let Some(t) = o.launch_template_specification().map(template_source) {
                    if !out.contains(&t) {
                        out.push(t);
                    }
                }
                out
            }),
        }
    } else {
        LaunchSource::Unknown
    };
    RawGroup {
        info: AsgInfo {
            name: g.auto_scaling_group_name().unwrap_or_default().to_string(),
            min_size: g.min_size().unwrap_or(0),
            max_size: g.max_size().unwrap_or(0),
            desired_capacity: g.desired_capacity().unwrap_or(0),
            tags,
            availability_zones: g.availability_zones().to_vec(),
            instances,
            instance_types: Vec::new(),
            distribution: g
                .mixed_instances_policy()
                .map(|m| distribution(m.instances_distribution())),
            spot_launch: false,
            revision: None,
            override_revisions: Default::default(),
            requirements_floor: None,
        },
        launch,
    }
}

/// AWS's InstancesDistribution with its documented defaults for what is unset.
fn distribution(d: Option<&aws_sdk_autoscaling::types::InstancesDistribution>) -> Distribution {
    Distribution {
        on_demand_base: d.and_then(|d| d.on_demand_base_capacity()).unwrap_or(0),
        on_demand_percent_above_base: d
            .and_then(|d| d.on_demand_percentage_above_base_capacity())
            .unwrap_or(100),
        on_demand_lowest_price: d
            .and_then(|d| d.on_demand_allocation_strategy())
            .is_some_and(|s| s == "lowest-price"),
    }
}

fn instance_type_info(t: &aws_sdk_ec2::types::InstanceTypeInfo) -> Option<InstanceTypeInfo> {
    let gpus = t.gpu_info().map(|g| g.gpus()).unwrap_or_default();
    let first_gpu = gpus.first();
    Some(InstanceTypeInfo {
        name: t.instance_type()?.as_str().to_string(),
        vcpus: i64::from(t.v_cpu_info()?.default_v_cpus()?),
        memory_mib: t.memory_info()?.size_in_mib()?,
        gpus: gpus.iter().map(|g| i64::from(g.count().unwrap_or(0))).sum(),
        gpu_manufacturer: first_gpu.and_then(|g| g.manufacturer()).map(str::to_string),
        gpu_name: first_gpu.and_then(|g| g.name()).map(str::to_string),
        architectures: t
            .processor_info()
            .map(|p| {
                p.supported_architectures()
                    .iter()
                    .map(|a| a.as_str().to_string())
                    .collect()
            })
            .unwrap_or_default(),
        max_enis: i64::from(
            t.network_info()
                .and_then(|n| n.maximum_network_interfaces())
                .unwrap_or(0),
        ),
        ipv4_per_eni: i64::from(
            t.network_info()
                .and_then(|n| n.ipv4_addresses_per_interface())
                .unwrap_or(0),
        ),
        instance_storage_gb: t.instance_storage_info().and_then(|s| s.total_size_in_gb()),
    })
}
