//! The decoding steps several plugins' arguments share (their shapes checked on the policy's own
//! values, each refusal naming its field): below the strategies, which decode their own arguments
//! with them, and the evictor's arguments.

use super::error::PolicyError;
use serde_norway::Mapping;

use super::field::{Field, Object};

/// `namespaces` and `labelSelector`, which most strategies take.
pub(crate) fn scope(o: &Object) -> Result<(), PolicyError> {
    namespaces(o, "namespaces")?;
    if let Some(s) = o.opt("labelSelector") {
        label_selector(&s)?;
    }
    Ok(())
}

/// `{include, exclude}`: lists of names.
pub(crate) fn namespaces(o: &Object, key: &str) -> Result<(), PolicyError> {
    let Some(f) = o.opt(key) else { return Ok(()) };
    let n = f.object(&["include", "exclude"])?;
    n.get("include").strings()?;
    n.get("exclude").strings()?;
    Ok(())
}

/// A `metav1.LabelSelector`'s shape (its keys and values are checked by the typed args).
pub(crate) fn label_selector(f: &Field) -> Result<(), PolicyError> {
    let s = f.object(&["matchLabels", "matchExpressions"])?;
    for (_, v) in s.get("matchLabels").entries()? {
        v.string()?;
    }
    for e in s.get("matchExpressions").items()? {
        let x = e.object(&["key", "operator", "values"])?;
        for k in ["key", "operator"] {
            if let Some(v) = x.opt(k) {
                v.string()?;
            }
        }
        x.get("values").strings()?;
    }
    Ok(())
}

/// Resource → number (the typed args check the range).
pub(crate) fn thresholds(f: &Field) -> Result<(), PolicyError> {
    for (_, v) in f.entries()? {
        v.number()?;
    }
    Ok(())
}

/// `numberOfNodes`: a count.
pub(crate) fn number_of_nodes(o: &Object) -> Result<(), PolicyError> {
    if let Some(n) = o.opt("numberOfNodes") {
        n.int(0, i32::MAX.into())?;
    }
    Ok(())
}

/// Container exit codes (int32).
pub(crate) fn exit_codes(f: &Field) -> Result<(), PolicyError> {
    for i in f.items()? {
        i.int(i32::MIN.into(), i32::MAX.into())?;
    }
    Ok(())
}

/// A boolean field (absent: false).
pub(crate) fn flag(o: &Object, key: &str) -> Result<bool, PolicyError> {
    o.opt(key).map_or(Ok(false), |f| f.boolean())
}

/// The `apiVersion`/`kind` an args object may carry: when given, the descheduler's.
pub(crate) fn type_meta(o: &Object, kind: &str) -> Result<(), PolicyError> {
    if let Some(v) = o.opt("apiVersion") {
        if v.string()? != "descheduler/v1alpha2" {
            return Err(v.err("want descheduler/v1alpha2"));
        }
    }
    if let Some(k) = o.opt("kind") {
        if k.string()? != kind {
            return Err(k.err(format!("want {kind}")));
        }
    }
    Ok(())
}

/// Copies `key` of a v1alpha1 strategy's params (or a params sub-object) to `to` of its v1alpha2
/// args, when given.
pub(crate) fn copy(out: &mut Mapping, from: &Object, key: &str, to: &str) {
    if let Some(v) = from.opt(key) {
        out.insert(to.into(), v.value.clone());
    }
}

/// The v1alpha1 `namespaces` (and, where the strategy reads it, `labelSelector`) params, as the
/// v1alpha1 conversion carried them over.
pub(crate) fn v1alpha1_scope(p: &Object, out: &mut Mapping, label_selector: bool) {
    copy(out, p, "namespaces", "namespaces");
    if label_selector {
        copy(out, p, "labelSelector", "labelSelector");
    }
}
