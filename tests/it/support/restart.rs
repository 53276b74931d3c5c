//! The kill matrix's site (`run_restart`, `run_restart_more`): what survives a kill of `run` (the
//! loopback API server, the cloud behind a [`Gated`] wrapper, the process's settings), starting,
//! killing and restarting the process on it, running loops until the world settles, and the summary a
//! user would compare.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use ferroscale::cloud::memory::{MemoryCloud, MemoryConfig};
use ferroscale::cloud::Cloud;
use ferroscale::engine::Settings;
use ferroscale::k8s::index::Index;
use ferroscale::model::lifecycle::DisruptionReason;
use ferroscale::run::{Notices, RunSettings};
use ferroscale::time::unix_now as now;
use serde_json::json;

use super::fixtures::kube::node;
use super::gated::Gated;
use super::kube_api::{KubeApi, NODES, PDBS, PODS};
use super::run_harness::{has_deletion_taint, run_settings, Harness};

/// What survives a kill: the API server, the cloud, and how the process is configured.
pub struct Site {
    pub api: KubeApi,
    pub cloud: Arc<Gated>,
    pub settings: Settings,
    pub run: RunSettings,
    /// A notice the first process was told about (its message consumed since).
    pub notice: Option<(String, DisruptionReason)>,
}

/// Notices a queue delivered once: the first process sees them, a restarted one does not.
struct Once(HashMap<String, DisruptionReason>);

#[async_trait::async_trait]
impl Notices for Once {
    fn interrupted(
        &mut self,
        index: &Index,
        _groups: &HashMap<String, String>,
    ) -> HashMap<String, DisruptionReason> {
        self.0.retain(|n, _| index.nodes.get(n).is_some());
        self.0.clone()
    }

    async fn acknowledge(&mut self, _dry_run: bool) {}
}

impl Site {
    pub async fn new(api: KubeApi, groups: &str, settings: Settings, slow_evictions: bool) -> Site {
        let memory = MemoryCloud::new(&MemoryConfig::parse(groups).unwrap()).unwrap();
        let mut run = run_settings();
        if slow_evictions {
            // A drain blocked by a budget keeps retrying past the kill.
            run.drain.max_pod_eviction_time = Duration::from_secs(60);
        }
        Site {
            api,
            cloud: Gated::new(Arc::new(memory)),
            settings,
            run,
            notice: None,
        }
    }

    /// A process on this site, its watches synced with the API (not reconciled yet).
    pub async fn process(&self) -> Harness {
        Harness::with_cloud(
            self.api.clone(),
            self.cloud.clone(),
            self.settings.clone(),
            self.run.clone(),
        )
        .await
    }

    /// The run no kill interrupts, from the first process with `nodes` nodes and `pods` pods until
    /// `done`: the summary the killed runs are compared with.
    pub async fn uninterrupted(
        &self,
        nodes: usize,
        pods: usize,
        done: impl Fn(&Site) -> bool,
    ) -> String {
        let mut h = self.start().await;
        h.synced(nodes, pods).await;
        self.settle(&mut h, now(), done).await;
        self.summary()
    }

    /// The first process.
    pub async fn start(&self) -> Harness {
        let mut h = self.process().await;
        if let Some((n, r)) = &self.notice {
            h.runner
                .set_interruptions(Once(HashMap::from([(n.clone(), *r)])));
        }
        h.runner.start_acting(now()).await;
        h
    }

    /// Kills `h` (nothing it started is undone) and starts another process at `t`, which reconciles.
    pub async fn restart(&self, h: Harness, t: i64) -> Harness {
        drop(h);
        self.restart_dropped(t).await
    }

    /// Kills the process while its loop at `t` is stuck in a held call.
    pub async fn kill_in_loop(&self, mut h: Harness, t: i64) -> Harness {
        let task = tokio::spawn(async move {
            let _ = h.runner.run_once(t).await;
            h
        });
        self.cloud.reached().await;
        task.abort();
        assert!(task.await.is_err(), "the loop was killed in the held call");
        self.restart_dropped(t + 5).await
    }

    async fn restart_dropped(&self, t: i64) -> Harness {
        self.cloud.open();
        self.api.release();
        let mut h = self.process().await;
        h.synced_any().await;
        h.runner.start_acting(t).await;
        h
    }

    /// Runs loops from `t` (10 s apart, removals settled between) until `done` holds and two loops
    /// more, deleting node objects whose instance is gone (the cloud's node controller); the time
    /// reached.
    pub async fn settle(&self, h: &mut Harness, mut t: i64, done: impl Fn(&Site) -> bool) -> i64 {
        let mut last = None;
        for _ in 0..30 {
            self.forget_gone();
            h.synced_any().await;
            last = h.runner.run_once(t).await.ok();
            h.runner.settle().await;
            t += 10;
            if done(self) {
                // Two loops more: what was written from a stale view converges.
                for _ in 0..2 {
                    self.forget_gone();
                    h.synced_any().await;
                    let _ = h.runner.run_once(t).await;
                    h.runner.settle().await;
                    t += 10;
                }
                return t;
            }
        }
        let why = last.map(|d| {
            (
                d.unremovable,
                d.consolidation_declined,
                d.consolidation_waits,
            )
        });
        panic!("not settled: {}\nlast loop: {why:#?}", self.summary());
    }

