//! The policy's `nodeSelector`: a label selector string as `kubectl -l` and the descheduler's
//! `--node-selector` read it (`k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`, joined
//! by commas).
//!
//! Hand-written: no crate parses Kubernetes selector strings without pulling in a Kubernetes client.

use std::collections::BTreeMap;

use crate::model::workload::{Requirement, SelectorOp};

/// A parsed selector string: every requirement must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSelector(Vec<Requirement>);

impl NodeSelector {
    /// Parses a selector string; the error names the part that does not parse.
    pub fn parse(text: &str) -> Result<NodeSelector, String> {
        let mut out = Vec::new();
        for part in split_top(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            out.push(requirement(part).ok_or_else(|| format!("cannot read {part:?}"))?);
        }
        Ok(NodeSelector(out))
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| r.matches(labels))
    }
}

/// Splits on commas outside parentheses.
fn split_top(text: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0usize, Vec::new());
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

fn key_ok(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn requirement(part: &str) -> Option<Requirement> {
    let req = |key: &str, op, values: Vec<String>| {
        key_ok(key).then(|| Requirement {
            key: key.to_string(),
            op,
            values,
        })
    };
    if let Some(k) = part.strip_prefix('!') {
        return req(k.trim(), SelectorOp::DoesNotExist, Vec::new());
    }
    for (sep, op) in [
        ("!=", SelectorOp::NotIn),
        ("==", SelectorOp::In),
        ("=", SelectorOp::In),
    ] {
        if let Some((k, v)) = part.split_once(sep) {
            return req(k.trim(), op, vec![v.trim().to_string()]);
        }
    }
    for (word, op) in [(" notin ", SelectorOp::NotIn), (" in ", SelectorOp::In)] {
        if let Some((k, rest)) = part.split_once(word) {
            let list = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
            let values = list.split(',').map(|v| v.trim().to_string()).collect();
            return req(k.trim(), op, values);
        }
    }
    req(part, SelectorOp::Exists, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn selector_strings_select_as_kubectl_does() {
        let s = NodeSelector::parse("pool=web, zone in (a, b),!spot,tier!=db,ready").unwrap();
        assert!(s.matches(&labels(&[("pool", "web"), ("zone", "a"), ("ready", "")])));
        assert!(!s.matches(&labels(&[("pool", "web"), ("zone", "c"), ("ready", "")])));
        assert!(!s.matches(&labels(&[
            ("pool", "web"),
            ("zone", "a"),
            ("ready", ""),
            ("spot", "1")
        ])));
        assert!(!s.matches(&labels(&[
            ("pool", "web"),
            ("zone", "b"),
            ("tier", "db"),
            ("ready", "")
        ])));
        assert!(!s.matches(&labels(&[("pool", "web"), ("zone", "b")])));
        assert!(NodeSelector::parse("").unwrap().matches(&labels(&[])));
        assert!(NodeSelector::parse("zone in a").is_err());
        assert!(NodeSelector::parse("a b=c").is_err());
    }
}
