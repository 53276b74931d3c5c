//! A trace recorded while `run` drove the memory cloud replays with the same decisions at the same
//! times: the twin test, over time. A workload scales out, a batch comes and goes, the workload scales
//! back in; `run` (against the loopback API, on the twin harness's virtual clock) scales up, removes the
//! empty nodes and consolidates the last underused one, while `ferroscale record`'s loop records the API
//! on the same clock. `simulate --trace` replays the recording with the start-up times it calibrates
//! from it, and each loop's decisions (scale-ups by group and delta, nodes removed and why, nodes per
//! group) equal those `run` made in the same loop, at the same time.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferroscale::cloud::memory::MemoryConfig;
use ferroscale::engine::Settings;
use ferroscale::k8s::record::Recorder;
use ferroscale::pricing::PriceOverrides;
use ferroscale::simulate::{calibrate, GroupCalibration, Pacing, Replay, Simulation, StartUp};
use ferroscale::trace::Writer;
use k8s_openapi::jiff::Timestamp;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use crate::support::kube_api::{KubeApi, NODES, PODS};
use crate::support::twin::{through_run_with, Scenario, Script, Step};

const START: i64 = 1_767_225_600; // 2026-01-01T00:00:00Z

const GROUPS: &str = r#"
nodeGroups:
  - {name: pool, minSize: 0, maxSize: 6, instances: [{id: i-a}],
     capacity: {cpu: 4, memory: 16Gi, pods: 20}, pricePerHour: 0.192}
"#;

fn rfc3339(unix: i64) -> String {
    Timestamp::from_second(unix).unwrap().to_string()
}

fn node(name: &str, instance: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "creationTimestamp": rfc3339(START),
            "labels": {"kubernetes.io/hostname": name, "ferroscale.io/node-group": "pool"}},
        "spec": {"providerID": format!("memory:///pool/{instance}")},
        "status": {
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "20"},
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "20"},
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": rfc3339(START)}],
        },
    })
}

/// A ReplicaSet's pod of `app`, created `at` seconds after the start, on `node` or not scheduled yet.
fn pod(name: &str, cpu: &str, app: &str, at: i64, node: Option<&str>) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app},
            "creationTimestamp": rfc3339(START + at),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-rs"),
                "uid": format!("{app}-rs-uid"), "controller": true}]},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "app",
            "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}]},
        "status": {"phase": if node.is_some() { "Running" } else { "Pending" }},
    })
}

