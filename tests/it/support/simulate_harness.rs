//! The `Simulation` `ferroscale simulate` runs, built in-process from a dump and the memory cloud's
//! groups; the settings and pacing tests step it with, and what they read of a loop's report.

use std::time::Duration;

use clap::Parser;
use ferroscale::cli::flags::{ExpanderFlags, LoopFlags};
use ferroscale::cloud::memory::MemoryConfig;
use ferroscale::engine::Settings;
use ferroscale::k8s::documents;
use ferroscale::pricing::PriceOverrides;
use ferroscale::simulate::{LoopReport, Pacing, Simulation};

/// A simulation of the `cluster` dump on the memory cloud's `groups`.
pub fn sim(cluster: &[String], groups: &str) -> Simulation {
    let objects = documents::parse(&cluster.join("---\n"), "cluster.yaml").unwrap();
    Simulation::new(
        &objects,
        &MemoryConfig::parse(groups).unwrap(),
        &PriceOverrides::default(),
    )
    .unwrap()
}

/// One loop of 10 seconds; new nodes come at once.
pub fn pacing() -> Pacing {
    Pacing {
        loops: 1,
        scan_interval: Duration::from_secs(10),
        provision_delay: Duration::ZERO,
        node_ready_delay: Duration::ZERO,
        by_group: Default::default(),
    }
}

/// The binary's defaults, scale-down without waiting.
pub fn quick_scale_down() -> Settings {
    let mut s = ferroscale::cli::flags::default_engine();
    s.defaults.scale_down_unneeded_time = Duration::ZERO;
    s.scale_down_delay_after_add = Duration::ZERO;
    s
}

/// The loop's scale-ups: (group, delta).
pub fn ups(r: &LoopReport) -> Vec<(&str, i32)> {
    r.scale_up
        .iter()
        .map(|u| (u.group.as_str(), u.delta))
        .collect()
}

/// Why `pod` is pending.
pub fn reason_of<'a>(r: &'a LoopReport, pod: &str) -> &'a str {
    &r.pending
        .iter()
        .find(|p| p.pod.as_deref() == Some(pod))
        .unwrap_or_else(|| panic!("{pod} not pending: {r:?}"))
        .reason
}

/// Why `node` is kept.
pub fn unremovable<'a>(r: &'a LoopReport, node: &str) -> &'a str {
    &r.unremovable
        .iter()
        .find(|n| n.node.as_deref() == Some(node))
        .unwrap_or_else(|| panic!("{node} not listed: {r:?}"))
        .reason
}

/// The loop's settings from these flags, scale-down without waiting.
pub fn flags(args: &[&str]) -> Settings {
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        rules: LoopFlags,
    }
    let cli = Cli::try_parse_from(std::iter::once("ferroscale").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    let mut s = cli.rules.engine(&ExpanderFlags::default()).unwrap();
    s.defaults.scale_down_unneeded_time = Duration::ZERO;
    s.scale_down_delay_after_add = Duration::ZERO;
    s
}
