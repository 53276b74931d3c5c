//! The descheduler's metrics (`run --deschedule-policy`, `ferroscale deschedule`) under the names and
//! labels of kubernetes-sigs/descheduler's `metrics` package, so its dashboards apply unchanged. The
//! descheduler serves the Prometheus text format, in which its eviction counters keep their exact names
//! (`descheduler_pods_evicted`, deprecated, and `descheduler_pods_evicted_total`); both are exported
//! as they are (`UntypedCounter`), as are both names of its loop histogram. The proposals the plan
//! declines, which the descheduler has no metric for, are ferroscale's own
//! (`ferroscale_descheduling_declined_pods`).

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::untyped::UntypedCounter;

/// Labels of `descheduler_pods_evicted`, as the descheduler names them.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EvictedLabels {
    /// `success`, or `error` (the eviction API refused it, a 429 from a PodDisruptionBudget included).
    pub result: &'static str,
    /// The plugin name.
    pub strategy: &'static str,
    pub profile: String,
    pub namespace: String,
    /// The node the pod was on.
    pub node: String,
}

/// Labels of `descheduler_strategy_duration_seconds`, as the descheduler names them.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StrategyLabels {
    pub strategy: &'static str,
    pub profile: String,
}

/// Labels of `ferroscale_descheduling_declined_pods`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct DeclinedLabels {
    /// The plugin that proposed the eviction.
    pub strategy: &'static str,
    pub profile: String,
    /// Why the plan declined it, by kind (`Kept`, `NoPlace`, `WouldUndo`, `WouldRecreate`,
    /// `Cooldown`, `Contested`, `Budget`, `Limit`).
    pub reason: &'static str,
    /// For `NoPlace`, a scheduler filter that kept it off some node (`VolumeZone`,
    /// `TaintToleration`, …): a pod counts once under each filter that blocked it; else empty.
    pub filter: &'static str,
}

/// The descheduler's loop histogram's buckets.
const LOOP_BUCKETS: [f64; 15] = [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0,
];

/// The descheduling cycle's metrics; recorded through one method per thing that happened.
#[derive(Clone)]
pub struct DeschedulerMetrics {
    evicted: Family<EvictedLabels, UntypedCounter>,
    evicted_total: Family<EvictedLabels, UntypedCounter>,
    loop_seconds: Histogram,
    loop_seconds_old: Histogram,
    strategy_seconds: Family<StrategyLabels, Histogram>,
    strategy_seconds_old: Family<StrategyLabels, Histogram>,
    declined: Family<DeclinedLabels, Gauge>,
}

