//! The watch's bookkeeping read in passing: a deserializer in front of the real one that copies an
//! object's `metadata.name`, `metadata.namespace` and `metadata.resourceVersion` as they go by while
//! another type reads the object, so a pod read straight into the dump reader's lean type
//! (`watch::converting`) still tells kube's watcher where to resume and the feed its key, with no
//! second parse and no full object.

use std::borrow::Cow;
use std::marker::PhantomData;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};
use serde::{forward_to_deserialize_any, Deserialize};

/// Reads a `T` from `d`, with the name, namespace and resourceVersion of the object's `metadata`
/// (every other field of the metadata left empty).
pub fn read<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    d: D,
) -> Result<(T, ObjectMeta), D::Error> {
    let mut meta = ObjectMeta::default();
    let t = T::deserialize(Tee {
        inner: d,
        meta: &mut meta,
        level: Level::Object,
    })?;
    Ok((t, meta))
}

/// Where the tee is: at the object (watching for `metadata`) or in its metadata.
#[derive(Clone, Copy)]
enum Level {
    Object,
    Metadata,
}

/// The field whose value comes next.
#[derive(Clone, Copy)]
enum Field {
    Metadata,
    Name,
    Namespace,
    ResourceVersion,
    Other,
}

struct Tee<'m, D> {
    inner: D,
    meta: &'m mut ObjectMeta,
    level: Level,
}

impl<'m, D> Tee<'m, D> {
    fn watching<V>(self, visitor: V) -> (D, Watching<'m, V>) {
        let Tee { inner, meta, level } = self;
        (
            inner,
            Watching {
                inner: visitor,
                meta,
                level,
            },
        )
    }
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Tee<'_, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let (inner, v) = self.watching(visitor);
        inner.deserialize_any(v)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let (inner, v) = self.watching(visitor);
        inner.deserialize_option(v)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let (inner, v) = self.watching(visitor);
        inner.deserialize_map(v)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        let (inner, v) = self.watching(visitor);
        inner.deserialize_struct(name, fields, v)
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct newtype_struct seq tuple tuple_struct enum identifier ignored_any
    }
}

/// The reader's visitor, handed the object's fields through [`Fields`].
struct Watching<'m, V> {
    inner: V,
    meta: &'m mut ObjectMeta,
    level: Level,
}

macro_rules! forward_visits {
    ($($method:ident($ty:ty)),*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            self.inner.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Watching<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        self.inner.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(Fields {
            inner: map,
            meta: self.meta,
            level: self.level,
            next: Field::Other,
        })
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(Tee {
            inner: d,
            meta: self.meta,
            level: self.level,
        })
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.inner.visit_seq(seq)
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<V::Value, E> {
        self.inner.visit_borrowed_str(v)
    }

    forward_visits!(
        visit_bool(bool),
        visit_i64(i64),
        visit_u64(u64),
        visit_f64(f64),
        visit_str(&str),
        visit_string(String)
    );
}

/// The object's (or its metadata's) fields, as the reader asks for them.
struct Fields<'m, A> {
    inner: A,
    meta: &'m mut ObjectMeta,
    level: Level,
    next: Field,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Fields<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let Some(Key(key)) = self.inner.next_key::<Key<'de>>()? else {
            return Ok(None);
        };
        self.next = match (self.level, key.as_ref()) {
            (Level::Object, "metadata") => Field::Metadata,
            (Level::Metadata, "name") => Field::Name,
            (Level::Metadata, "namespace") => Field::Namespace,
            (Level::Metadata, "resourceVersion") => Field::ResourceVersion,
            _ => Field::Other,
        };
        seed.deserialize(key.into_deserializer()).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        let slot = match self.next {
            Field::Other => return self.inner.next_value_seed(seed),
            Field::Metadata => {
                return self.inner.next_value_seed(MetadataSeed {
                    inner: seed,
                    meta: &mut *self.meta,
                })
            }
            Field::Name => &mut self.meta.name,
            Field::Namespace => &mut self.meta.namespace,
            Field::ResourceVersion => &mut self.meta.resource_version,
        };
        let value: Option<String> = self.inner.next_value()?;
        slot.clone_from(&value);
        seed.deserialize(Copied(value, PhantomData))
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// A key, borrowed from the text when it can be.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a field name")
            }

            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

/// The metadata's value, read through the tee.
struct MetadataSeed<'m, S> {
    inner: S,
    meta: &'m mut ObjectMeta,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for MetadataSeed<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.inner.deserialize(Tee {
            inner: d,
            meta: self.meta,
            level: Level::Metadata,
        })
    }
}

/// A string field the tee copied, handed on to the reader as it was (a string, or null).
struct Copied<E>(Option<String>, PhantomData<E>);

impl<'de, E: de::Error> Deserializer<'de> for Copied<E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match self.0 {
            Some(s) => visitor.visit_string(s),
            None => visitor.visit_unit(),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match self.0 {
            Some(s) => visitor.visit_some(IntoDeserializer::<E>::into_deserializer(s)),
            None => visitor.visit_none(),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A reader that reads the metadata's name and labels, and skips the rest.
    #[derive(Deserialize, Debug, PartialEq)]
    struct Reader {
        metadata: Option<ReaderMeta>,
        spec: Option<BTreeMap<String, String>>,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    struct ReaderMeta {
        name: Option<String>,
        labels: Option<BTreeMap<String, String>>,
    }

    #[test]
    fn copies_the_bookkeeping_while_the_reader_reads_what_it_reads() {
        let text = r#"{"kind":"Pod","metadata":{"name":"web-1","namespace":"shop",
            "labels":{"name":"not-the-name","resourceVersion":"no"},"resourceVersion":"42",
            "managedFields":[{"manager":"x"}]},"spec":{"nodeName":"n1"}}"#;
        let (r, meta) = read::<Reader, _>(&mut serde_json::Deserializer::from_str(text)).unwrap();
        assert_eq!(meta.name.as_deref(), Some("web-1"));
        assert_eq!(meta.namespace.as_deref(), Some("shop"));
        assert_eq!(meta.resource_version.as_deref(), Some("42"));
        let m = r.metadata.unwrap();
        assert_eq!(m.name.as_deref(), Some("web-1"));
        assert_eq!(m.labels.unwrap()["name"], "not-the-name");
        assert_eq!(r.spec.unwrap()["nodeName"], "n1");
    }

    #[test]
    fn reads_through_a_buffered_object_and_null_fields() {
        // serde buffers an adjacently tagged watch event's object when `object` comes before `type`.
        let value = serde_json::json!({"metadata": {"name": null, "resourceVersion": "7"}});
        let (r, meta) = read::<Reader, _>(value).unwrap();
        assert_eq!(meta.resource_version.as_deref(), Some("7"));
        assert_eq!(meta.name, None);
        assert_eq!(r.metadata.unwrap().name, None);
    }

    #[test]
    fn a_bad_bookkeeping_field_is_an_error_not_a_panic() {
        let text = r#"{"metadata":{"name":3}}"#;
        let e = read::<Reader, _>(&mut serde_json::Deserializer::from_str(text)).unwrap_err();
        assert!(e.to_string().contains("invalid type: integer `3`"), "{e}");
    }
}
