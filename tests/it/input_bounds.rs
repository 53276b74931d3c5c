//! The binary's local inputs (the node groups file, `--events`, `--config`, cluster dumps) are refused
//! by their size and nesting limits before they are parsed, by name, and their counts and sizes before
//! anything is made: nothing takes a second or 256 MB to be refused. (The core's decoders, the policy,
//! the priorities and the price file, are held to theirs in `ferroscale-core`'s `bounds` tests.)

use std::time::{Duration, Instant};

use ferroscale::bounds::Bounds;
use ferroscale::cloud::memory::{MemoryCloud, MemoryConfig};
use ferroscale::input::{DUMP, EVENTS, NODE_GROUPS};
use ferroscale::k8s::documents;
use ferroscale::simulate::parse_events;
use proptest::prelude::*;

use crate::support::process::run_limited;

type Decode = fn(&str) -> Result<(), String>;

/// Each decoder, its bounds, and a valid document of it to nest in or pad.
fn decoders() -> [(Bounds, &'static str, Decode); 3] {
    [
        (NODE_GROUPS, "nodeGroups: []\n", |t| {
            MemoryConfig::parse(t)
                .and_then(|c| MemoryCloud::new(&c))
                .map(drop)
                .map_err(|e| e.to_string())
        }),
        (EVENTS, "- {at: 1m, neverReady: a}\n", |t| {
            parse_events(t).map(drop)
        }),
        (DUMP, "apiVersion: v1\nkind: List\nitems: []\n", |t| {
            documents::parse(t, "dump.yaml")
                .map(drop)
                .map_err(|e| e.to_string())
        }),
    ]
}

fn timed(decode: Decode, text: &str) -> Result<(), String> {
    let started = Instant::now();
    let result = decode(text);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "{} bytes took {took:?}",
        text.len()
    );
    result
}

/// `levels` levels of nesting in one of the ways YAML nests.
fn nesting(style: u8, levels: usize) -> String {
    match style {
        0 => "[".repeat(levels),
        1 => "{a: ".repeat(levels),
        2 => "- ".repeat(levels),
        _ => "{\"a\":".repeat(levels),
    }
}

const GROUP: &str = "capacity: {cpu: 2, memory: 8Gi}";