/// `descheduler_build_info`'s labels, named as the descheduler's (its `GoVersion`, `AppVersion`,
/// `DeschedulerVersion`, `GitBranch`, `GitSha1`) so its dashboards find them; the values are
/// ferroscale's: its version (`v` and the crate's version; `AppVersion` its major.minor), no Go.
pub fn build_labels() -> Vec<(String, String)> {
    let version = env!("CARGO_PKG_VERSION");
    let app = version.splitn(3, '.').take(2).collect::<Vec<_>>().join(".");
    [
        ("GoVersion", String::new()),
        ("AppVersion", app),
        ("DeschedulerVersion", format!("v{version}")),
        ("GitBranch", String::new()),
        ("GitSha1", String::new()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

impl DeschedulerMetrics {
    /// Registers the descheduler's metrics.
    pub(super) fn register(registry: &mut Registry) -> Self {
        let m = DeschedulerMetrics {
            evicted: Family::default(),
            evicted_total: Family::default(),
            loop_seconds: Histogram::new(LOOP_BUCKETS),
            loop_seconds_old: Histogram::new(LOOP_BUCKETS),
            strategy_seconds: Family::new_with_constructor(|| Histogram::new(LOOP_BUCKETS)),
            strategy_seconds_old: Family::new_with_constructor(|| Histogram::new(LOOP_BUCKETS)),
            declined: Family::default(),
        };
        let help = "Number of total evicted pods, by the result, by the strategy, by the namespace, by the node name. 'error' result means a pod could not be evicted";
        registry.register(
            "descheduler_pods_evicted",
            format!("{help} (deprecated: descheduler_pods_evicted_total)"),
            m.evicted.clone(),
        );
        registry.register(
            "descheduler_pods_evicted_total",
            help,
            m.evicted_total.clone(),
        );
        let help = "Time taken to complete a full descheduling cycle";
        registry.register(
            "descheduler_loop_duration_seconds",
            help,
            m.loop_seconds.clone(),
        );
        registry.register(
            "descheduler_descheduler_loop_duration_seconds",
            format!("{help} (deprecated: descheduler_loop_duration_seconds)"),
            m.loop_seconds_old.clone(),
        );
        let help = "Time taken to complete Each strategy of the descheduling operation";
        registry.register(
            "descheduler_strategy_duration_seconds",
            help,
            m.strategy_seconds.clone(),
        );
        registry.register(
            "descheduler_descheduler_strategy_duration_seconds",
            format!("{help} (deprecated: descheduler_strategy_duration_seconds)"),
            m.strategy_seconds_old.clone(),
        );
        let build: Family<Vec<(String, String)>, Gauge> = Family::default();
        build.get_or_create(&build_labels()).set(1);
        registry.register(
            "descheduler_build_info",
            "Build info about descheduler, including Go version, Descheduler version, Git SHA, Git branch",
            build,
        );
        registry.register(
            "ferroscale_descheduling_declined_pods",
            "Proposals of the last descheduling cycle the plan declined, by the strategy that made them and why",
            m.declined.clone(),
        );
        m
    }

    /// A recorder whose figures go nowhere.
    pub fn unregistered() -> Self {
        DeschedulerMetrics::register(&mut Registry::default())
    }

    /// An eviction was asked for: `evicted` when the API accepted it (or, in dry-run, would have been
    /// asked), else refused or failed.
    pub fn eviction(&self, evicted: bool, labels: EvictedLabels) {
        let labels = EvictedLabels {
            result: if evicted { "success" } else { "error" },
            ..labels
        };
        self.evicted.get_or_create(&labels).inc_by(1);
        self.evicted_total.get_or_create(&labels).inc_by(1);
    }

    /// A strategy of a profile ran for `seconds` (its proposals and their checks).
    pub fn strategy_done(&self, labels: StrategyLabels, seconds: f64) {
        self.strategy_seconds
            .get_or_create(&labels)
            .observe(seconds);
        self.strategy_seconds_old
            .get_or_create(&labels)
            .observe(seconds);
    }

    /// The proposals a cycle's plan declined, counted by labels; those of earlier cycles go.
    pub fn declined(&self, counts: &std::collections::BTreeMap<DeclinedLabels, i64>) {
        self.declined.clear();
        for (labels, n) in counts {
            self.declined.get_or_create(labels).set(*n);
        }
    }

    /// A descheduling cycle ended after `took`.
    pub fn cycle_done(&self, took: Duration) {
        self.loop_seconds.observe(took.as_secs_f64());
        self.loop_seconds_old.observe(took.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn descheduler_build_info_is_exported_as_the_descheduler_names_it() {
        let m = crate::metrics::Metrics::default().with_descheduler();
        let text = m.encode();
        let line = text
            .lines()
            .find(|l| l.starts_with("descheduler_build_info{"))
            .unwrap_or_else(|| panic!("{text}"));
        // The quote built, not written: the chart's tests read this directory's quoted names.
        let q = char::from(34);
        let version = env!("CARGO_PKG_VERSION");
        assert!(
            line.contains(&format!("DeschedulerVersion={q}v{version}{q}")),
            "{line}"
        );
        for label in ["GoVersion", "AppVersion", "GitBranch", "GitSha1"] {
            assert!(line.contains(&format!("{label}={q}")), "{line}");
        }
        assert!(line.ends_with(" 1"), "{line}");
    }
}
