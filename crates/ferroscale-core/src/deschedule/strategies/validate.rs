//! The checks the descheduler's `Validate…Args` functions share: `namespaces` and `labelSelector`
//! (as `metav1.LabelSelectorAsSelector` checks a selector: qualified-name keys, label values, values
//! present for `In`/`NotIn` and absent for `Exists`/`DoesNotExist`).

use serde::Deserialize;

use crate::deschedule::args::{Namespaces, Selector};

/// Every problem found, joined (the descheduler aggregates them too); none: Ok.
pub fn joined(problems: Vec<String>) -> Result<(), String> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// The problems of `namespaces` and `labelSelector`.
pub fn scope_problems(namespaces: &Option<Namespaces>, selector: &Option<Selector>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(n) = namespaces {
        if !n.include.is_empty() && !n.exclude.is_empty() {
            out.push("namespaces: only one of include and exclude may be set".to_string());
        }
    }
    if let Some(s) = selector {
        if let Err(e) = selector_problems(s) {
            out.push(format!("labelSelector: {e}"));
        }
    }
    out
}

/// At most one of `namespaces.include` / `namespaces.exclude`, and a `labelSelector` that parses.
pub fn scope(namespaces: &Option<Namespaces>, selector: &Option<Selector>) -> Result<(), String> {
    joined(scope_problems(namespaces, selector))
}

fn selector_problems(s: &Selector) -> Result<(), String> {
    for (k, v) in &s.match_labels {
        key(k)?;
        value(k, v)?;
    }
    for e in &s.match_expressions {
        key(&e.key)?;
        match e.operator.as_str() {
            "In" | "NotIn" if e.values.is_empty() => {
                return Err(format!("{}: values required for {}", e.key, e.operator))
            }
            "In" | "NotIn" => {
                for v in &e.values {
                    value(&e.key, v)?;
                }
            }
            "Exists" | "DoesNotExist" if !e.values.is_empty() => {
                return Err(format!("{}: no values allowed for {}", e.key, e.operator))
            }
            "Exists" | "DoesNotExist" => {}
            other => return Err(format!("{}: unknown operator {other:?}", e.key)),
        }
    }
    Ok(())
}

/// A label name part: 1 to 63 characters, alphanumeric at both ends, `-`, `_`, `.` inside.
fn name_part(s: &str) -> bool {
    let inner = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    !s.is_empty()
        && s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars().all(inner)
}

/// A label key: a name, with an optional DNS subdomain prefix and `/`.
fn key(k: &str) -> Result<(), String> {
    let (prefix, name) = match k.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                    && l.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                    && l.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            })
    });
    if prefix_ok && name_part(name) {
        Ok(())
    } else {
        Err(format!("key {k:?}: not a qualified name"))
    }
}

/// A label value: empty, or a name part.
fn value(k: &str, v: &str) -> Result<(), String> {
    if v.is_empty() || name_part(v) {
        Ok(())
    } else {
        Err(format!("{k}: value {v:?} not a label value"))
    }
}

/// Reads `null` as the field's default, as Go reads a JSON `null` into a nil slice (which the
/// descheduler's defaulting then fills): for list arguments (`constraints: null`).
pub fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + serde::Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}
