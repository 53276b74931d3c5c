//! Label selectors written as strings (`nodeSelector: "node=node1,zone in (a,b),!spot"`), as
//! Kubernetes' `labels.Parse` reads them.

use crate::model::workload::LabelSelector;

/// A selector string (`LabelSelector::parse`) whose keys and values are also valid label keys and
/// values, as `labels.Parse` checks them.
pub(super) fn checked_selector(text: &str) -> Result<LabelSelector, String> {
    let sel = LabelSelector::parse(text)?;
    for r in &sel.requirements {
        label_key(&r.key).map_err(|why| format!("{text:?}: {why}"))?;
        for v in &r.values {
            value(v).map_err(|why| format!("{text:?}: {why}"))?;
        }
    }
    for (k, v) in &sel.match_labels {
        label_key(k).map_err(|why| format!("{text:?}: {why}"))?;
        value(v).map_err(|why| format!("{text:?}: {why}"))?;
    }
    Ok(sel)
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
