//! The twin harness: one scenario run through `simulate` (a `Simulation`) and through `run` (a `Runner`
//! against the loopback Kubernetes API), loop by loop on the same virtual clock. The `run` side's
//! cluster moves as the simulated one does — the same kubelet, scheduler and node lifecycle
//! (`Simulation::cluster_moves`, `SimCluster::forget_gone`), mirrored into the API before each loop, and
//! the API's evictions mirrored back after it — so any difference between the two sides' decisions is a
//! difference between how `run` and `simulate` decide or act.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferroscale::cloud::memory::MemoryConfig;
use ferroscale::engine::taints::TaintConfig;
use ferroscale::engine::{Decisions, Settings};
use ferroscale::k8s::documents;
use ferroscale::k8s::index::Index;
use ferroscale::model::lifecycle::{DisruptionReason, Noticed};
use ferroscale::model::workload::{Node, Pod};
use ferroscale::pricing::PriceOverrides;
use ferroscale::run::interruptions::nodes_by_instance;
use ferroscale::run::Notices;
use ferroscale::simulate::{parse_events, LoopReport, Pacing, Scheduled, Simulation};
use serde_json::{json, Value};

use super::kube_api::{KubeApi, NODES, PDBS, PODS};
use super::run_harness::{run_settings, Harness};

/// A scenario: the groups (memory cloud), the cluster's objects (`kind` set on each), the settings and
/// how many loops of how long.
pub struct Scenario {
    pub groups: &'static str,
    pub objects: Vec<Value>,
    pub settings: Settings,
    pub loops: u32,
    pub pacing: Pacing,
    /// `simulate --events` as written (EventBridge events at times); `run` gets them as notices.
    pub events: &'static str,
}

/// What one loop decided, as both sides are compared: scale-ups (group, delta), removals (node, group,
/// reason), replacements (group, delta), instances deleted and capacity given up (group, count), and
/// the nodes per group after the loop.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Step {
    pub scale_up: Vec<(String, i32)>,
    pub removed: Vec<(String, String, String)>,
    pub replacements: Vec<(String, i32)>,
    pub deleted_instances: Vec<String>,
    pub cancelled: Vec<(String, i32)>,
    /// Nodes taken out on a notice: (node, why).
    pub disrupted: Vec<(String, String)>,
    pub nodes: BTreeMap<String, usize>,
}

impl Step {
    /// A loop of `simulate` (or of a replay), as the twins are compared.
    pub fn of_report(r: &LoopReport) -> Step {
        Step {
            scale_up: r
                .scale_up
                .iter()
                .map(|u| (u.group.clone(), u.delta))
                .collect(),
            removed: r
                .scale_down
                .iter()
                .map(|d| (d.node.clone(), d.group.clone(), d.reason.clone()))
                .collect(),
            replacements: r
                .replacements
                .iter()
                .map(|x| (x.group.clone(), x.delta))
                .collect(),
            deleted_instances: r
                .delete_instances
                .iter()
                .map(|i| i.instance.clone())
                .collect(),
            cancelled: r
                .cancel
                .iter()
                .map(|c| (c.group.clone(), c.count))
                .collect(),
            disrupted: r
                .disruptions
                .iter()
                .map(|x| (x.node.clone(), x.reason.clone()))
                .collect(),
            nodes: r.nodes.clone(),
        }
    }

    fn of_decisions(d: &Decisions, nodes: BTreeMap<String, usize>) -> Step {
        Step {
            scale_up: d
                .scale_up
                .iter()
                .map(|u| (u.group.clone(), u.delta))
                .collect(),
            removed: d
                .scale_down
                .iter()
                .map(|s| (s.node.clone(), s.group.clone(), s.reason.to_string()))
                .collect(),
            replacements: d
                .replacements
                .iter()
                .map(|x| (x.group.clone(), x.delta))
                .collect(),
            deleted_instances: d
                .delete_instances
                .iter()
                .map(|i| i.instance.clone())
                .collect(),
            cancelled: d
                .cancel
                .iter()
                .map(|c| (c.group.clone(), c.count))
                .collect(),
            disrupted: d
                .disruptions
                .iter()
                .map(|x| (x.node.clone(), x.reason.to_string()))
                .collect(),
            nodes,
        }
    }
}

