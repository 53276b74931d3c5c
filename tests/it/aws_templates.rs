//! Templates for scale from zero, built from live EC2 instance type data and ASG tags, EKS managed node
//! groups and attribute-based instance requirements (moto).

use std::sync::Arc;
use std::time::Duration;

use ferroscale::cloud::Cloud;
use ferroscale::metrics::Metrics;
use ferroscale::model::{quantity, TaintEffect};
use ferroscale::proto::externalgrpc as pb;
use prost::Message;

use crate::support::aws_proxy::{Failure, FaultProxy};
use crate::support::moto::{Moto, DISCOVERY};
use crate::support::server::TestServer;

const MIB: i64 = 1 << 20;

#[tokio::test]
async fn templates_from_zero() {
    let moto = Moto::start().await;
    moto.group(
        "c5d",
        "c5d.large",
        0,
        10,
        0,
        &[
            ("k8s.io/cluster-autoscaler/node-template/resources/memory", "16Gi"),
            ("k8s.io/cluster-autoscaler/node-template/label/workload", "cache"),
            ("k8s.io/cluster-autoscaler/node-template/taint/dedicated", "cache:NoSchedule"),
            ("k8s.io/cluster-autoscaler/node-template/taint/broken", "no-effect"),
            ("k8s.io/cluster-autoscaler/node-template/autoscaling-options/scaledownutilizationthreshold", "0.3"),
            ("k8s.io/cluster-autoscaler/node-template/autoscaling-options/scaledownunneededtime", "2m"),
            ("k8s.io/cluster-autoscaler/node-template/autoscaling-options/scaledownunreadytime", "soon"),
        ],
    )
    .await;
    moto.group("gpu", "g4dn.xlarge", 0, 4, 0, &[]).await;
    moto.group("arm", "m6g.large", 0, 4, 0, &[]).await;
    moto.mixed_group("mixed", &["m5.xlarge", "c5.large", "r5.large"], 10)
        .await;
    let cloud = moto.cloud(&[DISCOVERY], &[]).await;
    let s = cloud.snapshot();

    let c5d = s.group("c5d").unwrap();
    let t = &c5d.template;
    assert_eq!(
        t.capacity.memory,
        16 << 30,
        "the tag wins over the 4 GiB of the type"
    );
    assert_eq!(
        t.allocatable.memory,
        (16384 - (11 * 29 + 255) - 100) * MIB,
        "allocatable is the tag's capacity minus the reserve"
    );
    assert_eq!(t.capacity.cpu_milli, 2000);
    assert_eq!(t.allocatable.cpu_milli, 1930);
    assert_eq!(t.capacity.pods, 29, "c5d.large: 3 ENIs × (10 − 1) + 2");
    assert_eq!(t.labels["workload"], "cache");
    assert_eq!(t.labels["kubernetes.io/arch"], "amd64");
    assert_eq!(t.labels["topology.kubernetes.io/zone"], "us-east-1a");
    // As upstream's AWS provider (cloudprovider/aws/aws_manager.go, buildGenericLabels): the EBS CSI
    // driver's zone label too, so a pod with a zonal EBS volume scales a group up from zero.
    assert_eq!(t.labels["topology.ebs.csi.aws.com/zone"], "us-east-1a");
    assert_eq!(t.labels["topology.kubernetes.io/region"], "us-east-1");
    assert_eq!(t.taints.len(), 1, "the malformed taint tag is ignored");
    assert_eq!(
        (t.taints[0].key.as_str(), t.taints[0].effect),
        ("dedicated", TaintEffect::NoSchedule)
    );
    let o = c5d.options.as_ref().unwrap();
    assert_eq!(o.scale_down_utilization_threshold, Some(0.3));
    assert_eq!(
        o.scale_down_unneeded_time,
        Some(std::time::Duration::from_secs(120))
    );
    assert_eq!(o.scale_down_unready_time, None, "a bad value is ignored");

    let gpu = &s.group("gpu").unwrap().template;
    assert_eq!(gpu.capacity.gpus(), 1);
    assert_eq!(gpu.allocatable.gpus(), 1);
    assert!(gpu.labels.contains_key("k8s.amazonaws.com/accelerator"));
    assert_eq!(
        gpu.allocatable.memory,
        (16384 - (11 * 29 + 255) - 100) * MIB
    );

    let arm = &s.group("arm").unwrap().template;
    assert_eq!(arm.labels["kubernetes.io/arch"], "arm64");

    // Mixed: never promise more than the smallest override (c5.large: 2 vCPU, 4 GiB).
    let mixed = &s.group("mixed").unwrap().template;
    assert_eq!(mixed.capacity.cpu_milli, 2000);
    assert_eq!(mixed.capacity.memory, 4096 * MIB);
    assert_eq!(quantity::format_bytes(mixed.capacity.memory), "4Gi");
    assert_eq!(mixed.labels["topology.kubernetes.io/zone"], "us-east-1b");
    assert!(s.group("mixed").unwrap().options.is_none());
}

