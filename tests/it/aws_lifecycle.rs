//! A group's node lifecycle read from AWS (moto): the revision new instances launch from (launch
//! template id and resolved version, `$Default` followed to a new default version), each instance's,
//! and the lifecycle tags; the launch templates a mixed-instances policy's overrides name count as
//! current. moto reports every instance with the group's current template version rather than the one it
//! was launched from, so drift itself is tested on the memory cloud (`run_lifecycle`,
//! `simulate_lifecycle`).

use std::time::Duration;

use ferroscale::cloud::Cloud;
use ferroscale::model::consolidation::{Consolidation, ConsolidationPolicy};
use ferroscale::model::lifecycle::Budget;

use crate::support::moto::{Moto, DISCOVERY};

#[tokio::test]
async fn the_groups_revision_follows_its_default_template_version_and_tags_set_its_lifecycle() {
    let moto = Moto::start().await;
    moto.group(
        "workers",
        "m5.large",
        0,
        10,
        2,
        &[
            ("ferroscale.io/max-node-lifetime", "720h"),
            ("ferroscale.io/disruption-budget", "20%"),
            ("ferroscale.io/disruption-schedule", "0 2 * * *"),
            ("ferroscale.io/disruption-duration", "4h"),
            (
                "ferroscale.io/consolidation",
                "WhenEmptyOrUnderutilized,after=5m",
            ),
        ],
    )
    .await;
    let cloud = moto.cloud(&[DISCOVERY], &[]).await;
    let snapshot = cloud.snapshot();
    let g = snapshot.group("workers").unwrap();
    let lt = g.lifecycle.revision.clone().expect("a revision");
    assert!(lt.starts_with("lt:lt-") && lt.ends_with(":1"), "{lt}");
    assert_eq!(
        g.lifecycle.max_node_lifetime,
        Some(Duration::from_secs(720 * 3600))
    );
    assert_eq!(g.lifecycle.disruption_budget, Some(Budget::Percent(20.0)));
    assert_eq!(
        g.lifecycle.consolidation,
        Some(Consolidation {
            policy: ConsolidationPolicy::WhenEmptyOrUnderutilized,
            after: Duration::from_secs(300),
        })
    );
    assert_eq!(
        g.lifecycle
            .disruption_window
            .as_ref()
            .map(|w| w.schedule.as_str()),
        Some("0 2 * * *")
    );
    assert_eq!(g.instances.len(), 2);
    for i in &g.instances {
        assert_eq!(
            g.lifecycle.instance_revisions.get(&i.id),
            Some(&lt),
            "{g:?}"
        );
        assert!(!g.lifecycle.drifted(&i.id));
    }

    // Version 2 becomes the default: the group launches it now, its instances are from version 1.
    let id = lt.split(':').nth(1).unwrap().to_string();
    let data = aws_sdk_ec2::types::RequestLaunchTemplateData::builder()
        .image_id("ami-02ab00c1")
        .instance_type("m5.large".into())
        .build();
    moto.new_default_version(&id, data).await;
    // A fresh reader (the default version is cached for ten minutes).
    let cloud = moto.cloud(&[DISCOVERY], &[]).await;
    let snapshot = cloud.snapshot();
    let g = snapshot.group("workers").unwrap();
    assert_eq!(g.lifecycle.revision, Some(format!("lt:{id}:2")));
    assert_eq!(g.lifecycle.instance_revisions.len(), 2, "{:?}", g.lifecycle);
}

#[tokio::test]
async fn launch_templates_named_by_mixed_instances_overrides_are_current_not_drift() {
    use aws_sdk_autoscaling::types::{
        LaunchTemplate, LaunchTemplateOverrides, LaunchTemplateSpecification, MixedInstancesPolicy,
        Tag,
    };
    let moto = Moto::start().await;
    let main = moto.launch_template("mixed-lt", "m5.large").await;
    // The Graviton type launches from a template of its own (another AMI), as AWS allows per override.
    let arm = moto.launch_template("mixed-arm-lt", "m6g.large").await;
    let spec = |id: &str, version: &str| {
        LaunchTemplateSpecification::builder()
            .launch_template_id(id)
            .version(version)
            .build()
    };
    let tags = [
        ("k8s.io/cluster-autoscaler/enabled", "true"),
        ("k8s.io/cluster-autoscaler/test", "owned"),
    ]
    .map(|(k, v)| {
        Tag::builder()
            .resource_id("mixed")
            .resource_type("auto-scaling-group")
            .key(k)
            .value(v)
            .propagate_at_launch(false)
            .build()
    });
    moto.asg
        .create_auto_scaling_group()
        .auto_scaling_group_name("mixed")
        .mixed_instances_policy(
            MixedInstancesPolicy::builder()
                .launch_template(
                    LaunchTemplate::builder()
                        .launch_template_specification(spec(&main, "$Latest"))
                        .overrides(
                            LaunchTemplateOverrides::builder()
                                .instance_type("m5.large")
                                .build(),
                        )
                        .overrides(
                            LaunchTemplateOverrides::builder()
                                .instance_type("m6g.large")
                                .launch_template_specification(spec(&arm, "$Default"))
                                .build(),
                        )
                        .build(),
                )
                .build(),
        )
        .min_size(0)
        .max_size(4)
        .desired_capacity(2)
        .availability_zones("us-east-1a")
        .set_tags(Some(tags.to_vec()))
        .send()
        .await
        .unwrap();
    let cloud = moto.cloud(&[DISCOVERY], &[]).await;
    let snapshot = cloud.snapshot();
    let g = snapshot.group("mixed").unwrap();
    let (main_rev, arm_rev) = (format!("lt:{main}:1"), format!("lt:{arm}:1"));
    assert_eq!(g.lifecycle.revision.as_ref(), Some(&main_rev));
    assert_eq!(
        g.lifecycle.also_current.iter().collect::<Vec<_>>(),
        vec![&arm_rev],
        "{:?}",
        g.lifecycle
    );
    assert_eq!(g.instances.len(), 2);
    // moto reports its instances with the group's template; one launched from the override's
    // template (as AWS reports an m6g.large of this group) is as current, one of an old version drifts.
    let mut lifecycle = g.lifecycle.clone();
    for i in &g.instances {
        assert!(!lifecycle.drifted(&i.id), "{lifecycle:?}");
    }
    let arm_instance = "aws:///us-east-1a/i-0a1b2c3d4e5f60718";
    lifecycle
        .instance_revisions
        .insert(arm_instance.into(), arm_rev.clone());
    assert!(!lifecycle.drifted(arm_instance), "{lifecycle:?}");
    lifecycle
        .instance_revisions
        .insert(arm_instance.into(), format!("lt:{arm}:0"));
    assert!(
        lifecycle.drifted(arm_instance),
        "an older version still drifts"
    );
}
