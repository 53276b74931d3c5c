//! `kind: drain_node` — cluster-autoscaler's `TestGetPodsToMove` (`simulator/drain_test.go`): what the
//! drain of a whole node does with its pods, in order, as upstream's `GetPodsToMove` sorts them: pods to
//! move, DaemonSet pods (they stay), pods waited for (`safe-to-evict: on-completion`), and the first pod
//! that blocks (its `BlockingPodReason`), after which no pod is looked at. Skipped pods (mirror, long
//! terminating) are in no list. `objects`, `flags` and `now` are as in `kind: drain`.
//!
//! Ferroscale's `drainability` per pod: `Move` → to move; `Stay` of a DaemonSet pod → DaemonSet pods;
//! other `Stay` → skipped; `Wait` → on completion; `Block` → the blocking pod (reasons as `kind: drain`
//! maps them). A pod in phase Succeeded or Failed, which ferroscale's adapters drop as upstream's
//! scheduled-pod lister does, counts as one upstream's terminal rule lets go: to move.

use ferroscale::engine::drainability::{drainability, Drain};
use serde::Deserialize;

use super::drain::{blocking_rule, kind};
use super::support;

#[derive(Deserialize)]
struct Case {
    objects: Vec<serde_norway::Value>,
    #[serde(default)]
    flags: Vec<String>,
    #[serde(default = "test_time")]
    now: String,
    expect: Expect,
}

/// Upstream's `testTime`.
fn test_time() -> String {
    "2020-12-18T17:00:00Z".into()
}

/// Pod names in each of upstream's lists (order does not matter: upstream compares as sets).
#[derive(Deserialize, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
struct Expect {
    #[serde(default)]
    pods: Vec<String>,
    #[serde(default)]
    daemonsets: Vec<String>,
    #[serde(default)]
    on_completion: Vec<String>,
    /// `[pod, reason]`.
    #[serde(default)]
    blocking: Option<(String, String)>,
}

pub fn check(case: &serde_norway::Value) -> Result<(), String> {
    let case: Case = serde_norway::from_value(case.clone()).map_err(|e| e.to_string())?;
    let now = support::time(&case.now)?;
    let settings = support::settings(&case.flags)?;
    let read: Vec<serde_norway::Value> = case
        .objects
        .iter()
        .filter(|o| !matches!(kind(o).as_deref(), Some("Job" | "StatefulSet")))
        .cloned()
        .collect();
    let raw_pods: Vec<&serde_norway::Value> = read
        .iter()
        .filter(|o| kind(o).as_deref() == Some("Pod"))
        .collect();
    let inputs = support::inputs(&support::objects(&serde_norway::Value::Sequence(
        read.clone(),
    ))?)?;
    // Converted pods keep the objects' order, terminal ones left out.
    let mut converted = inputs.pods.iter();
    let mut got = Expect::default();
    for raw in raw_pods {
        let name = raw["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let terminal = matches!(
            raw["status"]["phase"].as_str(),
            Some("Succeeded" | "Failed")
        );
        if terminal {
            got.pods.push(name);
            continue;
        }
        let p = converted.next().ok_or("a pod was not converted")?;
        match drainability(p, &inputs.pdbs, &settings, now) {
            Drain::Move => got.pods.push(name),
            Drain::Stay if p.is_daemon_set() => got.daemonsets.push(name),
            Drain::Stay => {}
            Drain::Wait => got.on_completion.push(name),
            Drain::Block(b) => {
                got.blocking = Some((name, blocking_rule(&b).1.to_string()));
                break;
            }
        }
    }
    let mut want = case.expect;
    for list in [
        &mut got.pods,
        &mut got.daemonsets,
        &mut got.on_completion,
        &mut want.pods,
        &mut want.daemonsets,
        &mut want.on_completion,
    ] {
        list.sort();
    }
    if got == want {
        Ok(())
    } else {
        Err(format!("got {got:?}, upstream: {want:?}"))
    }
}
