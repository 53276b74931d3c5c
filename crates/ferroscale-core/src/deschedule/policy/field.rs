//! A value of the policy file with the path that names it (`profiles[0].pluginConfig[1].args`), so
//! every refusal says which field it is about.

use serde_norway::{Mapping, Value};

use super::error::PolicyError;

/// A value of the policy file and where it is.
#[derive(Clone)]
pub(crate) struct Field<'a> {
    pub value: &'a Value,
    pub path: String,
}

/// The null a missing field reads as.
pub(crate) static NULL: Value = Value::Null;

impl<'a> Field<'a> {
    pub fn new(value: &'a Value, path: impl Into<String>) -> Self {
        Field {
            value,
            path: path.into(),
        }
    }

    /// A refusal of this field.
    pub fn err(&self, why: impl Into<String>) -> PolicyError {
        PolicyError::field(&self.path, why)
    }

    /// Whether the field is absent (null, as Kubernetes' decoder reads it).
    pub fn is_null(&self) -> bool {
        self.value.is_null()
    }

    /// The path of a sub-field.
    pub fn sub(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// A mapping whose keys are all among `known` (null reads as empty); any other key is refused,
    /// naming it.
    pub fn object(&self, known: &[&str]) -> Result<Object<'a>, PolicyError> {
        static EMPTY: std::sync::OnceLock<Mapping> = std::sync::OnceLock::new();
        let map = match self.value {
            Value::Null => EMPTY.get_or_init(Mapping::new),
            Value::Mapping(m) => m,
            other => return Err(self.err(format!("want a mapping, got {}", kind(other)))),
        };
        for key in map.keys() {
            let Some(key) = key.as_str() else {
                return Err(self.err(format!("a key is not a string ({})", kind(key))));
            };
            if !known.contains(&key) {
                return Err(PolicyError::field(
                    self.sub(key),
                    format!("unknown field (known: {})", known.join(", ")),
                ));
            }
        }
        Ok(Object {
            map,
            path: self.path.clone(),
        })
    }

    /// The entries of a mapping of any keys (null reads as empty), each keyed by its string.
    pub fn entries(&self) -> Result<Vec<(&'a str, Field<'a>)>, PolicyError> {
        match self.value {
            Value::Null => Ok(Vec::new()),
            Value::Mapping(m) => m
                .iter()
                .map(|(k, v)| {
                    let k = k
                        .as_str()
                        .ok_or_else(|| self.err(format!("a key is not a string ({})", kind(k))))?;
                    Ok((k, Field::new(v, self.sub(k))))
                })
                .collect(),
            other => Err(self.err(format!("want a mapping, got {}", kind(other)))),
        }
    }

    /// The items of a sequence (null reads as empty).
    pub fn items(&self) -> Result<Vec<Field<'a>>, PolicyError> {
        match self.value {
            Value::Null => Ok(Vec::new()),
            Value::Sequence(s) => Ok(s
                .iter()
                .enumerate()
                .map(|(i, v)| Field::new(v, format!("{}[{i}]", self.path)))
                .collect()),
            other => Err(self.err(format!("want a list, got {}", kind(other)))),
        }
    }

    pub fn string(&self) -> Result<&'a str, PolicyError> {
        self.value
            .as_str()
            .ok_or_else(|| self.err(format!("want a string, got {}", kind(self.value))))
    }

    /// A list of strings (null reads as empty).
    pub fn strings(&self) -> Result<Vec<&'a str>, PolicyError> {
        self.items()?.iter().map(|f| f.string()).collect()
    }

    pub fn boolean(&self) -> Result<bool, PolicyError> {
        self.value
            .as_bool()
            .ok_or_else(|| self.err(format!("want true or false, got {}", kind(self.value))))
    }

    /// An integer in `lo..=hi`.
    pub fn int(&self, lo: i64, hi: i64) -> Result<i64, PolicyError> {
        let n = match self.value {
            Value::Number(n) => n.as_i64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                    .map(|f| f as i64)
            }),
            _ => None,
        };
        let n = match (n, self.value.as_u64()) {
            (Some(n), _) => n,
            (None, Some(_)) => return Err(self.err(format!("must be at most {hi}"))),
            (None, None) => {
                return Err(self.err(format!("want an integer, got {}", kind(self.value))))
            }
        };
        if n < lo {
            return Err(self.err(if lo == 0 {
                "must not be negative".to_string()
            } else {
                format!("must be at least {lo}")
            }));
        }
        if n > hi {
            return Err(self.err(format!("must be at most {hi}")));
        }
        Ok(n)
    }

    /// A number (integer or not).
    pub fn number(&self) -> Result<f64, PolicyError> {
        self.value
            .as_f64()
            .filter(|f| f.is_finite())
            .ok_or_else(|| self.err(format!("want a number, got {}", kind(self.value))))
    }
}

/// A checked mapping: its fields by name.
pub(crate) struct Object<'a> {
    map: &'a Mapping,
    path: String,
}

impl<'a> Object<'a> {
    /// The field, null when absent.
    pub fn get(&self, key: &str) -> Field<'a> {
        let value = self.map.get(key).unwrap_or(&NULL);
        let path = if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        };
        Field::new(value, path)
    }

    /// Whether the key is written (null or not).
    pub fn map_has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    /// The field when present and not null.
    pub fn opt(&self, key: &str) -> Option<Field<'a>> {
        let f = self.get(key);
        (!f.is_null()).then_some(f)
    }
}

/// What a value is, for messages.
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// The args without their type fields and nulls (which Kubernetes reads as absent).
pub(crate) fn cleaned(v: &Value) -> Mapping {
    let mut out = v.as_mapping().cloned().unwrap_or_default();
    out.retain(|k, _| k.as_str() != Some("apiVersion") && k.as_str() != Some("kind"));
    drop_nulls(&mut out);
    out
}

/// Removes null fields at every depth: Kubernetes reads `include: null` as no `include`.
fn drop_nulls(m: &mut Mapping) {
    m.retain(|_, v| !v.is_null());
    for v in m.values_mut() {
        match v {
            Value::Mapping(inner) => drop_nulls(inner),
            Value::Sequence(items) => items
                .iter_mut()
                .filter_map(Value::as_mapping_mut)
                .for_each(drop_nulls),
            _ => {}
        }
    }
}

/// Sets `key` unless given.
pub(crate) fn default(out: &mut Mapping, key: &str, value: Value) {
    if !out.contains_key(key) {
        out.insert(key.into(), value);
    }
}
