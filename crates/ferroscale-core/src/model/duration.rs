//! Go durations, the format cluster-autoscaler's flags and options use, read as Go's
//! `time.ParseDuration` reads them (grammar and range), and the one conversion to engine seconds.
//!
//! Hand-written rather than taken from a crate: the core depends on serde, regex and thiserror only
//! (`tests/it/layout.rs`), and the crates that read "1h30m" (humantime and the like) differ from Go in
//! grammar (spaces, days, years) or range; what matters here is that a value is refused exactly where
//! cluster-autoscaler would refuse it, never wrapped.

use std::time::Duration;

/// The longest duration Go has: `i64::MAX` nanoseconds, 2562047h47m16.854775807s (about 292 years).
pub const GO_MAX: Duration = Duration::new(9_223_372_036, 854_775_807);

/// [`GO_MAX`] in whole seconds: the most seconds an integer seconds field (`maxPodLifeTimeSeconds`,
/// `--max-graceful-termination-sec`) may hold and still be a Go duration.
pub const GO_MAX_SECS: u64 = 9_223_372_036;

/// [`GO_MAX`] in nanoseconds.
const MAX_NANOS: u64 = i64::MAX.unsigned_abs();

/// 2^63: the magnitude of Go's most negative duration, the largest any partial sum may reach.
const LIMIT: u64 = MAX_NANOS + 1;

/// Fraction digits read: 10^19 parts of an hour are far below a nanosecond.
const FRACTION_SCALE: u128 = 10_000_000_000_000_000_000;

/// Parses a Go duration ("90s", "10m", "1h30m", "1.5h", "250ms", "0") as `time.ParseDuration` does:
/// `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+` with units ns, us (µs, μs), ms, s, m, h, or "0" alone; no
/// spaces; in integer nanoseconds with checked arithmetic, so anything past [`GO_MAX`] (one
/// nanosecond more, or `10000000000000000000s`) is refused, never wrapped or rounded into range.
/// Go accepts negative durations; no input here means one, so a negative one is refused ("-0s" is 0).
/// A fraction is truncated to whole nanoseconds in integers (Go multiplies it in floating point,
/// which can differ by a nanosecond past fifteen significant digits). The error names the text;
/// callers add the field.
pub fn parse_go_duration(text: &str) -> std::result::Result<Duration, String> {
    let invalid = || format!("invalid duration {text:?}");
    let past = || format!("invalid duration {text:?}: past Go's longest, 2562047h47m16.854775807s");
    let (negative, mut s) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        let b = s.as_bytes();
        if !(b[0] == b'.' || b[0].is_ascii_digit()) {
            return Err(invalid());
        }
        // [0-9]*: an integer past 2^63 is past any unit's range.
        let int_len = b.iter().take_while(|c| c.is_ascii_digit()).count();
        let mut whole: u64 = 0;
        for &c in &b[..int_len] {
            whole = whole
                .checked_mul(10)
                .and_then(|w| w.checked_add(u64::from(c - b'0')))
                .filter(|&w| w <= LIMIT)
                .ok_or_else(past)?;
        }
        s = &s[int_len..];
        // (\.[0-9]*)?: digits past the 19th add nothing (under a nanosecond of an hour).
        let (mut frac, mut scale, mut frac_len) = (0u64, 1u128, 0usize);
        if let Some(rest) = s.strip_prefix('.') {
            frac_len = rest.bytes().take_while(u8::is_ascii_digit).count();
            for &c in &rest.as_bytes()[..frac_len] {
                if scale >= FRACTION_SCALE {
                    break;
                }
                frac = frac * 10 + u64::from(c - b'0');
                scale *= 10;
            }
            s = &rest[frac_len..];
        }
        if int_len == 0 && frac_len == 0 {
            return Err(invalid());
        }
        let unit_len = s
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_len == 0 {
            return Err(format!("missing unit in duration {text:?}"));
        }
        let per: u64 = match &s[..unit_len] {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            u => return Err(format!("unknown unit {u:?} in duration {text:?}")),
        };
        s = &s[unit_len..];
        // frac < 10^19 and per < 2^42: the product fits u128, the quotient is below `per`.
        let frac_ns =
            u64::try_from(u128::from(frac) * u128::from(per) / scale).map_err(|_| past())?;
        total = whole
            .checked_mul(per)
            .and_then(|v| v.checked_add(frac_ns))
            .and_then(|v| v.checked_add(total))
            .filter(|&v| v <= LIMIT)
            .ok_or_else(past)?;
    }
    if negative && total > 0 {
        return Err(format!("negative duration {text:?}"));
    }
    if total > MAX_NANOS {
        return Err(past());
    }
    Ok(Duration::from_nanos(total))
}

/// `secs` whole seconds as a duration, refused past Go's range ([`GO_MAX_SECS`]): an integer seconds
/// field that would overflow Go's `time.Duration(n) * time.Second`.
pub fn go_secs(secs: u64) -> std::result::Result<Duration, String> {
    if secs > GO_MAX_SECS {
        return Err(format!(
            "{secs} seconds is past Go's longest duration ({GO_MAX_SECS} s)"
        ));
    }
    Ok(Duration::from_secs(secs))
}

/// `d` in whole seconds as the engine's clock counts them (`i64`), saturating: a duration past
/// `i64::MAX` seconds (refused at parsing, see `parse_go_duration`) can never wrap to a negative time.
/// The one conversion from a `Duration` to engine seconds: no `as` cast elsewhere.
pub fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests;
