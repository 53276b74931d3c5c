//! A moto server (AWS API emulator) on loopback, one per test, reached through the real aws-sdk clients.
//! `.ci/run` installs moto into `.venv`; `FERROSCALE_MOTO_SERVER` may point at another `moto_server`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_autoscaling::types::{
    InstancesDistribution, LaunchTemplate, LaunchTemplateOverrides, LaunchTemplateSpecification,
    MixedInstancesPolicy, Tag,
};
use ferroscale::cloud::aws::discovery::{NamedGroup, TagDiscovery};
use ferroscale::cloud::aws::{AwsCloud, AwsSettings, PricingSettings};
use ferroscale::pricing::PricingSource;

pub const REGION: &str = "us-east-1";
pub const DISCOVERY: &str =
    "asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/test";

pub struct Moto {
    child: Child,
    pub url: String,
    pub asg: aws_sdk_autoscaling::Client,
    pub ec2: aws_sdk_ec2::Client,
    pub eks: aws_sdk_eks::Client,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn moto_server() -> String {
    std::env::var("FERROSCALE_MOTO_SERVER").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/moto_server").to_string()
    })
}

/// Test credentials, no instance metadata, no retries (moto answers some not-found cases with HTTP 500).
fn test_environment() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for (k, v) in [
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
            ("AWS_MAX_ATTEMPTS", "1"),
        ] {
            std::env::set_var(k, v);
        }
    });
}

