//! The Helm chart, rendered by Helm's own Go SDK (helm-python-sdk from PyPI, `scripts/render_chart.py`;
//! `FERROSCALE_HELM_PYTHON` names its Python, as `scripts/test.sh` sets): every mode and every
//! `charts/ferroscale/ci/*.yaml` renders; each object parses as its kind (k8s-openapi types, with a round
//! trip that catches misspelt or misplaced fields); the ferroscale container's flags parse with the
//! binary's own command line and its config files with the binary's parsers; secure defaults hold;
//! `values.schema.json` rejects bad values naming the field; the standalone RBAC is exactly
//! `k8s::PERMISSIONS`, and serve gets none. The descheduler's own Deployment (provider mode):
//! `chart_descheduler`. Provider mode's safety (mutual TLS: `chart_security`; one
//! replica, the NetworkPolicy, the documented IAM policy: `chart_policy`) has its own modules.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use ferroscale::cli::{Cli, Command as Cmd};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde_json::Value;

use crate::support::chart::{python, render, typed, CHART};

fn values_files() -> Vec<Option<PathBuf>> {
    let mut files: Vec<Option<PathBuf>> = std::fs::read_dir(format!("{CHART}/ci"))
        .unwrap()
        .map(|e| Some(e.unwrap().path()))
        .collect();
    files.sort();
    files.insert(0, None);
    files
}