/// `ferroscale run` on a group tagged `resources/memory: 16Gi` (c5d.large, 29 pods): a 15.5Gi pod does not
/// make it grow, since a node has 15710 MiB allocatable; a 14Gi pod does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_16gi_memory_tag_grows_the_group_only_for_what_fits_its_allocatable() {
    use crate::support::fixtures::kube::pod;
    use crate::support::kube_api::{KubeApi, PODS};
    use crate::support::run_harness::{run_settings, Harness};

    let moto = Moto::start().await;
    moto.group(
        "c5d",
        "c5d.large",
        0,
        3,
        0,
        &[(
            "k8s.io/cluster-autoscaler/node-template/resources/memory",
            "16Gi",
        )],
    )
    .await;
    let cloud = moto.cloud(&[DISCOVERY], &[]).await;
    let api = KubeApi::start().await;
    let asking = |name: &str, memory: &str| {
        let mut p = pod(name, "500m", None, name);
        p["spec"]["containers"][0]["resources"]["requests"]["memory"] = memory.into();
        p
    };
    api.put(PODS, asking("fifteen-and-a-half", "15872Mi"));
    let mut h = Harness::with_cloud(
        api,
        cloud,
        ferroscale::cli::flags::default_engine(),
        run_settings(),
    )
    .await;
    h.synced(0, 1).await;
    let now = ferroscale::time::unix_now();
    let d = h.runner.run_once(now).await.unwrap();
    assert!(d.scale_up.is_empty(), "{d:?}");
    assert_eq!(
        d.pending[0].1.to_string(),
        "no group fits: 1 insufficient memory"
    );
    assert_eq!(moto.desired("c5d").await, 0);

    h.api.put(PODS, asking("fourteen", "14Gi"));
    h.synced(0, 2).await;
    let d = h.runner.run_once(now + 10).await.unwrap();
    let ups: Vec<(&str, i32, &[String])> = d
        .scale_up
        .iter()
        .map(|u| (u.group.as_str(), u.delta, u.pods.as_slice()))
        .collect();
    assert_eq!(ups, vec![("c5d", 1, &["default/fourteen".to_string()][..])]);
    assert_eq!(moto.desired("c5d").await, 1);
}

/// An EKS managed node group in moto (labels, taints, SPOT, a resources tag) and the Auto Scaling group
/// EKS made for it, tagged `eks:cluster-name` / `eks:nodegroup-name` (moto names the group but does not
/// create it: the test does). Returns the group's name.
async fn managed_gpu_nodegroup(moto: &Moto) -> String {
    use aws_sdk_eks::types::{CapacityTypes, Taint, TaintEffect as Eks};
    let ng = moto
        .eks
        .create_nodegroup()
        .nodegroup_name("gpu")
        .labels("team", "ml")
        .taints(
            Taint::builder()
                .key("nvidia.com/gpu")
                .value("true")
                .effect(Eks::NoSchedule)
                .build(),
        )
        .taints(
            Taint::builder()
                .key("dedicated")
                .effect(Eks::PreferNoSchedule)
                .build(),
        )
        .capacity_type(CapacityTypes::Spot)
        .tags(
            "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage",
            "80Gi",
        );
    let asg = moto.managed_nodegroup("prod", ng).await;
    moto.group(
        &asg,
        "m5.large",
        0,
        4,
        0,
        &[
            ("eks:cluster-name", "prod"),
            ("eks:nodegroup-name", "gpu"),
            ("k8s.io/cluster-autoscaler/node-template/label/team", "web"),
        ],
    )
    .await;
    asg
}

