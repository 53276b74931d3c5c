//! Label and node selector requirements from Kubernetes objects (pods' affinity, volumes' node
//! affinity), below both converters so neither imports the other.

use k8s_openapi::api::core::v1::NodeSelector;

use crate::error::{Error, Result};
use crate::model::workload::{Requirement, SelectorOp};

fn op(o: &str, field: &str) -> Result<SelectorOp> {
    Ok(match o {
        "In" => SelectorOp::In,
        "NotIn" => SelectorOp::NotIn,
        "Exists" => SelectorOp::Exists,
        "DoesNotExist" => SelectorOp::DoesNotExist,
        "Gt" => SelectorOp::Gt,
        "Lt" => SelectorOp::Lt,
        other => return Err(Error::invalid(field, format!("unknown operator {other:?}"))),
    })
}

/// One label or node selector requirement; `field` names the operator in errors.
fn requirement(
    key: &str,
    operator: &str,
    values: &Option<Vec<String>>,
    field: &str,
) -> Result<Requirement> {
    Ok(Requirement {
        key: key.to_string(),
        op: op(operator, field)?,
        values: values.clone().unwrap_or_default(),
    })
}

/// A required node selector as an OR of terms, each an AND of requirements; `field` names the selector
/// (`spec.nodeAffinity.required`, with the object) in errors.
pub(crate) fn node_selector_terms(
    sel: &NodeSelector,
    field: &str,
) -> Result<Vec<Vec<Requirement>>> {
    sel.node_selector_terms
        .iter()
        .enumerate()
        .map(|(t, term)| {
            requirements(
                term.match_expressions
                    .iter()
                    .flatten()
                    .map(|e| (&e.key, &e.operator, &e.values)),
                &format!("{field}.nodeSelectorTerms[{t}]"),
            )
        })
        .collect()
}

/// The `matchExpressions` of a label or node selector (`field` names the selector or term in errors).
pub(crate) fn requirements<'a>(
    expressions: impl Iterator<Item = (&'a String, &'a String, &'a Option<Vec<String>>)>,
    field: &str,
) -> Result<Vec<Requirement>> {
    expressions
        .enumerate()
        .map(|(i, (key, operator, values))| {
            requirement(
                key,
                operator,
                values,
                &format!("{field}.matchExpressions[{i}].operator"),
            )
        })
        .collect()
}
