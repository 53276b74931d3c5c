//! One definition per setting: each command's flags are one struct deriving both clap (the command line)
//! and serde (the `--config` YAML file, camelCase keys). Defaults are written once, in the clap
//! attributes; [`defaults`] parses an empty command line to get them, so tests and the binary agree.
//!
//! [`load`] merges the file under the flags generically: both sides are turned into one flat map of
//! settings, every flag given on the command line replaces the file's value, and the map is read back
//! into the struct. Relative paths in the file are relative to the file ([`relative_to_config`]).

use std::cell::RefCell;
use std::path::{Path, PathBuf};

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
    let text = crate::input::read_file(path, &crate::input::CONFIG, "--config")?;
    let file_error = |e: &dyn std::fmt::Display| Error::config(format!("{}: {e}", path.display()));
    crate::input::CONFIG
        .check_yaml(&text)
        .map_err(|e| file_error(&e))?;
    let raw: serde_norway::Value = serde_norway::from_str(&text).map_err(|e| file_error(&e))?;
    let known = as_map(&flags).map_err(|e| file_error(&e))?;
    if let serde_norway::Value::Mapping(m) = &raw {
        for key in m.keys() {
            let key = key.as_str().unwrap_or_default();
            if !known.contains_key(key) {
                let mut names: Vec<&String> = known.keys().collect();
                names.sort();
                return Err(file_error(&format!(
                    "unknown key {key:?} (known: {})",
                    names
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
    }
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    CONFIG_DIR.with(|d| *d.borrow_mut() = Some(dir));
    let from_file: std::result::Result<T, _> = serde_norway::from_value(raw.clone());
    let from_file = from_file.map_err(|e| match culprit::<T>(&raw) {
        Some(key) => file_error(&format!("{key}: {e}")),
        None => file_error(&e),
    });
    CONFIG_DIR.with(|d| *d.borrow_mut() = None);
    let from_file = from_file?;
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

/// The first key of the file whose value alone does not read: the decoder's error does not say which
/// (a value of a flattened group, `maxNodeProvisionTime: 10000000000000000000s`, loses its path).
fn culprit<T: DeserializeOwned>(raw: &serde_norway::Value) -> Option<String> {
    let serde_norway::Value::Mapping(m) = raw else {
        return None;
    };
    m.iter().find_map(|(k, v)| {
        let mut one = serde_norway::Mapping::new();
        one.insert(k.clone(), v.clone());
        let alone = serde_norway::from_value::<T>(serde_norway::Value::Mapping(one));
        alone.is_err().then(|| k.as_str().map(str::to_string))?
    })
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

/// A setting written as a count or a text (`maxInterruptionsPerMinute: 50` or `"10%"`), read as the
/// text the flag takes: YAML reads `50` as a number, which a string field would refuse.
pub fn count_or_text<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum CountOrText {
        Count(u64),
        Text(String),
    }
    Ok(match CountOrText::deserialize(d)? {
        CountOrText::Count(n) => n.to_string(),
        CountOrText::Text(t) => t,
    })
}

/// A path from the config file, joined to the file's folder when relative (used with
/// `#[serde(deserialize_with = ...)]` on path settings).
pub fn relative_to_config<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<PathBuf>, D::Error> {
    let path: Option<PathBuf> = Option::deserialize(d)?;
    Ok(path.map(|p| {
        CONFIG_DIR.with(|dir| match dir.borrow().as_ref() {
            Some(dir) if p.is_relative() => dir.join(p),
            _ => p,
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_ids_become_file_keys() {
        assert_eq!(
            camel_case("scale_down_unneeded_time"),
            "scaleDownUnneededTime"
        );
        assert_eq!(camel_case("listen"), "listen");
    }
}
