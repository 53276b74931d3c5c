//! Prices from AWS: on-demand from the Pricing API (moto has none, so a small loopback server here answers
//! `GetProducts` in AWS's JSON 1.1 / PriceList format, reached through the real aws-sdk-pricing client),
//! spot from moto's DescribeSpotPriceHistory; on-demand, spot and mixed groups; the read budget; AWS
//! failing; the price file alone.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_autoscaling::types::InstancesDistribution;
use axum::body::Bytes;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use ferroscale::cloud::aws::{AwsCloud, PricingSettings};
use ferroscale::cloud::{Cloud, WriteGuard};
use ferroscale::pricing::{PriceOverrides, PricingSource};

use crate::support::moto::{Moto, DISCOVERY};

/// moto's price for every spot offering.
pub(crate) const MOTO_SPOT: f64 = 0.00001;

/// The filters of one GetProducts request, by field, plus `ServiceCode`.
type Asked = BTreeMap<String, String>;

/// A Pricing API on loopback: answers GetProducts for the instance types it knows.
pub(crate) struct PriceApi {
    pub(crate) url: String,
    asked: Arc<Mutex<Vec<Asked>>>,
    down: Arc<AtomicBool>,
    /// While set, requests are held unanswered until `release` is notified.
    hang: Arc<AtomicBool>,
    release: Arc<tokio::sync::Notify>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// One PriceList item as AWS documents it (trimmed to the fields that matter, plus a reserved term that
/// must not be mistaken for the on-demand price).
fn price_list_item(instance_type: &str, region: &str, usd: f64) -> String {
    serde_json::json!({
        "product": {
            "productFamily": "Compute Instance",
            "attributes": {
                "instanceType": instance_type, "regionCode": region, "operatingSystem": "Linux",
                "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used"
            },
            "sku": "SKU"
        },
        "serviceCode": "AmazonEC2",
        "terms": {
            "OnDemand": {"SKU.JRTCKXETXF": {"priceDimensions": {"SKU.JRTCKXETXF.6YS6EN2CT7": {
                "unit": "Hrs", "pricePerUnit": {"USD": format!("{usd:.10}")},
                "description": format!("${usd} per On Demand Linux {instance_type} Instance Hour")
            }}, "sku": "SKU", "offerTermCode": "JRTCKXETXF"}},
            "Reserved": {"SKU.4NA7Y494T4": {"priceDimensions": {"SKU.4NA7Y494T4.6YS6EN2CT7": {
                "unit": "Hrs", "pricePerUnit": {"USD": format!("{:.10}", usd / 2.0)}
            }}}}
        },
        "version": "20261101000000",
        "publicationDate": "2026-11-01T00:00:00Z"
    })
    .to_string()
}

impl PriceApi {
    pub(crate) async fn start(prices: &[(&str, f64)]) -> PriceApi {
        let prices: BTreeMap<String, f64> =
            prices.iter().map(|(t, p)| (t.to_string(), *p)).collect();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let down = Arc::new(AtomicBool::new(false));
        let hang = Arc::new(AtomicBool::new(false));
        let release = Arc::new(tokio::sync::Notify::new());
        let (a, d, h, r) = (asked.clone(), down.clone(), hang.clone(), release.clone());
        let handler = move |headers: HeaderMap, body: Bytes| {
            let (asked, down, prices) = (a.clone(), d.clone(), prices.clone());
            let (hang, release) = (h.clone(), r.clone());
            async move {
                let target = headers
                    .get("x-amz-target")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                assert_eq!(target, "AWSPriceListService.GetProducts");
                let req: serde_json::Value = serde_json::from_slice(&body).unwrap();
                let mut filters: Asked = req["Filters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| {
                        assert_eq!(f["Type"], "TERM_MATCH");
                        (
                            f["Field"].as_str().unwrap().to_string(),
                            f["Value"].as_str().unwrap().to_string(),
                        )
                    })
                    .collect();
                filters.insert(
                    "ServiceCode".into(),
                    req["ServiceCode"].as_str().unwrap().to_string(),
                );
                asked.lock().unwrap().push(filters.clone());
                if hang.load(Ordering::SeqCst) {
                    release.notified().await;
                }
                let json = [(header::CONTENT_TYPE, "application/x-amz-json-1.1")];
                if down.load(Ordering::SeqCst) {
                    let body =
                        r#"{"__type":"InternalErrorException","Message":"the price list is down"}"#;
                    return (StatusCode::INTERNAL_SERVER_ERROR, json, body.to_string())
                        .into_response();
                }
                let items: Vec<String> = prices
                    .get(&filters["instanceType"])
                    .map(|p| price_list_item(&filters["instanceType"], &filters["regionCode"], *p))
                    .into_iter()
                    .collect();
                let body = serde_json::json!({"FormatVersion": "aws_v1", "PriceList": items});
                (StatusCode::OK, json, body.to_string()).into_response()
            }
        };
        let app = axum::Router::new().route("/", axum::routing::post(handler));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await
                .unwrap()
        });
        PriceApi {
            url,
            asked,
            down,
            hang,
            release,
            _stop: stop,
        }
    }

    fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap().clone()
    }

    fn asked_types(&self) -> Vec<String> {
        let mut t: Vec<String> = self
            .asked()
            .iter()
            .map(|f| f["instanceType"].clone())
            .collect();
        t.sort();
        t
    }
}

