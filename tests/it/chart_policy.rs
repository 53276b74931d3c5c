//! The chart's provider mode has one writer: exactly one replica, replaced by Recreate, with a PDB that
//! never blocks a drain (standalone keeps its Lease-elected replicas, also replaced by Recreate, and runs
//! one without a Lease); a NetworkPolicy admits only
//! cluster-autoscaler to the gRPC ports and the monitoring namespace to metrics. The IAM policy of the docs
//! (docs/operating.md and the chart's README) scopes writes to the cluster's own groups.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicyPeer};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use crate::support::chart::{
    cluster_autoscaler, count, ferroscale, one, render, render_set, render_yaml, SERVICE,
};

#[test]
fn provider_mode_runs_one_replica_replaced_by_recreate_with_a_pdb_that_never_blocks_a_drain() {
    let objects = render(None).unwrap();
    let d = ferroscale(&objects);
    let spec = &d.spec;
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(
        spec.strategy.as_ref().unwrap().type_.as_deref(),
        Some("Recreate")
    );
    let pod = spec.template.spec.as_ref().unwrap();
    assert_eq!(
        pod.priority_class_name.as_deref(),
        Some("system-cluster-critical")
    );
    assert!(pod.termination_grace_period_seconds.unwrap() <= 10);
    let c = &pod.containers[0];
    assert!(c.startup_probe.is_some());
    let readiness = c.readiness_probe.as_ref().unwrap();
    assert_eq!(
        readiness.http_get.as_ref().unwrap().path.as_deref(),
        Some("/readyz")
    );
    assert!(readiness.period_seconds.unwrap() <= 2);
    let pdb: PodDisruptionBudget = one(&objects, "PodDisruptionBudget", SERVICE);
    let pdb = pdb.spec.unwrap();
    assert_eq!(pdb.max_unavailable, Some(IntOrString::Int(1)));
    assert!(pdb.min_available.is_none());
    let pod_labels = spec
        .template
        .metadata
        .as_ref()
        .unwrap()
        .labels
        .clone()
        .unwrap();
    assert!(selects(pdb.selector.as_ref().unwrap(), &pod_labels));

    // The schema refuses a second writer, naming the field; standalone keeps its replicas.
    let err = render_set(&["replicas=2"]).unwrap_err();
    assert!(err.contains("replicas"), "{err}");
    let objects = render_set(&["mode=standalone"]).unwrap();
    let spec = ferroscale(&objects).spec;
    assert_eq!(spec.replicas, Some(2));
    assert_eq!(count(&objects, "PodDisruptionBudget"), 1);
    let objects = render_set(&["mode=standalone", "replicas=3"]).unwrap();
    assert_eq!(ferroscale(&objects).spec.replicas, Some(3));
    let objects = render_set(&["mode=standalone", "replicas=1"]).unwrap();
    assert_eq!(count(&objects, "PodDisruptionBudget"), 0);
}

#[test]
fn standalone_without_leader_election_runs_one_writer_replaced_by_recreate() {
    // Without a Lease every replica writes: more than one is refused, naming the values to change,
    // whichever way leader election is turned off.
    for values in [
        "mode: standalone\nstandalone: {leaderElect: false}\n",
        "mode: standalone\nstandalone: {leaderElect: false}\nreplicas: 2\n",
        "mode: standalone\nstandalone: {leaderElect: false}\nreplicaCount: 3\n",
        "mode: standalone\nstandalone: {extraArgs: {leader-elect: \"false\"}}\n",
        "mode: standalone\nextraArgs: {leader-elect: \"false\"}\nreplicas: 2\n",
    ] {
        let err = render_yaml(values).unwrap_err();
        assert!(
            err.contains("standalone.leaderElect=false runs at most one replica"),
            "{values:?}: {err}"
        );
    }
    // extraArgs wins over standalone.leaderElect, as on the command line.
    let objects = render_yaml(
        "mode: standalone\nstandalone: {leaderElect: false}\nextraArgs: {leader-elect: \"true\"}\n",
    )
    .unwrap();
    assert_eq!(ferroscale(&objects).spec.replicas, Some(2));
    let objects = render_set(&[
        "mode=standalone",
        "standalone.leaderElect=false",
        "replicas=1",
    ])
    .unwrap();
    let spec = ferroscale(&objects).spec;
    assert_eq!(spec.replicas, Some(1));
    // A rollout never overlaps the old writer with the new one, in any standalone setup.
    assert_eq!(spec.strategy.unwrap().type_.as_deref(), Some("Recreate"));
    for sets in [&["mode=standalone"][..], &["mode=standalone", "replicas=3"]] {
        let spec = ferroscale(&render_set(sets).unwrap()).spec;
        assert_eq!(
            spec.strategy.unwrap().type_.as_deref(),
            Some("Recreate"),
            "{sets:?}"
        );
    }
}

