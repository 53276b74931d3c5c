//! The descheduler in the chart's provider mode, where cluster-autoscaler scales and serve never calls
//! the Kubernetes API: `ferroscale deschedule` in its own Deployment (`descheduler.enabled`), its flags
//! parsed by the binary's own command line and its policy (the descheduler chart's format, mounted from
//! its ConfigMap) by the binary's parser, leader-elected on a Lease in the release's namespace, its
//! RBAC exactly `k8s::DESCHEDULE_PERMISSIONS` and bound to its own ServiceAccount; absent when disabled
//! and in standalone mode (where `run` deschedules).

use std::collections::BTreeSet;

use clap::Parser;
use ferroscale::cli::deschedule::DeschedulerFlags;
use ferroscale::cli::{Cli, Command as Cmd};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role, RoleBinding};
use serde_json::Value;

use crate::chart::granted_by;
use crate::support::chart::{ferroscale, notes, one, render_set, typed};

/// The descheduler's objects' name for the test release.
const NAME: &str = "fs-ferroscale-descheduler";

/// The flags of a descheduler Deployment, parsed by the binary's command line.
fn flags(d: &Deployment) -> DeschedulerFlags {
    let args = d.spec.template.spec.as_ref().unwrap().containers[0]
        .args
        .clone()
        .unwrap();
    let cli = Cli::try_parse_from(std::iter::once("ferroscale".to_string()).chain(args.clone()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    match cli.command {
        Cmd::Deschedule(f) => f,
        _ => panic!("{args:?}: the descheduler's Deployment runs deschedule"),
    }
}

/// The text of the file `path` in the pod of `d`: the ConfigMap volume mounted above it, read from the
/// rendered objects.
fn mounted(d: &Deployment, objects: &[Value], path: &str) -> String {
    let spec = d.spec.template.spec.as_ref().unwrap();
    let mount = spec.containers[0]
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| path.starts_with(&format!("{}/", m.mount_path)))
        .unwrap_or_else(|| panic!("{path} is not mounted"));
    let key = &path[mount.mount_path.len() + 1..];
    let volume = spec
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == mount.name)
        .unwrap();
    let cm: ConfigMap = one(
        objects,
        "ConfigMap",
        &volume.config_map.as_ref().unwrap().name,
    );
    cm.data
        .unwrap_or_default()
        .remove(key)
        .unwrap_or_else(|| panic!("{path}: no key {key} in ConfigMap {:?}", cm.metadata.name))
}

