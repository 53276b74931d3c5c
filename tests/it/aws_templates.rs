//! Templates for scale from zero, built from live EC2 instance type data and ASG tags (moto).

use ferroscale::cloud::Cloud;
use ferroscale::model::{quantity, TaintEffect};

use crate::moto::{Moto, DISCOVERY};

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
    assert_eq!(t.allocatable.memory, 16 << 30);
    assert_eq!(t.capacity.cpu_milli, 2000);
    assert_eq!(t.allocatable.cpu_milli, 1930);
    assert_eq!(t.capacity.pods, 29, "c5d.large: 3 ENIs × (10 − 1) + 2");
    assert_eq!(t.labels["workload"], "cache");
    assert_eq!(t.labels["kubernetes.io/arch"], "amd64");
    assert_eq!(t.labels["topology.kubernetes.io/zone"], "us-east-1a");
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
