//! YAML dumps, through `serde_norway` (the maintained fork of `serde_yaml` 0.9, same parser and errors):
//! each document becomes a YAML value, then the typed object of its kind.

use serde::Deserialize;
use serde_norway::Value;

use super::{typed, Kind, Object, Sink};
use crate::error::{Error, Result};

fn add<S: Sink>(objects: &mut S, mut value: Value, at: &str) -> Result<()> {
    let kind = value
        .get("kind")
        .and_then(|k| k.as_str())
        .ok_or_else(|| Error::config(format!("{at}: no kind")))?
        .to_string();
    let name = value
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(|n| n.as_str())
        .unwrap_or("")
        .to_string();
    let at = format!("{at} ({kind} {name})");
    match Kind::of(&kind, &at)? {
        Kind::List => {
            // The items are taken out of the List, not copied.
            let items = value.as_mapping_mut().and_then(|m| m.remove("items"));
            let items = match items {
                Some(Value::Sequence(items)) => items,
                None | Some(Value::Null) => vec![],
                Some(_) => return Err(Error::config(format!("{at}: items is not a list"))),
            };
            for (i, item) in items.into_iter().enumerate() {
                add(objects, item, &format!("{at} items[{i}]"))?;
            }
            Ok(())
        }
        kind => objects.add(typed(
            Object::read(kind, &value),
            |track| {
                Object::read(kind, serde_path_to_error::Deserializer::new(&value, track)).map(drop)
            },
            &at,
        )?),
    }
}

/// Parses every document of `text`; `source` names the file in errors.
pub(super) fn parse<S: Sink>(text: &str, source: &str) -> Result<S> {
    let mut objects = S::default();
    for (i, doc) in serde_norway::Deserializer::from_str(text).enumerate() {
        let value = Value::deserialize(doc)
            .map_err(|e| Error::config(format!("{source}: document {}: {e}", i + 1)))?;
        if value.is_null() {
            continue;
        }
        add(
            &mut objects,
            value,
            &format!("{source}: document {}", i + 1),
        )?;
    }
    Ok(objects)
}
