//! The Eviction API: 429 while a PodDisruptionBudget selecting the pod allows no disruption, else the
//! budget is decremented and the pod deleted — in one step under the store's lock, as the API server's
//! optimistic concurrency on the budget makes it: of two evictions racing for the last disruption, one
//! gets 429. `deleteOptions.preconditions.uid` naming another incarnation of the pod is 409 Conflict.

use axum::response::Response;
use serde_json::{json, Value};

use super::wire::{merge, selects, status};
use super::{KubeApi, PDBS, PODS};

impl KubeApi {
    pub(super) fn evict(&self, namespace: &str, name: &str, body: Option<&Value>) -> Response {
        let mut s = self.store.lock().unwrap();
        let grace = body.and_then(|b| b.pointer("/deleteOptions/gracePeriodSeconds"));
        s.eviction_graces
            .push((format!("{namespace}/{name}"), grace.and_then(Value::as_i64)));
        let key = |c: &str, n: &str| (c.to_string(), namespace.to_string(), n.to_string());
        let Some(pod) = s.objects.get(&key(PODS, name)).cloned() else {
            return status(404, "NotFound", format!("pods {name:?} not found"));
        };
        // deleteOptions.preconditions.uid, as the API server checks it: another pod of that name is 409.
        let want = body.and_then(|b| b.pointer("/deleteOptions/preconditions/uid"));
        if let Some(want) = want.and_then(Value::as_str) {
            let have = pod["metadata"]["uid"].as_str().unwrap_or_default();
            if want != have {
                return status(
                    409,
                    "Conflict",
                    format!("Operation cannot be fulfilled on Pod {name:?}: Precondition failed: UID in precondition: {want}, UID in object meta: {have}"),
                );
            }
        }
        let budgets: Vec<Value> = s
            .objects
            .iter()
            .filter(|((c, ns, _), b)| c == PDBS && ns == namespace && selects(b, &pod))
            .map(|(_, b)| b.clone())
            .collect();
        let allowed = |b: &Value| {
            b.pointer("/status/disruptionsAllowed")
                .and_then(Value::as_i64)
                .unwrap_or(0)
        };
        if budgets.iter().any(|b| allowed(b) < 1) {
            return status(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.".into(),
            );
        }
        let mut changes = Vec::new();
        for mut b in budgets {
            let left = allowed(&b) - 1;
            merge(&mut b, &json!({"status": {"disruptionsAllowed": left}}));
            s.write(PDBS, namespace, b);
            changes.push(s.log.last().cloned().unwrap());
        }
        s.delete(PODS, namespace, name);
        changes.push(s.log.last().cloned().unwrap());
        drop(s);
        for change in changes {
            let _ = self.changes.send(change);
        }
        status(201, "", "evicted".into())
    }
}
