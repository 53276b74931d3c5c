//! The AWS cloud (`--cloud aws`): Auto Scaling groups, their instances and templates for scale from
//! zero, built from live Auto Scaling and EC2 data.
//!
//! All reads are answered from one consistent [`Snapshot`]; `refresh` rebuilds it at most once per
//! `--aws-refresh-interval` (jittered), with concurrent callers sharing one refresh; writes compute what
//! they send from a fresh read of their group and publish AWS's answer at once (`writes`), and a refresh
//! never overwrites a write that landed while it ran (`state`). When AWS is unreachable the last good
//! snapshot keeps being served, writes and Refresh fail with UNAVAILABLE, and the next Refresh after
//! [`ttl::RETRY_AFTER_FAILURE`] tries again. Prices are read by a task of their own (`price_keeper`).
//! Module per AWS concept: `api` (calls), `errors`, `discovery`, `refresh`, `launch`, `requirements`
//! and `attribute_types` (attribute-based selection), `instance_types`, `eks` (managed node groups), `template`, `activities`,
//! `group`, `prices`, `owners` and `instance_status` (what AWS says now of instances notices name), `ttl`.

pub mod activities;
pub mod api;
mod attribute_types;
pub mod discovery;
pub mod eks;
mod errors;
mod group;
mod instance_status;
mod instance_types;
pub mod interruption;
mod launch;
pub mod lifecycle;
mod markets;
mod owners;
pub mod price_keeper;
pub mod prices;
mod refresh;
pub mod requirements;
mod state;
pub mod template;
pub mod ttl;
pub mod types;
mod writes;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use parking_lot::Mutex;

use self::api::Api;
use self::discovery::{NamedGroup, TagDiscovery};
use self::eks::ManagedNodegroups;
use self::instance_types::InstanceTypes;
use self::launch::LaunchCache;
use self::price_keeper::{PriceKeeper, Purchases};
use self::state::Published;
use super::{Cloud, Readiness, WriteGuard};
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::model::Snapshot;
use crate::pricing::{PriceOverrides, PricingSource};

/// What `--cloud aws` is told by its flags.
#[derive(Debug, Clone, PartialEq)]
pub struct AwsSettings {
    /// `--aws-region`; else the SDK's usual chain (AWS_REGION, profile, instance metadata).
    pub region: Option<String>,
    pub auto_discovery: Vec<TagDiscovery>,
    pub nodes: Vec<NamedGroup>,
    pub refresh_interval: Duration,
    /// Endpoint of every AWS client, for tests and AWS-compatible emulators; `AWS_ENDPOINT_URL` does the
    /// same through the SDK's standard chain.
    pub endpoint_url: Option<String>,
    /// Attempts per AWS call, retries backing off on throttling and server errors (None: the SDK chain,
    /// `AWS_MAX_ATTEMPTS`, default 3).
    pub max_attempts: Option<u32>,
    pub pricing: PricingSettings,
}

/// Where the AWS cloud's prices come from and how often they are read again.
#[derive(Debug, Clone, PartialEq)]
pub struct PricingSettings {
    pub source: PricingSource,
    /// `--price-overrides`: the user's prices and discounts, applied over AWS's.
    pub overrides: PriceOverrides,
    /// `--pricing-refresh-interval`: prices older than this are read again.
    pub refresh_interval: Duration,
    /// Endpoint of the Pricing API alone (tests, emulators); the SDK chain's `AWS_ENDPOINT_URL_PRICING`
    /// does the same.
    pub endpoint_url: Option<String>,
}

impl Default for PricingSettings {
    fn default() -> Self {
        PricingSettings {
            source: PricingSource::Aws,
            overrides: PriceOverrides::default(),
            refresh_interval: ttl::DEFAULT_PRICE_REFRESH_INTERVAL,
            endpoint_url: None,
        }
    }
}

#[derive(Default)]
struct RefreshState {
    /// No AWS call before this instant.
    next_due: Option<Instant>,
    /// Outcome of the last refresh, repeated to callers (with its kind) until the next one is due.
    last_error: Option<Error>,
}