/// What every rendered descheduler Deployment holds to: the hardening of ferroscale's own, its flags
/// and policy accepted by the binary (as `deschedule` reads them at start), a Lease it may take, its
/// RBAC exactly what `deschedule` calls and bound to its ServiceAccount, its pods apart from
/// ferroscale's and behind their own Service.
pub fn check_descheduler(d: &Deployment, objects: &[Value]) {
    let name = d.metadata.name.clone().unwrap();
    let spec = d.spec.template.spec.as_ref().unwrap();
    let pod_sc = spec.security_context.as_ref().unwrap();
    assert_eq!(pod_sc.run_as_non_root, Some(true));
    let c = &spec.containers[0];
    let sc = c.security_context.as_ref().unwrap();
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert!(c.resources.as_ref().unwrap().requests.is_some());
    for probe in [&c.liveness_probe, &c.readiness_probe] {
        let get = probe.as_ref().unwrap().http_get.as_ref().unwrap();
        assert_eq!(get.path.as_deref(), Some("/healthz"), "{name}");
    }
    assert_eq!(spec.automount_service_account_token, Some(true));

    let f = flags(d);
    // Its metrics port is the container's `http` port.
    let http = c
        .ports
        .iter()
        .flatten()
        .find(|p| p.name.as_deref() == Some("http"));
    assert_eq!(
        http.map(|p| p.container_port),
        Some(i32::from(f.address.port()))
    );
    // The policy it names is mounted and is one the binary reads, with the flags `deschedule` checks
    // at start.
    let path = f.policy_config_file.clone().expect("--policy-config-file");
    let policy = mounted(d, objects, path.to_str().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("policy.yaml");
    std::fs::write(&copy, &policy).unwrap();
    let settings = DeschedulerFlags {
        policy_config_file: Some(copy),
        ..f.clone()
    }
    .settings()
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!settings.interval.is_zero(), "a Deployment cycles");
    let lease = f.lease("replica").unwrap_or_else(|e| panic!("{name}: {e}"));
    let replicas = d.spec.replicas.unwrap_or(1);
    // Replicas that may evict take turns (in dry-run nothing is evicted and no Lease is taken).
    assert!(
        lease.is_some() || replicas == 1 || f.dry_run,
        "{name}: {replicas} replicas, no Lease"
    );
    // The Lease is the one its Role lets it renew, in the release's namespace.
    let role: Role = one(objects, "Role", &name);
    if let Some(lease) = lease {
        assert_eq!(lease.namespace, "autoscaling");
        assert_eq!(role.metadata.namespace.as_deref(), Some("autoscaling"));
        assert!(role.rules.iter().flatten().any(|r| r
            .resource_names
            .iter()
            .flatten()
            .any(|n| *n == lease.name)
            && r.verbs.contains(&"update".to_string())));
    }

    // Exactly what `deschedule` calls, bound to its own ServiceAccount.
    let used: BTreeSet<(String, String, String)> = ferroscale::k8s::DESCHEDULE_PERMISSIONS
        .iter()
        .map(|(g, r, v)| (g.to_string(), r.to_string(), v.to_string()))
        .collect();
    assert_eq!(granted_by(objects, |n| n == name), used);
    let account = spec.service_account_name.clone().unwrap();
    let crb: ClusterRoleBinding = one(objects, "ClusterRoleBinding", &name);
    let rb: RoleBinding = one(objects, "RoleBinding", &name);
    for subjects in [crb.subjects, rb.subjects] {
        let subjects = subjects.unwrap();
        assert_eq!(subjects.len(), 1);
        assert_eq!(subjects[0].name, account);
    }
    assert_eq!(crb.role_ref.name, name);
    assert_eq!(rb.role_ref.name, name);

    // Its pods are not ferroscale's (whose Deployment, Service and PDB select by labels); its Service
    // selects them.
    let labels = d
        .spec
        .template
        .metadata
        .as_ref()
        .unwrap()
        .labels
        .clone()
        .unwrap();
    let selects = |sel: &std::collections::BTreeMap<String, String>| {
        sel.iter().all(|(k, v)| labels.get(k) == Some(v))
    };
    let own = ferroscale(objects).spec.selector.match_labels.unwrap();
    assert!(
        !selects(&own),
        "ferroscale's selector takes the descheduler's pods"
    );
    let svc: Service = one(objects, "Service", &name);
    assert!(selects(&svc.spec.unwrap().selector.unwrap()));
}

fn descheduler(objects: &[Value]) -> Deployment {
    one(objects, "Deployment", NAME)
}

/// Whether any object is the descheduler's.
fn any_descheduler(objects: &[Value]) -> bool {
    objects.iter().any(|o| {
        o["metadata"]["name"]
            .as_str()
            .unwrap()
            .ends_with("-descheduler")
    })
}

#[test]
fn provider_mode_runs_deschedule_in_its_own_deployment_with_the_policy_mounted() {
    let objects = render_set(&["descheduler.enabled=true"]).unwrap();
    let d = descheduler(&objects);
    check_descheduler(&d, &objects);
    let f = flags(&d);
    assert_eq!(f.descheduling_interval.0.as_secs(), 300);
    assert_eq!(f.deschedule_cooldown.0.as_secs(), 1800);
    assert!(f.leader_elect && !f.dry_run);
    assert_eq!(f.leader_elect_resource_name, "descheduler");
    assert_eq!(f.leader_elect_resource_namespace, "autoscaling");
    assert_eq!(f.address.port(), 8085);
    // The policy is the descheduler chart's, as standalone's `run` gets it.
    let policy = mounted(
        &d,
        &objects,
        f.policy_config_file.as_ref().unwrap().to_str().unwrap(),
    );
    let standalone = render_set(&["mode=standalone", "descheduler.enabled=true"]).unwrap();
    let cm: ConfigMap = one(&standalone, "ConfigMap", "fs-ferroscale");
    assert_eq!(policy, cm.data.unwrap()["deschedule-policy.yaml"]);
    assert!(
        policy.starts_with("apiVersion: \"descheduler/v1alpha2\"\nkind: \"DeschedulerPolicy\"\n")
    );
    let (parsed, _) = ferroscale::deschedule::Policy::parse(&policy).unwrap();
    assert_eq!(parsed.profiles[0].name, "default");
    // Its own ServiceAccount; serve's is untouched: no token, no rules, no descheduler flags.
    let sa = d.spec.template.spec.unwrap().service_account_name.unwrap();
    assert_eq!(sa, NAME);
    assert!(objects
        .iter()
        .any(|o| o["kind"] == "ServiceAccount" && o["metadata"]["name"] == NAME));
    let serve = ferroscale(&objects).spec.template.spec.unwrap();
    assert_eq!(serve.automount_service_account_token, Some(false));
    let serve_args = serve.containers[0].args.clone().unwrap();
    assert!(
        !serve_args.iter().any(|a| a.contains("deschedul")),
        "{serve_args:?}"
    );
    // `helm install` says where it runs and how to see what it declined.
    let notes = notes(&["descheduler.enabled=true"]);
    assert!(
        notes.contains(&format!("Deployment {NAME}"))
            && notes.contains("Lease descheduler in autoscaling")
            && notes.contains("reason=DeschedulingDeclined"),
        "{notes}"
    );
    assert!(!crate::support::chart::notes(&[]).contains("deschedule"));
}