/// As upstream's AWS provider: the managed node group's labels (winning over the ASG's label tags),
/// `eks.amazonaws.com/capacityType`, its taints with Kubernetes' effect names, and its resources tags reach
/// the template; DescribeNodegroup is asked once and cached.
#[tokio::test]
async fn eks_managed_node_group_labels_taints_and_tags_reach_the_template() {
    let moto = Moto::start().await;
    let proxy = FaultProxy::start(&moto.url).await;
    let asg = managed_gpu_nodegroup(&moto).await;
    moto.group("plain", "m5.large", 0, 4, 0, &[]).await;
    let cloud = moto
        .cloud_via(&proxy.url, Duration::ZERO, Default::default())
        .await;
    let s = cloud.snapshot();
    let t = &s.group(&asg).unwrap().template;
    assert_eq!(
        t.labels["team"], "ml",
        "the node group's label wins over the tag"
    );
    assert_eq!(t.labels["eks.amazonaws.com/capacityType"], "SPOT");
    assert_eq!(t.labels["eks.amazonaws.com/nodegroup"], "gpu");
    // What upstream also adds from DescribeNodegroup (moto's defaults).
    assert_eq!(t.labels["amiType"], "AL2_x86_64");
    assert_eq!(t.labels["diskSize"], "20");
    assert!(t.labels.contains_key("k8sVersion"));
    let taints: Vec<(&str, &str, TaintEffect)> = t
        .taints
        .iter()
        .map(|t| (t.key.as_str(), t.value.as_str(), t.effect))
        .collect();
    assert_eq!(
        taints,
        [
            ("nvidia.com/gpu", "true", TaintEffect::NoSchedule),
            ("dedicated", "", TaintEffect::PreferNoSchedule)
        ]
    );
    assert_eq!(t.capacity.ephemeral_storage, 80 << 30);
    let plain = &s.group("plain").unwrap().template;
    assert!(!plain.labels.contains_key("eks.amazonaws.com/capacityType"));
    assert!(plain.taints.is_empty());

    // What CA reads: the v1.Node (nodeBytes) of NodeGroupTemplateNodeInfo.
    let server = TestServer::start_with(cloud.clone()).await;
    let answer = server
        .client
        .clone()
        .node_group_template_node_info(pb::NodeGroupTemplateNodeInfoRequest { id: asg.clone() })
        .await
        .unwrap()
        .into_inner();
    let node = k8s_pb::api::core::v1::Node::decode(answer.node_bytes.as_slice()).unwrap();
    let labels = &node.metadata.as_ref().unwrap().labels;
    assert_eq!(labels["team"], "ml");
    assert_eq!(labels["eks.amazonaws.com/capacityType"], "SPOT");
    let taints: Vec<(Option<&str>, Option<&str>)> = node
        .spec
        .as_ref()
        .unwrap()
        .taints
        .iter()
        .map(|t| (t.key.as_deref(), t.effect.as_deref()))
        .collect();
    assert_eq!(
        taints,
        [
            (Some("nvidia.com/gpu"), Some("NoSchedule")),
            (Some("dedicated"), Some("PreferNoSchedule"))
        ]
    );

    cloud.refresh().await.unwrap();
    cloud.refresh().await.unwrap();
    assert_eq!(proxy.count("DescribeNodegroup"), 1, "cached");
    server.stop().await;
}

