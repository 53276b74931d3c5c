//! Prices read off the Refresh path: a task of their own reads on-demand and spot prices of the instance
//! types in use every `--pricing-refresh-interval`, and at once when a refresh finds a type not priced
//! yet; the groups are re-priced in the published snapshot when new prices arrive. A slow or failing
//! Pricing API therefore never delays CA's Refresh or a write: they price with the book at hand. When AWS
//! fails, the last good prices stay and the next try waits [`ttl::PRICE_RETRY_AFTER_FAILURE`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify;

use super::api::Api;
use super::ttl;
use super::PricingSettings;
use crate::model::Snapshot;
use crate::pricing::{PriceBook, PricingSource, Purchase};

/// How a group buys capacity, by group, as the last refresh found it (prices are applied to these).
pub type Purchases = HashMap<String, Purchase>;

#[derive(Default)]
struct ReadState {
    /// Types priced (or found to have no price) since the last full read, so a new type costs one read.
    asked: BTreeSet<String>,
    /// No read before this instant after a failure.
    retry_at: Option<Instant>,
}

/// The prices last read from AWS and the types that should be priced.
pub struct PriceKeeper {
    api: Api,
    region: String,
    settings: PricingSettings,
    book: RwLock<Arc<PriceBook>>,
    /// The instance types the groups use, as the last refresh found them.
    in_use: Mutex<BTreeSet<String>>,
    reads: tokio::sync::Mutex<ReadState>,
    /// When every type in use was last priced (the exported price age).
    read_at: Mutex<Option<Instant>>,
    /// Woken when a refresh finds a type not priced yet.
    wake: Notify,
}

impl PriceKeeper {
    pub fn new(api: Api, region: String, settings: PricingSettings) -> Self {
        PriceKeeper {
            api,
            region,
            settings,
            book: RwLock::default(),
            in_use: Mutex::default(),
            reads: tokio::sync::Mutex::default(),
            read_at: Mutex::default(),
            wake: Notify::new(),
        }
    }

    /// Whether prices come from AWS at all (`--pricing-source=file` never asks).
    pub fn from_aws(&self) -> bool {
        self.settings.source == PricingSource::Aws
    }

    /// The prices at hand.
    pub fn book(&self) -> Arc<PriceBook> {
        self.book.read().clone()
    }

    /// Records the types a refresh found in use, waking the price task when one is new.
    pub fn want(&self, in_use: BTreeSet<String>) {
        let book = self.book();
        let new = in_use
            .iter()
            .any(|t| !book.on_demand.contains_key(t) && !book.spot.contains_key(t));
        *self.in_use.lock() = in_use;
        if new && self.from_aws() {
            self.wake.notify_one();
        }
    }

    /// Time since every type in use was last priced.
    pub fn age(&self) -> Option<Duration> {
        self.read_at.lock().map(|t| t.elapsed())
    }

    /// How long the price task may sleep before a read is due (at least a second, so a zero interval
    /// does not spin).
    fn until_due(&self, retry_at: Option<Instant>) -> Duration {
        let due = match (retry_at, self.age()) {
            (Some(t), _) => t.saturating_duration_since(Instant::now()),
            (None, None) => Duration::ZERO,
            (None, Some(age)) => self.settings.refresh_interval.saturating_sub(age),
        };
        due.max(ttl::PRICE_TASK_MIN_SLEEP)
    }

    /// Reads what is due: every type in use when the prices are older than the interval, else the types
    /// not asked for yet. True when the book changed.
    pub async fn read_due(&self) -> bool {
        if !self.from_aws() {
            return false;
        }
        let mut st = self.reads.lock().await;
        let now = Instant::now();
        if st.retry_at.is_some_and(|t| now < t) {
            return false;
        }
        let in_use = self.in_use.lock().clone();
        let stale = self
            .age()
            .is_none_or(|age| age >= self.settings.refresh_interval);
        let wanted: BTreeSet<String> = if stale {
            in_use
        } else {
            in_use.difference(&st.asked).cloned().collect()
        };
        if wanted.is_empty() {
            return false;
        }
        match self.api.price_book(&wanted, &self.region).await {
            Ok(fresh) => {
                let mut book = if stale {
                    PriceBook::default()
                } else {
                    PriceBook::clone(&self.book())
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
                *self.book.write() = Arc::new(book);
                if stale {
                    st.asked = wanted;
                    *self.read_at.lock() = Some(now);
                } else {
                    st.asked.extend(wanted);
                }
                st.retry_at = None;
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading prices failed; keeping the last good prices");
                st.retry_at = Some(now + ttl::PRICE_RETRY_AFTER_FAILURE);
                false
            }
        }
    }

    /// Reads prices whenever due or woken, calling `changed` after each read that changed the book,
    /// until `stop` is set or `changed` says the cloud is gone.
    pub async fn run(
        self: Arc<Self>,
        mut stop: tokio::sync::watch::Receiver<bool>,
        changed: impl Fn() -> bool + Send,
    ) {
        loop {
            let retry_at = self.reads.lock().await.retry_at;
            tokio::select! {
                () = self.wake.notified() => {}
                () = tokio::time::sleep(self.until_due(retry_at)) => {}
                _ = stop.changed() => return,
            }
            if self.read_due().await && !changed() {
                return;
            }
        }
    }
}

/// Sets every group's price from the book (and the user's overrides) and the per-type prices of nodes
/// that belong to no group.
pub fn apply(
    snapshot: &mut Snapshot,
    book: &PriceBook,
    purchases: &Purchases,
    settings: &PricingSettings,
) {
    let overrides = &settings.overrides;
    let repriced: Vec<_> = snapshot
        .groups()
        .filter_map(|g| {
            let p = purchases.get(&g.id)?;
            let price = book.group_price(&g.id, p, g.target_size, overrides);
            let instances = book.instance_prices(&g.id, p, overrides);
            (price != g.price_per_hour || instances != g.instance_prices).then(|| {
                let mut g = crate::model::NodeGroup::clone(g);
                g.price_per_hour = price;
                g.instance_prices = instances;
                g
            })
        })
        .collect();
    for g in repriced {
        snapshot.upsert(g);
    }
    let in_use: BTreeSet<&String> = purchases
        .values()
        .flat_map(|p| {
            p.instance_types
                .iter()
                .chain(p.instances.iter().map(|(_, t, _)| t))
        })
        .collect();
    let type_prices: BTreeMap<String, f64> = in_use
        .into_iter()
        .chain(overrides.instance_types.keys())
        .filter_map(|t| {
            let listed = book.on_demand.get(t).copied();
            Some((t.clone(), overrides.on_demand(Some(t.as_str()), listed)?))
        })
        .collect();
    snapshot.set_instance_prices(Arc::new(type_prices));
}
