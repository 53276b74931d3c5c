//! A Kubernetes API server on loopback for `ferroscale run` tests, following the real API's semantics
//! for what ferroscale uses: list and watch with resourceVersions (watch events after the version asked
//! for, then live ones) and field selectors, create (409 AlreadyExists), replace and JSON merge patch
//! (409 Conflict when the body carries a stale `metadata.resourceVersion`), delete, and the Eviction
//! subresource (429 while a PodDisruptionBudget selecting the pod has `status.disruptionsAllowed` 0;
//! otherwise the budget is decremented and the pod deleted). Every request is recorded so tests can
//! assert the exact calls.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{Method, StatusCode, Uri};
use axum::response::Response;
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::broadcast;

/// One watch event: (resourceVersion, collection, namespace, type, object).
type Change = (u64, String, String, &'static str, Value);

#[derive(Default)]
struct Store {
    rv: u64,
    /// (collection, namespace, name) → object. The collection is the API path of the resource, e.g.
    /// `/api/v1/pods`.
    objects: BTreeMap<(String, String, String), Value>,
    log: Vec<Change>,
    requests: Vec<String>,
    /// When each of `requests` was received.
    received: Vec<std::time::Instant>,
    /// A write another client makes just before the next PATCH of (collection, namespace, name).
    interference: Option<((String, String, String), Value)>,
    /// Requests starting with this (`PUT /apis/...`) get no answer until released.
    hold: Option<String>,
    /// Requests starting with this are answered 500 at once while set.
    refuse: Option<String>,
    /// Collections whose lists and watches fail (500) while set.
    failing: std::collections::BTreeSet<String>,
    /// Each eviction asked, as (namespace/name, `deleteOptions.gracePeriodSeconds`).
    eviction_graces: Vec<(String, Option<i64>)>,
}

/// The API server; cheap to clone.
#[derive(Clone)]
pub struct KubeApi {
    pub addr: SocketAddr,
    store: Arc<Mutex<Store>>,
    changes: broadcast::Sender<Change>,
    /// Ends the open watches of a collection.
    kills: broadcast::Sender<String>,
}

/// Collection paths of the resources ferroscale uses.
pub const PODS: &str = "/api/v1/pods";
pub const NODES: &str = "/api/v1/nodes";
pub const CONFIGMAPS: &str = "/api/v1/configmaps";
pub const PDBS: &str = "/apis/policy/v1/poddisruptionbudgets";
pub const DAEMONSETS: &str = "/apis/apps/v1/daemonsets";
pub const LEASES: &str = "/apis/coordination.k8s.io/v1/leases";
pub const EVENTS: &str = "/apis/events.k8s.io/v1/events";
pub const CLAIMS: &str = "/api/v1/persistentvolumeclaims";
pub const VOLUMES: &str = "/api/v1/persistentvolumes";
pub const CLASSES: &str = "/apis/storage.k8s.io/v1/storageclasses";
pub const CSINODES: &str = "/apis/storage.k8s.io/v1/csinodes";
pub const REPLICASETS: &str = "/apis/apps/v1/replicasets";
pub const PRIORITYCLASSES: &str = "/apis/scheduling.k8s.io/v1/priorityclasses";
pub const NAMESPACES: &str = "/api/v1/namespaces";
/// metrics-server's usage (an aggregated API; served here as any other collection).
pub const NODE_METRICS: &str = "/apis/metrics.k8s.io/v1beta1/nodes";
pub const POD_METRICS: &str = "/apis/metrics.k8s.io/v1beta1/pods";
pub const REPLICATION_CONTROLLERS: &str = "/api/v1/replicationcontrollers";

mod eviction;
mod faults;
mod list;
mod rbac;
mod wire;

pub use rbac::{assert_permitted, assert_permitted_by};
use wire::*;

impl Store {
    fn record(&mut self, collection: &str, namespace: &str, kind: &'static str, obj: Value) {
        self.log
            .push((self.rv, collection.into(), namespace.into(), kind, obj));
    }

    /// Stores `obj` with a new resourceVersion (and uid, creationTimestamp on create).
    fn write(&mut self, collection: &str, namespace: &str, mut obj: Value) -> Value {
        self.rv += 1;
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let key = (collection.to_string(), namespace.to_string(), name.clone());
        let existed = self.objects.contains_key(&key);
        let meta = obj["metadata"].as_object_mut().unwrap();
        meta.insert("resourceVersion".into(), json!(self.rv.to_string()));
        if !namespace.is_empty() {
            meta.insert("namespace".into(), json!(namespace));
        }
        if !existed {
            meta.entry("uid")
                .or_insert(json!(format!("uid-{name}-{}", self.rv)));
            meta.entry("creationTimestamp")
                .or_insert(json!("2026-11-23T00:00:00Z"));
        }
        obj["kind"] = json!(kind_of(collection));
        obj["apiVersion"] = json!(api_version_of(collection));
        self.objects.insert(key, obj.clone());
        let kind = if existed { "MODIFIED" } else { "ADDED" };
        self.record(collection, namespace, kind, obj.clone());
        obj
    }

    fn delete(&mut self, collection: &str, namespace: &str, name: &str) -> Option<Value> {
        let obj = self
            .objects
            .remove(&(collection.into(), namespace.into(), name.into()))?;
        self.rv += 1;
        self.record(collection, namespace, "DELETED", obj.clone());
        Some(obj)
    }
}

impl KubeApi {
    /// Starts the server on a free loopback port.
    pub async fn start() -> KubeApi {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (changes, _) = broadcast::channel(4096);
        let (kills, _) = broadcast::channel(16);
        let api = KubeApi {
            addr: listener.local_addr().unwrap(),
            store: Arc::default(),
            changes,
            kills,
        };
        let served = api.clone();
        let router = Router::new().fallback(move |method: Method, uri: Uri, body: Bytes| {
            let api = served.clone();
            async move { api.handle(method, uri, body).await }
        });
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        api
    }

    /// A kubeconfig file pointing at this server.
    pub fn kubeconfig(&self, dir: &Path) -> PathBuf {
        let path = dir.join("kubeconfig");
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://{}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\ncurrent-context: fake\nusers:\n- name: fake\n  user:\n    token: test\n",
                self.addr
            ),
        )
        .unwrap();
        path
    }

    /// A kube client for this server.
    pub fn client(&self) -> kube::Client {
        let mut config = kube::Config::new(format!("http://{}", self.addr).parse().unwrap());
        config.default_retry = false; // as `ferroscale run` builds its client
        kube::Client::try_from(config).unwrap()
    }

    /// Creates or replaces an object as a controller or the kubelet would (watchers see it).
    pub fn put(&self, collection: &str, obj: Value) -> Value {
        let ns = obj["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let mut s = self.store.lock().unwrap();
        let out = s.write(collection, &ns, obj);
        let change = s.log.last().cloned().unwrap();
        drop(s);
        let _ = self.changes.send(change);
        out
    }

    /// Deletes an object as a controller would (watchers see it).
    pub fn delete(&self, collection: &str, namespace: &str, name: &str) {
        let mut s = self.store.lock().unwrap();
        s.delete(collection, namespace, name)
            .expect("object to delete");
        let change = s.log.last().cloned().unwrap();
        drop(s);
        let _ = self.changes.send(change);
    }

    /// Changes an object in place (as a JSON merge patch would).
    pub fn update(&self, collection: &str, namespace: &str, name: &str, patch: Value) -> Value {
        let mut obj = self
            .get(collection, namespace, name)
            .expect("object to update");
        merge(&mut obj, &patch);
        self.put(collection, obj)
    }

    /// An object, if it exists.
    pub fn get(&self, collection: &str, namespace: &str, name: &str) -> Option<Value> {
        let s = self.store.lock().unwrap();
        s.objects
            .get(&(collection.into(), namespace.into(), name.into()))
            .cloned()
    }

    /// Every object of a collection.
    pub fn list(&self, collection: &str) -> Vec<Value> {
        let s = self.store.lock().unwrap();
        s.objects
            .iter()
            .filter(|((c, _, _), _)| c == collection)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Makes another client's change (a merge patch) land just before the next PATCH of the object, as a
    /// kubelet status update racing a controller would: that PATCH then carries a stale resourceVersion.
    pub fn interfere_before_next_patch(
        &self,
        collection: &str,
        namespace: &str,
        name: &str,
        change: Value,
    ) {
        self.store.lock().unwrap().interference =
            Some(((collection.into(), namespace.into(), name.into()), change));
    }

    /// Each eviction asked so far: the pod (namespace/name) and the grace period it was given.
    pub fn eviction_graces(&self) -> Vec<(String, Option<i64>)> {
        self.store.lock().unwrap().eviction_graces.clone()
    }

    /// Requests received so far, as `METHOD path?query`.
    pub fn requests(&self) -> Vec<String> {
        self.store.lock().unwrap().requests.clone()
    }

    /// Waits until `pred` holds, up to 10 seconds.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&KubeApi) -> bool) {
        for _ in 0..200 {
            if pred(self) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "timed out waiting for {what}; requests: {:#?}",
            self.requests()
        );
    }

    /// Events (events.k8s.io) with this reason, as (regarding name, note).
    pub fn events(&self, reason: &str) -> Vec<(String, String)> {
        self.list(EVENTS)
            .into_iter()
            .filter(|e| e["reason"] == reason)
            .map(|e| {
                (
                    e["regarding"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    e["note"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    async fn handle(&self, method: Method, uri: Uri, body: Bytes) -> Response {
        let request = format!("{method} {uri}");
        {
            let mut s = self.store.lock().unwrap();
            s.requests.push(request.clone());
            s.received.push(std::time::Instant::now());
        }
        let held = || {
            let s = self.store.lock().unwrap();
            s.hold.as_deref().is_some_and(|h| request.starts_with(h))
        };
        while held() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let refused = {
            let s = self.store.lock().unwrap();
            s.refuse.as_deref().is_some_and(|r| request.starts_with(r))
        };
        if refused {
            return status(500, "InternalError", "refused by the test".into());
        }
        let Some(t) = parse_path(uri.path()) else {
            return status(404, "NotFound", format!("no route {}", uri.path()));
        };
        if method == Method::GET
            && t.name.is_none()
            && self.store.lock().unwrap().failing.contains(&t.collection)
        {
            return status(500, "InternalError", "the watch cache is broken".into());
        }
        let q = query(&uri);
        let parsed: Option<Value> = serde_json::from_slice(&body).ok();
        match (method, t.name.as_deref(), t.sub.as_deref()) {
            (Method::GET, None, _) if q.get("watch").map(String::as_str) == Some("true") => {
                self.watch(&t, &q)
            }
            (Method::GET, None, _) => self.list_response(&t, &q),
            (Method::GET, Some(name), None) => match self.get(&t.collection, &t.namespace, name) {
                Some(v) => json_response(200, &v),
                None => status(
                    404,
                    "NotFound",
                    format!("{} {name:?} not found", t.collection),
                ),
            },
            (Method::POST, None, _) => {
                let Some(obj) = parsed else {
                    return status(400, "BadRequest", "body is not JSON".into());
                };
                let name = obj["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                if self.get(&t.collection, &t.namespace, &name).is_some() {
                    return status(409, "AlreadyExists", format!("{name:?} already exists"));
                }
                json_response(201, &self.put_in(&t, obj))
            }
            (Method::POST, Some(name), Some("eviction")) => {
                self.evict(&t.namespace, name, parsed.as_ref())
            }
            (Method::PUT, Some(name), None) => {
                let Some(obj) = parsed else {
                    return status(400, "BadRequest", "body is not JSON".into());
                };
                let Some(current) = self.get(&t.collection, &t.namespace, name) else {
                    return status(404, "NotFound", format!("{name:?} not found"));
                };
                if let Some(rv) = obj["metadata"]["resourceVersion"].as_str() {
                    if Some(rv) != current["metadata"]["resourceVersion"].as_str() {
                        return status(409, "Conflict", format!("Operation cannot be fulfilled on {name:?}: the object has been modified; please apply your changes to the latest version and try again"));
                    }
                }
                json_response(200, &self.put_in(&t, obj))
            }
            (Method::PATCH, Some(name), None) => {
                let key = (t.collection.clone(), t.namespace.clone(), name.to_string());
                let racing = {
                    let mut s = self.store.lock().unwrap();
                    match s.interference.take() {
                        Some((k, change)) if k == key => Some(change),
                        other => {
                            s.interference = other;
                            None
                        }
                    }
                };
                if let Some(change) = racing {
                    self.update(&t.collection, &t.namespace, name, change);
                }
                let Some(patch) = parsed else {
                    return status(400, "BadRequest", "body is not JSON".into());
                };
                let Some(mut current) = self.get(&t.collection, &t.namespace, name) else {
                    return status(404, "NotFound", format!("{name:?} not found"));
                };
                if let Some(rv) = patch["metadata"]["resourceVersion"].as_str() {
                    if Some(rv) != current["metadata"]["resourceVersion"].as_str() {
                        return status(409, "Conflict", format!("Operation cannot be fulfilled on {name:?}: the object has been modified"));
                    }
                }
                merge(&mut current, &patch);
                json_response(200, &self.put_in(&t, current))
            }
            (Method::DELETE, Some(name), None) => {
                let removed = {
                    let mut s = self.store.lock().unwrap();
                    let r = s.delete(&t.collection, &t.namespace, name);
                    r.map(|o| (o, s.log.last().cloned().unwrap()))
                };
                match removed {
                    Some((o, change)) => {
                        let _ = self.changes.send(change);
                        json_response(200, &o)
                    }
                    None => status(404, "NotFound", format!("{name:?} not found")),
                }
            }
            (m, _, _) => status(405, "MethodNotAllowed", format!("{m} not supported here")),
        }
    }

    fn put_in(&self, t: &Target, mut obj: Value) -> Value {
        if !t.namespace.is_empty() {
            obj["metadata"]["namespace"] = json!(t.namespace);
        }
        self.put(&t.collection, obj)
    }

    /// Events of the collection after `resourceVersion`, then live ones, one JSON object per line.
    fn watch(&self, t: &Target, q: &BTreeMap<String, String>) -> Response {
        let from: u64 = q
            .get("resourceVersion")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut live = self.changes.subscribe();
        let mut kills = self.kills.subscribe();
        // Checked again after subscribing: a `fail_watches` between the caller's check and the subscription
        // would otherwise leave this watch healthy.
        if self.store.lock().unwrap().failing.contains(&t.collection) {
            return status(500, "InternalError", "the watch cache is broken".into());
        }
        let backlog: Vec<Change> = {
            let s = self.store.lock().unwrap();
            s.log.iter().filter(|c| c.0 > from).cloned().collect()
        };
        let (collection, namespace) = (t.collection.clone(), t.namespace.clone());
        let fields = q.get("fieldSelector").cloned();
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(256);
        tokio::spawn(async move {
            let wanted = |c: &Change| {
                c.1 == collection
                    && (namespace.is_empty() || c.2 == namespace)
                    && fields_match(&c.4, fields.as_ref())
            };
            let line = |c: &Change| {
                Ok(Bytes::from(format!(
                    "{}\n",
                    json!({ "type": c.3, "object": c.4 })
                )))
            };
            let mut last = from;
            for c in backlog.iter().filter(|c| wanted(c)) {
                last = c.0;
                if tx.send(line(c)).await.is_err() {
                    return;
                }
            }
            loop {
                tokio::select! {
                    kill = kills.recv() => {
                        if kill.as_deref().map_or(true, |k| *k == collection) {
                            return;
                        }
                    }
                    c = live.recv() => {
                        let Ok(c) = c else { return };
                        if c.0 > last && wanted(&c) {
                            last = c.0;
                            if tx.send(line(&c)).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            }
        });
        Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "application/json")
            .body(Body::from_stream(
                tokio_stream::wrappers::ReceiverStream::new(rx),
            ))
            .unwrap()
    }
}
