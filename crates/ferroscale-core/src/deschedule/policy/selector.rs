//! Label selectors written as strings (`nodeSelector: "node=node1,zone in (a,b),!spot"`), as
//! Kubernetes' `labels.Parse` reads them.

use crate::model::workload::{LabelSelector, Requirement, SelectorOp};

/// The selector a string writes: comma-separated `k=v`, `k==v`, `k!=v`, `k in (a,b)`,
/// `k notin (a,b)`, `k`, `!k`, `k>n`, `k<n`; empty selects everything.
pub fn parse_selector(text: &str) -> Result<LabelSelector, String> {
    let mut requirements = Vec::new();
    for part in split_top(text)? {
        let part = part.trim();
        if part.is_empty() {
            if text.trim().is_empty() {
                continue;
            }
            return Err(format!("{text:?}: empty requirement"));
        }
        requirements.push(requirement(part).map_err(|why| format!("{part:?}: {why}"))?);
    }
    Ok(LabelSelector {
        match_labels: Default::default(),
        requirements,
    })
}

/// The text split at commas outside parentheses.
fn split_top(text: &str) -> Result<Vec<&str>, String> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(format!("{text:?}: unbalanced parentheses"));
        }
    }
    if depth != 0 {
        return Err(format!("{text:?}: unbalanced parentheses"));
    }
    parts.push(&text[start..]);
    Ok(parts)
}

fn requirement(part: &str) -> Result<Requirement, String> {
    if let Some(key) = part.strip_prefix('!') {
        return req(key.trim(), SelectorOp::DoesNotExist, Vec::new());
    }
    for (op, sop) in [
        ("==", SelectorOp::In),
        ("!=", SelectorOp::NotIn),
        ("=", SelectorOp::In),
        (">", SelectorOp::Gt),
        ("<", SelectorOp::Lt),
    ] {
        if let Some((k, v)) = part.split_once(op) {
            let v = v.trim();
            if matches!(sop, SelectorOp::Gt | SelectorOp::Lt) && v.parse::<i64>().is_err() {
                return Err(format!("{v:?} is not an integer"));
            }
            value(v)?;
            return req(k.trim(), sop, vec![v.to_string()]);
        }
    }
    let mut words = part.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or_default();
    let rest = words.next().unwrap_or_default().trim();
    if rest.is_empty() {
        return req(key, SelectorOp::Exists, Vec::new());
    }
    let (op, set) = if let Some(set) = rest.strip_prefix("notin") {
        (SelectorOp::NotIn, set)
    } else if let Some(set) = rest.strip_prefix("in") {
        (SelectorOp::In, set)
    } else {
        return Err("want =, ==, !=, in, notin, >, < or nothing after the key".into());
    };
    let set = set
        .trim()
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or("want a parenthesized set of values")?;
    let values: Vec<String> = set.split(',').map(|v| v.trim().to_string()).collect();
    for v in &values {
        value(v)?;
    }
    req(key, op, values)
}

fn req(key: &str, op: SelectorOp, values: Vec<String>) -> Result<Requirement, String> {
    label_key(key)?;
    Ok(Requirement {
        key: key.to_string(),
        op,
        values,
    })
}

/// A label key: an optional DNS prefix and `/`, then a name of up to 63 alphanumerics, `-`, `_`,
/// `.`, starting and ending alphanumeric.
pub(super) fn label_key(key: &str) -> Result<(), String> {
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
    if name.is_empty() || value(name).is_err() || !prefix_ok {
        return Err(format!("{key:?} is not a valid label key"));
    }
    Ok(())
}

/// A label value: empty, or up to 63 alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric.
pub(super) fn value(v: &str) -> Result<(), String> {
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