/// The AWS cloud.
pub struct AwsCloud {
    api: Api,
    region: String,
    settings: AwsSettings,
    state: Published,
    refresh: tokio::sync::Mutex<RefreshState>,
    launch: LaunchCache,
    instance_types: InstanceTypes,
    /// EC2's word on instances named by interruption notices.
    instance_status: instance_status::InstanceStatus,
    managed_nodegroups: ManagedNodegroups,
    /// Whether mixed groups' instances are spot or on-demand (EC2's word, kept per instance).
    markets: markets::Markets,
    group_locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    last_scale_up: Mutex<HashMap<String, SystemTime>>,
    /// Instances we terminated lately, by provider id: a retried DeleteNodes finds them done.
    terminated: Mutex<HashMap<String, Instant>>,
    prices: Arc<PriceKeeper>,
    /// How each group buys capacity, as the last refresh found it (prices are applied to these).
    purchases: Mutex<Purchases>,
    /// Set when the cloud is dropped: its background tasks stop.
    stop: tokio::sync::watch::Sender<bool>,
}

impl Drop for AwsCloud {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

impl AwsCloud {
    /// Connects with the SDK's standard chain (credentials, `AWS_ENDPOINT_URL`, retries), loads the first
    /// snapshot and its prices, and starts the background tasks: prices on their own interval, and a
    /// refresh of the groups when CA has not asked for one in a while. A failed first load is logged and
    /// retried by later refreshes.
    pub async fn connect(settings: AwsSettings, metrics: Arc<Metrics>) -> Result<Arc<Self>> {
        if settings.auto_discovery.is_empty() && settings.nodes.is_empty() {
            return Err(Error::config(
                "--cloud aws needs --node-group-auto-discovery asg:tag=... or --nodes MIN:MAX:NAME",
            ));
        }
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .timeout_config(
                aws_config::timeout::TimeoutConfig::builder()
                    .operation_timeout(ttl::AWS_OPERATION_TIMEOUT)
                    .operation_attempt_timeout(ttl::AWS_ATTEMPT_TIMEOUT)
                    .build(),
            );
        if let Some(r) = &settings.region {
            loader = loader.region(aws_config::Region::new(r.clone()));
        }
        if let Some(url) = &settings.endpoint_url {
            loader = loader.endpoint_url(url);
        }
        if let Some(n) = settings.max_attempts {
            loader = loader.retry_config(
                aws_config::retry::RetryConfig::standard().with_max_attempts(n.max(1)),
            );
        }
        let config = loader.load().await;
        let region = config
            .region()
            .map(|r| r.to_string())
            .ok_or_else(|| Error::config("no AWS region: pass --aws-region or set AWS_REGION"))?;
        let api = Api::new(&config, settings.pricing.endpoint_url.as_deref(), metrics);
        let prices = Arc::new(PriceKeeper::new(
            api.clone(),
            region.clone(),
            settings.pricing.clone(),
        ));
        let cloud = Arc::new(AwsCloud {
            api,
            region,
            settings,
            state: Published::default(),
            refresh: tokio::sync::Mutex::new(RefreshState::default()),
            launch: LaunchCache::default(),
            instance_types: InstanceTypes::default(),
            instance_status: Default::default(),
            managed_nodegroups: ManagedNodegroups::default(),
            markets: Default::default(),
            group_locks: Mutex::new(HashMap::new()),
            last_scale_up: Mutex::new(HashMap::new()),
            terminated: Mutex::default(),
            prices,
            purchases: Mutex::default(),
            stop: tokio::sync::watch::channel(false).0,
        });
        match cloud.refresh().await {
            Ok(()) => {
                if cloud.prices.read_due().await {
                    cloud.reprice();
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "first AWS snapshot failed; serving nothing until a refresh succeeds")
            }
        }
        cloud.start_background();
        Ok(cloud)
    }

