use proptest::prelude::*;

use super::*;

fn ok(text: &str) -> Duration {
    parse_go_duration(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn refused(text: &str) -> String {
    match parse_go_duration(text) {
        Ok(d) => panic!("{text:?} parsed as {d:?}"),
        Err(e) => e,
    }
}

/// `d` as Go's `Duration.String` writes it past a second (`2562047h47m16.854775807s`).
fn go_string(d: Duration) -> String {
    let s = d.as_secs();
    format!(
        "{}h{}m{}.{:09}s",
        s / 3600,
        s / 60 % 60,
        s % 60,
        d.subsec_nanos()
    )
}

#[test]
fn go_durations() {
    assert_eq!(ok("10m"), Duration::from_secs(600));
    assert_eq!(ok("1h30m"), Duration::from_secs(5400));
    assert_eq!(ok("1.5h"), Duration::from_secs(5400));
    assert_eq!(ok("250ms"), Duration::from_millis(250));
    assert_eq!(ok("1h1m1s1ms1us1ns"), Duration::new(3661, 1_001_001));
    assert_eq!(ok("3µs"), Duration::from_micros(3), "micro sign");
    assert_eq!(ok("3μs"), Duration::from_micros(3), "Greek mu");
    assert_eq!(ok(".5s"), Duration::from_millis(500));
    assert_eq!(ok("1.s"), Duration::from_secs(1));
    assert_eq!(ok("+5s"), Duration::from_secs(5));
    assert_eq!(ok("0.1h"), Duration::from_secs(360));
}

#[test]
fn zero_alone_needs_no_unit_and_a_signed_zero_is_zero() {
    for text in ["0", "+0", "-0", "0s", "-0s", "0h0m", "0.000h"] {
        assert_eq!(ok(text), Duration::ZERO, "{text}");
    }
}

#[test]
fn what_go_refuses_is_refused_naming_the_text() {
    for (text, why) in [
        ("", "invalid duration"),
        ("-", "invalid duration"),
        ("+", "invalid duration"),
        (".s", "invalid duration"),
        ("s", "invalid duration"),
        ("10", "missing unit"),
        ("00", "missing unit"),
        ("0.0", "missing unit"),
        ("1h30", "missing unit"),
        ("5 minutes", "unknown unit"),
        ("1d", "unknown unit"),
        ("1e3s", "unknown unit"),
        ("1S", "unknown unit"),
        (" 1s", "invalid duration"),
        ("1s ", "unknown unit"),
        ("1..5s", "missing unit"),
    ] {
        let e = refused(text);
        assert!(e.contains(why), "{text:?}: {e}");
        assert!(e.contains(&format!("{text:?}")), "{text:?}: {e}");
    }
}

#[test]
fn a_negative_duration_is_refused() {
    assert!(refused("-5s").contains("negative"));
    assert!(refused("-1ns").contains("negative"));
    assert!(refused("-9223372036854775808ns").contains("negative"));
}

#[test]
fn gos_longest_duration_parses_and_one_nanosecond_more_is_refused() {
    assert_eq!(GO_MAX.as_nanos(), i64::MAX as u128);
    assert_eq!(GO_MAX.as_secs(), GO_MAX_SECS);
    for text in [
        "2562047h47m16.854775807s",
        "9223372036854775807ns",
        "9223372036.854775807s",
        "2562047h47m16s854ms775us807ns",
    ] {
        assert_eq!(ok(text), GO_MAX, "{text}");
    }
    for text in [
        "2562047h47m16.854775808s",
        "9223372036854775808ns",
        "9223372036.854775808s",
        "2562047h47m16s854ms775us808ns",
        "2562048h",
        "10000000000000000000s",
        "18446744073709551616ns",
        "99999999999999999999999999h",
        "9223372036854775807ns1ns",
    ] {
        let e = refused(text);
        assert!(e.contains("past Go's longest"), "{text:?}: {e}");
    }
}

#[test]
fn long_fractions_are_truncated_without_overflow() {
    let zeros = "0".repeat(60);
    assert_eq!(ok(&format!("0.{zeros}1h")), Duration::ZERO);
    let nines = "9".repeat(60);
    assert_eq!(ok(&format!("1.{nines}s")), Duration::new(1, 999_999_999));
    assert_eq!(ok("0.0000000001s"), Duration::ZERO);
    assert_eq!(ok("0.333333333333h"), Duration::new(1199, 999_999_998));
}

#[test]
fn integer_seconds_stop_at_gos_range() {
    assert_eq!(go_secs(600).unwrap(), Duration::from_secs(600));
    assert_eq!(go_secs(GO_MAX_SECS).unwrap().as_secs(), GO_MAX_SECS);
    assert!(go_secs(GO_MAX_SECS + 1).is_err());
    assert!(go_secs(u64::MAX).is_err());
}

#[test]
fn seconds_saturate_instead_of_wrapping() {
    assert_eq!(secs(Duration::from_secs(600)), 600);
    assert_eq!(secs(Duration::from_secs(u64::MAX)), i64::MAX);
}

proptest! {
    #[test]
    fn never_panics_on_any_text(text in "\\PC{0,40}") {
        let _ = parse_go_duration(&text);
    }

    #[test]
    fn never_panics_on_duration_like_text(
        text in "[-+]?([0-9]{0,24}(\\.[0-9]{0,30})?(ns|us|µs|μs|ms|s|m|h|x)?){1,4}"
    ) {
        if let Ok(d) = parse_go_duration(&text) {
            prop_assert!(d <= GO_MAX);
        }
    }

    #[test]
    fn every_duration_in_range_reads_back(n in 0..=i64::MAX.unsigned_abs()) {
        let d = Duration::from_nanos(n);
        prop_assert_eq!(ok(&format!("{n}ns")), d);
        prop_assert_eq!(ok(&go_string(d)), d);
        prop_assert_eq!(
            ok(&format!("{}.{:09}s", d.as_secs(), d.subsec_nanos())),
            d
        );
        prop_assert_eq!(ok(&format!("{}us{}ns", n / 1000, n % 1000)), d);
    }

    #[test]
    fn every_count_past_the_range_is_refused(n in i64::MAX.unsigned_abs() + 1..=u64::MAX) {
        let nanos = format!("{n}ns");
        prop_assert!(parse_go_duration(&nanos).is_err());
        prop_assert!(parse_go_duration(&go_string(Duration::from_nanos(n))).is_err());
    }

    #[test]
    fn whole_units_read_exactly(n in 0u64..=2_562_047, unit in 0usize..4) {
        let (text, d) = match unit {
            0 => (format!("{n}h"), Duration::from_secs(n * 3600)),
            1 => (format!("{n}m"), Duration::from_secs(n * 60)),
            2 => (format!("{n}s"), Duration::from_secs(n)),
            _ => (format!("{n}ms"), Duration::from_millis(n)),
        };
        prop_assert_eq!(ok(&text), d);
    }
}
