//! The AWS cloud (`--cloud aws`): Auto Scaling groups, their instances and templates for scale from
//! zero, built from live Auto Scaling and EC2 data.
//!
//! All reads are answered from one consistent [`Snapshot`]; `refresh` rebuilds it at most once per
//! `--aws-refresh-interval` (jittered), with concurrent callers sharing one refresh, and writes update it
//! at once after AWS accepted them. When AWS is unreachable the last good snapshot keeps being served,
//! writes and Refresh fail with UNAVAILABLE, and the next Refresh after [`ttl::RETRY_AFTER_FAILURE`] tries
//! again. Module per AWS concept: `api` (calls), `discovery`, `template`, `activities`, `ttl`.

pub mod activities;
pub mod api;
pub mod discovery;
pub mod prices;
pub mod template;
pub mod ttl;
pub mod types;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;

use self::api::{Api, LaunchSource, RawGroup};
use self::discovery::{NamedGroup, TagDiscovery};
use self::types::{AsgInfo, InstanceTypeInfo, LaunchFacts};
use super::{Cloud, Readiness, SnapshotCell};
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::model::{Instance, InstanceState, NodeGroup, Snapshot};
use crate::pricing::{PriceBook, PriceOverrides, PricingSource, Purchase};

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

/// The prices last read from AWS.
#[derive(Default)]
struct PriceState {
    book: Arc<PriceBook>,
    /// Types priced (or found to have no price) since the last full read (`AwsCloud::prices_at`), so a
    /// new type costs one read, not a full one.
    asked: BTreeSet<String>,
    /// No price call before this instant after a failure.
    retry_at: Option<Instant>,
}

#[derive(Default)]
struct RefreshState {
    /// No AWS call before this instant.
    next_due: Option<Instant>,
    /// Outcome of the last refresh, repeated to callers until the next one is due.
    last_error: Option<String>,
}

/// The AWS cloud.
pub struct AwsCloud {
    api: Api,
    region: String,
    settings: AwsSettings,
    snapshot: SnapshotCell,
    loaded_at: Mutex<Option<Instant>>,
    refresh: tokio::sync::Mutex<RefreshState>,
    instance_types: moka::future::Cache<String, Arc<InstanceTypeInfo>>,
    fixed_launch_types: moka::future::Cache<LaunchSource, LaunchFacts>,
    moving_launch_types: moka::future::Cache<LaunchSource, LaunchFacts>,
    group_locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    last_scale_up: Mutex<HashMap<String, SystemTime>>,
    prices: tokio::sync::Mutex<PriceState>,
    /// When every type in use was last priced (also the exported price age).
    prices_at: Mutex<Option<Instant>>,
}

