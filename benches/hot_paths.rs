//! In-process micro-benchmarks of the two paths `ferroscale serve` runs most often for cluster-autoscaler.
//!
//! * `node_group_for_node`: CA asks NodeGroupForNode for every node on every loop (every 10 s by default),
//!   so at 5,000 nodes this lookup runs 5,000 times per loop. The fixture is a [`MemoryCloud`] built from a
//!   generated `--memory-config` document: 100 groups × 50 instances with a zone label, so provider ids are
//!   AWS-style (`aws:///us-east-1a/i-…`) as on EKS. `hit` cycles through all real instance ids, `miss` asks
//!   for a foreign node (another cluster's, or one no group manages), and `handler_path` adds what the gRPC
//!   handler does around the lookup: loading the published snapshot and building the reply's `NodeGroup`.
//! * `template_node_encoding`: NodeGroupTemplateNodeInfo builds the `v1.Node` of a group's template and
//!   marshals it to protobuf bytes on every call; CA asks for it per group in scale-up simulations. The
//!   template is a realistic GPU group (g4dn.xlarge: EKS-like labels, the `nvidia.com/gpu` taint and an
//!   `nvidia.com/gpu` capacity), measured as a whole and split into building and encoding.
//!
//! Everything the timed closures need (config, cloud, snapshot, ids, template) is built before timing.
//! Run with `cargo bench --bench hot_paths`.

use std::hint::black_box;
use std::sync::Arc;

use divan::counter::BytesCount;
use divan::Bencher;
use ferroscale::cloud::memory::{MemoryCloud, MemoryConfig};
use ferroscale::cloud::Cloud;
use ferroscale::grpc::convert;
use ferroscale::model::{Snapshot, TemplateNode};

fn main() {
    divan::main();
}

const GROUPS: usize = 100;
const INSTANCES_PER_GROUP: usize = 50;

/// A node of no group: same shape as a real provider id, different zone and instance.
const FOREIGN_ID: &str = "aws:///us-west-2b/i-0123456789abcdef0";

/// The `--memory-config` text of 100 groups × 50 running instances in `us-east-1a`.
fn config_5000() -> String {
    let mut yaml = String::from("nodeGroups:\n");
    for g in 0..GROUPS {
        yaml.push_str(&format!(
            "  - name: group-{g:03}\n    minSize: 0\n    maxSize: 200\n    targetSize: {INSTANCES_PER_GROUP}\n    \
             capacity: {{cpu: 4, memory: 16Gi, pods: 58}}\n    \
             labels: {{topology.kubernetes.io/zone: us-east-1a, node.kubernetes.io/instance-type: m5.xlarge}}\n"
        ));
    }
    yaml
}

/// The memory cloud of [`config_5000`], checked to hold what the benchmarks assume.
fn cloud_5000() -> MemoryCloud {
    let config = MemoryConfig::parse(&config_5000()).expect("generated config parses");
    let cloud = MemoryCloud::new(&config).expect("generated config is valid");
    let s = cloud.snapshot();
    assert_eq!(s.groups().count(), GROUPS);
    assert_eq!(s.instance_count(), GROUPS * INSTANCES_PER_GROUP);
    cloud
}

/// Every instance's provider id with the id of the group owning it, in group order.
fn provider_ids(s: &Snapshot) -> Vec<(String, String)> {
    let ids: Vec<(String, String)> = s
        .groups()
        .flat_map(|g| g.instances.iter().map(|i| (i.id.clone(), g.id.clone())))
        .collect();
    assert!(ids
        .iter()
        .all(|(id, _)| id.starts_with("aws:///us-east-1a/i-")));
    ids
}

#[divan::bench_group]
mod node_group_for_node {
    use super::*;

    /// `Snapshot::group_for_provider_id` for real nodes, cycling through all 5,000 provider ids.
    #[divan::bench]
    fn hit(b: Bencher) {
        let cloud = cloud_5000();
        let s = cloud.snapshot();
        let ids = provider_ids(&s);
        for (id, group) in &ids {
            assert_eq!(&s.group_for_provider_id(id).expect("known node").id, group);
        }
        let ids: Vec<String> = ids.into_iter().map(|(id, _)| id).collect();
        let mut n = 0;
        b.bench_local(|| {
            n += 1;
            if n == ids.len() {
                n = 0;
            }
            s.group_for_provider_id(black_box(&ids[n])).is_some()
        });
    }