#[test]
fn a_group_size_past_its_limit_is_refused_before_any_instance_is_made() {
    let groups = |sizes: &str| format!("nodeGroups:\n  - {{name: a, {sizes}, {GROUP}}}\n");
    let refused = |sizes: &str| {
        timed(
            |t| MemoryConfig::parse(t).map(drop).map_err(|e| e.to_string()),
            &groups(sizes),
        )
        .unwrap_err()
    };
    let e = refused("minSize: 0, maxSize: 50000000, targetSize: 50000000");
    assert!(
        e.contains("nodeGroups[0] (a).maxSize: 50000000 is over the limit of 1000000"),
        "{e}"
    );
    let e = refused("minSize: 0, maxSize: 1000000, targetSize: 1000000");
    assert!(
        e.contains("nodeGroups: 1000000 instances at start") && e.contains("limit of 200000"),
        "{e}"
    );
    let e = refused("minSize: 300000, maxSize: 1000000");
    assert!(e.contains("limit of 200000"), "{e}");
    // Many groups under the limits add up past it.
    let many: String = (0..3)
        .map(|i| {
            format!(
                "  - {{name: g{i}, minSize: 0, maxSize: 100000, targetSize: 100000, {GROUP}}}\n"
            )
        })
        .collect();
    let e = MemoryConfig::parse(&format!("nodeGroups:\n{many}"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("300000 instances at start"), "{e}");
}

#[test]
fn node_groups_are_counted_and_their_names_checked_once_each() {
    let group = |i: usize| format!("  - {{name: g{i}, minSize: 0, maxSize: 1, {GROUP}}}\n");
    let mut text: String = std::iter::once("nodeGroups:\n".to_string())
        .chain((0..10_000).map(group))
        .collect();
    let config = MemoryConfig::parse(&text).unwrap();
    assert_eq!(config.node_groups.len(), 10_000);
    let twice = format!("{text}  - {{name: g9999, minSize: 0, maxSize: 1, {GROUP}}}\n");
    let e = MemoryConfig::parse(&twice).unwrap_err().to_string();
    assert!(e.contains("over the limit of 10000"), "{e}");
    text.truncate(text.find("  - {name: g5000,").unwrap());
    text.push_str(&group(17));
    let e = MemoryConfig::parse(&text).unwrap_err().to_string();
    assert!(
        e.contains("nodeGroups[5000].name: duplicate node group name \"g17\""),
        "{e}"
    );
}

#[test]
fn an_events_json_is_held_to_the_depth_limit() {
    let deep = format!("- at: 1m\n  event: '{}'\n", "{\"a\":".repeat(40));
    let e = timed(|t| parse_events(t).map(drop), &deep).unwrap_err();
    assert!(
        e.contains(
            "entry 0: event: an event's JSON: line 1 nests deeper than its depth limit of 32"
        ),
        "{e}"
    );
}

/// The inputs, run as an operator runs them: refused with exit code 2 naming the limit, in a
/// process that may not allocate 256 MB.
#[test]
fn the_binary_refuses_them_in_little_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let groups = path("groups.yaml");
    std::fs::write(
        &groups,
        format!("nodeGroups:\n  - {{name: a, minSize: 0, maxSize: 50000000, targetSize: 50000000, {GROUP}}}\n"),
    )
    .unwrap();
    let deep = path("deep.yaml");
    std::fs::write(&deep, "{a: ".repeat(50_000)).unwrap();
    // A dump longer than its limit, sparse: refused by its length, never read.
    let huge = path("huge.yaml");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(DUMP.max_bytes as u64 + 1)
        .unwrap();
    let ok_groups = path("ok.yaml");
    std::fs::write(
        &ok_groups,
        format!("nodeGroups:\n  - {{name: a, minSize: 0, maxSize: 3, {GROUP}}}\n"),
    )
    .unwrap();
    let cases: [(Vec<&str>, String); 5] = [
        (
            vec!["serve", "--memory-config", &groups],
            "maxSize: 50000000 is over the limit of 1000000".into(),
        ),
        (
            vec!["serve", "--memory-config", &deep],
            "node groups: line 1 nests deeper than its depth limit of 32 levels".into(),
        ),
        (
            vec!["simulate", "--config", &deep],
            "--config file: line 1 nests deeper than its depth limit of 32 levels".into(),
        ),
        (
            vec!["simulate", "--cluster", &deep, "--node-groups", &ok_groups],
            "cluster dump: line 1 nests deeper than its depth limit of 64 levels".into(),
        ),
        (
            vec!["simulate", "--cluster", &huge, "--node-groups", &ok_groups],
            format!(
                "cluster dump: {} bytes is over its size limit of {} bytes",
                DUMP.max_bytes + 1,
                DUMP.max_bytes
            ),
        ),
    ];
    for (args, says) in cases {
        let (code, stderr) = run_limited(&args, 256 << 20);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(&says), "{args:?}: {stderr}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Nested past the limit, anywhere: refused by the depth limit, by name, at once.
    #[test]
    fn deeper_than_the_limit_is_refused_by_name(style in 0u8..4, extra in 1usize..4_000, at_end in any::<bool>()) {
        for (bounds, valid, decode) in decoders() {
            let deep = nesting(style, bounds.max_depth + extra);
            let text = if at_end { format!("{valid}x: {deep}") } else { deep };
            let e = timed(decode, &text).unwrap_err();
            let want = format!("{}: line ", bounds.input);
            prop_assert!(e.contains(&want), "{e}");
            let limit = format!("depth limit of {} levels", bounds.max_depth);
            prop_assert!(e.contains(&limit), "{e}");
        }
    }

    /// Over the size limit by any amount: refused by the size limit, by name, whatever the text.
    /// (A dump's 2 GiB is the sparse file of `the_binary_refuses_them_in_little_memory`.)
    #[test]
    fn bigger_than_the_limit_is_refused_by_name(over in 1usize..10_000, fill in 0u8..3) {
        for (bounds, valid, decode) in decoders().into_iter().filter(|d| d.0 != DUMP) {
            let pad = bounds.max_bytes + over - valid.len();
            let text = match fill {
                0 => format!("{valid}{}", "#".repeat(pad)),
                1 => format!("{valid}{}", "\n".repeat(pad)),
                _ => format!("{valid}{}", "[".repeat(pad)),
            };
            let e = timed(decode, &text).unwrap_err();
            let want = format!("{}: {} bytes is over its size limit of {} bytes", bounds.input, text.len(), bounds.max_bytes);
            prop_assert!(e.contains(&want), "{e}");
        }
    }

    /// Any text, and any nesting under the limit, is read or refused without a panic, at once.
    #[test]
    fn any_text_is_read_or_refused(text in "[\\[\\]{}:,\\- #'\"|>\na-z0-9]{0,200}", nested in 0usize..30, style in 0u8..4) {
        for (_, valid, decode) in decoders() {
            let _ = timed(decode, &text);
            let _ = timed(decode, &format!("{valid}{}", nesting(style, nested)));
        }
    }
}