fn simulation(s: &Scenario) -> Simulation {
    let dump = json!({"apiVersion": "v1", "kind": "List", "items": s.objects}).to_string();
    let objects = documents::parse(&dump, "twin.json").unwrap();
    let config = MemoryConfig::parse(s.groups).unwrap();
    let mut sim = Simulation::new(&objects, &config, &PriceOverrides::default()).unwrap();
    sim.set_events(parse_events(s.events).unwrap(), false);
    sim
}

/// The scenario's events as `run` learns of them: each notice when the virtual clock reaches it, its
/// node marked until it is gone (as the interruption queue's inbox does).
struct Scripted {
    due: VecDeque<Scheduled>,
    /// Seconds since the scenario started, set before each loop.
    elapsed: Arc<AtomicI64>,
    marked: Noticed,
}

#[async_trait::async_trait]
impl Notices for Scripted {
    fn interrupted(
        &mut self,
        index: &Index,
        node_groups: &HashMap<String, String>,
    ) -> HashMap<String, DisruptionReason> {
        let elapsed = self.elapsed.load(Ordering::Relaxed);
        let nodes = nodes_by_instance(index, node_groups);
        while self.due.front().is_some_and(|e| e.at <= elapsed) {
            for n in self.due.pop_front().unwrap().notices {
                if let Some(node) = nodes.get(n.instance_id.as_str()) {
                    self.marked.note(node, &n.kind);
                }
            }
        }
        self.marked.due(ferroscale::time::unix_now(), |node| {
            index.nodes.get(node).is_some()
        })
    }

    async fn acknowledge(&mut self, _dry_run: bool) {}
}

/// The scenario through `simulate`: each loop's step.
pub fn through_simulate(s: &Scenario) -> Vec<Step> {
    let mut sim = simulation(s);
    (0..s.loops)
        .map(|_| Step::of_report(&sim.step(&s.settings, &s.pacing)))
        .collect()
}

/// What a test does beside `run` as the virtual clock passes (the plain twin test does nothing): the
/// cluster's own changes (pods its controllers create and delete) and what else watches the API.
#[async_trait::async_trait]
pub trait Script: Send {
    /// Before the loop `elapsed` seconds after the start: changes the world's pods (a pod created
    /// is also put in `objects`, by `namespace/name`, as the API is to hold it). The world's kubelet and
    /// scheduler run next, and the API is brought up to date.
    fn before_loop(
        &mut self,
        _elapsed: i64,
        _world: &Simulation,
        _objects: &mut HashMap<String, Value>,
    ) {
    }

    /// The API holds the cluster as it starts, at `now`; the runner has not run yet.
    async fn started(&mut self, _api: &KubeApi, _now: i64) {}

    /// The API holds the cluster as the loop at `now` starts: the runner's watches saw everything up
    /// to the node and pod called `sentinel`, written and deleted last. The loop runs next.
    async fn synced(&mut self, _api: &KubeApi, _now: i64, _sentinel: &str) {}
}

/// No script.
impl Script for () {}

/// The scenario through `run` against the loopback API: each loop's step.
pub async fn through_run(s: &Scenario) -> Vec<Step> {
    through_run_with(s, &mut ()).await
}

