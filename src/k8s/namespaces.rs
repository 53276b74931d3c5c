//! Namespace objects of a dump: the labels the `namespaceSelector` of pod affinity terms reads. The
//! live loop does not watch Namespaces, so there a non-empty `namespaceSelector` matches no namespace
//! (an empty one still matches them all).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;

use crate::model::shared::Labels;
use crate::model::workload::Pod;

/// Gives each pod the labels of its namespace, from a dump's Namespace objects, for the
/// `namespaceSelector` of affinity terms (a namespace not among them: no labels).
pub fn set_namespace_labels(pods: &mut [Pod], namespaces: &[core::Namespace]) {
    // One shared copy per namespace, held by all of its pods.
    let by_name: BTreeMap<&str, Labels> = namespaces
        .iter()
        .filter_map(|n| {
            let labels = n.metadata.labels.as_ref()?;
            Some((n.metadata.name.as_deref()?, Labels::new(labels.clone())))
        })
        .collect();
    for p in pods {
        if let Some(l) = by_name.get(p.namespace.as_str()) {
            p.namespace_labels = l.clone();
        }
    }
}
