//! The core's decoders (the descheduler policy, the priorities, the price file) under their bounds:
//! anything deeper or bigger is refused by name before it is parsed, any text at all is taken or
//! refused without a panic, and nothing takes a second to be refused.

use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::tests::tokens;
use super::{DEPTH, POLICY, PRICE_OVERRIDES, PRIORITIES};
use crate::deschedule::policy::Policy;
use crate::engine::expander::Priorities;
use crate::pricing::PriceOverrides;

/// Each decoder, its bounds, and a valid document of it to nest or pad.
fn decoders() -> Vec<(super::Bounds, &'static str, fn(&str) -> Result<(), String>)> {
    vec![
        (
            POLICY,
            "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles: []\n",
            |t| Policy::parse(t).map(drop).map_err(|e| e.to_string()),
        ),
        (PRIORITIES, "10: ['.*spot.*']\n", |t| {
            Priorities::parse(t).map(drop).map_err(|e| e.to_string())
        }),
        (PRICE_OVERRIDES, "discount: 0.1\n", |t| {
            PriceOverrides::parse(t)
                .map(drop)
                .map_err(|e| e.to_string())
        }),
    ]
}

/// `levels` levels of nesting in one of the ways YAML nests (block mappings at most 600: their text
/// grows with the square of their depth).
fn nesting(style: u8, levels: usize) -> String {
    match style {
        0 => "[".repeat(levels),
        1 => "{a: ".repeat(levels),
        2 => "- ".repeat(levels),
        3 => (0..levels.min(600))
            .map(|i| format!("{}k:\n", " ".repeat(i)))
            .collect(),
        _ => "{\"a\":".repeat(levels),
    }
}

fn timed(decode: fn(&str) -> Result<(), String>, text: &str) -> Result<(), String> {
    let started = Instant::now();
    let result = decode(text);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{} bytes took {:?}",
        text.len(),
        started.elapsed()
    );
    result
}

#[test]
fn the_issues_inputs_are_refused_at_once() {
    // 200 KB nested as deep as it goes (29 s to parse as priorities before).
    let deep = "{a: ".repeat(50_000);
    let e = timed(
        |t| Priorities::parse(t).map(drop).map_err(|e| e.to_string()),
        &deep,
    )
    .unwrap_err();
    assert!(
        e.contains("priorities: line 1 nests deeper than its depth limit of 32"),
        "{e}"
    );
    // 100k profiles (27 s and 500 MB before): over the size limit.
    let mut policy =
        String::from("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n");
    for i in 0..100_000 {
        policy.push_str(&format!("- name: p{i}\n"));
    }
    let e = timed(
        |t| Policy::parse(t).map(drop).map_err(|e| e.to_string()),
        &policy,
    )
    .unwrap_err();
    assert!(
        e.contains("descheduler policy: ") && e.contains("size limit of 262144 bytes"),
        "{e}"
    );
    // Under the size limit, more profiles than the count limit: refused by count, at once.
    policy.truncate(policy.find("- name: p5000\n").unwrap());
    let e = timed(
        |t| Policy::parse(t).map(drop).map_err(|e| e.to_string()),
        &policy,
    )
    .unwrap_err();
    assert!(
        e.contains("profiles: 5000 profiles is over the limit of 1000"),
        "{e}"
    );
}

#[test]
fn profile_names_are_checked_once_each() {
    let mut policy =
        String::from("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n");
    for i in 0..1_000 {
        policy.push_str(&format!("- name: p{i}\n"));
    }
    assert!(Policy::parse(&policy).is_ok());
    policy.push_str("- name: p7\n");
    let e = Policy::parse(&policy).unwrap_err().to_string();
    assert!(e.contains("over the limit of 1000"), "{e}");
    let twice = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: a\n- name: b\n- name: a\n";
    let e = Policy::parse(twice).unwrap_err().to_string();
    assert!(
        e.contains("profiles[2].name: profile name \"a\" used twice"),
        "{e}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Nested past the limit, anywhere in the document: refused by the depth limit, by name.
    #[test]
    fn deeper_than_the_limit_is_refused_by_name(style in 0u8..5, extra in 1usize..4_000, at_end in any::<bool>()) {
        for (bounds, valid, decode) in decoders() {
            let deep = nesting(style, DEPTH + extra);
            let text = if at_end { format!("{valid}x: {deep}") } else { deep };
            let e = timed(decode, &text).unwrap_err();
            let want = format!("{}: line ", bounds.input);
            prop_assert!(e.contains(&want) && e.contains("depth limit of 32"), "{e}");
        }
    }

    /// Over the size limit by any amount: refused by the size limit, by name, whatever the text.
    #[test]
    fn bigger_than_the_limit_is_refused_by_name(over in 1usize..100_000, fill in 0u8..3) {
        for (bounds, valid, decode) in decoders() {
            let pad = bounds.max_bytes + over - valid.len();
            let text = match fill {
                0 => format!("{valid}{}", "#".repeat(pad)),
                1 => format!("{valid}{}", "\n".repeat(pad)),
                _ => format!("{valid}{}", "[".repeat(pad)),
            };
            let e = timed(decode, &text).unwrap_err();
            prop_assert!(e.contains(&format!("{}: {} bytes is over its size limit of {} bytes", bounds.input, text.len(), bounds.max_bytes)), "{e}");
        }
    }

    /// Any text is read or refused, never a panic, within the limits.
    #[test]
    fn any_text_is_read_or_refused(text in tokens(), nested in 0usize..40, style in 0u8..5) {
        for (_, valid, decode) in decoders() {
            let _ = timed(decode, &text);
            let _ = timed(decode, &format!("{valid}{}", nesting(style, nested)));
        }
    }
}

#[test]
fn priorities_count_their_regexes_before_compiling_any() {
    let mut text: String = (0..1_000).map(|i| format!("{i}: ['g{i}-.*']\n")).collect();
    assert!(Priorities::parse(&text).is_ok());
    text.push_str("1000: ['x', 'y']\n");
    let e = timed(
        |t| Priorities::parse(t).map(drop).map_err(|e| e.to_string()),
        &text,
    )
    .unwrap_err();
    assert!(
        e.contains("priorities: 1002 regexes is over the limit of 1000"),
        "{e}"
    );
}
