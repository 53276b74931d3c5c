//! Label and node selector requirements from Kubernetes objects (pods' affinity, volumes' node
//! affinity), below both converters so neither imports the other.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{self as core, NodeSelector};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

use crate::error::{Error, Result};
use crate::model::workload::{
    LabelSelector, PodAffinityTerm, Requirement, SelectorOp, FIELD_NODE_NAME,
};
use crate::model::ThinVec;

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
/// the object) in errors. As upstream's node selector: a term with no requirement, or with one the
/// label machinery rejects (a value that is no label value, `Gt` on a non-integer, a wrong number of
/// values), matches no node, and so does a selector without terms.
pub(crate) fn node_selector_terms(
    sel: &NodeSelector,
    field: &str,
) -> Result<Vec<Vec<Requirement>>> {
    if sel.node_selector_terms.is_empty() {
        return Ok(vec![never()]);
    }
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
            let mut valid = reqs.iter().all(parses);
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
                // A field selector takes exactly one value.
                valid &= r.values.len() == 1;
                reqs.push(r);
            }
            Ok(if reqs.is_empty() || !valid {
                never()
            } else {
                reqs
            })
        })
        .collect()
}

/// A term that matches no node: `In` with no value admits no label value (nor name).
fn never() -> Vec<Requirement> {
    vec![Requirement {
        key: String::new(),
        op: SelectorOp::In,
        values: Vec::new(),
    }]
}

/// Whether apimachinery's label selector would accept a node selector requirement: `In` and `NotIn` with
/// some values, `Exists` and `DoesNotExist` with none, `Gt` and `Lt` with one integer; every value a
/// label value.
fn parses(r: &Requirement) -> bool {
    let count = match r.op {
        SelectorOp::In | SelectorOp::NotIn => !r.values.is_empty(),
        SelectorOp::Exists | SelectorOp::DoesNotExist => r.values.is_empty(),
        SelectorOp::Gt | SelectorOp::Lt => {
            r.values.len() == 1 && r.values[0].parse::<i64>().is_ok()
        }
    };
    count && r.values.iter().all(|v| label_value(v))
}

/// A label value: at most 63 characters, empty or alphanumeric at both ends with `-`, `_` and `.`
/// between.
fn label_value(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() <= 63
        && (b.is_empty()
            || (b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))))
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

/// A metav1 LabelSelector (None selects nothing in PDBs, everything in spreads: callers decide).
pub(super) fn label_selector(s: &meta::LabelSelector, field: &str) -> Result<LabelSelector> {
    Ok(LabelSelector {
        match_labels: s.match_labels.clone().unwrap_or_default(),
        requirements: requirements(
            s.match_expressions
                .iter()
                .flatten()
                .map(|e| (&e.key, &e.operator, &e.values)),
            field,
        )?,
    })
}

/// Adds to `selector`, for each key of `keys` the pod has a label of, a requirement that the label be
/// (`op` In) or not be (`op` NotIn) the pod's value: what `matchLabelKeys` and `mismatchLabelKeys` mean
/// (a key the pod lacks is ignored, as upstream does).
pub(super) fn merge_label_keys(
    selector: &mut LabelSelector,
    keys: &Option<Vec<String>>,
    op: SelectorOp,
    labels: &BTreeMap<String, String>,
) {
    for key in keys.iter().flatten() {
        if let Some(v) = labels.get(key) {
            selector.requirements.push(Requirement {
                key: key.clone(),
                op,
                values: vec![v.clone()],
            });
        }
    }
}

/// A pod's required (anti-)affinity terms; `field` names them in errors (formatted only then).
pub(super) fn affinity_terms(
    terms: Option<&Vec<core::PodAffinityTerm>>,
    labels: &BTreeMap<String, String>,
    field: &dyn std::fmt::Display,
) -> Result<ThinVec<PodAffinityTerm>> {
    terms
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, t)| {
            let mut selector = match &t.label_selector {
                Some(s) => label_selector(s, &format!("{field}[{i}].labelSelector"))?,
                // No selector matches no pod.
                None => LabelSelector::nothing(),
            };
            merge_label_keys(&mut selector, &t.match_label_keys, SelectorOp::In, labels);
            merge_label_keys(
                &mut selector,
                &t.mismatch_label_keys,
                SelectorOp::NotIn,
                labels,
            );
            Ok(PodAffinityTerm {
                selector,
                namespaces: t.namespaces.clone().unwrap_or_default(),
                namespace_selector: t
                    .namespace_selector
                    .as_ref()
                    .map(|s| label_selector(s, &format!("{field}[{i}].namespaceSelector")))
                    .transpose()?,
                topology_key: t.topology_key.clone(),
            })
        })
        .collect()
}