impl AwsCloud {
    /// Connects with the SDK's standard chain (credentials, `AWS_ENDPOINT_URL`, retries) and loads the
    /// first snapshot; a failed first load is logged and retried by later refreshes.
    pub async fn connect(settings: AwsSettings, metrics: Arc<Metrics>) -> Result<Self> {
        if settings.auto_discovery.is_empty() && settings.nodes.is_empty() {
            return Err(Error::Config(
                "--cloud aws needs --node-group-auto-discovery asg:tag=... or --nodes MIN:MAX:NAME"
                    .into(),
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
        let region = config.region().map(|r| r.to_string()).ok_or_else(|| {
            Error::Config("no AWS region: pass --aws-region or set AWS_REGION".into())
        })?;
        let cloud = AwsCloud {
            api: Api::new(&config, settings.pricing.endpoint_url.as_deref(), metrics),
            region,
            settings,
            snapshot: SnapshotCell::default(),
            loaded_at: Mutex::new(None),
            refresh: tokio::sync::Mutex::new(RefreshState::default()),
            instance_types: moka::future::Cache::builder()
                .time_to_live(ttl::INSTANCE_TYPES_TTL)
                .build(),
            fixed_launch_types: moka::future::Cache::builder()
                .time_to_live(ttl::LAUNCH_TEMPLATE_FIXED_VERSION_TTL)
                .build(),
            moving_launch_types: moka::future::Cache::builder()
                .time_to_live(ttl::LAUNCH_TEMPLATE_MOVING_VERSION_TTL)
                .build(),
            group_locks: Mutex::new(HashMap::new()),
            last_scale_up: Mutex::new(HashMap::new()),
            prices: tokio::sync::Mutex::new(PriceState::default()),
            prices_at: Mutex::new(None),
        };
        if let Err(e) = cloud.refresh().await {
            tracing::error!(error = %e, "first AWS snapshot failed; serving nothing until a refresh succeeds");
        }
        Ok(cloud)
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

    /// Reads every managed group from AWS and builds a new snapshot.
    async fn load(&self) -> Result<Snapshot> {
        let mut raw: BTreeMap<String, RawGroup> = BTreeMap::new();
        for d in &self.settings.auto_discovery {
            for g in self.api.groups_by_tags(&d.tags).await? {
                if d.matches(&g.info.tags) {
                    raw.insert(g.info.name.clone(), g);
                }
            }
        }
        let names: Vec<String> = self.settings.nodes.iter().map(|n| n.name.clone()).collect();
        if !names.is_empty() {
            for g in self.api.groups_by_name(&names).await? {
                raw.insert(g.info.name.clone(), g);
            }
        }
        for n in &self.settings.nodes {
            match raw.get_mut(&n.name) {
                Some(g) => {
                    g.info.min_size = n.min;
                    g.info.max_size = n.max;
                }
                None => {
                    tracing::warn!(group = %n.name, "--nodes names an Auto Scaling group that does not exist")
                }
            }
        }
        self.resolve_launch_types(&mut raw).await?;
        let types = self.instance_type_facts(&raw).await?;
        let in_use: BTreeSet<String> = raw
            .values()
            .flat_map(|g| g.info.instance_types.iter().cloned())
            .collect();
        let book = self.price_book(&in_use).await;
        let overrides = &self.settings.pricing.overrides;
        let mut groups = Vec::with_capacity(raw.len());
        for g in raw.into_values() {
            let purchase = purchase(&g.info);
            match self.node_group(g.info, &types).await {
                Ok(mut group) => {
                    group.price_per_hour =
                        book.group_price(&group.id, &purchase, group.target_size, overrides);
                    groups.push(group);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "Auto Scaling group left out of this snapshot")
                }
            }
        }
        let mut snapshot = Snapshot::new(groups);
        let type_prices = in_use
            .iter()
            .chain(overrides.instance_types.keys())
            .filter_map(|t| {
                let listed = book.on_demand.get(t).copied();
                Some((t.clone(), overrides.on_demand(Some(t.as_str()), listed)?))
            })
            .collect();
        snapshot.set_instance_prices(Arc::new(type_prices));
        Ok(snapshot)
    }

    /// Prices of the types in use: read again when older than the pricing interval, new types read when
    /// they appear; when AWS fails the last good prices stay (and a retry waits
    /// [`ttl::PRICE_RETRY_AFTER_FAILURE`]). With `--pricing-source=file` AWS is never asked.
    async fn price_book(&self, in_use: &BTreeSet<String>) -> Arc<PriceBook> {
        if self.settings.pricing.source == PricingSource::File {
            return Arc::default();
        }
        let mut st = self.prices.lock().await;
        let now = Instant::now();
        if st.retry_at.is_some_and(|t| now < t) {
            return st.book.clone();
        }
        let stale = self
            .price_age()
            .is_none_or(|age| age >= self.settings.pricing.refresh_interval);
        let wanted: BTreeSet<String> = if stale {
            in_use.clone()
        } else {
            in_use.difference(&st.asked).cloned().collect()
        };
        if wanted.is_empty() {
            return st.book.clone();
        }
        match self.api.price_book(&wanted, &self.region).await {
            Ok(fresh) => {
                let mut book = if stale {
                    PriceBook::default()
                } else {
                    PriceBook::clone(&st.book)
                };
                book.on_demand.extend(fresh.on_demand);
                book.spot.extend(fresh.spot);
                let unpriced: Vec<&String> = wanted
                    .iter()
                    .filter(|t| !book.on_demand.contains_key(*t))
                    .collect();
                if !unpriced.is_empty() {
                    tracing::warn!(types = ?unpriced, "the Pricing API lists no on-demand price for these instance types");
                }
                tracing::info!(types = wanted.len(), full = stale, "prices read from AWS");
                st.book = Arc::new(book);
                if stale {
                    st.asked = wanted;
                    *self.prices_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(now);
                } else {
                    st.asked.extend(wanted);
                }
                st.retry_at = None;
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading prices failed; keeping the last good prices");
                st.retry_at = Some(now + ttl::PRICE_RETRY_AFTER_FAILURE);
            }
        }
        st.book.clone()
    }

    /// Fills each group's `instance_types` from its launch configuration, template or mixed policy.
    async fn resolve_launch_types(&self, raw: &mut BTreeMap<String, RawGroup>) -> Result<()> {
        let configs: BTreeSet<String> = raw
            .values()
            .filter_map(|g| match &g.launch {
                LaunchSource::Configuration(n) => Some(n.clone()),
                _ => None,
            })
            .collect();
        let mut missing_configs = Vec::new();
        for name in configs {
            if self
                .fixed_launch_types
                .get(&LaunchSource::Configuration(name.clone()))
                .await
                .is_none()
            {
                missing_configs.push(name);
            }
        }
        if !missing_configs.is_empty() {
            let found = self.api.launch_configurations(&missing_configs).await?;
            for name in missing_configs {
                let t = found.get(&name).cloned().unwrap_or_default();
                self.fixed_launch_types
                    .insert(LaunchSource::Configuration(name), t)
                    .await;
            }
        }
        for g in raw.values_mut() {
            (g.info.instance_types, g.info.spot_launch) = match &g.launch {
                // A mixed policy's InstancesDistribution, not its template, decides spot or on-demand.
                LaunchSource::Mixed { overrides, .. } if !overrides.is_empty() => {
                    (overrides.clone(), false)
                }
                LaunchSource::Mixed {
                    template: Some(t), ..
                } => (
                    self.launch_facts(t)
                        .await?
                        .instance_type
                        .into_iter()
                        .collect(),
                    false,
                ),
                other => {
                    let facts = self.launch_facts(other).await?;
                    (facts.instance_type.into_iter().collect(), facts.spot)
                }
            };
        }
        Ok(())
    }

    async fn launch_facts(&self, source: &LaunchSource) -> Result<LaunchFacts> {
        match source {
            LaunchSource::Configuration(_) => Ok(self
                .fixed_launch_types
                .get(source)
                .await
                .unwrap_or_default()),
            LaunchSource::Template { id, name, version } => {
                let fixed = version.parse::<u64>().is_ok();
                let cache = if fixed {
                    &self.fixed_launch_types
                } else {
                    &self.moving_launch_types
                };
                if let Some(t) = cache.get(source).await {
                    return Ok(t);
                }
                let t = self
                    .api
                    .launch_template(id.as_deref(), name.as_deref(), version)
                    .await?;
                cache.insert(source.clone(), t.clone()).await;
                Ok(t)
            }
            LaunchSource::Mixed { .. } | LaunchSource::Unknown => Ok(LaunchFacts::default()),
        }
    }

    /// Facts of every instance type the groups use, fetching only those not cached (new types appear
    /// without a restart).
    async fn instance_type_facts(
        &self,
        raw: &BTreeMap<String, RawGroup>,
    ) -> Result<HashMap<String, Arc<InstanceTypeInfo>>> {
        let wanted: BTreeSet<&String> = raw.values().flat_map(|g| &g.info.instance_types).collect();
        let mut out = HashMap::new();
        let mut missing = Vec::new();
        for name in wanted {
            match self.instance_types.get(name).await {
                Some(t) => {
                    out.insert(name.clone(), t);
                }
                None => missing.push(name.clone()),
            }
        }
        if !missing.is_empty() {
            for t in self.api.instance_types(&missing).await? {
                let t = Arc::new(t);
                self.instance_types.insert(t.name.clone(), t.clone()).await;
                out.insert(t.name.clone(), t);
            }
        }
        Ok(out)
    }

    async fn node_group(
        &self,
        info: AsgInfo,
        types: &HashMap<String, Arc<InstanceTypeInfo>>,
    ) -> Result<NodeGroup> {
        let known: Vec<&InstanceTypeInfo> = info
            .instance_types
            .iter()
            .filter_map(|t| types.get(t).map(Arc::as_ref))
            .collect();
        if known.is_empty() {
            return Err(Error::Unavailable(format!(
                "Auto Scaling group {:?}: no known instance type (launch types: {:?})",
                info.name, info.instance_types
            )));
        }
        let template = template::build_template(&info, &self.region, &known)
            .map_err(|e| Error::Unavailable(format!("Auto Scaling group {:?}: {e}", info.name)))?;
        let options = template::options_from_tags(&info.name, &info.tags);
        let zone = info
            .availability_zones
            .first()
            .cloned()
            .unwrap_or_else(|| format!("{}a", self.region));
        let instances = instances_of(&info);
        let launch_error = if (info.desired_capacity.max(0) as usize) > instances.len() {
            let since = self
                .last_scale_up
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&info.name)
                .copied()
                .unwrap_or_else(|| SystemTime::now() - ttl::FAILED_ACTIVITY_LOOKBACK);
            self.api
                .failed_launch_since(&info.name, since)
                .await?
                .map(|m| activities::classify(&m))
        } else {
            None
        };
        Ok(NodeGroup {
            id: info.name,
            min_size: info.min_size,
            max_size: info.max_size,
            target_size: info.desired_capacity,
            instances,
            template: Arc::new(template),
            options,
            price_per_hour: None,
            launch_error,
            provider_id_prefix: format!("aws:///{zone}/"),
        })
    }

    fn group_lock(&self, group: &str) -> Arc<tokio::sync::Mutex<()>> {
        self.group_locks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(group.to_string())
            .or_default()
            .clone()
    }

    /// The cached group with its instances and desired capacity read again from AWS: writes that must not
    /// touch existing instances (lowering the desired capacity makes AWS terminate some) check fresh data.
    async fn fresh_group(&self, group: &str) -> Result<NodeGroup> {
        let mut g = NodeGroup::clone(self.snapshot().group(group)?);
        let raw = self.api.groups_by_name(&[group.to_string()]).await?;
        let info = &raw
            .first()
            .ok_or_else(|| Error::GroupNotFound(group.to_string()))?
            .info;
        g.target_size = info.desired_capacity;
        g.instances = instances_of(info);
        Ok(g)
    }

    /// Replaces one group in the published snapshot after AWS accepted a change.
    fn update_group(&self, group: NodeGroup) {
        let mut next = Snapshot::clone(&self.snapshot());
        next.upsert(group);
        self.snapshot.store(next);
    }
}

/// How a group buys capacity: its mixed-instances distribution, else spot when its launch template or
/// configuration asks for spot, else on-demand.
fn purchase(info: &AsgInfo) -> Purchase {
    let (types, zones) = (info.instance_types.clone(), info.availability_zones.clone());
    match &info.distribution {
        Some(d) => Purchase {
            on_demand_base: d.on_demand_base,
            on_demand_percent_above_base: d.on_demand_percent_above_base,
            on_demand_lowest_price: d.on_demand_lowest_price,
            ..Purchase::on_demand(types, zones)
        },
        None if info.spot_launch => Purchase::spot(types, zones),
        None => Purchase::on_demand(types, zones),
    }
}

/// The group's instances with CA's provider ids and states.
fn instances_of(info: &AsgInfo) -> Vec<Instance> {
    info.instances
        .iter()
        .map(|i| Instance {
            id: format!("aws:///{}/{}", i.availability_zone, i.instance_id),
            state: lifecycle_state(&i.lifecycle_state),
            error: None,
        })
        .collect()
}

/// CA's view of an Auto Scaling lifecycle state.
fn lifecycle_state(state: &str) -> InstanceState {
    if state.starts_with("Pending") || state.starts_with("Warmed") {
        InstanceState::Creating
    } else if state.starts_with("Terminat") || state.starts_with("Detach") {
        InstanceState::Deleting
    } else {
        InstanceState::Running
    }
}

/// The EC2 instance id at the end of an `aws:///<az>/<id>` provider id.
fn instance_id(provider_id: &str) -> &str {
    provider_id.rsplit('/').next().unwrap_or(provider_id)
}

#[async_trait]
impl Cloud for AwsCloud {
    fn name(&self) -> &'static str {
        "aws"
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load()
    }

    async fn refresh(&self) -> Result<()> {
        // Holding the lock across the AWS calls is the single flight: concurrent callers wait for the
        // refresh under way and then find the next one not yet due.
        let mut st = self.refresh.lock().await;
        if st.next_due.is_some_and(|due| Instant::now() < due) {
            return match &st.last_error {
                Some(e) => Err(Error::Unavailable(e.clone())),
                None => Ok(()),
            };
        }
        let started = Instant::now();
        match self.load().await {
            Ok(s) => {
                tracing::debug!(groups = s.groups().count(), took = ?started.elapsed(), "AWS snapshot refreshed");
                self.snapshot.store(s);
                *self.loaded_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
                st.next_due = Some(Instant::now() + self.jittered_interval());
                st.last_error = None;
                Ok(())
            }
            Err(e) => {
                tracing::warn!(error = %e, "AWS refresh failed; serving the last good snapshot");
                st.next_due = Some(Instant::now() + ttl::RETRY_AFTER_FAILURE);
                st.last_error = Some(e.to_string());
                Err(e)
            }
        }
    }

    async fn increase_size(&self, group: &str, delta: i32) -> Result<()> {
        let lock = self.group_lock(group);
        let _held = lock.lock().await;
        let mut g = NodeGroup::clone(self.snapshot().group(group)?);
        let target = g.plan_increase(delta)?;
        self.api.set_desired_capacity(group, target).await?;
        self.last_scale_up
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(group.to_string(), SystemTime::now());
        g.target_size = target;
        g.launch_error = None;
        self.update_group(g);
        Ok(())
    }

    async fn delete_nodes(&self, group: &str, provider_ids: &[String]) -> Result<()> {
        let lock = self.group_lock(group);
        let _held = lock.lock().await;
        let mut g = NodeGroup::clone(self.snapshot().group(group)?);
        if provider_ids.iter().any(|id| g.is_placeholder(id)) {
            // Cancelling unfulfilled capacity lowers the desired capacity: check it is still unfulfilled.
            g = self.fresh_group(group).await?;
        }
        let plan = g.plan_delete(provider_ids)?;
        if plan.placeholders > 0 {
            // Unfulfilled capacity has no instance to terminate: cancel it by lowering the desired capacity.
            let target = g.target_size - plan.placeholders as i32;
            self.api.set_desired_capacity(group, target).await?;
            g.set_target(target);
            self.update_group(g.clone());
        }
        for pid in &plan.instances {
            let result = self.api.terminate_instance(instance_id(pid)).await;
            if result.is_ok() {
                g.target_size -= 1;
                if let Some(i) = g.instances.iter_mut().find(|i| &i.id == pid) {
                    i.state = InstanceState::Deleting;
                }
            }
            // Publish what AWS accepted so far, even when this one failed.
            self.update_group(g.clone());
            result?;
        }
        Ok(())
    }

    async fn decrease_target_size(&self, group: &str, delta: i32) -> Result<()> {
        let lock = self.group_lock(group);
        let _held = lock.lock().await;
        let mut g = self.fresh_group(group).await?;
        let target = match g.plan_decrease(delta) {
            Ok(t) => t,
            Err(e) => {
                self.update_group(g);
                return Err(e);
            }
        };
        self.api.set_desired_capacity(group, target).await?;
        g.set_target(target);
        self.update_group(g);
        Ok(())
    }

    fn readiness(&self) -> Readiness {
        match self.state_age() {
            Some(age) => {
                let s = self.snapshot();
                Readiness {
                    ready: true,
                    detail: format!(
                        "aws {}: {} node groups, {} instances, state age {}s",
                        self.region,
                        s.groups().count(),
                        s.instance_count(),
                        age.as_secs()
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
        self.prices_at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map(|t| t.elapsed())
    }

    fn state_age(&self) -> Option<Duration> {
        self.loaded_at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map(|t| t.elapsed())
    }
}