/// Whether `sel` selects pods labelled `labels` (matchLabels and matchExpressions, as the API server).
fn selects(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    sel.match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v))
        && sel.match_expressions.iter().flatten().all(|e| {
            let values = e.values.clone().unwrap_or_default();
            match (e.operator.as_str(), labels.get(&e.key)) {
                ("In", Some(v)) => values.contains(v),
                ("NotIn", v) => v.is_none_or(|v| !values.contains(v)),
                ("Exists", v) => v.is_some(),
                ("DoesNotExist", v) => v.is_none(),
                _ => false,
            }
        })
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The NetworkPolicy's rules: ports admitted → who may connect to them.
fn rules(objects: &[Value]) -> BTreeMap<BTreeSet<i32>, Vec<NetworkPolicyPeer>> {
    let np: NetworkPolicy = one(objects, "NetworkPolicy", SERVICE);
    let spec = np.spec.unwrap();
    assert_eq!(spec.policy_types, Some(vec!["Ingress".to_string()]));
    let pod_labels = ferroscale(objects)
        .spec
        .template
        .metadata
        .unwrap()
        .labels
        .unwrap();
    assert!(selects(spec.pod_selector.as_ref().unwrap(), &pod_labels));
    let mut out = BTreeMap::new();
    for rule in spec.ingress.unwrap_or_default() {
        // A rule without ports or sources would admit everything.
        let ports: BTreeSet<i32> = rule
            .ports
            .unwrap()
            .into_iter()
            .map(|p| {
                assert_eq!(p.protocol.as_deref(), Some("TCP"));
                match p.port.unwrap() {
                    IntOrString::Int(n) => n,
                    other => panic!("{other:?}"),
                }
            })
            .collect();
        let from = rule.from.unwrap();
        assert!(!ports.is_empty() && !from.is_empty());
        assert!(out.insert(ports, from).is_none());
    }
    out
}

fn namespace(peer: &NetworkPolicyPeer) -> Option<String> {
    let sel = peer.namespace_selector.as_ref()?;
    assert!(sel.match_expressions.is_none());
    let m = sel.match_labels.clone().unwrap();
    assert_eq!(m.len(), 1);
    Some(m["kubernetes.io/metadata.name"].clone())
}

