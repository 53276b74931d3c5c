//! The chart speaks upstream cluster-autoscaler chart's values where they mean the same thing: each alias,
//! set as a CA user's values file sets it, lands on the flag, variable or object ferroscale's own value
//! would, and wins over ferroscale's name when both are set (the table "CA chart value → ferroscale" in docs/operating.md).

use clap::Parser;
use ferroscale::cli::Cli;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use crate::support::chart::{
    cluster_autoscaler, count, ferroscale, one, render, render_set, render_yaml, SERVICE,
};

/// ferroscale's container flags, checked to parse with the binary's own command line.
fn flags_of(d: &Deployment) -> Vec<String> {
    let args = d.spec.template.spec.as_ref().unwrap().containers[0]
        .args
        .clone()
        .unwrap();
    Cli::try_parse_from(std::iter::once("ferroscale".to_string()).chain(args.clone()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    args
}

fn env_of(d: &Deployment) -> Vec<(String, String)> {
    d.spec.template.spec.as_ref().unwrap().containers[0]
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect()
}

fn with_prefix<'a>(args: &'a [String], prefix: &str) -> Vec<&'a str> {
    args.iter()
        .filter(|a| a.starts_with(prefix))
        .map(String::as_str)
        .collect()
}

#[test]
fn replica_count_sets_the_replicas_and_provider_mode_still_runs_one() {
    let objects = render_set(&["mode=standalone", "replicaCount=3"]).unwrap();
    assert_eq!(ferroscale(&objects).spec.replicas, Some(3));
    // Both set: replicaCount wins.
    let objects = render_set(&["mode=standalone", "replicas=3", "replicaCount=1"]).unwrap();
    assert_eq!(ferroscale(&objects).spec.replicas, Some(1));
    assert_eq!(count(&objects, "PodDisruptionBudget"), 0);
    // Provider mode: exactly one, whichever name asks for more (schema, and the template's own check).
    let objects = render_set(&["replicaCount=1"]).unwrap();
    assert_eq!(ferroscale(&objects).spec.replicas, Some(1));
    let err = render_set(&["replicaCount=2"]).unwrap_err();
    assert!(err.contains("replicaCount"), "{err}");
    let err = render_set(&["replicaCount=0"]).unwrap_err();
    assert!(err.contains("replicaCount"), "{err}");
}

#[test]
fn rbac_service_account_creates_names_and_annotates_the_service_account() {
    let irsa = "arn:aws:iam::111122223333:role/ferroscale";
    let objects = render_yaml(&format!(
        "rbac: {{serviceAccount: {{name: cluster-autoscaler, annotations: {{eks.amazonaws.com/role-arn: \"{irsa}\"}}}}}}\n\
         serviceAccount: {{name: mine, annotations: {{eks.amazonaws.com/role-arn: old, team: infra}}}}\n"
    ))
    .unwrap();
    let sa: ServiceAccount = one(&objects, "ServiceAccount", "cluster-autoscaler");
    let annotations = sa.metadata.annotations.unwrap();
    assert_eq!(annotations["eks.amazonaws.com/role-arn"], irsa);
    assert_eq!(annotations["team"], "infra", "annotations are merged");
    let pod = ferroscale(&objects).spec.template.spec.unwrap();
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some("cluster-autoscaler")
    );
    // create: false uses an existing account, which must then be named.
    let objects = render_yaml(
        "rbac: {serviceAccount: {create: false, name: existing}}\nserviceAccount: {create: true}\n",
    )
    .unwrap();
    assert_eq!(count(&objects, "ServiceAccount"), 0);
    let pod = ferroscale(&objects).spec.template.spec.unwrap();
    assert_eq!(pod.service_account_name.as_deref(), Some("existing"));
    let err = render_yaml("rbac: {serviceAccount: {create: false}}\n").unwrap_err();
    assert!(err.contains("rbac.serviceAccount.name"), "{err}");
    // The standalone RBAC binds the account so named.
    let objects =
        render_yaml("mode: standalone\nrbac: {serviceAccount: {name: cluster-autoscaler}}\n")
            .unwrap();
    let bindings: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "ClusterRoleBinding" || o["kind"] == "RoleBinding")
        .collect();
    assert!(!bindings.is_empty());
    for b in bindings {
        assert_eq!(b["subjects"][0]["name"], "cluster-autoscaler", "{b}");
    }
}

#[test]
fn autoscaling_groups_become_nodes_flags() {
    let objects = render_yaml(
        "autoscalingGroups:\n  - {name: general, minSize: 1, maxSize: 10}\n  - {name: spot, minSize: 0, maxSize: 50}\n\
         aws: {nodes: [\"2:3:general\", \"0:5:system\"]}\n",
    )
    .unwrap();
    let args = flags_of(&ferroscale(&objects));
    // aws.nodes' entry for the same group gives way; the others stay.
    assert_eq!(
        with_prefix(&args, "--nodes="),
        [
            "--nodes=0:5:system",
            "--nodes=1:10:general",
            "--nodes=0:50:spot"
        ]
    );
    for (bad, field) in [
        ("autoscalingGroups: [{name: a, minSize: 1}]\n", "maxSize"),
        (
            "autoscalingGroups: [{name: a, minSize: -1, maxSize: 2}]\n",
            "minSize",
        ),
    ] {
        let err = render_yaml(bad).unwrap_err();
        assert!(err.contains(field), "{bad}: {err}");
    }
}