/// The scenario through `run`, `script` changing the cluster and watching beside it.
pub async fn through_run_with(s: &Scenario, script: &mut impl Script) -> Vec<Step> {
    // The world the runner acts on: the same cloud (adopting the same nodes) and cluster mechanics.
    let mut world = simulation(s);
    let api = KubeApi::start().await;
    let mut mirror = Mirror::default();
    for o in &s.objects {
        match o["kind"].as_str() {
            Some("PodDisruptionBudget") => {
                api.put(PDBS, o.clone());
            }
            Some("Pod") => {
                let key = format!(
                    "{}/{}",
                    o["metadata"]["namespace"].as_str().unwrap(),
                    o["metadata"]["name"].as_str().unwrap()
                );
                mirror.pods.insert(key, o.clone());
            }
            _ => {}
        }
    }
    mirror.sync(&world, &api, &s.settings.taints);
    let run = ferroscale::run::RunSettings {
        scan_interval: s.pacing.scan_interval,
        ..run_settings()
    };
    let mut h = Harness::with_cloud(api, world.cloud(), s.settings.clone(), run).await;
    let elapsed = Arc::new(AtomicI64::new(0));
    h.runner.set_interruptions(Scripted {
        due: parse_events(s.events).unwrap().into(),
        elapsed: elapsed.clone(),
        marked: Noticed::default(),
    });
    let start = world.now();
    script.started(&h.api, start).await;
    let mut steps = Vec::new();
    for _ in 0..s.loops {
        elapsed.store(world.now() - start, Ordering::Relaxed);
        script.before_loop(world.now() - start, &world, &mut mirror.pods);
        world.cluster_moves(h.runner.memory(), &s.pacing, &s.settings.taints);
        mirror.sync(&world, &h.api, &s.settings.taints);
        let sentinel = mirror.caught_up(&h).await;
        let now = world.now();
        script.synced(&h.api, now, &sentinel).await;
        let d = h.runner.run_once(now).await.unwrap();
        let failed: Vec<String> = h
            .runner
            .settle()
            .await
            .into_iter()
            .filter_map(Result::err)
            .collect();
        assert!(failed.is_empty(), "removals failed: {failed:?}");
        mirror.evicted(&world, &h.api);
        world.cluster().forget_gone(&*world.cloud());
        let nodes = {
            let state = world.cluster().state();
            let mut by_group = BTreeMap::new();
            for n in &state.nodes {
                let g = state.node_groups.get(&n.name).map_or("-", String::as_str);
                *by_group.entry(g.to_string()).or_default() += 1;
            }
            by_group
        };
        steps.push(Step::of_decisions(&d, nodes));
        world.set_now(now + s.pacing.scan_interval.as_secs().max(1) as i64);
    }
    steps
}

/// The API's copy of the simulated cluster.
#[derive(Default)]
struct Mirror {
    /// Pods as the scenario (or its script) wrote them, by `namespace/name`: put again when they move.
    pods: HashMap<String, Value>,
    /// What was last written: each node's readiness by name, and each pod's (node, unschedulable).
    nodes: HashMap<String, bool>,
    placed: HashMap<String, (Option<String>, bool)>,
    /// Sentinels written to know the watches caught up.
    sentinels: usize,
}

impl Mirror {
    /// Writes the simulated cluster's nodes and pods to the API where they differ.
    fn sync(&mut self, world: &Simulation, api: &KubeApi, taints: &TaintConfig) {
        let state = world.cluster().state();
        for n in &state.nodes {
            match self.nodes.insert(n.name.clone(), n.ready) {
                None => {
                    api.put(NODES, node_json(n));
                }
                // The kubelet made it Ready: its condition, and the taints it had only while starting
                // go (the runner's own taints on the API's copy stay).
                Some(was) if was != n.ready => {
                    let current = api.get(NODES, "", &n.name).expect("the node in the API");
                    let taints: Vec<Value> = current["spec"]["taints"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|t| {
                            let key = t["key"].as_str().unwrap_or_default();
                            let starting =
                                key == "node.kubernetes.io/not-ready" || taints.is_startup_key(key);
                            !starting || n.taints.iter().any(|k| k.key == key)
                        })
                        .cloned()
                        .collect();
                    let status = &node_json(n)["status"]["conditions"];
                    api.update(
                        NODES,
                        "",
                        &n.name,
                        json!({"spec": {"taints": taints}, "status": {"conditions": status}}),
                    );
                }
                Some(_) => {}
            }
        }
        let names: Vec<&str> = state.nodes.iter().map(|n| n.name.as_str()).collect();
        for gone in self.nodes.keys().filter(|n| !names.contains(&n.as_str())) {
            api.delete(NODES, "", gone);
        }
        self.nodes.retain(|n, _| names.contains(&n.as_str()));
        for p in &state.pods {
            let key = p.key();
            let placed = (p.node_name.clone(), p.meta.unschedulable);
            if self.placed.get(&key) == Some(&placed) {
                continue;
            }
            let template = self
                .pods
                .get(&key)
                .cloned()
                .unwrap_or_else(|| panic!("pod {key} not in the scenario"));
            api.put(PODS, pod_json(template, p));
            self.placed.insert(key, placed);
        }
        // Pods gone from the simulated cluster (deleted by their controller, or gone with their
        // node) leave the API.
        let live: HashSet<String> = state.pods.iter().map(|p| p.key()).collect();
        let gone: Vec<String> = self
            .placed
            .keys()
            .filter(|k| !live.contains(*k))
            .cloned()
            .collect();
        for key in gone {
            self.placed.remove(&key);
            let (ns, name) = key.split_once('/').expect("namespace/name");
            if api.get(PODS, ns, name).is_some() {
                api.delete(PODS, ns, name);
            }
        }
    }

