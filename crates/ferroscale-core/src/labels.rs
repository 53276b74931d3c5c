//! Every Kubernetes label, annotation and taint name ferroscale reads or writes, in one place.

/// A node's host: the topology of per-node (anti-)affinity.
pub const HOSTNAME: &str = "kubernetes.io/hostname";
/// A node's zone.
pub const ZONE: &str = "topology.kubernetes.io/zone";
/// A node's region.
pub const REGION: &str = "topology.kubernetes.io/region";
/// The zone label the EBS CSI driver puts on nodes (zonal EBS volumes' topology); upstream's AWS provider
/// sets it on template nodes, so a pod whose volume is in a zone can scale a group up from zero.
pub const EBS_CSI_ZONE: &str = "topology.ebs.csi.aws.com/zone";
/// The beta zone label, still on older volumes and nodes.
pub const ZONE_BETA: &str = "failure-domain.beta.kubernetes.io/zone";
/// The beta region label, still on older volumes and nodes.
pub const REGION_BETA: &str = "failure-domain.beta.kubernetes.io/region";
/// A node's instance type.
pub const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
/// A node's CPU architecture (`amd64`, `arm64`).
pub const ARCH: &str = "kubernetes.io/arch";
/// A node's operating system.
pub const OS: &str = "kubernetes.io/os";
/// The GPU type of a node on AWS; what `GPULabel` answers.
pub const GPU: &str = "k8s.amazonaws.com/accelerator";
/// Extended resource name of NVIDIA GPUs.
pub const NVIDIA_GPU: &str = "nvidia.com/gpu";
/// The GPU resources upstream knows, in its order (`GPUVendorResourceNames`): a node with any of them
/// allocatable is a GPU node.
pub const GPU_RESOURCES: &[&str] = &[
    NVIDIA_GPU,
    "habana.ai/gaudi",
    "gpu.intel.com/xe",
    "amd.com/gpu",
    "microsoft.com/directx",
];
/// ferroscale's label on template nodes naming their group.
pub const NODE_GROUP: &str = "ferroscale.io/node-group";
/// The EKS managed node group of a node.
pub const EKS_NODEGROUP: &str = "eks.amazonaws.com/nodegroup";
/// The capacity type (`ON_DEMAND`, `SPOT`) of an EKS managed node group's nodes.
pub const EKS_CAPACITY_TYPE: &str = "eks.amazonaws.com/capacityType";
/// Karpenter's capacity type label (`spot`, `on-demand`), which ferroscale's templates may carry too.
pub const KARPENTER_CAPACITY_TYPE: &str = "karpenter.sh/capacity-type";
/// The annotation a pod's controller reads to pick which replicas go first on a scale-in (an int32):
/// consolidation weighs it as the cost of evicting the pod.
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";
/// The eksctl node group of a node.
pub const EKSCTL_NODEGROUP: &str = "alpha.eksctl.io/nodegroup-name";

/// Pod annotation: `"true"` lets scale-down evict the pod whatever else would block it, `"false"` keeps
/// its node.
pub const SAFE_TO_EVICT: &str = "cluster-autoscaler.kubernetes.io/safe-to-evict";
/// Pod annotation: names (comma-separated) of local volumes that do not keep the pod's node.
pub const SAFE_TO_EVICT_LOCAL_VOLUMES: &str =
    "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes";
/// Node annotation: `"true"` keeps the node from scale-down.
pub const SCALE_DOWN_DISABLED: &str = "cluster-autoscaler.kubernetes.io/scale-down-disabled";
/// Pod annotation: `"true"` makes the pod count as a DaemonSet pod whatever owns it (upstream's
/// `pod.IsDaemonSetPod`), for pods a DaemonSet-like controller runs on every node.
pub const DAEMONSET_POD: &str = "cluster-autoscaler.kubernetes.io/daemonset-pod";
/// A DaemonSet pod's own say on whether a removal of its node evicts it (`"true"`: yes, anything else:
/// no), whatever `--daemonset-eviction-for-*` says.
pub const ENABLE_DS_EVICTION: &str = "cluster-autoscaler.kubernetes.io/enable-ds-eviction";
/// Pod annotation: a Go duration this pod waits, from its creation, before it may trigger a scale-up
/// (upstream's per-pod `--new-pod-scale-up-delay`; it can only lengthen the flag's delay).
pub const POD_SCALE_UP_DELAY: &str = "cluster-autoscaler.kubernetes.io/pod-scale-up-delay";
/// Pod annotation of static (mirror) pods.
pub const MIRROR: &str = "kubernetes.io/config.mirror";
/// Annotation of the status ConfigMap: when it was last written.
pub const LAST_UPDATED: &str = "cluster-autoscaler.kubernetes.io/last-updated";
/// The annotation `kubectl apply` keeps, dropped from watch caches.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// Taint put on a node being removed, so nothing new is scheduled there (upstream's key).
pub const TO_BE_DELETED: &str = "ToBeDeletedByClusterAutoscaler";

