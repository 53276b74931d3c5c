//! Label and node selector requirements from Kubernetes objects (pods' affinity, volumes' node
//! affinity), below both converters so neither imports the other.

use k8s_openapi::api::core::v1::NodeSelector;

use crate::error::{Error, Result};
use crate::model::workload::{Requirement, SelectorOp, FIELD_NODE_NAME};

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

/// A required node selector as an OR of terms, each an AND of requirements (its `matchExpressions`
/// and its `matchFields`, which the scheduler supports only on `metadata.name` with `In` or `NotIn`,
/// carried under [`FIELD_NODE_NAME`]); `field` names the selector (`spec.nodeAffinity.required`, with
/// the object) in errors.
pub(crate) fn node_selector_terms(
    sel: &NodeSelector,
    field: &str,
) -> Result<Vec<Vec<Requirement>>> {
    sel.node_selector_terms
        .iter()
        .enumerate()
        .map(|(t, term)| {
            let at = format!("{field}.nodeSelectorTerms[{t}]");
            let mut reqs = requirements(
                term.match_expressions
                    .iter()
                    .flatten()
                    .map(|e| (&e.key, &e.operator, &e.values)),
                &at,
            )?;
            for (i, f) in term.match_fields.iter().flatten().enumerate() {
                let here = format!("{at}.matchFields[{i}]");
                if f.key != "metadata.name" {
                    return Err(Error::invalid(
                        format!("{here}.key"),
                        format!("unsupported field {:?} (only metadata.name)", f.key),
                    ));
                }
                let r = requirement(
                    FIELD_NODE_NAME,
                    &f.operator,
                    &f.values,
                    &format!("{here}.operator"),
                )?;
                if !matches!(r.op, SelectorOp::In | SelectorOp::NotIn) {
                    return Err(Error::invalid(
                        format!("{here}.operator"),
                        format!("{:?} on metadata.name (only In and NotIn)", f.operator),
                    ));
                }
                reqs.push(r);
            }
            Ok(reqs)
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