    /// Pods the runner evicted (gone from the API) come back pending in the simulated cluster, as
    /// their controller recreates them.
    fn evicted(&mut self, world: &Simulation, api: &KubeApi) {
        let live: Vec<String> = api
            .list(PODS)
            .iter()
            .map(|p| {
                format!(
                    "{}/{}",
                    p["metadata"]["namespace"].as_str().unwrap(),
                    p["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect();
        let mut state = world.cluster().state();
        for p in state.pods.iter_mut() {
            let key = p.key();
            if !live.contains(&key) {
                Arc::make_mut(p).node_name = None;
                self.placed.remove(&key);
            }
        }
    }

    /// Waits until the runner's watches delivered everything written so far: a sentinel node and
    /// pod are written and deleted, and each watch (events in order) saw both. Returns their name.
    async fn caught_up(&mut self, h: &Harness) -> String {
        self.sentinels += 1;
        let name = format!("twin-sentinel-{}", self.sentinels);
        let key = format!("twin/{name}");
        h.api.put(NODES, json!({"metadata": {"name": name}}));
        h.api.put(PODS, json!({"metadata": {"name": name, "namespace": "twin"},
            "spec": {"containers": [{"name": "c", "image": "x"}]}, "status": {"phase": "Succeeded"}}));
        wait(|| h.watches.nodes.contains(&name) && h.watches.pods.contains(&key)).await;
        h.api.delete(NODES, "", &name);
        h.api.delete(PODS, "twin", &name);
        wait(|| !h.watches.nodes.contains(&name) && !h.watches.pods.contains(&key)).await;
        name
    }
}

async fn wait(done: impl Fn() -> bool) {
    for _ in 0..400 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the watches did not catch up");
}

/// RFC 3339 of Unix seconds.
fn timestamp(unix: i64) -> String {
    k8s_openapi::jiff::Timestamp::from_second(unix)
        .unwrap()
        .to_string()
}

fn node_json(n: &Node) -> Value {
    let quantities = |r: &ferroscale::model::Resources| {
        let mut q = json!({"cpu": format!("{}m", r.cpu_milli), "memory": r.memory.to_string(), "pods": r.pods.to_string()});
        if r.ephemeral_storage > 0 {
            q["ephemeral-storage"] = json!(r.ephemeral_storage.to_string());
        }
        for (k, v) in &r.extended {
            q[k] = json!(v.to_string());
        }
        q
    };
    let taints: Vec<Value> = n
        .taints
        .iter()
        .map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect.to_string()}))
        .collect();
    json!({
        "metadata": {"name": n.name, "labels": *n.labels, "creationTimestamp": timestamp(n.created)},
        "spec": {"providerID": n.provider_id, "taints": taints, "unschedulable": n.unschedulable},
        "status": {
            "allocatable": quantities(&n.allocatable),
            "capacity": quantities(&n.capacity),
            "conditions": [{"type": "Ready", "status": if n.ready { "True" } else { "False" },
                "lastTransitionTime": timestamp(n.ready_since)}],
        },
    })
}

fn pod_json(mut template: Value, p: &Pod) -> Value {
    template["spec"]["nodeName"] = json!(p.node_name);
    template["status"] = match (&p.node_name, p.meta.unschedulable) {
        (Some(_), _) => json!({"phase": "Running"}),
        (None, true) => json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}),
        (None, false) => json!({"phase": "Pending"}),
    };
    template
}