impl Moto {
    /// Starts moto on 127.0.0.1 port 0 and reads the port it bound from its start-up line, so two tests
    /// (or another program) can never end up sharing one server.
    pub async fn start() -> Moto {
        test_environment();
        let server = moto_server();
        let mut child = Command::new(&server)
            .args(["-H", "127.0.0.1", "-p", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start {server} (run .ci/run, or pip install 'moto[server]'): {e}")
            });
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        // Keep reading: moto logs every request there, and a full pipe would stall it.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                if let Some(url) = line.split("Running on ").nth(1) {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let url = loop {
            if let Ok(url) = rx.try_recv() {
                break url;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("moto exited at start: {status}");
            }
            assert!(Instant::now() < deadline, "moto did not start in 60 s");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new(REGION))
            .endpoint_url(&url)
            .load()
            .await;
        Moto {
            child,
            url,
            asg: aws_sdk_autoscaling::Client::new(&config),
            ec2: aws_sdk_ec2::Client::new(&config),
            eks: aws_sdk_eks::Client::new(&config),
        }
    }

    pub fn settings(&self, discovery: &[&str], nodes: &[&str]) -> AwsSettings {
        AwsSettings {
            region: Some(REGION.into()),
            auto_discovery: discovery
                .iter()
                .map(|d| TagDiscovery::parse(d).unwrap())
                .collect(),
            nodes: nodes
                .iter()
                .map(|n| NamedGroup::parse(n).unwrap())
                .collect(),
            refresh_interval: Duration::from_secs(3600),
            endpoint_url: Some(self.url.clone()),
            max_attempts: None,
            // No Pricing API in moto: tests that price from AWS point this at `PriceApi`.
            pricing: PricingSettings {
                source: PricingSource::File,
                ..PricingSettings::default()
            },
        }
    }

    pub async fn cloud(&self, discovery: &[&str], nodes: &[&str]) -> Arc<AwsCloud> {
        AwsCloud::connect(self.settings(discovery, nodes), Default::default())
            .await
            .unwrap()
    }

    /// A cloud reaching moto through `endpoint` (a fault proxy in front of it), refreshing at most every
    /// `interval`, recording into `metrics`.
    pub async fn cloud_via(
        &self,
        endpoint: &str,
        interval: Duration,
        metrics: Arc<ferroscale::metrics::Metrics>,
    ) -> Arc<AwsCloud> {
        let mut settings = self.settings(&[DISCOVERY], &[]);
        settings.endpoint_url = Some(endpoint.to_string());
        settings.refresh_interval = interval;
        AwsCloud::connect(settings, metrics).await.unwrap()
    }

    /// The desired capacity AWS holds for a group.
    pub async fn desired(&self, name: &str) -> i32 {
        self.asg
            .describe_auto_scaling_groups()
            .auto_scaling_group_names(name)
            .send()
            .await
            .unwrap()
            .auto_scaling_groups()[0]
            .desired_capacity()
            .unwrap()
    }

    /// An EKS cluster with one managed node group made by `nodegroup` (labels, taints, ...); returns the
    /// name of the Auto Scaling group EKS says backs it (moto names one but does not create it).
    pub async fn managed_nodegroup(
        &self,
        cluster: &str,
        nodegroup: aws_sdk_eks::operation::create_nodegroup::builders::CreateNodegroupFluentBuilder,
    ) -> String {
        let role = "arn:aws:iam::123456789012:role/eks";
        self.eks
            .create_cluster()
            .name(cluster)
            .role_arn(role)
            .resources_vpc_config(
                aws_sdk_eks::types::VpcConfigRequest::builder()
                    .subnet_ids("subnet-1")
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let out = nodegroup
            .cluster_name(cluster)
            .node_role(role)
            .subnets("subnet-1")
            .send()
            .await
            .unwrap();
        let ng = out.nodegroup().unwrap();
        ng.resources().unwrap().auto_scaling_groups()[0]
            .name()
            .unwrap()
            .to_string()
    }

    /// An image moto knows for `architecture` (`x86_64`, `arm64`).
    pub async fn image(&self, architecture: &str) -> String {
        let out = self
            .ec2
            .describe_images()
            .owners("amazon")
            .send()
            .await
            .unwrap();
        out.images()
            .iter()
            .find(|i| i.architecture().map(|a| a.as_str()) == Some(architecture))
            .and_then(|i| i.image_id())
            .unwrap()
            .to_string()
    }

    /// A launch template launching `image`, with `requirements` in place of an instance type; its id.
    async fn requirements_template(
        &self,
        name: &str,
        image: &str,
        requirements: Option<aws_sdk_ec2::types::InstanceRequirementsRequest>,
    ) -> String {
        let lt = self
            .ec2
            .create_launch_template()
            .launch_template_name(format!("{name}-lt"))
            .launch_template_data(
                aws_sdk_ec2::types::RequestLaunchTemplateData::builder()
                    .image_id(image)
                    .set_instance_requirements(requirements)
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let lt = lt.launch_template().unwrap();
        lt.launch_template_id().unwrap().to_string()
    }

    /// An ASG launching from a template that names instance requirements instead of a type.
    pub async fn template_requirements_group(
        &self,
        name: &str,
        image: &str,
        requirements: aws_sdk_ec2::types::InstanceRequirementsRequest,
    ) {
        let id = self
            .requirements_template(name, image, Some(requirements))
            .await;
        self.asg
            .create_auto_scaling_group()
            .auto_scaling_group_name(name)
            .launch_template(
                LaunchTemplateSpecification::builder()
                    .launch_template_id(id)
                    .version("$Default")
                    .build(),
            )
            .min_size(0)
            .max_size(5)
            .desired_capacity(0)
            .availability_zones("us-east-1c")
            .set_tags(Some(discovery_tags(name, &[])))
            .send()
            .await
            .unwrap();
    }

    /// A mixed-instances ASG whose one override names instance requirements (attribute-based selection),
    /// from a launch template with `image` and no instance type.
    pub async fn requirements_group(
        &self,
        name: &str,
        image: &str,
        requirements: aws_sdk_autoscaling::types::InstanceRequirements,
    ) {
        let id = self.requirements_template(name, image, None).await;
        self.asg
            .create_auto_scaling_group()
            .auto_scaling_group_name(name)
            .mixed_instances_policy(
                MixedInstancesPolicy::builder()
                    .launch_template(
                        LaunchTemplate::builder()
                            .launch_template_specification(
                                LaunchTemplateSpecification::builder()
                                    .launch_template_id(id)
                                    .version("$Default")
                                    .build(),
                            )
                            .overrides(
                                LaunchTemplateOverrides::builder()
                                    .instance_requirements(requirements)
                                    .build(),
                            )
                            .build(),
                    )
                    .build(),
            )
            .min_size(0)
            .max_size(5)
            .desired_capacity(0)
            .availability_zones("us-east-1c")
            .set_tags(Some(discovery_tags(name, &[])))
            .send()
            .await
            .unwrap();
    }

    /// A launch template whose default version launches `instance_type`; returns its id.
    pub async fn launch_template(&self, name: &str, instance_type: &str) -> String {
        self.launch_template_with(name, instance_type, false).await
    }

    /// A launch template launching `instance_type`, asking for spot capacity if `spot`.
    pub async fn launch_template_with(
        &self,
        name: &str,
        instance_type: &str,
        spot: bool,
    ) -> String {
        let market = spot.then(|| {
            aws_sdk_ec2::types::LaunchTemplateInstanceMarketOptionsRequest::builder()
                .market_type(aws_sdk_ec2::types::MarketType::Spot)
                .build()
        });
        let out = self
            .ec2
            .create_launch_template()
            .launch_template_name(name)
            .launch_template_data(
                aws_sdk_ec2::types::RequestLaunchTemplateData::builder()
                    .image_id("ami-12c6146b")
                    .instance_type(instance_type.into())
                    .set_instance_market_options(market)
                    .build(),
            )
            .send()
            .await
            .unwrap();
        out.launch_template()
            .unwrap()
            .launch_template_id()
            .unwrap()
            .to_string()
    }

    /// Version 2 of launch template `id` (version 1 changed by `data`), made its default.
    pub async fn new_default_version(
        &self,
        id: &str,
        data: aws_sdk_ec2::types::RequestLaunchTemplateData,
    ) {
        self.ec2
            .create_launch_template_version()
            .launch_template_id(id)
            .source_version("1")
            .launch_template_data(data)
            .send()
            .await
            .unwrap();
        self.ec2
            .modify_launch_template()
            .launch_template_id(id)
            .default_version("2")
            .send()
            .await
            .unwrap();
    }

    /// An ASG launching `instance_type` from a launch template, tagged for discovery plus `tags`.
    pub async fn group(
        &self,
        name: &str,
        instance_type: &str,
        min: i32,
        max: i32,
        desired: i32,
        tags: &[(&str, &str)],
    ) {
        self.group_with(name, instance_type, (min, max, desired), tags, false)
            .await
    }

    /// An ASG launching spot `instance_type` instances from a launch template that asks for spot.
    pub async fn spot_group(&self, name: &str, instance_type: &str, max: i32) {
        self.group_with(name, instance_type, (0, max, 0), &[], true)
            .await
    }

    async fn group_with(
        &self,
        name: &str,
        instance_type: &str,
        (min, max, desired): (i32, i32, i32),
        tags: &[(&str, &str)],
        spot: bool,
    ) {
        let lt = self
            .launch_template_with(&format!("{name}-lt"), instance_type, spot)
            .await;
        self.asg
            .create_auto_scaling_group()
            .auto_scaling_group_name(name)
            .launch_template(
                LaunchTemplateSpecification::builder()
                    .launch_template_id(lt)
                    .version("$Default")
                    .build(),
            )
            .min_size(min)
            .max_size(max)
            .desired_capacity(desired)
            .availability_zones("us-east-1a")
            .set_tags(Some(discovery_tags(name, tags)))
            .send()
            .await
            .unwrap();
    }

    /// A mixed-instances ASG whose overrides are `types`.
    pub async fn mixed_group(&self, name: &str, types: &[&str], max: i32) {
        self.mixed_group_with(name, types, max, None).await
    }

    /// A mixed-instances ASG whose overrides are `types`, splitting on-demand and spot by `distribution`.
    pub async fn mixed_group_with(
        &self,
        name: &str,
        types: &[&str],
        max: i32,
        distribution: Option<InstancesDistribution>,
    ) {
        let lt = self.launch_template(&format!("{name}-lt"), types[0]).await;
        self.asg
            .create_auto_scaling_group()
            .auto_scaling_group_name(name)
            .mixed_instances_policy(
                MixedInstancesPolicy::builder()
                    .launch_template(
                        LaunchTemplate::builder()
                            .launch_template_specification(
                                LaunchTemplateSpecification::builder()
                                    .launch_template_id(lt)
                                    .version("$Latest")
                                    .build(),
                            )
                            .set_overrides(Some(
                                types
                                    .iter()
                                    .map(|t| {
                                        LaunchTemplateOverrides::builder().instance_type(*t).build()
                                    })
                                    .collect(),
                            ))
                            .build(),
                    )
                    .set_instances_distribution(distribution)
                    .build(),
            )
            .min_size(0)
            .max_size(max)
            .desired_capacity(0)
            .availability_zones("us-east-1b")
            .set_tags(Some(discovery_tags(name, &[])))
            .send()
            .await
            .unwrap();
    }
}

fn discovery_tags(group: &str, extra: &[(&str, &str)]) -> Vec<Tag> {
    [
        ("k8s.io/cluster-autoscaler/enabled", "true"),
        ("k8s.io/cluster-autoscaler/test", "owned"),
    ]
    .iter()
    .chain(extra)
    .map(|(k, v)| {
        Tag::builder()
            .resource_id(group)
            .resource_type("auto-scaling-group")
            .key(*k)
            .value(*v)
            .propagate_at_launch(false)
            .build()
    })
    .collect()
}
