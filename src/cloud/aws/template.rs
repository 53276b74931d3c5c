//! Template nodes for scale from zero, from live EC2 instance type facts and the group's tags
//! (pure: no AWS calls). Fixes upstream's known failures: allocatable is capacity minus the EKS reserve
//! (not capacity), pods come from the ENI formula (not 110), a mixed-instances group promises only what its
//! smallest type has (not its first override), and memory is exact MiB × 2^20. An EKS managed node group's
//! labels, taints and resource tags ([`super::eks`]) and an attribute-based group's requirements
//! ([`super::requirements`]) are applied as upstream applies them.

use crate::labels;
use std::collections::BTreeMap;

use super::eks::ManagedNodegroup;
use super::requirements::Floor;
use super::types::{AsgInfo, InstanceTypeInfo};
use crate::model::{reserve, AutoscalingOptions, Resources, Taint, TaintEffect, TemplateNode};

const LABEL_TAG: &str = "k8s.io/cluster-autoscaler/node-template/label/";
const TAINT_TAG: &str = "k8s.io/cluster-autoscaler/node-template/taint/";
const RESOURCE_TAG: &str = "k8s.io/cluster-autoscaler/node-template/resources/";
const OPTION_TAG: &str = "k8s.io/cluster-autoscaler/node-template/autoscaling-options/";

/// Pods per node with the EKS VPC CNI: `ENIs × (IPv4 per ENI − 1) + 2`.
pub fn max_pods(t: &InstanceTypeInfo) -> i64 {
    (t.max_enis * (t.ipv4_per_eni - 1) + 2).max(1)
}

/// Capacity of one instance type.
pub fn capacity(t: &InstanceTypeInfo) -> Resources {
    let mut r = Resources {
        cpu_milli: t.vcpus * 1000,
        memory: t.memory_mib << 20,
        pods: max_pods(t),
        ephemeral_storage: t.instance_storage_gb.unwrap_or(0) * 1_000_000_000,
        extended: BTreeMap::new(),
    };
    let nvidia = t
        .gpu_manufacturer
        .as_deref()
        .is_some_and(|m| m.eq_ignore_ascii_case("nvidia"));
    if t.gpus > 0 && nvidia {
        r.extended.insert(labels::NVIDIA_GPU.to_string(), t.gpus);
    }
    r
}

/// Per-resource minimum over the types of a mixed-instances group; an extended resource some type lacks
/// is dropped.
pub fn smallest_capacity(types: &[&InstanceTypeInfo]) -> Option<Resources> {
    let mut all = types.iter().map(|t| capacity(t));
    let first = all.next()?;
    Some(all.fold(first, |acc, c| {
        Resources {
            cpu_milli: acc.cpu_milli.min(c.cpu_milli),
            memory: acc.memory.min(c.memory),
            pods: acc.pods.min(c.pods),
            ephemeral_storage: acc.ephemeral_storage.min(c.ephemeral_storage),
            extended: acc
                .extended
                .iter()
                .filter_map(|(k, v)| c.extended.get(k).map(|w| (k.clone(), (*v).min(*w))))
                .collect(),
        }
    }))
}

/// Kubernetes' name of an AWS architecture.
pub fn arch_label(aws_arch: &str) -> &str {
    match aws_arch {
        "x86_64" => "amd64",
        other => other,
    }
}

/// The accelerator label value of a GPU: lowercase `<manufacturer>-<model>` (NVIDIA T4 → `nvidia-t4`),
/// stable across regions so priority and selector rules can name it.
fn accelerator(t: &InstanceTypeInfo) -> String {
    let m = t.gpu_manufacturer.as_deref().unwrap_or("gpu");
    let n = t.gpu_name.as_deref().unwrap_or("unknown");
    format!("{m}-{n}").to_ascii_lowercase().replace(' ', "-")
}