#[test]
fn the_network_policy_admits_cluster_autoscaler_to_grpc_and_monitoring_to_metrics() {
    let grpc = BTreeSet::from([8086, 8087]);
    let metrics = BTreeSet::from([8085]);
    // Upstream's cluster-autoscaler chart labels its pods app.kubernetes.io/name:
    // <cloudProvider>-cluster-autoscaler and app.kubernetes.io/instance: <release>.
    let upstream = |name| {
        labels(&[
            ("app.kubernetes.io/name", name),
            ("app.kubernetes.io/instance", "ca"),
        ])
    };
    let ours = labels(&[
        ("app.kubernetes.io/name", "ferroscale"),
        ("app.kubernetes.io/instance", "fs"),
    ]);

    let r = rules(&render(None).unwrap());
    assert_eq!(
        r.keys().cloned().collect::<Vec<_>>(),
        [metrics.clone(), grpc.clone()]
    );
    let [peer] = r[&grpc].as_slice() else {
        panic!("{:?}", r[&grpc])
    };
    assert_eq!(namespace(peer), None, "the release's namespace");
    let sel = peer.pod_selector.as_ref().unwrap();
    assert!(selects(sel, &upstream("externalgrpc-cluster-autoscaler")));
    assert!(selects(sel, &upstream("aws-cluster-autoscaler")));
    assert!(!selects(sel, &ours) && !selects(sel, &labels(&[])));
    let [peer] = r[&metrics].as_slice() else {
        panic!("{:?}", r[&metrics])
    };
    assert!(peer.pod_selector.is_none());
    assert_eq!(namespace(peer).as_deref(), Some("monitoring"));

    // The bundled cluster-autoscaler's pods, and only those.
    let objects = render_set(&["provider.clusterAutoscaler.enabled=true"]).unwrap();
    let ca_labels = cluster_autoscaler(&objects)
        .spec
        .template
        .metadata
        .unwrap()
        .labels
        .unwrap();
    let r = rules(&objects);
    let [peer] = r[&grpc].as_slice() else {
        panic!("{:?}", r[&grpc])
    };
    assert_eq!(namespace(peer), None);
    let sel = peer.pod_selector.as_ref().unwrap();
    assert!(selects(sel, &ca_labels));
    assert!(!selects(sel, &upstream("externalgrpc-cluster-autoscaler")) && !selects(sel, &ours));

    // Another namespace and monitoring namespace; metrics closed.
    let r = rules(
        &render_set(&[
            "networkPolicy.clusterAutoscaler.namespace=kube-system",
            "networkPolicy.metrics.namespace=observability",
        ])
        .unwrap(),
    );
    assert_eq!(namespace(&r[&grpc][0]).as_deref(), Some("kube-system"));
    assert_eq!(namespace(&r[&metrics][0]).as_deref(), Some("observability"));
    // A selector of one's own replaces upstream's labels (values maps merge; this one must not).
    let r = rules(
        &render_set(&[
            "networkPolicy.clusterAutoscaler.podSelector.matchLabels.app=cluster-autoscaler",
        ])
        .unwrap(),
    );
    let sel = r[&grpc][0].pod_selector.as_ref().unwrap();
    assert!(selects(sel, &labels(&[("app", "cluster-autoscaler")])));
    assert!(!selects(sel, &upstream("externalgrpc-cluster-autoscaler")));
    let r = rules(&render_set(&["networkPolicy.metrics.enabled=false"]).unwrap());
    assert_eq!(r.into_keys().collect::<Vec<_>>(), [grpc]);

    // standalone serves no gRPC: the metrics rule alone.
    let r = rules(&render_set(&["mode=standalone"]).unwrap());
    assert_eq!(r.keys().cloned().collect::<Vec<_>>(), [metrics]);

    let objects = render_set(&["networkPolicy.enabled=false"]).unwrap();
    assert_eq!(count(&objects, "NetworkPolicy"), 0);
}

/// The read-only actions of the policy not named `Describe*`.
const READ_ONLY_GETS: [&str; 2] = [
    "ec2:GetInstanceTypesFromInstanceRequirements",
    "pricing:GetProducts",
];

/// The IAM policies (```json blocks with a Statement) of docs/operating.md and the chart's README.
fn iam_policies() -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    for readme in ["docs/operating.md", "charts/ferroscale/README.md"] {
        let text =
            std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(readme))
                .unwrap();
        for block in text.split("```json\n").skip(1) {
            let json = block.split("```").next().unwrap();
            if json.contains("\"Statement\"") {
                out.push((readme, serde_json::from_str(json).unwrap()));
            }
        }
    }
    out
}

#[test]
fn the_documented_iam_policy_scopes_writes_to_the_clusters_own_groups() {
    let policies = iam_policies();
    assert_eq!(
        policies.len(),
        2,
        "one policy in each of docs/operating.md and the chart's README"
    );
    assert_eq!(policies[0].1, policies[1].1, "both show the same policy");
    let writes = [
        "autoscaling:SetDesiredCapacity",
        "autoscaling:TerminateInstanceInAutoScalingGroup",
    ];
    let mut written = BTreeSet::new();
    for statement in policies[0].1["Statement"].as_array().unwrap() {
        assert_eq!(statement["Effect"], "Allow");
        let actions: Vec<&str> = statement["Action"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        if actions.iter().any(|a| writes.contains(a)) {
            assert!(actions.iter().all(|a| writes.contains(a)), "{actions:?}");
            written.extend(actions);
            let cond = statement["Condition"]["StringEquals"].as_object().unwrap();
            // The cluster's own tag, not only the shared k8s.io/cluster-autoscaler/enabled.
            assert!(
                cond.keys().any(|k| k
                    .strip_prefix("aws:ResourceTag/k8s.io/cluster-autoscaler/")
                    .is_some_and(|cluster| cluster != "enabled" && !cluster.contains('/'))),
                "{statement}"
            );
        } else {
            assert!(
                actions
                    .iter()
                    .all(|a| a.contains(":Describe") || READ_ONLY_GETS.contains(a)),
                "{actions:?}"
            );
            assert_eq!(statement["Resource"], "*");
        }
    }
    assert_eq!(written.len(), writes.len());
}
