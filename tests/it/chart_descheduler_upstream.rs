//! The descheduler chart's values keys under `descheduler:` (issue #40): `kind: CronJob` with its
//! `schedule` runs one `ferroscale deschedule` cycle per Job, `deschedulingInterval`,
//! `deschedulerPolicyAPIVersion` and `deschedulerPolicy` win over ferroscale's own names, so a
//! descheduler user's values carry over.

use clap::Parser;
use ferroscale::cli::{Cli, Command as Cmd};
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::Value;

use crate::support::chart::{one, render_set, render_yaml};

const NAME: &str = "fs-ferroscale-descheduler";

/// The `deschedule` flags of a pod's first container.
fn flags(args: Vec<String>) -> ferroscale::cli::deschedule::DeschedulerFlags {
    let cli = Cli::try_parse_from(std::iter::once("ferroscale".to_string()).chain(args.clone()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    match cli.command {
        Cmd::Deschedule(f) => f,
        _ => panic!("{args:?}: runs deschedule"),
    }
}

fn has(objects: &[Value], kind: &str) -> bool {
    objects
        .iter()
        .any(|o| o["kind"] == kind && o["metadata"]["name"] == NAME)
}

#[test]
fn kind_cron_job_runs_one_cycle_per_schedule() {
    let objects = render_set(&[
        "descheduler.enabled=true",
        "descheduler.kind=CronJob",
        "descheduler.schedule=*/5 * * * *",
    ])
    .unwrap();
    assert!(!has(&objects, "Deployment"), "a CronJob instead");
    let cron: CronJob = one(&objects, "CronJob", NAME);
    let spec = cron.spec;
    assert_eq!(spec.schedule, "*/5 * * * *");
    assert_eq!(spec.concurrency_policy.as_deref(), Some("Forbid"));
    let pod = spec.job_template.spec.unwrap().template.spec.unwrap();
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    assert_eq!(pod.service_account_name.as_deref(), Some(NAME));
    let c = &pod.containers[0];
    assert!(
        c.liveness_probe.is_none(),
        "a Job's one cycle is not probed"
    );
    let f = flags(c.args.clone().unwrap());
    assert!(f.descheduling_interval.0.is_zero(), "one cycle and out");
    assert!(!f.leader_elect, "one Job at a time: no Lease");
    // Its policy is mounted from the ConfigMap, as the Deployment's.
    let mount = &c.volume_mounts.as_ref().unwrap()[0];
    let path = f.policy_config_file.unwrap();
    assert!(path.starts_with(&mount.mount_path), "{path:?}");
    // Not in standalone mode, where `run` deschedules; no other kind.
    let err = render_set(&[
        "mode=standalone",
        "descheduler.enabled=true",
        "descheduler.kind=CronJob",
    ])
    .unwrap_err();
    assert!(err.contains("descheduler.kind"), "{err}");
    let err = render_set(&["descheduler.enabled=true", "descheduler.kind=Job"]).unwrap_err();
    assert!(err.contains("kind"), "{err}");
}

#[test]
fn the_descheduler_charts_policy_and_interval_keys_win() {
    let objects = render_yaml(
        "descheduler:\n  enabled: true\n  deschedulingInterval: 90s\n  \
         deschedulerPolicyAPIVersion: descheduler/v1alpha2\n  deschedulerPolicy:\n    \
         maxNoOfPodsToEvictPerNode: 3\n    profiles:\n    - name: mine\n      pluginConfig:\n      \
         - name: PodLifeTime\n        args: {maxPodLifeTimeSeconds: 600}\n      plugins:\n        \
         deschedule: {enabled: [PodLifeTime]}\n",
    )
    .unwrap();
    let d: k8s_openapi::api::apps::v1::Deployment = one(&objects, "Deployment", NAME);
    let args = d.spec.template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap();
    assert_eq!(flags(args).descheduling_interval.0.as_secs(), 90);
    let cm: ConfigMap = one(&objects, "ConfigMap", NAME);
    let text = cm.data.unwrap().remove("policy.yaml").unwrap();
    let (policy, _) = ferroscale::deschedule::Policy::parse(&text).unwrap();
    assert_eq!(policy.profiles.len(), 1);
    assert_eq!(policy.profiles[0].name, "mine");
    assert_eq!(policy.max_per_node, Some(3));
}
