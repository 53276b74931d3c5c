//! Values of flags that read and print the way upstream cluster-autoscaler's do, the same on the command
//! line, in `--help` and in `--config` files.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::engine::limits::GpuLimit;

/// A Go duration: `90s`, `10m`, `1h30m`, `250ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct GoDuration(pub Duration);

impl FromStr for GoDuration {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        crate::model::parse_go_duration(s).map(GoDuration)
    }
}

impl fmt::Display for GoDuration {
    /// The shortest exact form in one unit (`10m`, `90s`, `250ms`), as Go flags show defaults.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.as_nanos();
        for (unit, per) in [
            ("h", 3_600_000_000_000u128),
            ("m", 60_000_000_000),
            ("s", 1_000_000_000),
            ("ms", 1_000_000),
            ("us", 1_000),
        ] {
            if n > 0 && n.is_multiple_of(per) {
                return write!(f, "{}{unit}", n / per);
            }
        }
        if n == 0 {
            write!(f, "0s")
        } else {
            write!(f, "{n}ns")
        }
    }
}

impl Serialize for GoDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for GoDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// A `MIN:MAX` range (`--cores-total`, `--memory-total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range(pub i64, pub i64);

impl FromStr for Range {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (a, b) = s
            .split_once(':')
            .ok_or_else(|| format!("{s:?}: expected MIN:MAX"))?;
        let n = |x: &str| x.trim().parse::<i64>().map_err(|e| format!("{x:?}: {e}"));
        let (a, b) = (n(a)?, n(b)?);
        if a > b {
            return Err(format!("{s:?}: MIN above MAX"));
        }
        Ok(Range(a, b))
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.0, self.1)
    }
}

impl Serialize for Range {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Range {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// One `--gpu-total` value, `<gpu_type>:<min>:<max>`, parsed as upstream's `parseSingleGpuLimit`:
/// exactly three parts, whole numbers, neither below 0, min not above max. The type is the value of the
/// nodes' GPU label (`k8s.amazonaws.com/accelerator`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuTotal(pub GpuLimit);

impl FromStr for GpuTotal {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let parts: Vec<&str> = s.split(':').collect();
        let [gpu_type, min, max] = parts[..] else {
            return Err(format!("{s:?}: expected <gpu_type>:<min>:<max>"));
        };
        let n = |x: &str, what: &str| {
            x.parse::<i64>()
                .map_err(|e| format!("{s:?}: {what} {x:?} is not an integer ({e})"))
        };
        let (min, max) = (n(min, "min")?, n(max, "max")?);
        if min < 0 || max < 0 {
            return Err(format!("{s:?}: below 0"));
        }
        if min > max {
            return Err(format!("{s:?}: min above max"));
        }
        Ok(GpuTotal(GpuLimit {
            gpu_type: gpu_type.to_string(),
            min,
            max,
        }))
    }
}

impl fmt::Display for GpuTotal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.0.gpu_type, self.0.min, self.0.max)
    }
}

impl Serialize for GpuTotal {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for GpuTotal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_go_flags_show_them_and_read_back() {
        for (d, text) in [
            (Duration::from_secs(600), "10m"),
            (Duration::from_secs(90), "90s"),
            (Duration::from_secs(5400), "90m"),
            (Duration::from_millis(250), "250ms"),
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(7), "7ns"),
        ] {
            assert_eq!(GoDuration(d).to_string(), text);
            assert_eq!(text.parse::<GoDuration>().unwrap(), GoDuration(d));
        }
    }

    #[test]
    fn gpu_totals_as_upstream_parses_them() {
        let t4: GpuTotal = "nvidia-tesla-t4:1:10".parse().unwrap();
        assert_eq!(
            t4.0,
            GpuLimit {
                gpu_type: "nvidia-tesla-t4".into(),
                min: 1,
                max: 10
            }
        );
        assert_eq!(t4.to_string(), "nvidia-tesla-t4:1:10");
        for bad in [
            "gpu:1",
            "gpu:1:10:x",
            "gpu:x:10",
            "gpu:1:y",
            "gpu:-1:10",
            "gpu:1:-10",
            "gpu:10:1",
        ] {
            assert!(bad.parse::<GpuTotal>().is_err(), "{bad}");
        }
    }

    #[test]
    fn ranges() {
        assert_eq!("0:320000".parse::<Range>().unwrap(), Range(0, 320_000));
        assert!("5:1".parse::<Range>().is_err());
        assert_eq!(Range(0, 10).to_string(), "0:10");
    }
}