#[test]
fn auto_discovery_cluster_name_renders_upstreams_tag_spec() {
    let objects = render_set(&["autoDiscovery.clusterName=my-cluster"]).unwrap();
    assert_eq!(
        with_prefix(&flags_of(&ferroscale(&objects)), "--node-group-auto-discovery="),
        ["--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/my-cluster"]
    );
    // Tags of one's own, through tpl; with aws.autoDiscovery, both apply and a repeat is rendered once.
    let objects = render_yaml(
        "autoDiscovery:\n  clusterName: prod\n  tags: [\"k8s.io/cluster-autoscaler/enabled=true\", \"kubernetes.io/cluster/{{ .Values.autoDiscovery.clusterName }}\"]\n\
         aws: {autoDiscovery: [\"asg:tag=team=a\", \"asg:tag=k8s.io/cluster-autoscaler/enabled=true,kubernetes.io/cluster/prod\"]}\n",
    )
    .unwrap();
    assert_eq!(
        with_prefix(&flags_of(&ferroscale(&objects)), "--node-group-auto-discovery="),
        [
            "--node-group-auto-discovery=asg:tag=team=a",
            "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled=true,kubernetes.io/cluster/prod"
        ]
    );
    // No cluster name: nothing discovered (the default tags alone do not turn discovery on).
    let objects = render(None).unwrap();
    assert!(with_prefix(
        &flags_of(&ferroscale(&objects)),
        "--node-group-auto-discovery"
    )
    .is_empty());
}

#[test]
fn aws_region_and_extra_env_are_the_containers_environment() {
    let objects = render_yaml(
        "awsRegion: eu-west-1\nextraEnv: {AWS_MAX_ATTEMPTS: 5, FOO: bar, BIG: 100000000}\n",
    )
    .unwrap();
    let d = ferroscale(&objects);
    let env = env_of(&d);
    for (name, value) in [
        ("AWS_REGION", "eu-west-1"),
        ("AWS_MAX_ATTEMPTS", "5"),
        ("FOO", "bar"),
        ("BIG", "100000000"),
    ] {
        assert!(
            env.contains(&(name.into(), value.into())),
            "{name}: {env:?}"
        );
    }
    // aws.region stays the --aws-region flag, which wins over the variable in the SDK's chain.
    let objects = render_set(&["awsRegion=eu-west-1", "aws.region=us-east-1"]).unwrap();
    let d = ferroscale(&objects);
    assert_eq!(
        with_prefix(&flags_of(&d), "--aws-region"),
        ["--aws-region=us-east-1"]
    );
    assert!(env_of(&d).contains(&("AWS_REGION".into(), "eu-west-1".into())));
    // Not set: no environment at all; AWS keys have no place.
    assert!(env_of(&ferroscale(&render(None).unwrap())).is_empty());
    let err = render_set(&["extraEnv.AWS_SECRET_ACCESS_KEY=x"]).unwrap_err();
    assert!(err.contains("extraEnv/AWS_SECRET_ACCESS_KEY"), "{err}");
}

#[test]
fn expander_priorities_are_upstreams_config_map_or_serves_priority_file() {
    let tiers = "expanderPriorities: {10: [\".*spot.*\"], 1: [\".*\"]}\n";
    // standalone: upstream's ConfigMap, which run reads and follows: no file flag.
    let objects = render_yaml(&format!(
        "mode: standalone\nexpander: priority,least-waste\npriorities: {{5: [x]}}\n{tiers}"
    ))
    .unwrap();
    let cm: ConfigMap = one(
        &objects,
        "ConfigMap",
        "cluster-autoscaler-priority-expander",
    );
    let text = &cm.data.unwrap()["priorities"];
    let parsed = ferroscale::engine::expander::Priorities::parse(text).unwrap();
    assert_eq!(
        format!("{parsed:?}"),
        format!(
            "{:?}",
            ferroscale::engine::expander::Priorities::parse("10: [\".*spot.*\"]\n1: [\".*\"]")
                .unwrap()
        )
    );
    let args = flags_of(&ferroscale(&objects));
    assert!(
        with_prefix(&args, "--priority-config").is_empty(),
        "{args:?}"
    );
    let own: ConfigMap = one(&objects, "ConfigMap", SERVICE);
    assert!(!own.data.unwrap_or_default().contains_key("priorities.yaml"));
    // provider: serve reads no ConfigMap; the tiers are its priority file, over `priorities`.
    let objects = render_yaml(&format!("priorities: {{5: [x]}}\n{tiers}")).unwrap();
    assert_eq!(
        objects
            .iter()
            .filter(|o| o["metadata"]["name"] == "cluster-autoscaler-priority-expander")
            .count(),
        0
    );
    let own: ConfigMap = one(&objects, "ConfigMap", SERVICE);
    let file = &own.data.unwrap()["priorities.yaml"];
    assert!(file.contains(".*spot.*") && !file.contains('x'), "{file}");
    ferroscale::engine::expander::Priorities::parse(file).unwrap();
    assert_eq!(
        with_prefix(&flags_of(&ferroscale(&objects)), "--priority-config"),
        ["--priority-config=/etc/ferroscale/config/priorities.yaml"]
    );
    // Upstream also takes the tiers as a YAML string.
    let objects = render_yaml(
        "mode: standalone\nexpanderPriorities: |-\n  10:\n    - .*spot.*\n  1:\n    - .*\n",
    )
    .unwrap();
    let cm: ConfigMap = one(
        &objects,
        "ConfigMap",
        "cluster-autoscaler-priority-expander",
    );
    ferroscale::engine::expander::Priorities::parse(&cm.data.unwrap()["priorities"]).unwrap();
}

