//! Namespace objects of a dump: the labels the `namespaceSelector` of pod affinity terms reads. The
//! live loop does not watch Namespaces, so there a non-empty `namespaceSelector` matches no namespace
//! (an empty one still matches them all).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;

use crate::model::workload::Pod;

/// Gives each pod the labels of its namespace, from a dump's Namespace objects, for the
/// `namespaceSelector` of affinity terms (a namespace not among them: no labels).
pub fn set_namespace_labels(pods: &mut [Pod], namespaces: &[core::Namespace]) {
    let by_name: BTreeMap<&str, &BTreeMap<String, String>> = namespaces
        .iter()
        .filter_map(|n| Some((n.metadata.name.as_deref()?, n.metadata.labels.as_ref()?)))
        .collect();
    for p in pods {
        if let Some(l) = by_name.get(p.namespace.as_str()) {
            p.namespace_labels = (*l).clone();
        }
    }
}
