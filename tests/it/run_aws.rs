//! `ferroscale run` on Auto Scaling groups (moto behind the fault proxy) seeing failed launches: an
//! InsufficientInstanceCapacity scale-up backs its group off and the pods go to the next group in the same
//! loop; capacity AWS never delivers is given up after the provision time.

use std::sync::Arc;
use std::time::Duration;

use ferroscale::cloud::aws::AwsCloud;
use ferroscale::engine::expander::Strategy;
use ferroscale::engine::Settings;
use ferroscale::pricing::PriceOverrides;

use crate::support::aws_proxy::FaultProxy;
use crate::support::fixtures::kube::pod;
use crate::support::kube_api::{KubeApi, PODS};
use crate::support::moto::{Moto, DISCOVERY};
use crate::support::run_harness::{run_settings, Harness};

/// Two groups, the cheaper first by the price strategy; the proxy hides the instances AWS launches, as if
/// it had launched none.
async fn two_groups(moto: &Moto) -> (FaultProxy, Arc<AwsCloud>) {
    moto.group("cheap", "m5.large", 0, 3, 0, &[]).await;
    // Another type: m5.large short of capacity in the zone does not stop it.
    moto.group("other", "m5.xlarge", 0, 3, 0, &[]).await;
    let proxy = FaultProxy::start(&moto.url).await;
    proxy.set(|f| f.hide_instances = true);
    let mut settings = moto.settings(&[DISCOVERY], &[]);
    settings.endpoint_url = Some(proxy.url.clone());
    settings.refresh_interval = Duration::ZERO;
    settings.pricing.overrides = PriceOverrides::parse(
        "nodeGroups:\n  cheap: {pricePerHour: 0.05}\n  other: {pricePerHour: 0.5}\n",
    )
    .unwrap();
    let cloud = AwsCloud::connect(settings, Default::default())
        .await
        .unwrap();
    (proxy, cloud)
}

fn price_first() -> Settings {
    Settings {
        expander: Strategy::parse_chain("price").unwrap(),
        ..ferroscale::cli::flags::default_engine()
    }
}

fn ups(d: &ferroscale::engine::Decisions) -> Vec<(&str, i32)> {
    d.scale_up
        .iter()
        .map(|u| (u.group.as_str(), u.delta))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insufficient_capacity_moves_the_pods_to_the_next_group_in_the_same_loop() {
    let moto = Moto::start().await;
    let (proxy, cloud) = two_groups(&moto).await;
    // Every launch fails for lack of capacity (the activity is dated after any scale-up of ours).
    let later = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
        + 600;
    proxy.set(|f| {
        f.failed_activity = Some(
            "We currently do not have sufficient m5.large capacity in the Availability Zone you requested (us-east-1a)."
                .into(),
        );
        f.failed_activity_start = later;
    });
    let api = KubeApi::start().await;
    api.put(PODS, pod("web", "1", None, "web"));
    let mut h = Harness::with_cloud(api, cloud, price_first(), run_settings()).await;
    h.synced(0, 1).await;
    let now = ferroscale::time::unix_now();

    let d = h.runner.run_once(now).await.unwrap();
    assert_eq!(ups(&d), vec![("cheap", 1)], "the cheaper group first");
    assert_eq!(moto.desired("cheap").await, 1);

    // AWS could not launch it: the next loop gives that capacity up, backs cheap off and asks other.
    let d = h.runner.run_once(now + 10).await.unwrap();
    assert_eq!(d.cancel.len(), 1, "{d:?}");
    assert_eq!(d.cancel[0].group, "cheap");
    assert_eq!(ups(&d), vec![("other", 1)], "in the same loop: {d:?}");
    assert_eq!(moto.desired("cheap").await, 0, "cancelled");
    assert_eq!(moto.desired("other").await, 1);
    let status = h.status();
    let cheap = crate::support::run_harness::group_status(&status, "cheap");
    assert_eq!(cheap.conditions.scale_up.status, "Backoff");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_never_delivered_is_given_up_after_the_provision_time() {
    let moto = Moto::start().await;
    let (_proxy, cloud) = two_groups(&moto).await;
    let api = KubeApi::start().await;
    api.put(PODS, pod("web", "1", None, "web"));
    let mut settings = price_first();
    settings.defaults.max_node_provision_time = Duration::from_secs(60);
    let mut h = Harness::with_cloud(api, cloud, settings, run_settings()).await;
    h.synced(0, 1).await;
    let now = ferroscale::time::unix_now();

    let d = h.runner.run_once(now).await.unwrap();
    assert_eq!(ups(&d), vec![("cheap", 1)]);
    // No error from AWS, no instance either: the pod waits for the upcoming node...
    let d = h.runner.run_once(now + 30).await.unwrap();
    assert!(d.cancel.is_empty() && d.scale_up.is_empty(), "{d:?}");
    // ...until the provision time has passed; then the capacity is given up and the next group asked.
    let d = h.runner.run_once(now + 61).await.unwrap();
    assert_eq!(d.cancel.len(), 1, "{d:?}");
    assert_eq!(ups(&d), vec![("other", 1)], "{d:?}");
    assert_eq!(moto.desired("cheap").await, 0);
}
