//! JSON dumps (`kubectl get … -o json`), read without a tree of the whole file: each document's kind is
//! peeked from its text; a `List`'s `items` are visited one at a time, each item's text borrowed from the
//! file (`RawValue`), its kind peeked, and the text read straight into the typed object of that kind.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Deserializer;

use super::{typed, Kind, Objects};
use crate::error::{Error, Result};

/// Why a JSON dump was refused: text that is no JSON at all (it may be YAML in flow style), or an object
/// that is wrong.
#[derive(Debug)]
pub(super) enum Failed {
    Syntax(Error),
    Object(Error),
}

/// What is read of an object before its body: its kind and name.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    metadata: Option<Meta<'a>>,
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

/// Adds the object (or the List's items) whose JSON text is `raw`.
fn add(objects: &mut Objects, raw: &str, at: &str) -> Result<()> {
    if !raw.starts_with('{') {
        return Err(Error::config(format!("{at}: no kind")));
    }
    let head: Head = serde_json::from_str(raw).map_err(|e| Error::config(format!("{at}: {e}")))?;
    let kind = head
        .kind
        .ok_or_else(|| Error::config(format!("{at}: no kind")))?;
    let name = head.metadata.and_then(|m| m.name).unwrap_or_default();
    let at = format!("{at} ({kind} {name})");
    match Kind::of(&kind, &at)? {
        Kind::List => {
            let mut failed = None;
            let read = List {
                objects,
                at: &at,
                failed: &mut failed,
            }
            .deserialize(&mut Deserializer::from_str(raw));
            if let Some(e) = failed {
                return Err(e);
            }
            read.map_err(|e| Error::config(format!("{at}: items is not a list: {e}")))
        }
        kind => typed(
            objects.push(kind, &mut Deserializer::from_str(raw)),
            |track| {
                let again = &mut Deserializer::from_str(raw);
                Objects::default().push(kind, serde_path_to_error::Deserializer::new(again, track))
            },
            &at,
        ),
    }
}

/// A List: its `items` go to `objects` one at a time; the first error is left in `failed`.
struct List<'o, 'a> {
    objects: &'o mut Objects,
    at: &'a str,
    failed: &'a mut Option<Error>,
}

impl<'de> DeserializeSeed<'de> for List<'_, '_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for List<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a List")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut items = Some(self);
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match (key.as_ref(), items.take()) {
                ("items", Some(list)) => map.next_value_seed(Items(list))?,
                (_, list) => {
                    items = list;
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The `items` of a List (null: none).
struct Items<'o, 'a>(List<'o, 'a>);

impl<'de> DeserializeSeed<'de> for Items<'_, '_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Items<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of objects")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let List {
            objects,
            at,
            failed,
        } = self.0;
        let mut i = 0;
        while let Some(item) = seq.next_element::<&'de RawValue>()? {
            if let Err(e) = add(objects, item.get(), &format!("{at} items[{i}]")) {
                *failed = Some(e);
                return Err(serde::de::Error::custom("a bad item"));
            }
            i += 1;
        }
        Ok(())
    }
}

/// Parses every JSON value of `text` as a document; `source` names the file in errors.
pub(super) fn parse(text: &str, source: &str) -> Result<Objects, Failed> {
    let mut objects = Objects::default();
    let documents = Deserializer::from_str(text).into_iter::<&RawValue>();
    for (i, doc) in documents.enumerate() {
        let at = format!("{source}: document {}", i + 1);
        let doc = doc.map_err(|e| Failed::Syntax(Error::config(format!("{at}: {e}"))))?;
        if doc.get() == "null" {
            continue;
        }
        add(&mut objects, doc.get(), &at).map_err(Failed::Object)?;
    }
    Ok(objects)
}
