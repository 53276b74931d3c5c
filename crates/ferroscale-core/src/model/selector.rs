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

/// One requirement on a label (node affinity, or a pod label selector without Gt/Lt).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    pub key: String,
    pub op: SelectorOp,
    pub values: Vec<String>,
}

impl Requirement {
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
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.requirements.iter().all(|r| r.matches(labels))
    }
}