/// Without `eks:DescribeNodegroup` (AccessDenied) the refresh still succeeds: the group's template is
/// built from its ASG alone, and the denied read is not repeated at every refresh.
#[tokio::test]
async fn a_denied_describe_nodegroup_degrades_to_the_asgs_own_template() {
    let moto = Moto::start().await;
    let proxy = FaultProxy::start(&moto.url).await;
    proxy.set(|f| {
        f.failures.push(Failure::new(
            "DescribeNodegroup",
            403,
            "AccessDeniedException",
        ))
    });
    let asg = managed_gpu_nodegroup(&moto).await;
    let metrics = Arc::new(Metrics::default());
    let cloud = moto
        .cloud_via(&proxy.url, Duration::ZERO, metrics.clone())
        .await;
    cloud.refresh().await.unwrap();
    let s = cloud.snapshot();
    let t = &s.group(&asg).unwrap().template;
    assert_eq!(
        t.labels["team"], "web",
        "the ASG's tag, no node group label"
    );
    assert_eq!(
        t.labels["eks.amazonaws.com/nodegroup"], "gpu",
        "from the tag"
    );
    assert!(!t.labels.contains_key("eks.amazonaws.com/capacityType"));
    assert!(t.taints.is_empty());
    assert_eq!(t.capacity.ephemeral_storage, 0);
    assert_eq!(proxy.count("DescribeNodegroup"), 1);
    let text = metrics.encode();
    assert!(
        text.contains("eks/DescribeNodegroup") && text.contains("AccessDeniedException"),
        "{text}"
    );
}

/// A pod that selects the managed node group's label and tolerates its taints scales it up from zero;
/// one that does not tolerate them does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_selecting_the_managed_node_groups_label_scales_it_from_zero() {
    use crate::support::fixtures::kube::pod;
    use crate::support::kube_api::{KubeApi, PODS};
    use crate::support::run_harness::{run_settings, Harness};

    let moto = Moto::start().await;
    let asg = managed_gpu_nodegroup(&moto).await;
    let cloud = moto.cloud(&[DISCOVERY], &[]).await;
    let api = KubeApi::start().await;
    let mut intolerant = pod("intolerant", "500m", None, "intolerant");
    intolerant["spec"]["nodeSelector"] = serde_json::json!({"team": "ml"});
    api.put(PODS, intolerant);
    let mut h = Harness::with_cloud(
        api,
        cloud,
        ferroscale::cli::flags::default_engine(),
        run_settings(),
    )
    .await;
    h.synced(0, 1).await;
    let now = ferroscale::time::unix_now();
    let d = h.runner.run_once(now).await.unwrap();
    assert!(d.scale_up.is_empty(), "{d:?}");

    let mut tolerant = pod("tolerant", "500m", None, "tolerant");
    tolerant["spec"]["nodeSelector"] =
        serde_json::json!({"team": "ml", "eks.amazonaws.com/capacityType": "SPOT"});
    tolerant["spec"]["tolerations"] = serde_json::json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]);
    h.api.put(PODS, tolerant);
    h.synced(0, 2).await;
    let d = h.runner.run_once(now + 10).await.unwrap();
    let ups: Vec<(&str, i32)> = d
        .scale_up
        .iter()
        .map(|u| (u.group.as_str(), u.delta))
        .collect();
    assert_eq!(ups, vec![(asg.as_str(), 1)]);
    assert_eq!(d.scale_up[0].pods, ["default/tolerant".to_string()]);
    assert_eq!(moto.desired(&asg).await, 1);
}

/// The instance requirements of an attribute-based group as EC2 answers them (moto does not implement
/// GetInstanceTypesFromInstanceRequirements: the proxy answers it in moto's place).
const TYPES_ANSWER: &str = r#"<GetInstanceTypesFromInstanceRequirementsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r-1</requestId><instanceTypeSet><item><instanceType>c5.large</instanceType></item><item><instanceType>m5.xlarge</instanceType></item></instanceTypeSet></GetInstanceTypesFromInstanceRequirementsResponse>"#;