/// An attribute-based group's capacity: its requirements' minimums, what every type AWS may pick has.
fn apply_floor(capacity: &mut Resources, floor: &Floor) {
    if let Some(v) = floor.vcpus {
        capacity.cpu_milli = v * 1000;
    }
    if let Some(m) = floor.memory_mib {
        capacity.memory = m << 20;
    }
    match floor.nvidia_gpus {
        Some(n) if n > 0 => {
            capacity.extended.insert(labels::NVIDIA_GPU.to_string(), n);
        }
        Some(_) => {
            capacity.extended.remove(labels::NVIDIA_GPU);
        }
        None => {}
    }
}

/// The template node of an Auto Scaling group; `types` are the types it may launch, first one first;
/// `managed` is its EKS managed node group, when known.
pub fn build_template(
    asg: &AsgInfo,
    region: &str,
    types: &[&InstanceTypeInfo],
    managed: Option<&ManagedNodegroup>,
) -> Result<TemplateNode, String> {
    let first = *types.first().ok_or("no known instance type")?;
    let mut capacity = smallest_capacity(types).ok_or("no known instance type")?;
    if let Some(floor) = &asg.requirements_floor {
        apply_floor(&mut capacity, floor);
    }
    let name = format!("{}-template", asg.name);
    let mut labels = BTreeMap::new();
    let arch = first
        .architectures
        .first()
        .map(String::as_str)
        .unwrap_or("x86_64");
    labels.insert(labels::ARCH.to_string(), arch_label(arch).to_string());
    labels.insert(labels::OS.to_string(), "linux".to_string());
    labels.insert(labels::INSTANCE_TYPE.to_string(), first.name.clone());
    labels.insert(labels::REGION.to_string(), region.to_string());
    if let Some(zone) = asg.availability_zones.first() {
        labels.insert(labels::ZONE.to_string(), zone.clone());
        labels.insert(labels::EBS_CSI_ZONE.to_string(), zone.clone());
    }
    labels.insert(labels::HOSTNAME.to_string(), name.clone());
    labels.insert(labels::NODE_GROUP.to_string(), asg.name.clone());
    if capacity.gpus() > 0 {
        labels.insert(labels::GPU.to_string(), accelerator(first));
    }
    if let Some(ng) = asg.tags.get(super::eks::NODEGROUP_TAG) {
        labels.insert(labels::EKS_NODEGROUP.to_string(), ng.clone());
    }

    let mut taints = BTreeMap::new();
    let mut resource_overrides = Vec::new();
    for (tag, value) in &asg.tags {
        if let Some(key) = tag.strip_prefix(LABEL_TAG) {
            labels.insert(key.to_string(), value.clone());
        } else if let Some(key) = tag.strip_prefix(TAINT_TAG) {
            match value
                .rsplit_once(':')
                .and_then(|(v, e)| Some((v, e.parse::<TaintEffect>().ok()?)))
            {
                Some((v, effect)) => {
                    taints.insert(
                        key.to_string(),
                        Taint {
                            key: key.to_string(),
                            value: v.to_string(),
                            effect,
                        },
                    );
                }
                None => {
                    tracing::warn!(asg = %asg.name, %tag, %value, "taint tag ignored: expected VALUE:NoSchedule|PreferNoSchedule|NoExecute")
                }
            }
        } else if let Some(resource) = tag.strip_prefix(RESOURCE_TAG) {
            resource_overrides.push((resource, value));
        }
    }
    let mut taints: Vec<Taint> = taints.into_values().collect();
    if let Some(m) = managed {
        labels.extend(m.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
        for t in &m.taints {
            match taints
                .iter_mut()
                .find(|have| have.key == t.key && have.effect == t.effect)
            {
                Some(have) => *have = t.clone(),
                None => taints.push(t.clone()),
            }
        }
        resource_overrides.extend(
            m.tags
                .iter()
                .filter_map(|(tag, value)| Some((tag.strip_prefix(RESOURCE_TAG)?, value))),
        );
    }
    // A resources tag says what the node has (upstream sets capacity from it, the node group's tags
    // last); what pods may use is that minus the reserve, as on the nodes that register.
    for (resource, value) in resource_overrides {
        if let Err(e) = capacity.set(resource, value) {
            tracing::warn!(asg = %asg.name, %resource, error = %e, "resource tag ignored")
        }
    }
    let allocatable = reserve::allocatable_from_capacity(&capacity);
    Ok(TemplateNode {
        name,
        labels,
        taints,
        capacity,
        allocatable,
        // Known only from a real node's CSINode.
        volume_limits: Default::default(),
    })
}

/// Autoscaling options from `.../autoscaling-options/<option>` tags; bad values are logged and ignored.
pub fn options_from_tags(asg: &str, tags: &BTreeMap<String, String>) -> Option<AutoscalingOptions> {
    let mut o = AutoscalingOptions::default();
    let mut any = false;
    for (tag, value) in tags {
        let Some(option) = tag.strip_prefix(OPTION_TAG) else {
            continue;
        };
        match o.set(option, value) {
            Ok(()) => any = true,
            Err(why) => {
                tracing::warn!(%asg, %tag, %value, %why, "autoscaling option tag ignored")
            }
        }
    }
    any.then_some(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, vcpus: i64, mib: i64, enis: i64, ips: i64) -> InstanceTypeInfo {
        InstanceTypeInfo {
            name: name.into(),
            vcpus,
            memory_mib: mib,
            gpus: 0,
            gpu_manufacturer: None,
            gpu_name: None,
            architectures: vec!["x86_64".into()],
            max_enis: enis,
            ipv4_per_eni: ips,
            instance_storage_gb: None,
        }
    }

    fn asg(tags: &[(&str, &str)]) -> AsgInfo {
        AsgInfo {
            name: "g".into(),
            min_size: 0,
            max_size: 3,
            desired_capacity: 0,
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            availability_zones: vec!["us-east-1a".into()],
            instances: vec![],
            instance_types: vec![],
            distribution: None,
            spot_launch: false,
            revision: None,
            override_revisions: Default::default(),
            requirements_floor: None,
        }
    }

    #[test]
    fn eni_formula() {
        assert_eq!(max_pods(&t("c5d.large", 2, 4096, 3, 10)), 29);
        assert_eq!(max_pods(&t("t3.micro", 2, 1024, 2, 2)), 4);
    }

    #[test]
    fn memory_tag_sets_capacity_and_allocatable_keeps_the_reserve() {
        let mut c5d = t("c5d.large", 2, 4096, 3, 10);
        c5d.instance_storage_gb = Some(50);
        let node = build_template(
            &asg(&[(
                "k8s.io/cluster-autoscaler/node-template/resources/memory",
                "16Gi",
            )]),
            "us-east-1",
            &[&c5d],
            None,
        )
        .unwrap();
        assert_eq!(node.capacity.memory, 16 << 30);
        // 16 GiB − (11 MiB × 29 pods + 255 MiB) − 100 MiB: a 15.5 GiB pod does not fit.
        assert_eq!(
            node.allocatable.memory,
            (16384 - (11 * 29 + 255) - 100) << 20
        );
        assert_eq!(node.allocatable.cpu_milli, 1930);
        assert_eq!(node.capacity.ephemeral_storage, 50_000_000_000);
    }

    #[test]
    fn gpu_and_mixed() {
        let mut g4 = t("g4dn.xlarge", 4, 16384, 3, 10);
        g4.gpus = 1;
        g4.gpu_manufacturer = Some("NVIDIA".into());
        g4.gpu_name = Some("T4".into());
        let node = build_template(&asg(&[]), "us-east-1", &[&g4], None).unwrap();
        assert_eq!(node.capacity.gpus(), 1);
        assert_eq!(node.labels[labels::GPU], "nvidia-t4");
        assert_eq!(
            node.allocatable.memory,
            (16384 - (11 * 29 + 255) - 100) << 20
        );
        let (m5, m5a, c5) = (
            t("m5.large", 2, 8192, 3, 10),
            t("m5a.xlarge", 4, 16384, 4, 15),
            t("c5.large", 2, 4096, 3, 10),
        );
        let min = smallest_capacity(&[&m5, &m5a, &c5]).unwrap();
        assert_eq!(
            (min.cpu_milli, min.memory, min.pods),
            (2000, 4096 << 20, 29)
        );
        assert!(smallest_capacity(&[&g4, &m5]).unwrap().extended.is_empty());
    }

    #[test]
    fn label_taint_and_option_tags() {
        let a = asg(&[
            ("k8s.io/cluster-autoscaler/node-template/label/team", "data"),
            ("k8s.io/cluster-autoscaler/node-template/taint/dedicated", "data:NoExecute"),
            ("k8s.io/cluster-autoscaler/node-template/taint/bad", "data:Sometimes"),
            ("k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage", "lots"),
            ("k8s.io/cluster-autoscaler/node-template/autoscaling-options/ignoredaemonsetsutilization", "true"),
            ("k8s.io/cluster-autoscaler/node-template/autoscaling-options/scaledownutilizationthreshold", "7"),
            ("eks:nodegroup-name", "ng-1"),
        ]);
        let mut arm = t("m6g.large", 2, 8192, 3, 10);
        arm.architectures = vec!["arm64".into()];
        let node = build_template(&a, "us-east-1", &[&arm], None).unwrap();
        assert_eq!(node.labels["team"], "data");
        assert_eq!(node.labels["kubernetes.io/arch"], "arm64");
        assert_eq!(node.labels["eks.amazonaws.com/nodegroup"], "ng-1");
        assert_eq!(node.taints.len(), 1);
        assert_eq!(node.taints[0].effect, TaintEffect::NoExecute);
        let o = options_from_tags("g", &a.tags).unwrap();
        assert_eq!(o.ignore_daemonsets_utilization, Some(true));
        assert_eq!(o.scale_down_utilization_threshold, None);
        assert!(options_from_tags("g", &asg(&[]).tags).is_none());
    }

    #[test]
    fn managed_node_group_labels_win_taints_add_and_its_resource_tags_set_capacity() {
        let a = asg(&[
            ("k8s.io/cluster-autoscaler/node-template/label/team", "web"),
            (
                "k8s.io/cluster-autoscaler/node-template/taint/dedicated",
                "web:NoSchedule",
            ),
            (
                "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage",
                "20Gi",
            ),
        ]);
        let m = ManagedNodegroup {
            labels: [("team", "ml"), ("eks.amazonaws.com/capacityType", "SPOT")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            taints: vec![
                Taint {
                    key: "gpu".into(),
                    value: "true".into(),
                    effect: TaintEffect::NoExecute,
                },
                Taint {
                    key: "dedicated".into(),
                    value: "ml".into(),
                    effect: TaintEffect::NoSchedule,
                },
            ],
            tags: [(
                "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage".to_string(),
                "80Gi".to_string(),
            )]
            .into(),
        };
        let node =
            build_template(&a, "us-east-1", &[&t("m5.large", 2, 8192, 3, 10)], Some(&m)).unwrap();
        assert_eq!(
            node.labels["team"], "ml",
            "the node group's label wins over the tag"
        );
        assert_eq!(node.labels["eks.amazonaws.com/capacityType"], "SPOT");
        let taints: Vec<(&str, &str)> = node
            .taints
            .iter()
            .map(|t| (t.key.as_str(), t.value.as_str()))
            .collect();
        assert_eq!(taints, [("dedicated", "ml"), ("gpu", "true")]);
        assert_eq!(node.capacity.ephemeral_storage, 80 << 30);
    }

    #[test]
    fn attribute_based_capacity_is_the_requirements_floor() {
        let mut a = asg(&[]);
        a.requirements_floor = Some(Floor {
            vcpus: Some(2),
            memory_mib: Some(3072),
            nvidia_gpus: Some(1),
        });
        let node =
            build_template(&a, "us-east-1", &[&t("m5.xlarge", 4, 16384, 4, 15)], None).unwrap();
        assert_eq!(node.capacity.cpu_milli, 2000);
        assert_eq!(node.capacity.memory, 3072 << 20);
        assert_eq!(node.capacity.gpus(), 1);
        assert_eq!(node.capacity.pods, 58, "pods: the first type's ENIs");
        assert_eq!(node.labels[labels::INSTANCE_TYPE], "m5.xlarge");
    }
}