/// Labels upstream ignores when it compares node groups for `--balance-similar-node-groups`: its basic
/// set (`BasicIgnoredLabels`), the AWS provider's (`CreateAwsNodeInfoComparator`), and ferroscale's own
/// group label.
pub const BALANCING_IGNORED: &[&str] = &[
    HOSTNAME,
    ZONE,
    REGION,
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/fluentd-ds-ready",
    "kops.k8s.io/instancegroup",
    "alpha.eksctl.io/instance-id",
    EKSCTL_NODEGROUP,
    EKS_NODEGROUP,
    "k8s.amazonaws.com/eniConfig",
    "lifecycle",
    EBS_CSI_ZONE,
    "topology.k8s.aws/zone-id",
    NODE_GROUP,
];
/// Taint (NoSchedule) on the old nodes of a replacement or consolidation from the moment the plan
/// starts, while its new nodes come up, so that nothing new is scheduled where it would be evicted
/// again (Karpenter's `karpenter.sh/disrupted`); taken off if the plan is dropped.
pub const DISRUPTED: &str = "ferroscale.io/disrupted";
/// Soft taint upstream puts on nodes it found unneeded (PreferNoSchedule).
pub const DELETION_CANDIDATE: &str = "DeletionCandidateOfClusterAutoscaler";
/// The taint a cordoned node stands for: a pod tolerating it (NoSchedule) may land on the node anyway,
/// as DaemonSet pods do.
pub const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";
/// Taints that describe a node's passing state (conditions, cloud initialisation, shutdown), not what a
/// new node of its group would have: left out of templates copied from real nodes (upstream's list).
pub const NODE_CONDITION_TAINTS: &[&str] = &[
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    UNSCHEDULABLE_TAINT,
    "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/network-unavailable",
    "node.kubernetes.io/pid-pressure",
    "node.cloudprovider.kubernetes.io/uninitialized",
    "node.cloudprovider.kubernetes.io/shutdown",
    "cloud.google.com/impending-node-termination",
    "NodeWithImpairedVolumes",
];
/// Prefixes of taints a node has only while it starts (upstream's `ignore-taint.` and `startup-taint.`):
/// such a node counts as not ready yet, and the taints are left out of templates.
pub const STARTUP_TAINT_PREFIXES: &[&str] = &[
    "ignore-taint.cluster-autoscaler.kubernetes.io/",
    "startup-taint.cluster-autoscaler.kubernetes.io/",
];
/// Prefix of taints that report a status (upstream's `status-taint.`): left out of templates.
pub const STATUS_TAINT_PREFIX: &str = "status-taint.cluster-autoscaler.kubernetes.io/";

/// Karpenter's annotation keeping a pod from voluntary disruption (descheduling, consolidation) when
/// `"true"`.
pub const KARPENTER_DO_NOT_DISRUPT: &str = "karpenter.sh/do-not-disrupt";
/// ferroscale's own name for the same.
pub const DO_NOT_DISRUPT: &str = "ferroscale.io/do-not-disrupt";

/// Annotation on a node: the intent of the action under way on it (JSON, `engine::intents`), read back
/// by a new leader before its first loop.
pub const INTENT: &str = "ferroscale.io/intent";
/// The descheduler's annotation making a pod evictable whatever else would keep it (present, any value).
pub const DESCHEDULER_EVICT: &str = "descheduler.alpha.kubernetes.io/evict";
/// The descheduler's soft no-eviction annotation (present, any value): honoured under the evictor's
/// `noEvictionPolicy: Mandatory`, last in eviction order otherwise.
pub const DESCHEDULER_PREFER_NO_EVICTION: &str =
    "descheduler.alpha.kubernetes.io/prefer-no-eviction";
