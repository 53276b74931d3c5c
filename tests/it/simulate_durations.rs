//! Durations through `simulate`: a maximum node lifetime of 0 is none, the same for a group's
//! `maxNodeLifetime: 0s` as for `--node-max-lifetime 0` (and a group's 0s turns the flag's lifetime off
//! for its nodes), so nothing is replaced for age however many loops run, while a short lifetime does
//! replace; a duration past Go's range in the groups file is refused naming the field, the longest Go
//! duration is accepted.

use ferroscale::cloud::memory::{MemoryCloud, MemoryConfig};
use ferroscale::engine::Settings;

use crate::simulate_lifecycle::cluster;
use crate::support::simulate_harness::{flags, pacing, sim};

/// Go's longest duration, and one too long for it.
pub const LONGEST: &str = "2562047h47m16.854775807s";
pub const HUGE: &str = "10000000000000000000s";

/// One group `pool` holding the three nodes of `cluster()`, a budget of one, with `options`.
fn groups(options: &str) -> String {
    format!(
        r#"
nodeGroups:
  - {{name: pool, minSize: 0, maxSize: 6, capacity: {{cpu: 4, memory: 16Gi, pods: 20}},
     disruptionBudget: "1", options: {options},
     instances: [{{id: i-0}}, {{id: i-1}}, {{id: i-2}}]}}
"#
    )
}

/// Every node retired for its age and every surge asked over `loops` loops of 10 s, and the most
/// nodes the group had.
fn run(options: &str, settings: &Settings, loops: usize) -> (Vec<String>, usize, usize) {
    let mut s = sim(&cluster(), &groups(options));
    let (mut expired, mut surges, mut most) = (Vec::new(), 0, 0);
    for _ in 0..loops {
        let r = s.step(settings, &pacing());
        expired.extend(
            r.disruptions
                .iter()
                .filter(|d| d.reason == "expired")
                .map(|d| d.node.clone()),
        );
        surges += r.replacements.len();
        most = most.max(r.nodes["pool"]);
    }
    (expired, surges, most)
}

#[test]
fn a_groups_lifetime_of_0s_replaces_nothing_over_many_loops_while_a_short_one_does() {
    let defaults = flags(&[]);
    // 120 loops of 10 s: twenty minutes, ten times the oldest node's age at the start.
    let (expired, surges, most) = run("{maxNodeLifetime: 0s}", &defaults, 120);
    assert_eq!(
        (expired, surges, most),
        (vec![], 0, 3),
        "0s is no lifetime: no node expires, new ones included"
    );
    let (expired, surges, _) = run("{maxNodeLifetime: 90s}", &defaults, 12);
    assert!(
        expired.contains(&"pool-0".to_string()) && surges > 0,
        "a short lifetime replaces: {expired:?}"
    );
}

#[test]
fn the_flags_0_is_off_too_and_a_groups_0s_turns_the_flags_lifetime_off_for_it() {
    let (expired, surges, _) = run("{}", &flags(&["--node-max-lifetime", "0"]), 60);
    assert_eq!((expired, surges), (vec![], 0), "--node-max-lifetime 0: off");
    let hour_and_a_half = flags(&["--node-max-lifetime", "90s"]);
    let (expired, surges, _) = run("{maxNodeLifetime: 0s}", &hour_and_a_half, 60);
    assert_eq!((expired, surges), (vec![], 0), "the group's 0s wins");
    let (expired, _, _) = run("{}", &hour_and_a_half, 12);
    assert!(
        expired.contains(&"pool-0".to_string()),
        "the flag's lifetime without the group's 0s: {expired:?}"
    );
    let (expired, surges, _) = run(&format!("{{maxNodeLifetime: {LONGEST}}}"), &defaults(), 12);
    assert_eq!((expired, surges), (vec![], 0), "the longest lifetime");
}

fn defaults() -> Settings {
    flags(&[])
}

/// A groups file with a duration in one field.
type GroupsWith = Box<dyn Fn(&str) -> String>;

/// Why the memory cloud refuses `groups`.
fn refusal(groups: &str) -> String {
    let config = MemoryConfig::parse(groups).unwrap();
    match MemoryCloud::new(&config) {
        Ok(_) => panic!("accepted: {groups}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_duration_past_gos_range_in_the_groups_file_is_refused_naming_the_field() {
    let window = |d: &str| {
        groups("{}").replace(
            "disruptionBudget: \"1\",",
            &format!("disruptionBudget: \"1\", disruptionWindow: {{schedule: \"0 0 * * *\", duration: {d}}},"),
        )
    };
    let consolidation = |d: &str| {
        groups("{}").replace(
            "disruptionBudget: \"1\",",
            &format!("consolidation: {{policy: WhenEmpty, after: {d}}},"),
        )
    };
    let cases: [(GroupsWith, &str); 5] = [
        (
            Box::new(|d| groups(&format!("{{maxNodeLifetime: {d}}}"))),
            "nodeGroups[0] (pool).options.maxNodeLifetime",
        ),
        (
            Box::new(|d| groups(&format!("{{maxNodeProvisionTime: {d}}}"))),
            "nodeGroups[0] (pool).options.maxNodeProvisionTime",
        ),
        (
            Box::new(|d| groups(&format!("{{scaleDownUnneededTime: {d}}}"))),
            "nodeGroups[0] (pool).options.scaleDownUnneededTime",
        ),
        (
            Box::new(window),
            "nodeGroups[0] (pool).disruptionWindow.duration",
        ),
        (
            Box::new(consolidation),
            "nodeGroups[0] (pool).consolidation.after",
        ),
    ];
    for (file, field) in &cases {
        for huge in [HUGE, "2562047h47m16.854775808s", "-5m"] {
            let err = refusal(&file(huge));
            assert!(err.contains(field), "{huge}: {err}");
            assert!(err.contains(&format!("{huge:?}")), "{huge}: {err}");
        }
        // The longest Go duration is accepted, and a loop runs on it.
        let mut s = sim(&cluster(), &file(LONGEST));
        let r = s.step(&defaults(), &pacing());
        assert_eq!(r.nodes["pool"], 3, "{field}: {r:?}");
    }
}
