//! The fast read of a JSON dump: one pass over the text. Each document, and each item of a List, is read
//! by a visitor that learns the object's kind from its `kind` key (the keys before it, `apiVersion` as
//! kubectl writes them, are kept as borrowed text and replayed) and hands the rest of the object, as it
//! is parsed, to the reader of that kind: pods and nodes through their lean types ([`super::lean`]), the
//! other kinds through `k8s-openapi`'s. Each object goes to the sink at once; a List's items are read
//! where they stand, never scanned first.
//!
//! This read names nothing in errors: on any failure (a syntax error, an object that does not read or
//! convert, a shape it does not take) the caller reads the dump again the exact way (`json`, `yaml`),
//! whose error is the one given.

use std::borrow::Cow;
use std::fmt;

use serde::de::value::{BorrowedStrDeserializer, MapAccessDeserializer, StringDeserializer};
use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::convert::Converting;
use super::{lean, Kind, Object, Sink};

/// A key of an object, borrowed from the text where it has no escapes.
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// Converts every document of `text` (which starts with `{`) in one pass; None when anything fails.
pub(super) fn read(text: &str) -> Option<Converting> {
    let mut sink = Converting::default();
    let mut de = serde_json::Deserializer::from_str(text);
    loop {
        Read(&mut sink).deserialize(&mut de).ok()?;
        if de.end().is_ok() {
            return Some(sink);
        }
    }
}

/// The objects of one document or List item, read (not yet converted): what the chunked read
/// (`chunks`) parses of its buffer at a time.
pub(super) struct Batch(pub(super) Vec<Object>);

impl<'de> Deserialize<'de> for Batch {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Batch, D::Error> {
        let mut objects = Vec::new();
        Read(&mut objects).deserialize(de)?;
        Ok(Batch(objects))
    }
}

impl Sink for Vec<Object> {
    fn add(&mut self, object: Object) -> crate::error::Result<()> {
        self.push(object);
        Ok(())
    }
}

/// Reads one object (or List) and adds it to the sink.
struct Read<'s, S>(&'s mut S);

impl<'de, S: Sink> DeserializeSeed<'de> for Read<'_, S> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de, S: Sink> Visitor<'de> for Read<'_, S> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let sink = self.0;
        // Keys met before `kind`, with their values' text.
        let mut before: Vec<(Cow<'de, str>, &'de RawValue)> = Vec::new();
        let mut list = false;
        let mut items_read = false;
        while let Some(Text(key)) = map.next_key()? {
            match key.as_ref() {
                "kind" if !list => {
                    let Text(kind) = map.next_value()?;
                    let kind = Kind::of(&kind, "").map_err(A::Error::custom)?;
                    if kind == Kind::List {
                        list = true;
                        continue;
                    }
                    if items_read {
                        return Err(A::Error::custom("items in an object that is no List"));
                    }
                    let rest = Replay {
                        before: before.into_iter(),
                        value: None,
                        map,
                    };
                    return add(sink, kind, MapAccessDeserializer::new(rest));
                }
                // kubectl writes a List's items before its kind.
                "items" if !items_read => {
                    map.next_value_seed(Items(&mut *sink))?;
                    items_read = true;
                }
                _ if list => {
                    map.next_value::<IgnoredAny>()?;
                }
                _ => before.push((key, map.next_value()?)),
            }
        }
        if list {
            Ok(())
        } else {
            Err(A::Error::custom("no kind"))
        }
    }
}

/// Reads the object of `kind` from `de` (its keys after `kind`) into `sink`.
fn add<'de, S: Sink, D: serde::Deserializer<'de>>(
    sink: &mut S,
    kind: Kind,
    de: D,
) -> Result<(), D::Error> {
    let v1 = |v: &Option<String>| match v.as_deref() {
        None | Some("v1") => Ok(()),
        Some(other) => Err(D::Error::custom(format!("apiVersion {other}"))),
    };
    let object = match kind {
        Kind::Pod => {
            let p = lean::Pod::deserialize(de)?;
            v1(&p.api_version)?;
            Object::Pod(Box::new(p.into_core()))
        }
        Kind::Node => {
            let n = lean::Node::deserialize(de)?;
            v1(&n.api_version)?;
            Object::Node(Box::new(n.into_core()))
        }
        kind => Object::read(kind, de)?,
    };
    sink.add(object).map_err(D::Error::custom)
}

/// A List's items (null: none), each read into the sink where it stands.
struct Items<'s, S>(&'s mut S);

impl<'de, S: Sink> DeserializeSeed<'de> for Items<'_, S> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de, S: Sink> Visitor<'de> for Items<'_, S> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of objects")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Read(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

/// An object's entries: first those read before its kind (from their text), then the rest of `map`.
struct Replay<'de, A> {
    before: std::vec::IntoIter<(Cow<'de, str>, &'de RawValue)>,
    /// The text of the value of the key just replayed.
    value: Option<&'de RawValue>,
    map: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Replay<'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let Some((key, value)) = self.before.next() else {
            return self.map.next_key_seed(seed);
        };
        self.value = Some(value);
        match key {
            Cow::Borrowed(k) => seed.deserialize(BorrowedStrDeserializer::new(k)),
            Cow::Owned(k) => seed.deserialize(StringDeserializer::new(k)),
        }
        .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match self.value.take() {
            Some(raw) => seed
                .deserialize(&mut serde_json::Deserializer::from_str(raw.get()))
                .map_err(A::Error::custom),
            None => self.map.next_value_seed(seed),
        }
    }
}