    /// A node no group owns: the index misses, then the placeholder check rejects it.
    #[divan::bench]
    fn miss(b: Bencher) {
        let cloud = cloud_5000();
        let s = cloud.snapshot();
        assert!(s.group_for_provider_id(FOREIGN_ID).is_none());
        b.bench_local(|| s.group_for_provider_id(black_box(FOREIGN_ID)).is_none());
    }

    /// What the NodeGroupForNode handler does per request apart from tonic: load the published snapshot
    /// (`cloud.snapshot()`), look the node up and build the reply's `NodeGroup` (which formats `debug`).
    #[divan::bench(sample_size = 32)]
    fn handler_path(b: Bencher) {
        let cloud = cloud_5000();
        let ids: Vec<String> = provider_ids(&cloud.snapshot())
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let mut n = 0;
        b.bench_local(|| {
            n += 1;
            if n == ids.len() {
                n = 0;
            }
            let s = cloud.snapshot();
            s.group_for_provider_id(black_box(&ids[n]))
                .map(|g| convert::node_group(g))
                .unwrap_or_default()
        });
    }
}

/// A GPU group as found on EKS, through the memory cloud's template building (which adds the well-known
/// labels, the region and the reserved allocatable).
fn gpu_template() -> Arc<TemplateNode> {
    let yaml = r#"
nodeGroups:
  - name: gpu-g4dn-xlarge-us-east-1a
    minSize: 0
    maxSize: 20
    capacity: {cpu: "4", memory: 16Gi, pods: "29", ephemeral-storage: 125Gi, nvidia.com/gpu: "1"}
    labels:
      node.kubernetes.io/instance-type: g4dn.xlarge
      topology.kubernetes.io/zone: us-east-1a
      k8s.amazonaws.com/accelerator: nvidia-tesla-t4
      eks.amazonaws.com/capacityType: ON_DEMAND
      eks.amazonaws.com/nodegroup: gpu-g4dn-xlarge-us-east-1a
      node.kubernetes.io/lifecycle: on-demand
      nvidia.com/gpu.present: "true"
      workload.example.com/team: ml-training
    taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
"#;
    let cloud = MemoryCloud::new(&MemoryConfig::parse(yaml).expect("GPU config parses"))
        .expect("GPU config is valid");
    let template = cloud
        .snapshot()
        .group("gpu-g4dn-xlarge-us-east-1a")
        .expect("GPU group exists")
        .template
        .clone();
    assert_eq!(template.capacity.gpus(), 1);
    assert_eq!(template.taints.len(), 1);
    template
}

// Several calls per sample, so the timer's precision (tens of ns) does not blur microsecond figures.
#[divan::bench_group(sample_size = 16)]
mod template_node_encoding {
    use super::*;

    /// `convert::template_node` then `convert::node_bytes`, as NodeGroupTemplateNodeInfo does per call.
    #[divan::bench]
    fn build_and_encode(b: Bencher) {
        let template = gpu_template();
        let size = convert::node_bytes(&convert::template_node(&template)).len();
        b.counter(BytesCount::new(size))
            .bench_local(|| convert::node_bytes(&convert::template_node(black_box(&template))));
    }

    /// Building the `v1.Node` message alone (label, taint and quantity strings are cloned).
    #[divan::bench]
    fn build(b: Bencher) {
        let template = gpu_template();
        b.bench_local(|| convert::template_node(black_box(&template)));
    }

    /// Marshalling an already built `v1.Node` alone.
    #[divan::bench]
    fn encode(b: Bencher) {
        let node = convert::template_node(&gpu_template());
        let size = convert::node_bytes(&node).len();
        b.counter(BytesCount::new(size))
            .bench_local(|| convert::node_bytes(black_box(&node)));
    }
}
