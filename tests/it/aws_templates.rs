//! Templates for scale from zero, built from live EC2 instance type data and ASG tags (moto).

use ferroscale::cloud::Cloud;
use ferroscale::model::{quantity, TaintEffect};

use crate::support::moto::{Moto, DISCOVERY};

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