#[test]
fn extra_args_are_flags_that_replace_the_charts_own() {
    let objects = render_yaml(
        "mode: standalone\nextraArgs: {v: 4, expander: priority, scale-down-unneeded-time: 5m, scan-interval: 30s, max-total-unready-percentage: 45.5, max-graceful-termination-sec: 100000000}\n\
         standalone: {extraArgs: {scan-interval: 20s, max-nodes-total: \"100\"}}\n",
    )
    .unwrap();
    let args = flags_of(&ferroscale(&objects));
    for (flag, want) in [
        ("--v=", vec!["--v=4"]),
        ("--expander=", vec!["--expander=priority"]),
        (
            "--scale-down-unneeded-time=",
            vec!["--scale-down-unneeded-time=5m"],
        ),
        // extraArgs wins over standalone.extraArgs, and both over the chart's flag.
        ("--scan-interval=", vec!["--scan-interval=30s"]),
        ("--max-nodes-total=", vec!["--max-nodes-total=100"]),
        // Whole numbers as written, not 1e+08.
        (
            "--max-total-unready-percentage=",
            vec!["--max-total-unready-percentage=45.5"],
        ),
        (
            "--max-graceful-termination-sec=",
            vec!["--max-graceful-termination-sec=100000000"],
        ),
    ] {
        assert_eq!(with_prefix(&args, flag), want, "{args:?}");
    }
    // Provider mode: serve's flags (the bundled cluster-autoscaler keeps its own extraArgs).
    let objects = render_yaml(
        "extraArgs: {v: 1, log-format: json}\nprovider: {clusterAutoscaler: {enabled: true}}\n",
    )
    .unwrap();
    let args = flags_of(&ferroscale(&objects));
    assert_eq!(with_prefix(&args, "--log-format"), ["--log-format=json"]);
    let ca = cluster_autoscaler(&objects);
    let ca_args = ca.spec.template.spec.unwrap().containers[0].args.clone();
    assert!(!ca_args.unwrap().iter().any(|a| a == "--log-format=json"));
}

#[test]
fn pod_disruption_budget_and_priority_class_keep_upstreams_meaning() {
    let objects = render_set(&[
        "podDisruptionBudget.minAvailable=1",
        "priorityClassName=autoscaler",
    ])
    .unwrap();
    let pdb: PodDisruptionBudget = one(&objects, "PodDisruptionBudget", SERVICE);
    let spec = pdb.spec.unwrap();
    assert_eq!(spec.min_available, Some(IntOrString::Int(1)));
    assert!(spec.max_unavailable.is_none(), "minAvailable replaces it");
    let pod = ferroscale(&objects).spec.template.spec.unwrap();
    assert_eq!(pod.priority_class_name.as_deref(), Some("autoscaler"));
    let objects = render_set(&["podDisruptionBudget.maxUnavailable=0"]).unwrap();
    let pdb: PodDisruptionBudget = one(&objects, "PodDisruptionBudget", SERVICE);
    assert_eq!(pdb.spec.unwrap().max_unavailable, Some(IntOrString::Int(0)));
}

#[test]
fn upstream_values_with_no_meaning_here_are_refused_naming_the_field() {
    for (bad, field) in [
        ("cloudProvider: aws\n", "cloudProvider"),
        ("awsAccessKeyID: AKIA\n", "awsAccessKeyID"),
        ("rbac: {create: true}\n", "create"),
        // Upstream's image would run cluster-autoscaler with ferroscale's flags.
        (
            "image: {repository: registry.k8s.io/autoscaling/cluster-autoscaler, tag: v1.34.1}\n",
            "image/repository",
        ),
        ("autoDiscovery: {clusterName: a, tags: []}\n", "tags"),
        ("expanderPriorities: {10: .*}\n", "expanderPriorities"),
        ("prometheusRule: {interval: soon}\n", "interval"),
        ("grafanaDashboard: {enable: true}\n", "enable"),
    ] {
        let err = render_yaml(bad).unwrap_err();
        assert!(err.contains(field), "{bad}: {err}");
    }
}
