//! A group's node lifecycle read from AWS (moto): the revision new instances launch from (launch
//! template id and resolved version, `$Default` followed to a new default version), each instance's,
//! and the lifecycle tags. moto reports every instance with the group's current template version rather
//! than the one it was launched from, so drift itself is tested on the memory cloud (`run_lifecycle`,
//! `simulate_lifecycle`).

use std::time::Duration;

use ferroscale::cloud::Cloud;
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
    moto.ec2
        .create_launch_template_version()
        .launch_template_id(&id)
        .source_version("1")
        .launch_template_data(
            aws_sdk_ec2::types::RequestLaunchTemplateData::builder()
                .image_id("ami-02ab00c1")
                .instance_type("m5.large".into())
                .build(),
        )
        .send()
        .await
        .unwrap();
    moto.ec2
        .modify_launch_template()
        .launch_template_id(&id)
        .default_version("2")
        .send()
        .await
        .unwrap();
    // A fresh reader (the default version is cached for ten minutes).
    let cloud = moto.cloud(&[DISCOVERY], &[]).await;
    let snapshot = cloud.snapshot();
    let g = snapshot.group("workers").unwrap();
    assert_eq!(g.lifecycle.revision, Some(format!("lt:{id}:2")));
    assert_eq!(g.lifecycle.instance_revisions.len(), 2, "{:?}", g.lifecycle);
}
