//! Lists, in pages as the API server serves them.

use std::collections::BTreeMap;

use axum::response::Response;
use serde_json::{json, Value};

use super::wire::{api_version_of, fields_match, json_response, kind_of, Target};
use super::KubeApi;

impl KubeApi {
    /// A list, in pages of `limit` when asked (as the API server does, with a `continue` token naming
    /// the version listed and the last object sent; later pages show objects as they are then, and the
    /// watch from that version replays what changed since).
    pub(super) fn list_response(&self, t: &Target, q: &BTreeMap<String, String>) -> Response {
        let fields = q.get("fieldSelector");
        let limit: usize = q
            .get("limit")
            .and_then(|l| l.parse().ok())
            .filter(|l| *l > 0)
            .unwrap_or(usize::MAX);
        let s = self.store.lock().unwrap();
        // The token: `version.namespace.name` of the last object sent (a namespace has no dot, and dots need no escaping in a query).
        let token = q
            .get("continue")
            .map(|c| c.splitn(3, '.').collect::<Vec<_>>());
        let (rv, after) = match token.as_deref() {
            Some([rv, ns, name]) => (
                rv.parse().unwrap_or(s.rv),
                Some((ns.to_string(), name.to_string())),
            ),
            _ => (s.rv, None),
        };
        // Objects are kept in (collection, namespace, name) order: a page starts after the token's.
        use std::ops::Bound;
        let start = match after {
            Some((ns, name)) => Bound::Excluded((t.collection.clone(), ns, name)),
            None => Bound::Included((t.collection.clone(), String::new(), String::new())),
        };
        let mut page: Vec<(&(String, String, String), &Value)> = s
            .objects
            .range((start, Bound::Unbounded))
            .take_while(|((c, _, _), _)| *c == t.collection)
            .filter(|((_, ns, _), v)| {
                (t.namespace.is_empty() || *ns == t.namespace) && fields_match(v, fields)
            })
            .take(limit.saturating_add(1))
            .collect();
        let mut metadata = json!({ "resourceVersion": rv.to_string() });
        if page.len() > limit {
            page.truncate(limit);
            if let Some(((_, ns, name), _)) = page.last() {
                metadata["continue"] = json!(format!("{rv}.{ns}.{name}"));
            }
        }
        let items: Vec<Value> = page.into_iter().map(|(_, v)| v.clone()).collect();
        let body = json!({
            "kind": format!("{}List", kind_of(&t.collection)),
            "apiVersion": api_version_of(&t.collection),
            "metadata": metadata,
            "items": items,
        });
        json_response(200, &body)
    }
}
