//! JSON dumps (`kubectl get … -o json`), read without a tree of the whole file: each document's kind is
//! peeked from its text; a `List`'s `items` are visited one at a time, each item's text borrowed from the
//! file (`RawValue`), its kind peeked (the head only: the peek stops once `kind` and `metadata` are
//! read), and the text read straight into the typed object of that kind, handed to the sink. A List's
//! `items` are taken (as text) in the same pass that finds its kind.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Deserializer;

use super::{typed, Kind, Object, Sink};
use crate::error::{Error, Result};

/// Why a JSON dump was refused: text that is no JSON at all (it may be YAML in flow style), or an object
/// that is wrong.
#[derive(Debug)]
pub(super) enum Failed {
    Syntax(Error),
    Object(Error),
}

/// What is read of an object before its body: its kind and name; for a List, its items' text.
#[derive(Default)]
struct Head<'a> {
    kind: Option<Cow<'a, str>>,
    kind_read: bool,
    metadata: Option<Meta<'a>>,
    metadata_read: bool,
    items: Option<&'a RawValue>,
}

impl Head<'_> {
    /// Whether all of the head is read: kind and metadata, and for a List (`kind` after `items`, as
    /// kubectl writes it) the items too.
    fn done(&self) -> bool {
        self.kind_read
            && self.metadata_read
            && !self.kind.as_deref().is_some_and(|k| k.ends_with("List"))
    }
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

/// A string borrowed from the text where it has no escapes.
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// What the head's reader stops on once it has read both `kind` and `metadata` of an object that is no
/// List (the rest of the object is left to the typed read).
const HEAD_READ: &str = "the head is read";

impl<'de> Visitor<'de> for &mut Head<'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            match key.as_ref() {
                "kind" => {
                    self.kind = map.next_value::<Option<Text<'de>>>()?.map(|t| t.0);
                    self.kind_read = true;
                }
                "metadata" => {
                    self.metadata = map.next_value()?;
                    self.metadata_read = true;
                }
                "items" if self.items.is_none() => {
                    self.items = Some(map.next_value()?);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            if self.done() {
                return Err(serde::de::Error::custom(HEAD_READ));
            }
        }
        Ok(())
    }
}

/// The kind and name of the object whose text is `raw`, read from its start only.
fn head<'a>(raw: &'a str, at: &str) -> Result<Head<'a>> {
    let mut head = Head::default();
    let read = serde::Deserializer::deserialize_map(&mut Deserializer::from_str(raw), &mut head);
    match read {
        Err(_) if head.done() => Ok(head),
        Err(e) => Err(Error::config(format!("{at}: {e}"))),
        Ok(()) => Ok(head),
    }
}

/// Adds to `sink` the object (or the List's items) whose JSON text is `raw`.
fn add<S: Sink>(sink: &mut S, raw: &str, at: &str) -> Result<()> {
    if !raw.starts_with('{') {
        return Err(Error::config(format!("{at}: no kind")));
    }
    let head = head(raw, at)?;
    let kind = head
        .kind
        .ok_or_else(|| Error::config(format!("{at}: no kind")))?;
    let name = head.metadata.and_then(|m| m.name).unwrap_or_default();
    let at = format!("{at} ({kind} {name})");
    match Kind::of(&kind, &at)? {
        Kind::List => {
            let Some(items) = head.items else {
                return Ok(());
            };
            let mut failed = None;
            let read = Items(List {
                sink,
                at: &at,
                failed: &mut failed,
            })
            .deserialize(&mut Deserializer::from_str(items.get()));
            if let Some(e) = failed {
                return Err(e);
            }
            read.map_err(|e| Error::config(format!("{at}: items is not a list: {e}")))
        }
        kind => sink.add(typed(
            Object::read(kind, &mut Deserializer::from_str(raw)),
            |track| {
                let again = &mut Deserializer::from_str(raw);
                Object::read(kind, serde_path_to_error::Deserializer::new(again, track)).map(drop)
            },
            &at,
        )?),
    }
}

/// A List's items go to `sink` one at a time; the first error is left in `failed`.
struct List<'o, 'a, S> {
    sink: &'o mut S,
    at: &'a str,
    failed: &'a mut Option<Error>,
}

/// The `items` of a List (null: none).
struct Items<'o, 'a, S>(List<'o, 'a, S>);

impl<'de, S: Sink> DeserializeSeed<'de> for Items<'_, '_, S> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de, S: Sink> Visitor<'de> for Items<'_, '_, S> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of objects")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let List { sink, at, failed } = self.0;
        let mut i = 0;
        while let Some(item) = seq.next_element::<&'de RawValue>()? {
            if let Err(e) = add(sink, item.get(), &format!("{at} items[{i}]")) {
                *failed = Some(e);
                return Err(serde::de::Error::custom("a bad item"));
            }
            i += 1;
        }
        Ok(())
    }
}

/// Parses every JSON value of `text` as a document; `source` names the file in errors.
pub(super) fn parse<S: Sink>(text: &str, source: &str) -> Result<S, Failed> {
    let mut objects = S::default();
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