async fn priced_cloud(
    moto: &Moto,
    api: &PriceApi,
    refresh: Duration,
    prices_every: Duration,
) -> Arc<AwsCloud> {
    let mut settings = moto.settings(&[DISCOVERY], &[]);
    settings.refresh_interval = refresh;
    settings.pricing = PricingSettings {
        source: PricingSource::Aws,
        refresh_interval: prices_every,
        endpoint_url: Some(api.url.clone()),
        ..PricingSettings::default()
    };
    AwsCloud::connect(settings, Default::default())
        .await
        .unwrap()
}

fn price(cloud: &AwsCloud, group: &str) -> Option<f64> {
    cloud.snapshot().group(group).unwrap().price_per_hour
}

pub(crate) fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-12)
}

#[tokio::test]
async fn on_demand_spot_and_mixed_groups_get_their_prices() {
    let moto = Moto::start().await;
    moto.group("od", "m5.large", 0, 10, 0, &[]).await;
    moto.spot_group("spot", "m5.large", 10).await;
    moto.mixed_group_with(
        "mixed",
        &["m5.large", "c5.large"],
        10,
        Some(
            InstancesDistribution::builder()
                .on_demand_base_capacity(0)
                .on_demand_percentage_above_base_capacity(25)
                .build(),
        ),
    )
    .await;
    let api = PriceApi::start(&[("m5.large", 0.096), ("c5.large", 0.085)]).await;
    let cloud = priced_cloud(
        &moto,
        &api,
        Duration::from_secs(3600),
        Duration::from_secs(3600),
    )
    .await;

    assert!(
        close(price(&cloud, "od"), 0.096),
        "{:?}",
        price(&cloud, "od")
    );
    assert!(
        close(price(&cloud, "spot"), MOTO_SPOT),
        "{:?}",
        price(&cloud, "spot")
    );
    // 25% on-demand at the first override's price, 75% at the cheapest spot price.
    let mixed = 0.25 * 0.096 + 0.75 * MOTO_SPOT;
    assert!(
        close(price(&cloud, "mixed"), mixed),
        "{:?}",
        price(&cloud, "mixed")
    );

    // One GetProducts per instance type, with the documented filters.
    assert_eq!(api.asked_types(), vec!["c5.large", "m5.large"]);
    let wanted: Asked = [
        ("ServiceCode", "AmazonEC2"),
        ("instanceType", "m5.large"),
        ("regionCode", "us-east-1"),
        ("operatingSystem", "Linux"),
        ("tenancy", "Shared"),
        ("preInstalledSw", "NA"),
        ("capacitystatus", "Used"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert!(api.asked().contains(&wanted), "{:?}", api.asked());

    // A node of no group is priced by its instance type.
    let labels = [(
        "node.kubernetes.io/instance-type".to_string(),
        "c5.large".to_string(),
    )]
    .into();
    let p =
        ferroscale::pricing::node_price_per_hour(&cloud.snapshot(), "aws:///x/i-1", &labels, "n")
            .unwrap();
    assert!(close(Some(p), 0.085));
}

#[tokio::test]
async fn prices_are_read_once_per_interval_and_a_new_type_alone() {
    let moto = Moto::start().await;
    moto.group("od", "m5.large", 0, 10, 0, &[]).await;
    let api = PriceApi::start(&[("m5.large", 0.096), ("r5.large", 0.126)]).await;
    // Groups re-read on every Refresh, prices every hour.
    let cloud = priced_cloud(&moto, &api, Duration::ZERO, Duration::from_secs(3600)).await;
    assert_eq!(api.asked_types(), vec!["m5.large"]);
    for _ in 0..3 {
        cloud.refresh().await.unwrap();
    }
    assert_eq!(api.asked().len(), 1, "prices are fresh: no new read");
    moto.group("memory", "r5.large", 0, 10, 0, &[]).await;
    cloud.refresh().await.unwrap();
    // The price task reads it at once, off the Refresh path.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !close(price(&cloud, "memory"), 0.126) {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            price(&cloud, "memory")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        api.asked_types(),
        vec!["m5.large", "r5.large"],
        "the new type alone is read"
    );
    assert!(cloud.price_age().is_some());
    // The age of the prices in use is exported.
    let server = crate::support::server::TestServer::start_with(cloud.clone()).await;
    let (status, metrics) = server.get("/metrics").await;
    assert_eq!(status, 200);
    let line = metrics
        .lines()
        .find(|l| l.starts_with("ferroscale_price_age_seconds "))
        .unwrap_or_else(|| panic!("{metrics}"));
    let age: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((0.0..60.0).contains(&age), "{line}");
    server.stop().await;
}

/// Waits until the Pricing API has been asked `n` times.
async fn until_asked(api: &PriceApi, n: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while api.asked().len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "asked {:?}",
            api.asked()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_failing_pricing_api_keeps_the_last_good_prices() {
    let moto = Moto::start().await;
    moto.group("od", "m5.large", 0, 10, 0, &[]).await;
    let api = PriceApi::start(&[("m5.large", 0.096)]).await;
    // Prices always stale: the price task reads them again every second.
    let cloud = priced_cloud(&moto, &api, Duration::ZERO, Duration::ZERO).await;
    until_asked(&api, 2).await;
    api.down.store(true, Ordering::SeqCst);
    let asked = api.asked().len();
    until_asked(&api, asked + 1).await;
    // One failed read, then none until the retry delay (minutes): no retry storm.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(api.asked().len(), asked + 1);
    cloud.refresh().await.unwrap();
    assert!(close(price(&cloud, "od"), 0.096), "last good price kept");
    assert_eq!(api.asked().len(), asked + 1, "a Refresh never reads prices");
}

#[tokio::test]
async fn a_hung_pricing_api_never_delays_refresh_or_writes() {
    let moto = Moto::start().await;
    moto.group("od", "m5.large", 0, 10, 0, &[]).await;
    let api = PriceApi::start(&[("m5.large", 0.096), ("r5.large", 0.126)]).await;
    let cloud = priced_cloud(&moto, &api, Duration::ZERO, Duration::from_secs(3600)).await;
    assert!(close(price(&cloud, "od"), 0.096));
    // The Pricing API stops answering; a new instance type needs a price.
    api.hang.store(true, Ordering::SeqCst);
    moto.group("memory", "r5.large", 0, 10, 0, &[]).await;
    let bound = Duration::from_secs(5);
    tokio::time::timeout(bound, cloud.refresh())
        .await
        .unwrap()
        .unwrap();
    until_asked(&api, 2).await;
    // The price read hangs (its client waits up to 10 s); Refresh and writes go on regardless.
    tokio::time::timeout(bound, cloud.refresh())
        .await
        .unwrap()
        .unwrap();
    tokio::time::timeout(
        bound,
        cloud.increase_size("memory", 1, &WriteGuard::always()),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(cloud.snapshot().group("memory").unwrap().target_size, 1);
    assert_eq!(price(&cloud, "memory"), None, "not priced yet");
    // The Pricing API answers again: the group gets its price without a Refresh.
    api.hang.store(false, Ordering::SeqCst);
    api.release.notify_waiters();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !close(price(&cloud, "memory"), 0.126) {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            price(&cloud, "memory")
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_price_file_alone_never_asks_aws() {
    let moto = Moto::start().await;
    moto.group("od", "m5.large", 0, 10, 0, &[]).await;
    moto.spot_group("spot", "m5.large", 10).await;
    moto.group("c5", "c5.large", 0, 10, 0, &[]).await;
    let api = PriceApi::start(&[("m5.large", 0.096)]).await;
    let mut settings = moto.settings(&[DISCOVERY], &[]);
    settings.pricing = PricingSettings {
        source: PricingSource::File,
        overrides: PriceOverrides::parse(
            "instanceTypes:\n  m5.large: {pricePerHour: 0.05}\nnodeGroups:\n  spot: {discount: 0.6}\n",
        )
        .unwrap(),
        endpoint_url: Some(api.url.clone()),
        ..PricingSettings::default()
    };
    let cloud = AwsCloud::connect(settings, Default::default())
        .await
        .unwrap();
    assert!(close(price(&cloud, "od"), 0.05));
    // No spot prices without AWS: the on-demand price stands in, then the group's discount applies.
    assert!(
        close(price(&cloud, "spot"), 0.02),
        "{:?}",
        price(&cloud, "spot")
    );
    assert_eq!(price(&cloud, "c5"), None, "no price anywhere for c5.large");
    assert!(api.asked().is_empty());
    assert_eq!(cloud.price_age(), None);
}

/// A node is priced by its own instance's type, not its group's: instances launched as m5.xlarge before
/// the group's launch template moved to m5.large cost what an m5.xlarge costs, while the group's next
/// node (its price) costs an m5.large's.
#[tokio::test]
async fn each_instance_is_priced_by_its_own_type() {
    let moto = Moto::start().await;
    moto.group("od", "m5.xlarge", 0, 10, 2, &[]).await;
    let lt = moto
        .ec2
        .describe_launch_templates()
        .launch_template_names("od-lt")
        .send()
        .await
        .unwrap();
    let id = lt.launch_templates()[0]
        .launch_template_id()
        .unwrap()
        .to_string();
    let data = aws_sdk_ec2::types::RequestLaunchTemplateData::builder()
        .instance_type("m5.large".into())
        .build();
    moto.new_default_version(&id, data).await;
    let api = PriceApi::start(&[("m5.large", 0.096), ("m5.xlarge", 0.192)]).await;
    let cloud = priced_cloud(
        &moto,
        &api,
        Duration::from_secs(3600),
        Duration::from_secs(3600),
    )
    .await;
    let snapshot = cloud.snapshot();
    let g = snapshot.group("od").unwrap();
    assert!(close(g.price_per_hour, 0.096), "{:?}", g.price_per_hour);
    assert_eq!(g.instances.len(), 2, "{g:?}");
    for i in &g.instances {
        assert!(close(g.price_of(&i.id), 0.192), "{:?}", g.instance_prices);
    }
}
