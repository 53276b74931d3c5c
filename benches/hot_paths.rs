//! Hot paths of `ferroscale serve`, in process: the NodeGroupForNode lookup CA makes for every node on
//! every loop (5,000 nodes in 100 groups) and encoding a template node for TemplateNodeInfo.

use std::hint::black_box;
use std::sync::Arc;

use divan::Bencher;
use ferroscale::cloud::memory::{MemoryCloud, MemoryConfig};
use ferroscale::cloud::Cloud;
use ferroscale::grpc::convert;
use ferroscale::model::Snapshot;

fn main() {
    divan::main();
}

/// 100 groups × 50 running instances, AWS-style provider ids.
fn snapshot_5000() -> Arc<Snapshot> {
    let mut yaml = String::from("nodeGroups:\n");
    for g in 0..100 {
        yaml.push_str(&format!(
            "  - {{name: group-{g:03}, minSize: 0, maxSize: 200, targetSize: 50, \
             capacity: {{cpu: 4, memory: 16Gi, pods: 58}}, \
             labels: {{topology.kubernetes.io/zone: us-east-1a, node.kubernetes.io/instance-type: m5.xlarge}}}}\n"
        ));
    }
    MemoryCloud::new(&MemoryConfig::parse(&yaml).unwrap())
        .unwrap()
        .snapshot()
}

#[divan::bench]
fn node_group_for_node_hit(b: Bencher) {
    let s = snapshot_5000();
    let ids: Vec<String> = s
        .groups()
        .flat_map(|g| g.instances.iter().map(|i| i.id.clone()))
        .collect();
    assert_eq!(ids.len(), 5000);
    let mut n = 0;
    b.bench_local(|| {
        n = (n + 7) % ids.len();
        black_box(s.group_for_provider_id(&ids[n]).map(|g| g.min_size))
    });
}

#[divan::bench]
fn node_group_for_node_miss(b: Bencher) {
    let s = snapshot_5000();
    b.bench_local(|| {
        black_box(
            s.group_for_provider_id(black_box("aws:///us-east-1a/i-0000000000000dead"))
                .is_some(),
        )
    });
}

#[divan::bench]
fn template_node_encoding(b: Bencher) {
    let yaml = r#"
nodeGroups:
  - name: gpu
    minSize: 0
    maxSize: 4
    capacity: {cpu: "4", memory: 16Gi, pods: "29", ephemeral-storage: 125Gi, nvidia.com/gpu: "1"}
    labels:
      node.kubernetes.io/instance-type: g4dn.xlarge
      topology.kubernetes.io/zone: us-east-1a
      k8s.amazonaws.com/accelerator: nvidia-t4
      team: ml
    taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
"#;
    let cloud = MemoryCloud::new(&MemoryConfig::parse(yaml).unwrap()).unwrap();
    let template = cloud.snapshot().group("gpu").unwrap().template.clone();
    b.bench_local(|| black_box(convert::node_bytes(&convert::template_node(&template)).len()));
}
