//! `kind: drain` — cluster-autoscaler's drainability rule tests (`simulator/drainability/rules/*`):
//! what a node's removal does with one pod. The case's `objects` hold the pod (`pod` names it when
//! there are several), its PodDisruptionBudgets and its owners (ReplicaSets, ReplicationControllers,
//! DaemonSets; upstream's Jobs and StatefulSets are kept in the fixture for the record but ferroscale
//! reads no such objects, so they are dropped before conversion). `flags` are the upstream flags that
//! build the rule as the test builds it (`--min-replica-count=0` for `replicacount.New(0)`, …), `now`
//! is the test's time.
//!
//! Upstream tests one rule at a time; ferroscale's `drainability` runs the whole chain (upstream's
//! `rules.Default`, same order), so the runner names the rule that decided ferroscale's outcome and
//! compares that with the tested `rule`'s expected status:
//!
//! | ferroscale | deciding rule, upstream outcome |
//! |---|---|
//! | `Stay`, mirror pod | mirror, skip |
//! | `Stay`, deleted past grace period + 30s | longterminating, skip |
//! | `Stay`, DaemonSet pod | daemonset, drainable (upstream keeps it apart from the pods to move) |
//! | `Move`, `safe-to-evict: "true"` | safetoevict, drainable |
//! | `Move`, kube-system without budget, past the timeout | system, drainable |
//! | `Move` otherwise | no rule (undefined: moved) |
//! | pod left out (phase Succeeded/Failed) | terminal, drainable (ferroscale's adapters drop it, as upstream's scheduled-pod lister) |
//! | `Wait` | oncompletion, wait |
//! | `Block(MinReplicas)` | replicacount, blocked `MinReplicasReached` |
//! | `Block(NotReplicated)` | replicated, blocked `NotReplicated` |
//! | `Block(SystemPodWithoutBudget)` | system, blocked `UnmovableKubeSystemPod` |
//! | `Block(NotSafeToEvict)` | notsafetoevict, blocked `NotSafeToEvictAnnotation` |
//! | `Block(LocalStorage)` | localstorage, blocked `LocalStorageRequested` |
//! | `Block(Budget)` | pdb, blocked `NotEnoughPdb` |
//!
//! `expect` is upstream's status for the tested rule: `undefined` (the rule does not decide: another
//! rule or none decides), `skip`, `drainable`, `wait`, `not_blocked` (upstream's tests that check only
//! the blocking reason and error: the rule does not block) or `blocked <BlockingPodReason>`.

use ferroscale::engine::drainability::{drainability, long_terminating, Drain};
use ferroscale::engine::reasons::Blocker;
use ferroscale::model::workload::SafeToEvict;
use serde::Deserialize;

use super::support;

#[derive(Deserialize)]
struct Case {
    rule: String,
    objects: Vec<serde_norway::Value>,
    #[serde(default)]
    pod: Option<String>,
    #[serde(default)]
    flags: Vec<String>,
    #[serde(default = "test_time")]
    now: String,
    expect: String,
}

/// Upstream's `testTime` in most rule tests.
fn test_time() -> String {
    "2020-12-18T17:00:00Z".into()
}

/// Upstream's expected status of the tested rule, as the fixture writes it.
#[derive(Debug, PartialEq)]
enum Expect {
    Undefined,
    Skip,
    Drainable,
    Wait,
    NotBlocked,
    Blocked(String),
}

impl Expect {
    fn parse(text: &str) -> Result<Expect, String> {
        Ok(match text.split_once(' ') {
            Some(("blocked", reason)) => Expect::Blocked(reason.trim().to_string()),
            _ => match text {
                "undefined" => Expect::Undefined,
                "skip" => Expect::Skip,
                "drainable" => Expect::Drainable,
                "wait" => Expect::Wait,
                "not_blocked" => Expect::NotBlocked,
                other => return Err(format!("expect: {other:?} is no rule status")),
            },
        })
    }
}

