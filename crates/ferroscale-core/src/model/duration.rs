//! Go durations, the format cluster-autoscaler's flags and options use.

use std::time::Duration;

/// Parses a Go-style duration ("90s", "10m", "1h30m", "1.5h", "250ms"), the format CA's flags use.
pub fn parse_go_duration(text: &str) -> std::result::Result<Duration, String> {
    let s = text.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err("empty duration".into());
    }
    let mut rest = s;
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("{text:?}: missing unit (ns, us, ms, s, m, h)"))?;
        let value: f64 = rest[..num_end]
            .parse()
            .map_err(|_| format!("{text:?}: bad number"))?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            u => return Err(format!("{text:?}: unknown unit {u:?}")),
        };
        total += value * seconds;
        rest = &rest[unit_end..];
    }
    Duration::try_from_secs_f64(total).map_err(|e| format!("{text:?}: {e}"))
}

/// `d` in whole seconds as the engine's clock counts them (`i64`), saturating: a duration past
/// `i64::MAX` seconds (refused at parsing, see `parse_go_duration`) can never wrap to a negative time.
/// The one conversion from a `Duration` to engine seconds: no `as` cast elsewhere.
pub fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(
            parse_go_duration("1h30m").unwrap(),
            Duration::from_secs(5400)
        );
        assert_eq!(
            parse_go_duration("250ms").unwrap(),
            Duration::from_millis(250)
        );
        assert!(parse_go_duration("10").is_err());
        assert!(parse_go_duration("5 minutes").is_err());
    }

    #[test]
    fn seconds_saturate_instead_of_wrapping() {
        assert_eq!(secs(Duration::from_secs(600)), 600);
        assert_eq!(secs(Duration::from_secs(u64::MAX)), i64::MAX);
    }
}