/// As upstream: the group's types are asked of EC2 for its requirements and its image's architecture, the
/// first one names the template, and the requirements' minimums are its cpu and memory. While EC2 cannot
/// answer, the group is left out and the others are served.
#[tokio::test]
async fn an_attribute_based_group_takes_the_first_type_ec2_names_and_the_requirements_floor() {
    use aws_sdk_autoscaling::types::{InstanceRequirements, MemoryMiBRequest, VCpuCountRequest};
    let moto = Moto::start().await;
    let proxy = FaultProxy::start(&moto.url).await;
    let image = moto.image("x86_64").await;
    let requirements = InstanceRequirements::builder()
        .v_cpu_count(VCpuCountRequest::builder().min(2).max(8).build())
        .memory_mib(MemoryMiBRequest::builder().min(3072).build())
        .build();
    moto.requirements_group("abs", &image, requirements).await;
    // Requirements in the launch template itself (upstream reads them too).
    moto.template_requirements_group(
        "abs-lt",
        &image,
        aws_sdk_ec2::types::InstanceRequirementsRequest::builder()
            .v_cpu_count(
                aws_sdk_ec2::types::VCpuCountRangeRequest::builder()
                    .min(2)
                    .build(),
            )
            .memory_mib(
                aws_sdk_ec2::types::MemoryMiBRequest::builder()
                    .min(2048)
                    .build(),
            )
            .build(),
    )
    .await;
    moto.group("plain", "m5.large", 0, 4, 0, &[]).await;
    // moto answers the unimplemented action with an error: the group waits, the others are served.
    let cloud = moto
        .cloud_via(&proxy.url, Duration::ZERO, Default::default())
        .await;
    assert!(cloud.snapshot().group("abs").is_err());
    assert!(cloud.snapshot().group("abs-lt").is_err());
    assert!(cloud.snapshot().group("plain").is_ok());

    proxy.set(|f| {
        f.answers.push((
            "GetInstanceTypesFromInstanceRequirements".into(),
            TYPES_ANSWER.into(),
        ))
    });
    cloud.refresh().await.unwrap();
    let s = cloud.snapshot();
    let t = &s.group("abs").unwrap().template;
    assert_eq!(t.labels["node.kubernetes.io/instance-type"], "c5.large");
    assert_eq!(t.labels["topology.kubernetes.io/zone"], "us-east-1c");
    assert_eq!(t.capacity.cpu_milli, 2000, "VCpuCount.Min");
    assert_eq!(
        t.capacity.memory,
        3072 * MIB,
        "MemoryMiB.Min, not c5.large's 4 GiB"
    );
    assert_eq!(t.capacity.pods, 29, "c5.large: 3 ENIs × (10 − 1) + 2");
    let lt = &s.group("abs-lt").unwrap().template;
    assert_eq!(lt.labels["node.kubernetes.io/instance-type"], "c5.large");
    assert_eq!(
        lt.capacity.memory,
        2048 * MIB,
        "the template's MemoryMiB.Min"
    );
    let asked: Vec<String> = proxy
        .bodies
        .lock()
        .unwrap()
        .iter()
        .filter(|(a, _)| a == "GetInstanceTypesFromInstanceRequirements")
        .map(|(_, b)| b.clone())
        .collect();
    let last = asked
        .iter()
        .rfind(|b| b.contains("MemoryMiB.Min=3072"))
        .unwrap();
    for part in [
        "ArchitectureType.1=x86_64",
        "VirtualizationType.1=hvm",
        "InstanceRequirements.VCpuCount.Min=2",
        "InstanceRequirements.VCpuCount.Max=8",
        "InstanceRequirements.MemoryMiB.Min=3072",
    ] {
        assert!(last.contains(part), "{part} not in {last}");
    }
    let calls = asked.len();
    cloud.refresh().await.unwrap();
    assert_eq!(
        proxy.count("GetInstanceTypesFromInstanceRequirements"),
        calls,
        "cached"
    );
    assert_eq!(
        proxy.count("DescribeImages"),
        1,
        "the image is read once for both groups"
    );
}
