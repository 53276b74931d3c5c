//! The checks the descheduler's `Validate…Args` functions share, each problem named by its field's
//! path under the args: `namespaces` (include or exclude), `labelSelector` (as
//! `metav1.LabelSelectorAsSelector` checks a selector: qualified-name keys, label values, values
//! present for `In`/`NotIn` and absent for `Exists`/`DoesNotExist`), label selector strings (as
//! `labels.Parse` checks them), and `states` lists. The strategies and the evictor's arguments use
//! them, so they sit beside `args`, below both.

use serde::Deserialize;

use crate::deschedule::args::{Namespaces, Problems, Selector};
use crate::model::workload::LabelSelector;

/// `namespaces` and `labelSelector`, which most strategies take.
pub fn scope(namespaces: &Option<Namespaces>, selector: &Option<Selector>, out: &mut Problems) {
    self::namespaces(namespaces, "namespaces", true, out);
    if let Some(s) = selector {
        label_selector(s, "labelSelector", out);
    }
}

/// `{include, exclude}` at `field`: not both; `include` only where the strategy has it.
pub fn namespaces(n: &Option<Namespaces>, field: &str, include: bool, out: &mut Problems) {
    let Some(n) = n else { return };
    if !include && !n.include.is_empty() {
        out.add(
            format!("{field}.include"),
            "only exclude can be set, inclusion is not supported",
        );
    } else if !n.include.is_empty() && !n.exclude.is_empty() {
        out.add(
            format!("{field}.exclude"),
            "only one of include/exclude namespaces can be set",
        );
    }
}

/// A `metav1.LabelSelector` at `field`.
pub fn label_selector(s: &Selector, field: &str, out: &mut Problems) {
    for (k, v) in &s.match_labels {
        let at = format!("{field}.matchLabels.{k}");
        if let Err(why) = label_key(k).and_then(|()| label_value(v)) {
            out.add(at, why);
        }
    }
    for (i, e) in s.match_expressions.iter().enumerate() {
        let at = format!("{field}.matchExpressions[{i}]");
        if let Err(why) = label_key(&e.key) {
            out.add(format!("{at}.key"), why);
            continue;
        }
        if let Some((j, why)) = e
            .values
            .iter()
            .enumerate()
            .find_map(|(j, v)| label_value(v).err().map(|why| (j, why)))
        {
            out.add(format!("{at}.values[{j}]"), why);
            continue;
        }
        match e.operator.as_str() {
            "In" | "NotIn" if e.values.is_empty() => {
                out.add(format!("{at}.values"), "must be set for In and NotIn")
            }
            "Exists" | "DoesNotExist" if !e.values.is_empty() => out.add(
                format!("{at}.values"),
                "must be empty for Exists and DoesNotExist",
            ),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => out.add(
                format!("{at}.operator"),
                format!("unknown operator {other:?} (known: In, NotIn, Exists, DoesNotExist)"),
            ),
        }
    }
}

/// A selector string (`LabelSelector::parse`) whose keys and values are also valid label keys and
/// values, as `labels.Parse` checks them.
pub fn selector_string(text: &str) -> Result<LabelSelector, String> {
    let sel = LabelSelector::parse(text)?;
    let pairs = sel
        .requirements
        .iter()
        .flat_map(|r| {
            std::iter::once((&r.key, None)).chain(r.values.iter().map(|v| (&r.key, Some(v))))
        })
        .chain(sel.match_labels.iter().map(|(k, v)| (k, Some(v))));
    for (k, v) in pairs {
        label_key(k).map_err(|why| format!("{text:?}: {why}"))?;
        if let Some(v) = v {
            label_value(v).map_err(|why| format!("{text:?}: {why}"))?;
        }
    }
    Ok(sel)
}

/// A label key: an optional DNS prefix and `/`, then a name of up to 63 alphanumerics, `-`, `_`,
/// `.`, starting and ending alphanumeric.
pub fn label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            })
    });
    if name.is_empty() || label_value(name).is_err() || !prefix_ok {
        return Err(format!("{key:?} is not a valid label key"));
    }
    Ok(())
}

/// A label value: empty, or up to 63 alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric.
pub fn label_value(v: &str) -> Result<(), String> {
    let ok = v.is_empty()
        || (v.len() <= 63
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric()));
    if ok {
        Ok(())
    } else {
        Err(format!("{v:?} is not a valid label value"))
    }
}

/// Each of `states` among `allowed`, at `states[i]`.
pub fn states(states: &[String], allowed: &[&str], out: &mut Problems) {
    for (i, s) in states.iter().enumerate() {
        if !allowed.contains(&s.as_str()) {
            out.add(
                format!("states[{i}]"),
                format!("{s:?}: states must be one of {}", allowed.join(", ")),
            );
        }
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