    /// Deletes the node objects whose instance the cloud no longer has.
    pub fn forget_gone(&self) {
        let snapshot = self.cloud.snapshot();
        for n in self.api.list(NODES) {
            let id = n["spec"]["providerID"].as_str().unwrap_or_default();
            if snapshot.group_for_provider_id(id).is_none() {
                self.api
                    .delete(NODES, "", n["metadata"]["name"].as_str().unwrap());
            }
        }
    }

    /// Joins the group's instances that have no node yet as ready nodes created at `created`.
    pub fn join(&self, created: i64) -> Vec<String> {
        let known: Vec<String> = self
            .api
            .list(NODES)
            .iter()
            .map(|n| {
                n["spec"]["providerID"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        let mut joined = Vec::new();
        for g in self.cloud.snapshot().groups() {
            for i in g.instances.iter().filter(|i| !known.contains(&i.id)) {
                let name = format!("new-{}", i.id.rsplit('/').next().unwrap());
                // As big as its group's template says.
                let t = &g.template.capacity;
                let (cpu, memory) = (format!("{}m", t.cpu_milli), format!("{}", t.memory));
                let mut n = node(&name, &i.id, &cpu, &memory);
                n["metadata"]["creationTimestamp"] =
                    json!(k8s_openapi::jiff::Timestamp::from_second(created)
                        .unwrap()
                        .to_string());
                self.api.put(NODES, n);
                joined.push(name);
            }
        }
        joined
    }

    /// What a user sees once things settled: group size, nodes with their marks, pods left.
    pub fn summary(&self) -> String {
        let mut out = BTreeMap::new();
        for g in self.cloud.snapshot().groups() {
            out.insert(
                format!("group {}", g.id),
                format!("target {} instances {}", g.target_size, g.instances.len()),
            );
        }
        for n in self.api.list(NODES) {
            let name = n["metadata"]["name"].as_str().unwrap().to_string();
            // A surge node's claim is bookkeeping, written by whichever loop first sees the node as
            // claimed: left out.
            let intent = n["metadata"]["annotations"]["ferroscale.io/intent"]
                .as_str()
                .map(|i| serde_json::from_str::<serde_json::Value>(i).unwrap()["action"].clone())
                .filter(|a| a != "surge");
            out.insert(
                format!(
                    "node {}",
                    if name.starts_with("new-") {
                        "new"
                    } else {
                        &name
                    }
                ),
                format!(
                    "tainted {} cordoned {} intent {:?}",
                    has_deletion_taint(&self.api, &name),
                    n["spec"]["unschedulable"] == true,
                    intent
                ),
            );
        }
        let mut pods: Vec<String> = self
            .api
            .list(PODS)
            .iter()
            .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        pods.sort();
        out.insert("pods".into(), pods.join(","));
        out.insert(
            "nodes asked for".into(),
            self.cloud.asked.load(Ordering::SeqCst).to_string(),
        );
        format!("{out:#?}")
    }
}

impl Harness {
    /// Waits until the watches caught up with the API (whatever it holds).
    pub async fn synced_any(&self) {
        let nodes = self.api.list(NODES).len();
        let pods = self.api.list(PODS).len();
        self.synced(nodes, pods).await;
    }
}

/// The count of `ferroscale_intents_reconciled_total{action,outcome}`.
pub fn reconciled(h: &Harness, action: &str, outcome: &str) -> u64 {
    let text = h.metrics.encode();
    let want = format!(
        "ferroscale_intents_reconciled_total{{action=\"{action}\",outcome=\"{outcome}\"}} "
    );
    text.lines()
        .find_map(|l| l.strip_prefix(&want))
        .map_or(0, |v| v.trim().parse().unwrap())
}

/// The node's `ferroscale.io/intent` annotation, as the API holds it.
pub fn intent_of(api: &KubeApi, node: &str) -> Option<String> {
    api.get(NODES, "", node)?["metadata"]["annotations"]["ferroscale.io/intent"]
        .as_str()
        .map(String::from)
}

/// Waits until `node` carries an intent.
pub async fn intent_written(api: &KubeApi, node: &str) {
    api.wait_for("the intent", |api| intent_of(api, node).is_some())
        .await;
}

/// Waits until exactly one of `pods` was evicted (the other refused by its budget, and retried).
pub async fn one_evicted(api: &KubeApi, pods: [&str; 2]) {
    api.wait_for("one pod evicted, the other held by its budget", |api| {
        pods.iter()
            .filter(|p| api.get(PODS, "default", p).is_none())
            .count()
            == 1
    })
    .await;
}

/// The `web` budget allows `n` disruptions now (its controller recomputed it).
pub fn allow(api: &KubeApi, n: i64) {
    api.update(
        PDBS,
        "default",
        "web",
        json!({"status": {"disruptionsAllowed": n}}),
    );
}
