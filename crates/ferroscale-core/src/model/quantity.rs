//! Kubernetes resource quantities ("3920m", "16Gi", "1.5", "2e3"): parsing into integers and canonical
//! formatting, so the model can do exact arithmetic on cpu millicores and memory bytes.

use thiserror::Error;

/// A quantity string that is not a valid Kubernetes quantity.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid quantity {input:?}: {why}")]
pub struct QuantityError {
    /// The text that failed to parse.
    pub input: String,
    /// What is wrong with it.
    pub why: &'static str,
}

const KI: i128 = 1 << 10;

/// Parses a quantity into thousandths of its unit (so "250m" → 250, "2" → 2000, "1Ki" → 1_024_000),
/// rounding up as Kubernetes does when a value has more precision than a milli-unit.
pub fn parse_milli(input: &str) -> Result<i128, QuantityError> {
    let err = |why| QuantityError {
        input: input.to_string(),
        why,
    };
    let s = input.trim();
    if s.is_empty() {
        return Err(err("empty"));
    }
    let (negative, s) = match s.as_bytes()[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let num_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(num_end);
    if number.is_empty() || number == "." || number.matches('.').count() > 1 {
        return Err(err("no number"));
    }
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    // Scale: value = digits × 10^exp10 × 2^exp2, then × 1000 for milli-units.
    let (exp10, exp2): (i32, u32) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        s if s.starts_with(['e', 'E']) => {
            let e: i32 = s[1..].parse().map_err(|_| err("bad exponent"))?;
            if !(-30..=30).contains(&e) {
                return Err(err("exponent out of range"));
            }
            (e, 0)
        }
        _ => return Err(err("unknown suffix")),
    };
    if int_part.len() + frac_part.len() > 30 {
        return Err(err("too many digits"));
    }
    let digits: i128 = format!("{int_part}{frac_part}")
        .parse()
        .map_err(|_| err("no number"))?;
    // milli-value = digits × 10^(exp10 + 3 − frac_len) × 2^exp2
    let frac_len = i32::try_from(frac_part.len()).map_err(|_| err("too many digits"))?;
    let mut scale10 = exp10 + 3 - frac_len;
    let mut value = digits
        .checked_mul(1i128 << exp2)
        .ok_or_else(|| err("too large"))?;
    while scale10 > 0 {
        value = value.checked_mul(10).ok_or_else(|| err("too large"))?;
        scale10 -= 1;
    }
    while scale10 < 0 {
        let rem = value % 10;
        value = value / 10 + i128::from(rem != 0);
        scale10 += 1;
    }
    if value > i128::from(i64::MAX) * 1000 {
        return Err(err("too large"));
    }
    Ok(if negative { -value } else { value })
}

/// Parses a cpu quantity into millicores; above `i64::MAX` millicores (about 9.2e15 cores) it is an
/// error, never a wrapped (negative) count.
pub fn parse_cpu_milli(input: &str) -> Result<i64, QuantityError> {
    i64::try_from(parse_milli(input)?).map_err(|_| QuantityError {
        input: input.to_string(),
        why: "too large",
    })
}

/// Parses a count-like quantity (memory bytes, pods, GPUs) into whole units, rounding up; above
/// `i64::MAX` units it is an error, never a wrapped (negative) count.
pub fn parse_units(input: &str) -> Result<i64, QuantityError> {
    let milli = parse_milli(input)?;
    let units = milli.div_euclid(1000) + i128::from(milli.rem_euclid(1000) != 0);
    i64::try_from(units).map_err(|_| QuantityError {
        input: input.to_string(),
        why: "too large",
    })
}

/// Formats millicores the way kubectl shows them: "4" for whole cores, "3920m" otherwise.
pub fn format_cpu_milli(milli: i64) -> String {
    if milli % 1000 == 0 {
        (milli / 1000).to_string()
    } else {
        format!("{milli}m")
    }
}