/// What the workloads' controllers do, by seconds since the start: pods created, pods deleted.
enum Change {
    Create(Value),
    Delete(&'static str),
}

fn workloads() -> Vec<(i64, Change)> {
    let mut script = Vec::new();
    // The web deployment scales out from one replica to five (two fit beside the first, three do not).
    for k in 1..=4 {
        script.push((
            10,
            Change::Create(pod(&format!("web-{k}"), "1500m", "web", 10, None)),
        ));
    }
    // A batch of three pods that each need a node of its own, finished a minute later.
    for k in 0..3 {
        script.push((
            50,
            Change::Create(pod(&format!("batch-{k}"), "3", "batch", 50, None)),
        ));
    }
    for name in ["batch-0", "batch-1", "batch-2"] {
        script.push((100, Change::Delete(name)));
    }
    // The web deployment scales back in: the first node keeps only web-0.
    for name in ["web-1", "web-2"] {
        script.push((130, Change::Delete(name)));
    }
    script
}

/// The twins' settings: upstream's defaults, scale-down without waiting.
fn eager() -> Settings {
    let mut s = ferroscale::cli::flags::default_engine();
    s.defaults.scale_down_unneeded_time = Duration::ZERO;
    s.scale_down_delay_after_add = Duration::ZERO;
    s
}

fn scenario() -> Scenario {
    Scenario {
        groups: GROUPS,
        objects: vec![
            node("pool-a", "i-a"),
            pod("web-0", "500m", "web", 0, Some("pool-a")),
        ],
        settings: eager(),
        loops: 17,
        pacing: Pacing {
            loops: 0,
            scan_interval: Duration::from_secs(10),
            provision_delay: Duration::from_secs(20),
            node_ready_delay: Duration::from_secs(10),
            by_group: Default::default(),
        },
        events: "[]",
    }
}

/// `run`'s side of the twin: the workloads' changes made in the simulated cluster before each loop,
/// and `record`'s loop recording the API on the virtual clock. The clock reads a loop's time until the
/// recording has seen the cluster as that loop starts, then the next loop's: the loop's own writes
/// (taints, evictions, nodes deleted) come after its start and are replayed before the next loop.
struct Recording {
    changes: Vec<(i64, Change)>,
    path: PathBuf,
    clock: Arc<AtomicI64>,
    scan_interval: i64,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<JoinHandle<ferroscale::error::Result<ferroscale::k8s::record::Recorded>>>,
}

impl Recording {
    /// Waits until the recording holds every line naming `name` that `lines` says (a node and a pod
    /// each created and deleted: four).
    async fn holds(&self, name: &str, lines: usize) {
        let needle = format!("\"{name}\"");
        for _ in 0..1500 {
            let text = std::fs::read_to_string(&self.path).unwrap_or_default();
            if text.matches(&needle).count() >= lines {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the recording did not see {name}");
    }
}

#[async_trait::async_trait]
impl Script for Recording {
    fn before_loop(
        &mut self,
        elapsed: i64,
        world: &Simulation,
        objects: &mut HashMap<String, Value>,
    ) {
        let mut state = world.cluster().state();
        for (_, change) in self.changes.extract_if(.., |(at, _)| *at == elapsed) {
            match change {
                Change::Create(object) => {
                    let typed = serde_json::from_value(object.clone()).unwrap();
                    let model = ferroscale::k8s::objects::pod(&typed).unwrap();
                    objects.insert(model.key(), object);
                    state.pods.push(Arc::new(model));
                }
                Change::Delete(name) => state.pods.retain(|p| p.name != name),
            }
        }
    }

    async fn started(&mut self, api: &KubeApi, now: i64) {
        // The runner watches pods and nodes already: the recording's watches are those after.
        let watches = |api: &KubeApi, c: &str| {
            let prefix = format!("GET {c}?");
            let watch = |r: &&String| r.starts_with(&prefix) && r.contains("watch=true");
            api.requests().iter().filter(watch).count()
        };
        let before = [PODS, NODES].map(|c| watches(api, c));
        self.clock.store(now, Ordering::SeqCst);
        let client = api.client();
        let writer = Writer::create(&self.path).unwrap();
        let clock = self.clock.clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        self.stop = Some(stop);
        self.task = Some(tokio::spawn(async move {
            let stop = async {
                let _ = stopped.await;
            };
            let now = move || clock.load(Ordering::SeqCst);
            // Pushed to the file often: each loop waits until the recording holds its start.
            let flush_every = Duration::from_millis(5);
            ferroscale::k8s::record::record(&client, Recorder::new(writer), stop, now, flush_every)
                .await
        }));
        // Until pods and nodes are watched, a change written and deleted could fall between the
        // recording's list and its watch (a watch replays what changed since its list).
        api.wait_for("the recording's watches", |api| {
            [PODS, NODES]
                .iter()
                .zip(before)
                .all(|(c, n)| watches(api, c) > n)
        })
        .await;
    }

    async fn synced(&mut self, _api: &KubeApi, now: i64, sentinel: &str) {
        // The recording saw everything up to the sentinel (each watch's events come in order) at this
        // loop's time; what the loop does is the next loop's.
        self.holds(sentinel, 4).await;
        self.clock.store(now + self.scan_interval, Ordering::SeqCst);
    }
}

/// Replays the recording at `path` on the scenario's groups, settings and pacing: each loop's step.
/// Replays the recording at `path` on the scenario's groups and settings, its start-up times taken
/// from the recording as `simulate --trace` takes them: each loop's time (seconds since the start) and
/// step.
fn replayed(s: &Scenario, path: &std::path::Path) -> Vec<(i64, Step)> {
    let config = MemoryConfig::parse(s.groups).unwrap();
    // The pool's new nodes joined 20 s after the pods they were for and were Ready 10 s later, as the
    // scenario paces them.
    let pool = calibrate(path, &config).unwrap().groups["pool"];
    let calibrated = GroupCalibration {
        nodes: 4,
        provision_delay_seconds: Some(s.pacing.provision_delay.as_secs() as i64),
        node_ready_delay_seconds: Some(s.pacing.node_ready_delay.as_secs() as i64),
    };
    assert_eq!(pool, calibrated);
    let secs = |s: Option<i64>| Duration::from_secs(s.unwrap() as u64);
    let start_up = StartUp {
        provision_delay: secs(pool.provision_delay_seconds),
        node_ready_delay: secs(pool.node_ready_delay_seconds),
    };
    let pacing = Pacing {
        by_group: [("pool".to_string(), start_up)].into(),
        // Not the scenario's: the group's own are the recording's.
        provision_delay: Duration::ZERO,
        node_ready_delay: Duration::ZERO,
        ..s.pacing.clone()
    };
    let mut replay = Replay::open(path, &config, &PriceOverrides::default()).unwrap();
    (0..s.loops)
        .map(|_| {
            let report = replay.step(&s.settings, &pacing).unwrap();
            (report.time, Step::of_report(&report))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_recorded_while_run_scaled_replays_with_the_same_decisions_in_the_same_loops() {
    let s = scenario();
    let dir = tempfile::tempdir().unwrap();
    let mut recording = Recording {
        changes: workloads(),
        path: dir.path().join("run.jsonl"),
        clock: Arc::new(AtomicI64::new(0)),
        scan_interval: s.pacing.scan_interval.as_secs() as i64,
        stop: None,
        task: None,
    };
    let ran = through_run_with(&s, &mut recording).await;
    recording.stop.take().unwrap().send(()).unwrap();
    let recorded = recording.task.take().unwrap().await.unwrap().unwrap();
    assert_eq!(recorded.unreadable, 0);

    let replayed = replayed(&s, &recording.path);
    for (i, (r, (time, replayed))) in ran.iter().zip(&replayed).enumerate() {
        let at = i as i64 * 10;
        assert_eq!(*time, at, "loop {}: replayed at +{time}s", i + 1);
        assert_eq!(
            r,
            replayed,
            "loop {} (+{at}s): run (left) and its trace replayed (right) differ",
            i + 1,
        );
    }
    assert_eq!(ran.len(), replayed.len());

    // What `run` did, for the scenario to mean something: scale-ups when the workload and the batch
    // came, the batch's nodes removed when it finished, and the first node consolidated away.
    let ups: Vec<(usize, &(String, i32))> = ran
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.scale_up.iter().map(move |u| (i, u)))
        .collect();
    assert_eq!(
        ups,
        [(1, &("pool".to_string(), 1)), (5, &("pool".to_string(), 3))],
        "{ran:?}"
    );
    let removed: Vec<(usize, &str)> = ran
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.removed.iter().map(move |r| (i, r.0.as_str())))
        .collect();
    assert_eq!(removed.len(), 4, "{ran:?}");
    assert!(removed.contains(&(13, "pool-a")), "{ran:?}");
    assert_eq!(ran.last().unwrap().nodes["pool"], 1, "{ran:?}");
}