    /// The price task and the background refresh, holding the cloud weakly: they end with it.
    fn start_background(self: &Arc<Self>) {
        if self.prices.from_aws() {
            let weak = Arc::downgrade(self);
            tokio::spawn(self.prices.clone().run(self.stop.subscribe(), move || {
                weak.upgrade().map(|c| c.reprice()).is_some()
            }));
        }
        let weak = Arc::downgrade(self);
        let mut stop = self.stop.subscribe();
        let every = self
            .settings
            .refresh_interval
            .max(ttl::MIN_BACKGROUND_INTERVAL);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(every) => {}
                    _ = stop.changed() => return,
                }
                let Some(cloud) = weak.upgrade() else { return };
                let idle = cloud
                    .state_age()
                    .is_none_or(|age| age >= every * ttl::BACKGROUND_REFRESH_AFTER);
                if idle {
                    tracing::debug!("no Refresh from CA for a while; refreshing in the background");
                    let _ = cloud.refresh().await;
                }
            }
        });
    }

    /// AWS API calls made so far.
    pub fn aws_calls(&self) -> u64 {
        self.api.calls()
    }

    fn jittered_interval(&self) -> Duration {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .subsec_nanos();
        let unit = f64::from(nanos % 1000) / 1000.0 * 2.0 - 1.0; // -1..1
        self.settings
            .refresh_interval
            .mul_f64(1.0 + ttl::REFRESH_JITTER * unit)
    }

    /// How each group buys capacity, as the last refresh found it.
    fn purchases(&self) -> Purchases {
        self.purchases.lock().clone()
    }

    /// Applies the prices at hand to the published snapshot (after the price task read new ones).
    fn reprice(&self) {
        let (book, purchases) = (self.prices.book(), self.purchases());
        self.state
            .amend(|s| price_keeper::apply(s, &book, &purchases, &self.settings.pricing));
    }

    /// The age after which the served state counts as stale (`/readyz` fails).
    fn stale_after(&self) -> Duration {
        self.settings
            .refresh_interval
            .max(ttl::MIN_STALENESS_INTERVAL)
            * ttl::STALE_AFTER_INTERVALS
    }
}

#[async_trait]
impl Cloud for AwsCloud {
    fn name(&self) -> &'static str {
        "aws"
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        self.state.load()
    }

    async fn refresh(&self) -> Result<()> {
        // Holding the lock across the AWS calls is the single flight: concurrent callers wait for the
        // refresh under way and then find the next one not yet due.
        let mut st = self.refresh.lock().await;
        if st.next_due.is_some_and(|due| Instant::now() < due) {
            return match &st.last_error {
                Some(e) => Err(e.clone()),
                None => Ok(()),
            };
        }
        let started = Instant::now();
        let ticket = self.state.begin_refresh();
        match refresh::load(self).await {
            Ok((s, purchases)) => {
                tracing::debug!(groups = s.groups().count(), took = ?started.elapsed(), "AWS snapshot refreshed");
                *self.purchases.lock() = purchases;
                self.state.finish_refresh(ticket, s);
                st.next_due = Some(Instant::now() + self.jittered_interval());
                st.last_error = None;
                Ok(())
            }
            Err(e) => {
                tracing::warn!(error = %e, "AWS refresh failed; serving the last good snapshot");
                st.next_due = Some(Instant::now() + ttl::RETRY_AFTER_FAILURE);
                st.last_error = Some(e.clone());
                Err(e)
            }
        }
    }

    async fn increase_size(&self, group: &str, delta: i32, guard: &WriteGuard) -> Result<()> {
        self.write_increase(group, delta, guard).await
    }

    async fn delete_nodes(
        &self,
        group: &str,
        provider_ids: &[String],
        guard: &WriteGuard,
    ) -> Result<()> {
        self.write_delete(group, provider_ids, guard).await
    }

    async fn decrease_target_size(
        &self,
        group: &str,
        delta: i32,
        guard: &WriteGuard,
    ) -> Result<()> {
        self.write_decrease(group, delta, guard).await
    }

    async fn owners(&self, instance_ids: &[String]) -> Result<HashMap<String, String>> {
        owners::fresh(self, instance_ids).await
    }

    async fn check_notices(
        &self,
        notices: &[(String, crate::model::lifecycle::NoticeKind)],
    ) -> Vec<super::Verdict> {
        self.instance_status.check(&self.api, notices).await
    }

    fn readiness(&self) -> Readiness {
        match self.state_age() {
            Some(age) => {
                let s = self.snapshot();
                let stale = age > self.stale_after();
                Readiness {
                    ready: !stale,
                    detail: format!(
                        "aws {}: {} node groups, {} instances, state age {}s{}",
                        self.region,
                        s.groups().count(),
                        s.instance_count(),
                        age.as_secs(),
                        if stale {
                            format!(
                                " (stale: older than {}s, {} refresh intervals; AWS reads are failing)",
                                self.stale_after().as_secs(),
                                ttl::STALE_AFTER_INTERVALS
                            )
                        } else {
                            String::new()
                        }
                    ),
                }
            }
            None => Readiness {
                ready: false,
                detail: format!("aws {}: no successful refresh yet", self.region),
            },
        }
    }

    fn price_age(&self) -> Option<Duration> {
        self.prices.age()
    }

    fn state_age(&self) -> Option<Duration> {
        self.state.loaded_at().map(|t| t.elapsed())
    }
}
