//! Label requirements and selectors, as Kubernetes has them: read by pods' node affinity and
//! selectors, volumes' node affinity and storage classes' topologies alike.

use std::collections::BTreeMap;

/// Operator of a node selector requirement, as in Kubernetes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SelectorOp {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    /// Label value, as an integer, greater than the single value.
    Gt,
    /// Label value, as an integer, less than the single value.
    Lt,
}

/// The key a node selector term's `matchFields` requirement on `metadata.name` (the only field the
/// scheduler supports there) is carried under among its label requirements: `:` is not allowed in a
/// label key, so no `matchExpressions` requirement has it.
pub const FIELD_NODE_NAME: &str = "field:metadata.name";

/// One requirement on a label (node affinity, or a pod label selector without Gt/Lt).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    pub key: String,
    pub op: SelectorOp,
    pub values: Vec<String>,
}

impl Requirement {
    /// Whether a node with `labels`, named `name`, satisfies this node selector requirement: a label
    /// requirement, or a `matchFields` one ([`FIELD_NODE_NAME`], `In`/`NotIn`) on its name. A node
    /// that does not exist yet (`name` None: a template) matches no name requirement, as upstream's
    /// template nodes, named after no real node, match none.
    pub fn admits_node(&self, labels: &BTreeMap<String, String>, name: Option<&str>) -> bool {
        if self.key != FIELD_NODE_NAME {
            return self.matches(labels);
        }
        let Some(name) = name else {
            return false;
        };
        let listed = self.values.iter().any(|v| v == name);
        match self.op {
            SelectorOp::In => listed,
            SelectorOp::NotIn => !listed,
            _ => false,
        }
    }

    /// Whether `labels` satisfy this requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        let int = |s: &str| s.parse::<i64>().ok();
        match self.op {
            SelectorOp::In => value.is_some_and(|v| self.values.contains(v)),
            SelectorOp::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            SelectorOp::Exists => value.is_some(),
            SelectorOp::DoesNotExist => value.is_none(),
            SelectorOp::Gt | SelectorOp::Lt => {
                let (Some(v), Some(bound)) = (
                    value.and_then(|v| int(v)),
                    self.values.first().and_then(|b| int(b)),
                ) else {
                    return false;
                };
                if self.op == SelectorOp::Gt {
                    v > bound
                } else {
                    v < bound
                }
            }
        }
    }
}

/// A label selector: match labels and requirements, all AND-ed (empty matches everything).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    pub match_labels: BTreeMap<String, String>,
    pub requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// A selector that matches no labels: what a null `metav1.LabelSelector` means to a
    /// PodDisruptionBudget (policy/v1) or a pod affinity term, where an empty one matches everything.
    pub fn nothing() -> Self {
        LabelSelector {
            match_labels: BTreeMap::new(),
            // No value is in an empty set.
            requirements: vec![Requirement {
                key: String::new(),
                op: SelectorOp::In,
                values: Vec::new(),
            }],
        }
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.requirements.iter().all(|r| r.matches(labels))
    }
}

impl LabelSelector {
    /// A label selector as a string (`labels.Parse`: `k=v`, `k==v`, `k!=v`, `k in (a,b)`,
    /// `k notin (a,b)`, `k`, `!k`, `k>1`, `k<1`, joined by commas), as the descheduler's `nodeSelector`s
    /// are written. An empty string selects everything; a malformed one is refused, quoting it.
    pub fn parse(text: &str) -> Result<LabelSelector, String> {
        let mut out = LabelSelector::default();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                if text.trim().is_empty() {
                    continue;
                }
                return Err(format!("{text:?}: empty requirement"));
            }
            out.requirements
                .push(parse_requirement(part).map_err(|e| format!("{text:?}: {e}"))?);
        }
        Ok(out)
    }
}

/// Splits at the commas outside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
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
    }
    parts.push(&text[start..]);
    parts
}

fn parse_requirement(part: &str) -> Result<Requirement, String> {
    let req = |key: &str, op, values: Vec<String>| {
        let key = key.trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(format!("bad key in {part:?}"));
        }
        Ok(Requirement {
            key: key.to_string(),
            op,
            values,
        })
    };
    if let Some(key) = part.strip_prefix('!') {
        return req(key, SelectorOp::DoesNotExist, Vec::new());
    }
    for (sep, op) in [
        ("!=", SelectorOp::NotIn),
        ("==", SelectorOp::In),
        ("=", SelectorOp::In),
        (">", SelectorOp::Gt),
        ("<", SelectorOp::Lt),
    ] {
        if let Some((k, v)) = part.split_once(sep) {
            return req(k, op, vec![v.trim().to_string()]);
        }
    }
    let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
    if let [key, rest] = words[..] {
        let rest = rest.trim();
        let (op, list) = if let Some(l) = rest.strip_prefix("notin") {
            (SelectorOp::NotIn, l)
        } else if let Some(l) = rest.strip_prefix("in") {
            (SelectorOp::In, l)
        } else {
            return Err(format!("unknown operator in {part:?}"));
        };
        let list = list
            .trim()
            .strip_prefix('(')
            .and_then(|l| l.strip_suffix(')'))
            .ok_or_else(|| format!("want a (list) in {part:?}"))?;
        let values = list
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect();
        return req(key, op, values);
    }
    req(part, SelectorOp::Exists, Vec::new())
}

/// A topology spread constraint (in `Pod::spread`, `whenUnsatisfiable: DoNotSchedule`; in
/// `PodMeta::soft_spread`, `ScheduleAnyway`) (its `matchLabelKeys` merged
/// into `selector` by the adapter; no `labelSelector` selects no pod). The defaults are upstream's:
/// `minDomains` 1, `nodeAffinityPolicy: Honor`, `nodeTaintsPolicy: Ignore`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpreadConstraint {
    pub max_skew: i32,
    pub topology_key: String,
    pub selector: LabelSelector,
    /// `minDomains`: with fewer eligible domains, the least populated one counts as holding 0 pods.
    pub min_domains: Option<i32>,
    /// `nodeAffinityPolicy: Ignore`: nodes the pod's node selector and affinity exclude count too.
    pub ignore_node_affinity: bool,
    /// `nodeTaintsPolicy: Honor`: nodes with a taint the pod does not tolerate do not count.
    pub honor_taints: bool,
}

#[cfg(test)]
mod parse_tests {
    use super::*;

    fn l(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn selector_strings_read_as_kubernetes_reads_them() {
        let s = LabelSelector::parse("zone in (a, b),tier!=db,gpu,!spot,role=web").unwrap();
        assert!(s.matches(&l(&[("zone", "a"), ("gpu", "1"), ("role", "web")])));
        assert!(!s.matches(&l(&[("zone", "c"), ("gpu", "1"), ("role", "web")])));
        assert!(!s.matches(&l(&[
            ("zone", "a"),
            ("gpu", "1"),
            ("role", "web"),
            ("spot", "x")
        ])));
        assert!(!s.matches(&l(&[
            ("zone", "a"),
            ("gpu", "1"),
            ("role", "web"),
            ("tier", "db")
        ])));
        assert!(LabelSelector::parse("").unwrap().matches(&l(&[])));
        assert!(LabelSelector::parse("k notin (x)")
            .unwrap()
            .matches(&l(&[])));
        let err = LabelSelector::parse("zone is (a)").unwrap_err();
        assert!(err.contains("zone is (a)"), "{err}");
        assert!(LabelSelector::parse("a=b,,c").is_err());
    }
}
