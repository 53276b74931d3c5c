//! A mixed-instances group's instances priced as EC2 says each is (spot or on-demand: DescribeInstances'
//! `InstanceLifecycle`, which moto does not keep, so the fault proxy answers for EC2).

use std::time::Duration;

use aws_sdk_autoscaling::types::InstancesDistribution;
use ferroscale::cloud::aws::{AwsCloud, PricingSettings};
use ferroscale::cloud::Cloud;
use ferroscale::pricing::PricingSource;

use crate::aws_pricing::{close, PriceApi, MOTO_SPOT};
use crate::support::moto::{Moto, DISCOVERY};

/// EC2's DescribeInstances answer for `instances`: (id, spot).
fn described(instances: &[(&str, bool)]) -> String {
    let items: String = instances
        .iter()
        .map(|(id, spot)| {
            let lifecycle = if *spot {
                "<instanceLifecycle>spot</instanceLifecycle>"
            } else {
                ""
            };
            format!("<item><instanceId>{id}</instanceId>{lifecycle}</item>")
        })
        .collect();
    format!(
        "<DescribeInstancesResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\"><requestId>r</requestId>\
         <reservationSet><item><reservationId>r-1</reservationId><instancesSet>{items}</instancesSet></item>\
         </reservationSet></DescribeInstancesResponse>"
    )
}

/// A mixed-instances group's instance is priced at spot when EC2 says it is spot, at on-demand when EC2
/// says it is on-demand (moto keeps no instance lifecycle: the proxy answers for EC2), and at the
/// group's blend when EC2 cannot be asked.
#[tokio::test]
async fn a_mixed_groups_instance_is_priced_as_ec2_says_it_is() {
    let moto = Moto::start().await;
    moto.mixed_group_with(
        "mixed",
        &["m5.large"],
        10,
        Some(
            InstancesDistribution::builder()
                .on_demand_base_capacity(0)
                .on_demand_percentage_above_base_capacity(25)
                .build(),
        ),
    )
    .await;
    moto.asg
        .set_desired_capacity()
        .auto_scaling_group_name("mixed")
        // moto launches the on-demand share of a mixed group's capacity only: one instance of two.
        .desired_capacity(2)
        .send()
        .await
        .unwrap();
    let groups = moto
        .asg
        .describe_auto_scaling_groups()
        .auto_scaling_group_names("mixed")
        .send()
        .await
        .unwrap();
    let id = groups.auto_scaling_groups()[0].instances()[0]
        .instance_id()
        .unwrap()
        .to_string();
    let api = PriceApi::start(&[("m5.large", 0.096)]).await;
    let proxy = crate::support::aws_proxy::FaultProxy::start(&moto.url).await;
    let price_as = |change: Box<dyn FnOnce(&mut crate::support::aws_proxy::Faults)>| {
        proxy.set(change);
        async {
            let mut settings = moto.settings(&[DISCOVERY], &[]);
            settings.endpoint_url = Some(proxy.url.clone());
            settings.refresh_interval = Duration::from_secs(3600);
            settings.pricing = PricingSettings {
                source: PricingSource::Aws,
                refresh_interval: Duration::from_secs(3600),
                endpoint_url: Some(api.url.clone()),
                ..PricingSettings::default()
            };
            let cloud = AwsCloud::connect(settings, Default::default())
                .await
                .unwrap();
            let snapshot = cloud.snapshot();
            let g = snapshot.group("mixed").unwrap();
            let i = g.instances.iter().find(|i| i.id.ends_with(&id)).unwrap();
            g.price_of(&i.id)
        }
    };
    let answer = |spot: bool| {
        let body = described(&[(&id, spot)]);
        Box::new(move |f: &mut crate::support::aws_proxy::Faults| {
            f.answers = vec![("DescribeInstances".into(), body)];
        }) as Box<dyn FnOnce(&mut crate::support::aws_proxy::Faults)>
    };
    let spot = price_as(answer(true)).await;
    assert!(close(spot, MOTO_SPOT), "{spot:?}");
    let on_demand = price_as(answer(false)).await;
    assert!(close(on_demand, 0.096), "{on_demand:?}");
    assert_eq!(proxy.count("DescribeInstances"), 2, "one read per cloud");

    // The contrast: EC2 refuses the read; the instance costs the group's blend.
    let refused = price_as(Box::new(|f: &mut crate::support::aws_proxy::Faults| {
        f.answers.clear();
        f.failures = vec![crate::support::aws_proxy::Failure::new(
            "DescribeInstances",
            403,
            "UnauthorizedOperation",
        )];
    }))
    .await;
    assert!(
        close(refused, 0.25 * 0.096 + 0.75 * MOTO_SPOT),
        "{refused:?}"
    );
}