/// Upstream's outcome of a rule, as ferroscale reaches it.
#[derive(Debug, PartialEq)]
enum Outcome {
    Skip,
    Drainable,
    Wait,
    Blocked(&'static str),
}

pub fn check(case: &serde_norway::Value) -> Result<(), String> {
    let case: Case = serde_norway::from_value(case.clone()).map_err(|e| e.to_string())?;
    let expect = Expect::parse(&case.expect)?;
    let now = support::time(&case.now)?;
    let settings = support::settings(&case.flags)?;
    let read: Vec<serde_norway::Value> = case
        .objects
        .iter()
        .filter(|o| !matches!(kind(o).as_deref(), Some("Job" | "StatefulSet")))
        .cloned()
        .collect();
    let wanted = match &case.pod {
        Some(name) => name.clone(),
        None => {
            let mut pods = read.iter().filter(|o| kind(o).as_deref() == Some("Pod"));
            match (pods.next(), pods.next()) {
                (Some(p), None) => p["metadata"]["name"]
                    .as_str()
                    .ok_or("the pod has no name")?
                    .to_string(),
                _ => return Err("name the pod under test (`pod`)".into()),
            }
        }
    };
    let inputs = support::inputs(&support::objects(&serde_norway::Value::Sequence(read))?)?;
    // (deciding rule, its outcome); None: no rule decided.
    let decided: Option<(&str, Outcome)> = match inputs.pods.iter().find(|p| p.name == wanted) {
        None => Some(("terminal", Outcome::Drainable)),
        Some(p) => match drainability(p, &inputs.pdbs, &settings, now) {
            Drain::Stay if p.meta.mirror => Some(("mirror", Outcome::Skip)),
            Drain::Stay if long_terminating(p, now) => Some(("longterminating", Outcome::Skip)),
            Drain::Stay if p.is_daemon_set() => Some(("daemonset", Outcome::Drainable)),
            Drain::Stay => return Err("stays for no rule's reason".into()),
            Drain::Move if p.meta.safe_to_evict == Some(SafeToEvict::Yes) => {
                Some(("safetoevict", Outcome::Drainable))
            }
            Drain::Move
                if settings.skip_nodes_with_system_pods
                    && p.namespace == "kube-system"
                    && !inputs.pdbs.iter().any(|b| b.covers(p)) =>
            {
                Some(("system", Outcome::Drainable))
            }
            Drain::Move => None,
            Drain::Wait => Some(("oncompletion", Outcome::Wait)),
            Drain::Block(b) => {
                let (rule, reason) = blocking_rule(&b);
                Some((rule, Outcome::Blocked(reason)))
            }
        },
    };
    let by_rule = decided
        .as_ref()
        .filter(|(rule, _)| *rule == case.rule)
        .map(|(_, o)| o);
    let ok = match (&expect, by_rule) {
        (Expect::Undefined, None) => true,
        (Expect::NotBlocked, None | Some(Outcome::Skip | Outcome::Drainable | Outcome::Wait)) => {
            true
        }
        (Expect::Skip, Some(Outcome::Skip))
        | (Expect::Drainable, Some(Outcome::Drainable))
        | (Expect::Wait, Some(Outcome::Wait)) => true,
        (Expect::Blocked(want), Some(Outcome::Blocked(got))) => want == got,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "decided by {decided:?}, upstream's {} rule: {:?}",
            case.rule, expect
        ))
    }
}

/// The upstream rule whose block a ferroscale [`Blocker`] is, and upstream's `BlockingPodReason`.
pub fn blocking_rule(b: &Blocker) -> (&'static str, &'static str) {
    match b {
        Blocker::MinReplicas { .. } => ("replicacount", "MinReplicasReached"),
        Blocker::NotReplicated { .. } => ("replicated", "NotReplicated"),
        Blocker::SystemPodWithoutBudget { .. } => ("system", "UnmovableKubeSystemPod"),
        // ferroscale's own annotation (a node the descheduler emptied), never from the drainability
        // rules: upstream's nearest.
        Blocker::NotSafeToEvict { .. } | Blocker::DoNotDisrupt { .. } => {
            ("notsafetoevict", "NotSafeToEvictAnnotation")
        }
        Blocker::LocalStorage { .. } => ("localstorage", "LocalStorageRequested"),
        Blocker::Budget { .. } => ("pdb", "NotEnoughPdb"),
    }
}

/// A Kubernetes object's `kind`.
pub fn kind(o: &serde_norway::Value) -> Option<String> {
    o["kind"].as_str().map(str::to_string)
}
