//! The priority expander's ConfigMap, read as upstream reads it: `cluster-autoscaler-priority-expander` in
//! ferroscale's namespace, its `priorities` key holding the same YAML as `--priority-config` (priority →
//! group-name regexes). One watch of that object alone (a list and a watch with a `metadata.name` field
//! selector), so a change applies at the next loop without an API call per loop.
//!
//! A ConfigMap that cannot be used (no `priorities` key, bad YAML or regex) keeps the last good tiers,
//! where upstream stops filtering; it is logged and reported once per version for the loop to tell
//! (upstream's `PriorityConfigMapInvalid` event). No ConfigMap means no tiers: every option is kept for
//! the next strategy, as upstream does.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kube::runtime::watcher::watch_object;
use kube::{Api, Client, ResourceExt};
use parking_lot::{Mutex, RwLock};
use tokio::sync::watch;
use tokio_stream::StreamExt;

use super::watch::WATCH_RETRY;
use crate::engine::expander::Priorities;
use crate::error::{Error, Result};

/// The ConfigMap's name (upstream's `PriorityConfigMapName`).
pub const CONFIG_MAP: &str = "cluster-autoscaler-priority-expander";
/// The key holding the tiers (upstream's `ConfigMapKey`).
pub const KEY: &str = "priorities";

/// The tiers a ConfigMap holds, or why it holds none usable.
pub fn tiers_of(cm: &ConfigMap) -> std::result::Result<Priorities, String> {
    let text = cm
        .data
        .as_ref()
        .and_then(|d| d.get(KEY))
        .ok_or_else(|| format!("ConfigMap {CONFIG_MAP} has no {KEY:?} key"))?;
    if text.trim().is_empty() {
        return Err(format!("ConfigMap {CONFIG_MAP}: {KEY:?} is empty"));
    }
    Priorities::parse(text).map_err(|e| format!("ConfigMap {CONFIG_MAP}: {e}"))
}

/// A ConfigMap that could not be used, for the loop to report.
#[derive(Debug, Clone)]
pub struct Problem {
    /// The ConfigMap, for an event about it.
    pub regarding: ObjectReference,
    pub message: String,
}

/// The tiers as the ConfigMap says now, kept current by a watch; cheap to clone.
#[derive(Clone)]
pub struct PriorityWatch {
    tiers: Arc<RwLock<Priorities>>,
    problems: Arc<Mutex<Vec<Problem>>>,
    broken: Arc<Mutex<Option<String>>>,
    synced: watch::Receiver<bool>,
}

/// What the watch keeps between events.
struct State {
    tiers: Arc<RwLock<Priorities>>,
    problems: Arc<Mutex<Vec<Problem>>>,
    /// Why the ConfigMap as it is now is not in use, if it is not.
    broken: Arc<Mutex<Option<String>>>,
    /// The resourceVersion last read (a watch that starts over lists the same version again).
    seen: Option<Option<String>>,
}

impl State {
    /// Takes in what the watch says the ConfigMap is now (`None`: there is none).
    fn apply(&mut self, cm: Option<ConfigMap>) {
        let version = cm
            .as_ref()
            .map(|c| c.resource_version().unwrap_or_default());
        if self.seen.as_ref() == Some(&version) {
            return;
        }
        self.seen = Some(version);
        let mut broken = self.broken.lock();
        *broken = None;
        let tiers = match cm {
            None => {
                tracing::info!(
                    config_map = CONFIG_MAP,
                    "no priority ConfigMap: the priority expander keeps every option"
                );
                Priorities::default()
            }
            Some(cm) => match tiers_of(&cm) {
                Ok(tiers) => {
                    tracing::info!(config_map = CONFIG_MAP, "priorities loaded");
                    tiers
                }
                Err(message) => {
                    *broken = Some(message.clone());
                    tracing::warn!(config_map = CONFIG_MAP, error = %message, "bad priority ConfigMap; keeping the last good priorities");
                    self.problems.lock().push(Problem {
                        regarding: ObjectReference {
                            api_version: Some("v1".into()),
                            kind: Some("ConfigMap".into()),
                            name: cm.metadata.name.clone(),
                            namespace: cm.metadata.namespace.clone(),
                            uid: cm.metadata.uid.clone(),
                            resource_version: cm.metadata.resource_version.clone(),
                            ..Default::default()
                        },
                        message: format!("{message}; keeping the last good priorities"),
                    });
                    return;
                }
            },
        };
        *self.tiers.write() = tiers;
    }
}

