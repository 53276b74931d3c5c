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