fn check_ferroscale(d: &Deployment, objects: &[Value]) {
    let spec = d.spec.template.spec.as_ref().unwrap();
    let pod_sc = spec.security_context.as_ref().unwrap();
    assert_eq!(pod_sc.run_as_non_root, Some(true));
    assert_eq!(
        pod_sc.seccomp_profile.as_ref().unwrap().type_,
        "RuntimeDefault"
    );
    let c = &spec.containers[0];
    let sc = c.security_context.as_ref().unwrap();
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert!(c.resources.as_ref().unwrap().requests.is_some());
    assert!(c.liveness_probe.is_some() && c.readiness_probe.is_some());
    assert!(
        c.env
            .iter()
            .flatten()
            .all(|e| !e.name.starts_with("AWS_SECRET")),
        "no AWS keys in the pod"
    );
    // The flags are the binary's own.
    let args = c.args.clone().unwrap();
    let cli = Cli::try_parse_from(std::iter::once("ferroscale".to_string()).chain(args.clone()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    // The config files it names parse with the binary's parsers.
    let config = objects
        .iter()
        .find(|o| {
            o["kind"] == "ConfigMap"
                && o["metadata"]["name"] == d.metadata.name.clone().unwrap().as_str()
        })
        .expect("the ferroscale ConfigMap");
    let cm: ConfigMap = typed(config);
    let data = cm.data.unwrap_or_default();
    for (key, parse) in [
        (
            "memory-cloud.yaml",
            (|t: &str| ferroscale::cloud::memory::MemoryConfig::parse(t).map(|_| ()))
                as fn(&str) -> ferroscale::Result<()>,
        ),
        ("price-overrides.yaml", |t| {
            Ok(ferroscale::pricing::PriceOverrides::parse(t).map(|_| ())?)
        }),
        ("priorities.yaml", |t| {
            Ok(ferroscale::engine::expander::Priorities::parse(t).map(|_| ())?)
        }),
        ("deschedule-policy.yaml", descheduler_policy),
    ] {
        let named = args.iter().any(|a| a.ends_with(key));
        assert_eq!(
            named,
            data.contains_key(key),
            "{key}: flag and file go together"
        );
        if let Some(text) = data.get(key) {
            parse(text).unwrap_or_else(|e| panic!("{key}: {e}"));
        }
    }
    match cli.command {
        Cmd::Serve(_) => assert_eq!(spec.automount_service_account_token, Some(false)),
        Cmd::Run(_) => assert_eq!(spec.automount_service_account_token, Some(true)),
        Cmd::Simulate(_) | Cmd::Deschedule(_) | Cmd::Record(_) => {
            panic!("the chart runs serve or run")
        }
    }
}

/// The descheduler's policy as its chart writes it, read by the binary's parser.
fn descheduler_policy(text: &str) -> ferroscale::Result<()> {
    ferroscale::deschedule::Policy::parse(text)
        .map(|_| ())
        .map_err(|e| ferroscale::Error::config(e.to_string()))
}

#[test]
fn every_mode_and_ci_values_render_to_valid_objects() {
    for file in values_files() {
        let objects = render(file.as_deref()).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        let mut ferroscale = 0;
        for o in &objects {
            match o["kind"].as_str().unwrap() {
                "Deployment" => {
                    let d: Deployment = typed(o);
                    let name = d.metadata.name.clone().unwrap();
                    if name.ends_with("cluster-autoscaler") {
                        let c = &d.spec.template.spec.unwrap().containers[0];
                        let args = c.args.clone().unwrap().join(" ");
                        assert!(args.contains("--cloud-provider=externalgrpc"), "{args}");
                        // CA's grpc expander exits without a certificate to verify ferroscale's.
                        assert_eq!(
                            args.contains("--expander=grpc --grpc-expander-url="),
                            args.contains("--grpc-expander-cert="),
                            "{file:?}: {args}"
                        );
                    } else if name.ends_with("-descheduler") {
                        crate::chart_descheduler::check_descheduler(&d, &objects);
                    } else {
                        ferroscale += 1;
                        check_ferroscale(&d, &objects);
                    }
                }
                "Service" => drop(typed::<Service>(o)),
                "ServiceAccount" => drop(typed::<ServiceAccount>(o)),
                "ConfigMap" => drop(typed::<ConfigMap>(o)),
                "Secret" => drop(typed::<Secret>(o)),
                "NetworkPolicy" => drop(typed::<NetworkPolicy>(o)),
                "PodDisruptionBudget" => drop(typed::<PodDisruptionBudget>(o)),
                "ClusterRole" => drop(typed::<ClusterRole>(o)),
                "ClusterRoleBinding" => drop(typed::<ClusterRoleBinding>(o)),
                "Role" => drop(typed::<Role>(o)),
                "RoleBinding" => drop(typed::<RoleBinding>(o)),
                // CRDs not in k8s-openapi: their required fields.
                "Certificate" => {
                    assert_eq!(o["apiVersion"], "cert-manager.io/v1");
                    assert!(
                        o["spec"]["secretName"].is_string()
                            && o["spec"]["issuerRef"]["name"].is_string(),
                        "{o}"
                    );
                }
                "ServiceMonitor" => {
                    assert_eq!(o["apiVersion"], "monitoring.coreos.com/v1");
                    assert_eq!(o["spec"]["endpoints"][0]["port"], "http", "{o}");
                }
                "PrometheusRule" => {
                    assert_eq!(o["apiVersion"], "monitoring.coreos.com/v1");
                    assert!(
                        o["spec"]["groups"][0]["rules"][0]["expr"].is_string(),
                        "{o}"
                    );
                }
                other => panic!("{file:?}: unexpected kind {other}"),
            }
        }
        assert_eq!(ferroscale, 1, "{file:?}: one ferroscale Deployment");
    }
}

/// The (group, resource, verb) triples the rendered RBAC grants ferroscale's ServiceAccount (not
/// cluster-autoscaler's, not the descheduler's).
fn granted(objects: &[Value]) -> BTreeSet<(String, String, String)> {
    granted_by(objects, |name| {
        !name.ends_with("cluster-autoscaler") && !name.ends_with("-descheduler")
    })
}

/// The (group, resource, verb) triples of the rendered Roles and ClusterRoles whose name `pick`s.
pub(crate) fn granted_by(
    objects: &[Value],
    pick: impl Fn(&str) -> bool,
) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for o in objects.iter().filter(|o| {
        (o["kind"] == "ClusterRole" || o["kind"] == "Role")
            && pick(o["metadata"]["name"].as_str().unwrap())
    }) {
        for rule in o["rules"].as_array().unwrap() {
            for g in rule["apiGroups"].as_array().unwrap() {
                for r in rule["resources"].as_array().unwrap() {
                    for v in rule["verbs"].as_array().unwrap() {
                        out.insert((
                            g.as_str().unwrap().into(),
                            r.as_str().unwrap().into(),
                            v.as_str().unwrap().into(),
                        ));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn rbac_grants_exactly_what_the_code_uses() {
    let used: BTreeSet<(String, String, String)> = ferroscale::k8s::PERMISSIONS
        .iter()
        .map(|(g, r, v)| (g.to_string(), r.to_string(), v.to_string()))
        .collect();
    for file in ["standalone-memory.yaml", "standalone-aws.yaml"] {
        let objects = render(Some(&Path::new(CHART).join("ci").join(file))).unwrap();
        assert_eq!(granted(&objects), used, "{file}");
    }
    // serve never calls the Kubernetes API: no rules for its ServiceAccount.
    let objects = render(None).unwrap();
    assert!(granted(&objects).is_empty());
    assert!(!objects
        .iter()
        .any(|o| o["kind"] == "ClusterRoleBinding" || o["kind"] == "RoleBinding"));
}

#[test]
fn the_schema_rejects_bad_values_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    for (bad, field) in [
        ("mode: sideways\n", "mode"),
        ("replicas: two\n", "replicas"),
        // provider mode runs one replica (chart_policy).
        ("replicas: 2\n", "replicas"),
        ("replica: 2\n", "replica"),
        ("expander: cheapest\n", "expander"),
        // An existing client Secret needs the existing server Secret of the same CA.
        ("tls: {clientSecret: mine}\n", "serverSecret"),
        (
            "tls: {serverSecret: mine}\nprovider: {clusterAutoscaler: {enabled: true}}\n",
            "clientSecret",
        ),
        ("tls: {clientNames: [\"not a name\"]}\n", "clientNames"),
        ("networkPolicy: {enable: false}\n", "enable"),
        ("standalone: {scanInterval: soon}\n", "scanInterval"),
        ("descheduler: {enabled: true, replicas: 0}\n", "replicas"),
        (
            "descheduler: {enabled: true, leaderElection: {}}\n",
            "leaderElection",
        ),
        (
            "mode: standalone\ndescheduler: {enabled: true, interval: often}\n",
            "interval",
        ),
    ] {
        let path = dir.path().join("values.yaml");
        std::fs::write(&path, bad).unwrap();
        let err = render(Some(&path)).expect_err(bad);
        assert!(err.contains(field), "{bad:?}: {err}");
    }
}

/// Splits a shell command line into words: single quotes literal, double quotes keep backslashes
/// except before `"`, `\` and `$`, an unquoted backslash escapes the next character.
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut in_word) = (Vec::new(), String::new(), false);
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                word.extend(chars.by_ref().take_while(|&c| c != '\''));
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(n @ ('"' | '\\' | '$')) => word.push(n),
                            Some(n) => {
                                word.push('\\');
                                word.push(n);
                            }
                            None => {}
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

#[test]
fn the_docs_helm_install_commands_render() {
    let mut commands = 0;
    for file in crate::docs_links::markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let doc = file
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap()
            .display();
        let joined = text.replace("\\\n", " ");
        for line in joined
            .lines()
            .filter(|l| l.trim_start().starts_with("helm install"))
        {
            let words = shell_words(line);
            let sets: Vec<&String> = words
                .iter()
                .zip(words.iter().skip(1))
                .filter(|(flag, _)| *flag == "--set")
                .map(|(_, v)| v)
                .collect();
            let mut cmd = Command::new(python());
            cmd.arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/scripts/render_chart.py"
            ))
            .arg(CHART);
            for s in &sets {
                cmd.arg("--set").arg(s);
            }
            let out = cmd.output().unwrap();
            assert!(
                out.status.success(),
                "{doc}: {line}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let objects: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
            // What the command sets arrives where it should.
            let ours = |kind: &str| {
                objects
                    .iter()
                    .find(|o| {
                        o["object"]["kind"] == kind
                            && !o["object"]["metadata"]["name"]
                                .as_str()
                                .unwrap()
                                .ends_with("cluster-autoscaler")
                    })
                    .unwrap()
            };
            let sa = ours("ServiceAccount");
            assert_eq!(
                sa["object"]["metadata"]["annotations"]["eks.amazonaws.com/role-arn"],
                "arn:aws:iam::111122223333:role/ferroscale",
                "{doc}: {line}"
            );
            let deployment = ours("Deployment");
            let args = deployment["object"]["spec"]["template"]["spec"]["containers"][0]["args"]
                .to_string();
            assert!(
                args.contains("--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/my-cluster"),
                "{doc}: {line}: {args}"
            );
            commands += 1;
        }
    }
    assert!(
        commands >= 3,
        "the docs show helm install ({commands} found)"
    );
}
