//! Templates copied from real nodes, as upstream builds them: a group with a good node is simulated with
//! that node's labels (the kubelet's `--node-labels`), allocatable and DaemonSet pods, not the cloud's
//! guess; the copy outlives the group's last node; and a memory capacity (the memory cloud's `capacity`,
//! like the AWS resources tag) leaves allocatable to the reserve unless an allocatable is given.

use std::time::Duration;

use ferroscale::engine::Settings;

use crate::support::fixtures::dump::pod;
use crate::support::simulate_harness::{pacing, reason_of, sim, ups};

fn engine() -> Settings {
    ferroscale::cli::flags::default_engine()
}

/// Two groups whose cloud templates (4 cpu, 16Gi, 58 pods: 3920m allocatable) carry no `team` label.
const GROUPS: &str = r#"
nodeGroups:
  - {name: blue, minSize: 0, maxSize: 5, capacity: {cpu: 4, memory: 16Gi, pods: 58}}
  - {name: plain, minSize: 0, maxSize: 5, capacity: {cpu: 4, memory: 16Gi, pods: 58}}
"#;

/// A node of `group` with `labels` (YAML flow entries) and `allocatable` cpu and memory; `extra` is YAML
/// under `spec`.
fn node(name: &str, group: &str, labels: &str, cpu: &str, memory: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  creationTimestamp: \"2026-11-01T10:00:00Z\"\n  \
         labels: {{ferroscale.io/node-group: {group}, kubernetes.io/hostname: {name}{labels}}}\n\
         spec: {{providerID: \"sim:///{group}/{name}\"{extra}}}\n\
         status:\n  capacity: {{cpu: \"4\", memory: 16Gi, pods: \"58\"}}\n  \
         allocatable: {{cpu: \"{cpu}\", memory: {memory}, pods: \"58\"}}\n  conditions: [{{type: Ready, status: \"True\"}}]\n"
    )
}

