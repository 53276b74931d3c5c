//! One definition per setting: each command's flags are one struct deriving both clap (the command line)
//! and serde (the `--config` YAML file, camelCase keys). Defaults are written once, in the clap
//! attributes; [`defaults`] parses an empty command line to get them, so tests and the binary agree.
//!
//! [`load`] merges the file under the flags generically: both sides are turned into one flat map of
//! settings, every flag given on the command line replaces the file's value, and the map is read back
//! into the struct. Relative paths in the file are relative to the file ([`relative_to_config`]).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, FromArgMatches};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::{Error, Result};

thread_local! {
    /// The folder of the config file being read, for [`relative_to_config`].
    static CONFIG_DIR: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
}

/// A flags struct's defaults: what an empty command line gives.
pub fn defaults<T: Args + FromArgMatches>() -> T {
    let command = T::augment_args(clap::Command::new("defaults").no_binary_name(true));
    let matches = command
        .try_get_matches_from(std::iter::empty::<String>())
        .expect("every flag has a default");
    T::from_arg_matches(&matches).expect("the defaults parse")
}

/// The settings of a command: `flags` (parsed from `matches`) over the `--config` file, if any.
pub fn load<T>(flags: T, matches: &ArgMatches, config: Option<&Path>) -> Result<T>
where
    T: Serialize + DeserializeOwned + Args,
{
    let Some(path) = config else {
        return Ok(flags);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::config(format!("cannot read --config {}: {e}", path.display())))?;
    let file_error = |e: &dyn std::fmt::Display| Error::config(format!("{}: {e}", path.display()));
    let raw: serde_yaml::Value = serde_yaml::from_str(&text).map_err(|e| file_error(&e))?;
    let known = as_map(&flags).map_err(|e| file_error(&e))?;
    if let serde_yaml::Value::Mapping(m) = &raw {
        for key in m.keys() {
            let key = key.as_str().unwrap_or_default();
            if !known.contains_key(key) {
                let mut names: Vec<&String> = known.keys().collect();
                names.sort();
                return Err(file_error(&format!(
                    "unknown key {key:?} (known: {})",
                    names.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                )));
            }
        }
    }
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    CONFIG_DIR.with(|d| *d.borrow_mut() = Some(dir));
    let from_file: std::result::Result<T, _> = serde_yaml::from_value(raw);
    CONFIG_DIR.with(|d| *d.borrow_mut() = None);
    let from_file = from_file.map_err(|e| file_error(&e))?;
    let mut merged = as_map(&from_file).map_err(|e| file_error(&e))?;
    let given = as_map(&flags).map_err(|e| file_error(&e))?;
    for id in matches.ids() {
        if matches.value_source(id.as_str()) == Some(ValueSource::CommandLine) {
            let key = camel_case(id.as_str());
            if let Some(v) = given.get(&key) {
                merged.insert(key, v.clone());
            }
        }
    }
    serde_json::from_value(serde_json::Value::Object(merged)).map_err(|e| file_error(&e))
}

fn as_map<T: Serialize>(t: &T) -> serde_json::Result<serde_json::Map<String, serde_json::Value>> {
    match serde_json::to_value(t)? {
        serde_json::Value::Object(m) => Ok(m),
        _ => Ok(serde_json::Map::new()),
    }
}

/// clap's argument id (the field name) as the file spells it.
fn camel_case(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    let mut upper = false;
    for c in id.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// A path from the config file, joined to the file's folder when relative (used with
/// `#[serde(deserialize_with = ...)]` on path settings).
pub fn relative_to_config<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<PathBuf>, D::Error> {
    let path: Option<PathBuf> = Option::deserialize(d)?;
    Ok(path.map(|p| {
        CONFIG_DIR.with(|dir| match dir.borrow().as_ref() {
            Some(dir) if p.is_relative() => dir.join(p),
            _ => p,
        })
    }))
}

/// Go durations ("90s", "10m", "1h30m") in files, as on the command line.
pub mod go_duration {
    use super::*;

    /// A duration as Go prints it, exact to the nanosecond (what [`crate::model::parse_go_duration`] reads).
    pub fn format(d: Duration) -> String {
        if d.subsec_nanos() == 0 {
            format!("{}s", d.as_secs())
        } else {
            format!("{}ns", d.as_nanos())
        }
    }

    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&format(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        crate::model::parse_go_duration(&text).map_err(serde::de::Error::custom)
    }

    /// The same for optional durations.
    pub mod option {
        use super::*;

        pub fn serialize<S: serde::Serializer>(
            d: &Option<Duration>,
            s: S,
        ) -> std::result::Result<S::Ok, S::Error> {
            match d {
                Some(d) => s.serialize_some(&format(*d)),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> std::result::Result<Option<Duration>, D::Error> {
            let text: Option<String> = Option::deserialize(d)?;
            text.map(|t| crate::model::parse_go_duration(&t).map_err(serde::de::Error::custom))
                .transpose()
        }
    }
}

/// `MIN:MAX` ranges (`--cores-total`, `--memory-total`), in files as on the command line.
pub mod range {
    use super::*;

    /// Parses `MIN:MAX` with MIN <= MAX.
    pub fn parse(s: &str) -> std::result::Result<(i64, i64), String> {
        let (a, b) = s
            .split_once(':')
            .ok_or_else(|| format!("{s:?}: expected MIN:MAX"))?;
        let n = |x: &str| x.trim().parse::<i64>().map_err(|e| format!("{x:?}: {e}"));
        let (a, b) = (n(a)?, n(b)?);
        if a > b {
            return Err(format!("{s:?}: MIN above MAX"));
        }
        Ok((a, b))
    }

    pub fn serialize<S: serde::Serializer>(
        r: &(i64, i64),
        s: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}:{}", r.0, r.1))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<(i64, i64), D::Error> {
        parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_round_trip_exactly() {
        for d in [
            Duration::ZERO,
            Duration::from_secs(600),
            Duration::from_millis(250),
            Duration::from_nanos(1),
        ] {
            assert_eq!(crate::model::parse_go_duration(&go_duration::format(d)).unwrap(), d);
        }
    }

    #[test]
    fn clap_ids_become_file_keys() {
        assert_eq!(camel_case("scale_down_unneeded_time"), "scaleDownUnneededTime");
        assert_eq!(camel_case("listen"), "listen");
    }
}