impl PriorityWatch {
    /// Starts watching the ConfigMap in `namespace`. After a failure the watch starts over with a full
    /// list (with backoff); the tiers stay as they were meanwhile.
    pub fn start(client: &Client, namespace: &str) -> Self {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let tiers = Arc::new(RwLock::new(Priorities::default()));
        let problems = Arc::new(Mutex::new(Vec::new()));
        let broken = Arc::new(Mutex::new(None));
        let (synced_tx, synced) = watch::channel(false);
        let mut state = State {
            tiers: tiers.clone(),
            problems: problems.clone(),
            broken: broken.clone(),
            seen: None,
        };
        tokio::spawn(async move {
            let mut retries = WATCH_RETRY.retries();
            loop {
                let mut stream = std::pin::pin!(watch_object(api.clone(), CONFIG_MAP));
                while let Some(event) = stream.next().await {
                    match event {
                        // The API server filters by name; an answer that did not is not ours.
                        Ok(Some(cm)) if cm.name_any() != CONFIG_MAP => {}
                        Ok(cm) => {
                            state.apply(cm);
                            synced_tx.send_replace(true);
                            retries.reset();
                        }
                        Err(e) => {
                            tracing::warn!(config_map = CONFIG_MAP, error = %e, "priority ConfigMap watch failed; keeping the priorities until it lists again");
                            break;
                        }
                    }
                }
                tokio::time::sleep(retries.next_pause()).await;
            }
        });
        PriorityWatch {
            tiers,
            problems,
            broken,
            synced,
        }
    }

    /// The tiers, shared: replaced whenever the ConfigMap changes to something usable.
    pub fn tiers(&self) -> Arc<RwLock<Priorities>> {
        self.tiers.clone()
    }

    /// Why the ConfigMap as it is now is not in use (the last good tiers are), if it is not.
    pub fn broken(&self) -> Option<String> {
        self.broken.lock().clone()
    }

    /// ConfigMaps found unusable since the last call.
    pub fn take_problems(&self) -> Vec<Problem> {
        std::mem::take(&mut *self.problems.lock())
    }

    /// Waits until the ConfigMap has been read once (or found missing), or `timeout` fails first.
    pub async fn ready(&self, timeout: impl std::future::Future<Output = ()>) -> Result<()> {
        let mut synced = self.synced.clone();
        tokio::select! {
            r = synced.wait_for(|s| *s) => r.map(|_| ()).map_err(|_| Error::task("the priority ConfigMap watch", "stopped")),
            _ = timeout => Err(Error::KubernetesTimeout {
                call: format!("the first list of ConfigMap {CONFIG_MAP}"),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(data: Option<&str>, version: &str) -> ConfigMap {
        ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some(CONFIG_MAP.into()),
                namespace: Some("kube-system".into()),
                resource_version: Some(version.into()),
                ..Default::default()
            },
            data: data.map(|d| [(KEY.to_string(), d.to_string())].into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_bad_config_map_keeps_the_last_good_tiers_and_is_reported_once() {
        let mut state = State {
            tiers: Arc::default(),
            problems: Arc::default(),
            broken: Arc::default(),
            seen: None,
        };
        let of = |s: &State| s.tiers.read().of("spot-a");
        state.apply(Some(cm(Some("10: ['^spot-.*']\n1: ['.*']"), "1")));
        assert_eq!(of(&state), Some(10));
        state.apply(Some(cm(Some("10: ['(']"), "2")));
        state.apply(Some(cm(Some("10: ['(']"), "2")));
        assert_eq!(of(&state), Some(10), "the last good tiers stay");
        assert!(state.broken.lock().is_some());
        let problems = std::mem::take(&mut *state.problems.lock());
        assert_eq!(problems.len(), 1, "once per version");
        assert!(
            problems[0].message.contains("priorities[10]"),
            "{problems:?}"
        );
        state.apply(Some(cm(None, "3")));
        assert!(state.problems.lock()[0]
            .message
            .contains("no \"priorities\" key"));
        state.apply(None);
        assert_eq!(of(&state), None, "no ConfigMap, no tiers");
        assert!(state.broken.lock().is_none());
    }
}