#[test]
fn the_descheduler_is_absent_when_disabled_and_in_standalone_mode() {
    let objects = render_set(&[]).unwrap();
    assert!(!any_descheduler(&objects));
    // Standalone: `run` deschedules, under its own Lease and RBAC.
    let objects = render_set(&["mode=standalone", "descheduler.enabled=true"]).unwrap();
    assert!(!any_descheduler(&objects));
    let run = ferroscale(&objects).spec.template.spec.unwrap();
    let args = run.containers[0].args.clone().unwrap();
    assert!(
        args.iter().any(|a| a.starts_with("--deschedule-policy=")),
        "{args:?}"
    );
}

#[test]
fn the_descheduler_values_reach_its_flags() {
    let objects = render_set(&[
        "descheduler.enabled=true",
        "descheduler.interval=90s",
        "descheduler.cooldown=1h",
        "descheduler.dryRun=true",
        "descheduler.leaseName=mine",
        "descheduler.replicas=2",
        "descheduler.serviceAccount.create=false",
        "descheduler.serviceAccount.name=existing",
        "descheduler.extraArgs.v=4",
        "descheduler.extraArgs.leader-elect-retry-period=5s",
    ])
    .unwrap();
    let d = descheduler(&objects);
    check_descheduler(&d, &objects);
    assert_eq!(d.spec.replicas, Some(2));
    let f = flags(&d);
    assert_eq!(f.descheduling_interval.0.as_secs(), 90);
    assert_eq!(f.deschedule_cooldown.0.as_secs(), 3600);
    assert!(f.dry_run);
    assert_eq!(f.leader_elect_resource_name, "mine");
    assert_eq!(f.leader_elect_retry_period.0.as_secs(), 5);
    let args = d.spec.template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap();
    assert!(args.contains(&"--v=4".to_string()), "{args:?}");
    // An existing ServiceAccount: bound, not created.
    let crb: ClusterRoleBinding = one(&objects, "ClusterRoleBinding", NAME);
    assert_eq!(crb.subjects.unwrap()[0].name, "existing");
    assert!(!objects
        .iter()
        .any(|o| o["kind"] == "ServiceAccount" && o["metadata"]["name"] == "existing"));
}

#[test]
fn descheduler_values_that_cannot_work_are_refused_naming_the_value() {
    for (sets, field) in [
        (
            &["descheduler.enabled=true", "descheduler.interval=0s"][..],
            "descheduler.interval",
        ),
        (
            &[
                "mode=standalone",
                "descheduler.enabled=true",
                "descheduler.interval=0m",
            ][..],
            "descheduler.interval",
        ),
        (
            &[
                "descheduler.enabled=true",
                "descheduler.replicas=2",
                "descheduler.leaderElect=false",
            ][..],
            "descheduler.replicas",
        ),
        (
            &[
                "descheduler.enabled=true",
                "descheduler.serviceAccount.create=false",
            ][..],
            "descheduler.serviceAccount.name",
        ),
    ] {
        let err = render_set(sets).expect_err(&format!("{sets:?}"));
        assert!(err.contains(field), "{sets:?}: {err}");
    }
}

#[test]
fn the_descheduler_calls_nothing_run_does_not() {
    // `run` deschedules with the same code: its permissions cover `deschedule`'s.
    for p in ferroscale::k8s::DESCHEDULE_PERMISSIONS {
        assert!(ferroscale::k8s::PERMISSIONS.contains(p), "{p:?}");
    }
    // The chart's ServiceAccount for serve still gets nothing.
    let objects = render_set(&["descheduler.enabled=true"]).unwrap();
    let serve = typed::<Deployment>(
        objects
            .iter()
            .find(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == "fs-ferroscale")
            .unwrap(),
    );
    let account = serve.spec.template.spec.unwrap().service_account_name;
    assert!(objects
        .iter()
        .filter(|o| o["kind"] == "ClusterRoleBinding" || o["kind"] == "RoleBinding")
        .all(|o| o["subjects"][0]["name"].as_str() != account.as_deref()));
}