/// A DaemonSet's pod running on `node`, asking `cpu`.
fn daemon_pod(name: &str, node: &str, cpu: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: kube-system\n  labels: {{app: agent}}\n  \
         ownerReferences: [{{apiVersion: apps/v1, kind: DaemonSet, name: agent, uid: d, controller: true}}]\n\
         spec:\n  nodeName: {node}\n  containers: [{{name: a, resources: {{requests: {{cpu: \"{cpu}\", memory: 100Mi}}}}}}]\n"
    )
}

const WANTS_BLUE: &str = "  nodeSelector: {team: blue}\n";

#[test]
fn a_label_the_kubelet_adds_routes_the_scale_up_to_the_group_whose_nodes_have_it() {
    let cluster = |cordoned: bool| {
        let extra = if cordoned {
            ", unschedulable: true"
        } else {
            ""
        };
        vec![
            node("blue-1", "blue", ", team: blue", "4", "16Gi", extra),
            // blue-1 is full: the pod needs a new node.
            pod("a", "filler", "3500m", "1Gi", Some("blue-1"), ""),
            pod("a", "wants-blue", "1", "1Gi", None, WANTS_BLUE),
        ]
    };
    let mut s = sim(&cluster(false), GROUPS);
    let r = s.step(&engine(), &pacing());
    assert_eq!(ups(&r), vec![("blue", 1)], "{r:?}");
    // The new node joins as its group's nodes are (team: blue) and takes the pod: nothing more is asked.
    let r = s.step(&engine(), &pacing());
    assert!(r.scale_up.is_empty() && r.pending.is_empty(), "{r:?}");
    assert_eq!(r.nodes.get("blue"), Some(&2));

    // A cordoned node is no template: the cloud's, without the label, cannot take the pod.
    let r = sim(&cluster(true), GROUPS).step(&engine(), &pacing());
    assert!(r.scale_up.is_empty(), "{r:?}");
    assert_eq!(
        reason_of(&r, "a/wants-blue"),
        "no group fits: 2 node selector not matched"
    );
}

#[test]
fn a_real_node_smaller_than_the_cloud_template_decides() {
    let cluster = vec![
        // 3 cpu allocatable where the cloud's template promises 3920m.
        node("blue-1", "blue", "", "3", "12Gi", ""),
        pod("a", "filler", "2900m", "1Gi", Some("blue-1"), ""),
        pod(
            "a",
            "big",
            "3500m",
            "1Gi",
            None,
            "  nodeSelector: {ferroscale.io/node-group: blue}\n",
        ),
        pod(
            "a",
            "small",
            "2500m",
            "1Gi",
            None,
            "  nodeSelector: {ferroscale.io/node-group: blue}\n",
        ),
    ];
    let r = sim(&cluster, GROUPS).step(&engine(), &pacing());
    assert_eq!(ups(&r), vec![("blue", 1)], "{r:?}");
    assert_eq!(r.scale_up[0].pods, vec!["a/small".to_string()]);
    assert_eq!(
        reason_of(&r, "a/big"),
        "no group fits: 1 insufficient cpu, 1 node selector not matched"
    );
}

#[test]
fn the_daemonset_pods_of_the_real_node_are_counted() {
    // The DaemonSet object asks 100m (the cloud's guess), but its pod on blue-1 asks 1 cpu: a new blue
    // node has 3 cpu left, not 3820m.
    let ds = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: kube-system}\n\
              spec:\n  selector: {matchLabels: {app: agent}}\n  template:\n    metadata: {labels: {app: agent}}\n    \
              spec: {containers: [{name: a, resources: {requests: {cpu: 100m, memory: 100Mi}}}]}\n";
    let only_blue = "  nodeSelector: {ferroscale.io/node-group: blue}\n";
    let cluster = vec![
        node("blue-1", "blue", "", "4", "16Gi", ""),
        daemon_pod("agent-x1", "blue-1", "1"),
        pod("a", "filler", "2900m", "1Gi", Some("blue-1"), ""),
        pod("a", "big", "3500m", "1Gi", None, only_blue),
        pod("a", "small", "2500m", "1Gi", None, only_blue),
        ds.to_string(),
    ];
    let mut s = sim(&cluster, GROUPS);
    let r = s.step(&engine(), &pacing());
    assert_eq!(ups(&r), vec![("blue", 1)], "{r:?}");
    assert_eq!(r.scale_up[0].pods, vec!["a/small".to_string()]);
    assert!(
        reason_of(&r, "a/big").contains("1 insufficient cpu"),
        "{r:?}"
    );
    // The new node starts the real DaemonSet pod (1 cpu) and the small pod still fits next to it.
    let r = s.step(&engine(), &pacing());
    assert!(r.scale_up.is_empty(), "{r:?}");
    assert_eq!(r.pending.len(), 1, "only big waits: {r:?}");
}

#[test]
fn a_group_scaled_to_zero_keeps_the_template_of_its_last_node() {
    // blue-1 is idle and goes at once; the pod, which refuses blue-1 by name, is too new to ask for a
    // node until blue-1 has gone.
    let not_blue_1 = "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: \
                      [{matchExpressions: [{key: kubernetes.io/hostname, operator: NotIn, values: [blue-1]}]}]}}}\n";
    let cluster = vec![
        node("blue-1", "blue", ", team: blue", "4", "16Gi", ""),
        pod(
            "a",
            "wants-blue",
            "1",
            "1Gi",
            None,
            &format!("{WANTS_BLUE}{not_blue_1}"),
        )
        // As old as the node: the simulation starts then.
        .replace(
            "  namespace: a\n",
            "  namespace: a\n  creationTimestamp: \"2026-11-01T10:00:00Z\"\n",
        ),
    ];
    let mut settings = crate::support::simulate_harness::quick_scale_down();
    settings.new_pod_scale_up_delay = Duration::from_secs(15);
    let mut s = sim(&cluster, GROUPS);
    let r = s.step(&settings, &pacing());
    assert_eq!(r.scale_down.len(), 1, "{r:?}");
    assert_eq!(r.nodes.get("blue"), None, "{r:?}");
    let r = s.step(&settings, &pacing());
    assert!(r.scale_up.is_empty(), "still too new: {r:?}");
    // The remembered copy of blue-1 has the label the cloud's template lacks, and a hostname of its own.
    let r = s.step(&settings, &pacing());
    assert_eq!(ups(&r), vec![("blue", 1)], "{r:?}");
    let r = s.step(&settings, &pacing());
    assert!(r.scale_up.is_empty() && r.pending.is_empty(), "{r:?}");
}

#[test]
fn a_memory_capacity_leaves_allocatable_to_the_reserve_unless_given() {
    let groups = |allocatable: &str| {
        format!(
            "nodeGroups:\n  - {{name: m16, minSize: 0, maxSize: 5, capacity: {{cpu: 4, memory: 16Gi}}{allocatable}}}\n"
        )
    };
    // 16Gi with 110 pods keeps 11 MiB × 110 + 255 MiB + 100 MiB: 14819 MiB allocatable.
    let cluster = vec![
        pod("a", "fifteen-and-a-half", "1", "15872Mi", None, ""),
        pod("a", "fourteen", "1", "14Gi", None, ""),
    ];
    let r = sim(&cluster, &groups("")).step(&engine(), &pacing());
    assert_eq!(ups(&r), vec![("m16", 1)], "{r:?}");
    assert_eq!(r.scale_up[0].pods, vec!["a/fourteen".to_string()]);
    assert_eq!(
        reason_of(&r, "a/fifteen-and-a-half"),
        "no group fits: 1 insufficient memory"
    );
    // An allocatable given explicitly is taken as it is.
    let r = sim(&cluster, &groups(", allocatable: {memory: 16000Mi}")).step(&engine(), &pacing());
    let mut pods = r
        .scale_up
        .iter()
        .flat_map(|u| u.pods.clone())
        .collect::<Vec<_>>();
    pods.sort();
    assert_eq!(pods, vec!["a/fifteen-and-a-half", "a/fourteen"], "{r:?}");
}