/// Formats bytes with the largest binary suffix that divides them exactly ("16Gi", "15616Mi", "1000").
pub fn format_bytes(bytes: i64) -> String {
    const SUFFIXES: [(&str, i128); 5] = [
        ("Pi", KI.pow(5)),
        ("Ti", KI.pow(4)),
        ("Gi", KI.pow(3)),
        ("Mi", KI.pow(2)),
        ("Ki", KI),
    ];
    let b = i128::from(bytes);
    if b != 0 {
        for (suffix, unit) in SUFFIXES {
            if b % unit == 0 {
                return format!("{}{suffix}", b / unit);
            }
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_forms_kubernetes_accepts() {
        assert_eq!(parse_cpu_milli("3920m").unwrap(), 3920);
        assert_eq!(parse_cpu_milli("4").unwrap(), 4000);
        assert_eq!(parse_cpu_milli("0.5").unwrap(), 500);
        assert_eq!(parse_cpu_milli("1.0005").unwrap(), 1001, "rounds up");
        assert_eq!(parse_units("16Gi").unwrap(), 16 << 30);
        assert_eq!(parse_units("1.5Gi").unwrap(), 3 << 29);
        assert_eq!(parse_units("2e3").unwrap(), 2000);
        assert_eq!(parse_units("128974848").unwrap(), 128_974_848);
        assert_eq!(parse_units("129M").unwrap(), 129_000_000);
        assert_eq!(parse_units("100m").unwrap(), 1, "fractional bytes round up");
        // The API server writes these too (metrics, some operators' requests).
        assert_eq!(parse_cpu_milli("250000000n").unwrap(), 250);
        assert_eq!(
            parse_cpu_milli("1500u").unwrap(),
            2,
            "rounds up to a millicore"
        );
        assert_eq!(parse_cpu_milli("1n").unwrap(), 1);
        assert_eq!(parse_units("1.5e3").unwrap(), 1500);
        assert_eq!(parse_units("3E").unwrap(), 3_000_000_000_000_000_000);
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "Gi", "1.2.3", "12Q", "1e99", "--1", "."] {
            assert!(parse_milli(bad).is_err(), "{bad:?} must be rejected");
        }
    }

    #[test]
    fn too_large_is_an_error_not_a_negative_count() {
        // i64::MAX millicores is about 9.22e15 cores: one more core wraps without a checked conversion.
        assert_eq!(
            parse_cpu_milli("9223372036854775").unwrap(),
            9_223_372_036_854_775_000
        );
        for big in ["9223372036854776", "1e16", "10P", "9Ei", "1e18"] {
            let err = parse_cpu_milli(big).unwrap_err();
            assert_eq!(err.why, "too large", "{big}");
        }
        assert_eq!(parse_units("9223372036854775807").unwrap(), i64::MAX);
        for big in [
            "9223372036854775808",
            "8Ei",
            "1e19",
            "9223372036854775807.5",
        ] {
            assert_eq!(parse_units(big).unwrap_err().why, "too large", "{big}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Any text: an error or a value, never a panic; a positive quantity never a negative count.
        #[test]
        fn parsing_never_panics_and_never_wraps_negative(
            s in "[-+]?[0-9]{0,25}(\\.[0-9]{0,12})?([numkMGTPE]|[KMGTPE]i|[eE][-+]?[0-9]{1,3})?|.*"
        ) {
            let positive = !s.trim().starts_with('-');
            if let Ok(m) = parse_milli(&s) {
                proptest::prop_assert!(!positive || m >= 0, "{s:?} -> {m}");
            }
            if let Ok(c) = parse_cpu_milli(&s) {
                proptest::prop_assert!(!positive || c >= 0, "{s:?} -> {c}");
            }
            if let Ok(u) = parse_units(&s) {
                proptest::prop_assert!(!positive || u >= 0, "{s:?} -> {u}");
            }
        }
    }

    #[test]
    fn formats_round_trip() {
        assert_eq!(format_cpu_milli(3920), "3920m");
        assert_eq!(format_cpu_milli(4000), "4");
        assert_eq!(format_bytes(16 << 30), "16Gi");
        assert_eq!(format_bytes(15616 << 20), "15616Mi");
        assert_eq!(format_bytes(1000), "1000");
        for b in [0i64, 1, 1023, 1 << 20, 3 << 29, 987_654_321] {
            assert_eq!(parse_units(&format_bytes(b)).unwrap(), b);
        }
    }
}
