//! The Eviction API: 429 while a PodDisruptionBudget selecting the pod allows no disruption, else the
//! budget is decremented and the pod deleted.

use axum::response::Response;
use serde_json::{json, Value};

use super::wire::{selects, status};
use super::{KubeApi, PDBS, PODS};

impl KubeApi {
    pub(super) fn evict(&self, namespace: &str, name: &str) -> Response {
        let Some(pod) = self.get(PODS, namespace, name) else {
            return status(404, "NotFound", format!("pods {name:?} not found"));
        };
        let budgets: Vec<Value> = self
            .list(PDBS)
            .into_iter()
            .filter(|b| b["metadata"]["namespace"] == namespace && selects(b, &pod))
            .collect();
        if budgets.iter().any(|b| {
            b.pointer("/status/disruptionsAllowed")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                < 1
        }) {
            return status(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.".into(),
            );
        }
        for b in budgets {
            let allowed = b["status"]["disruptionsAllowed"].as_i64().unwrap_or(0);
            let bname = b["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            self.update(
                PDBS,
                namespace,
                &bname,
                json!({"status": {"disruptionsAllowed": allowed - 1}}),
            );
        }
        let change = {
            let mut s = self.store.lock().unwrap();
            s.delete(PODS, namespace, name);
            s.log.last().cloned().unwrap()
        };
        let _ = self.changes.send(change);
        status(201, "", "evicted".into())
    }
}
