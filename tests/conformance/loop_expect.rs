//! What a `kind: loop` case expects of its last loop, and the comparison: every field given must match,
//! fields left out are not compared.

use std::collections::{BTreeMap, BTreeSet};

use ferroscale::cloud::Cloud;
use ferroscale::labels;
use ferroscale::simulate::{LoopReport, Simulation};
use serde::Deserialize;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Group → nodes added by the last loop (all of them: a group not named grows by none).
    #[serde(default)]
    scale_up: Option<BTreeMap<String, i32>>,
    /// The last loop's scale-ups are one of these (upstream leaves the choice among them to chance).
    #[serde(default)]
    scale_up_one_of: Option<Vec<BTreeMap<String, i32>>>,
    /// Nodes the last loop removes (all of them).
    #[serde(default)]
    scale_down: Option<BTreeSet<String>>,
    /// Pod → a word of why it stays pending.
    #[serde(default)]
    pending: Option<BTreeMap<String, String>>,
    /// Node → a word of why it is kept.
    #[serde(default)]
    unremovable: Option<BTreeMap<String, String>>,
    /// Whether the loop found the cluster unhealthy and decided nothing.
    #[serde(default)]
    unhealthy: Option<bool>,
    /// Nodes that pass upstream's eligibility checks (`eligibility.FilterOutUnremovable`'s unneeded
    /// candidates): kept, if at all, only for a later reason (a pod's drain, the unneeded time, …).
    #[serde(default)]
    eligible: Option<BTreeSet<String>>,
    /// The nodes the last loop finds unneeded (all of them): those it removes and those it keeps for a
    /// reason that starts with "unneeded" (not for long enough yet, a budget spent, …).
    #[serde(default)]
    unneeded: Option<BTreeSet<String>>,
    /// Nodes the last loop finds unneeded, among others maybe (upstream's tests of one node's removal).
    #[serde(default)]
    removable: Option<BTreeSet<String>>,
    /// How many nodes the last loop finds unneeded (upstream's tests of the unneeded-nodes limit).
    #[serde(default)]
    unneeded_count: Option<usize>,
    /// Pods the last loop's removals evict (all of them, DaemonSet pods included).
    #[serde(default)]
    evicted: Option<BTreeSet<String>>,
    /// Nodes carrying the soft taint (`DeletionCandidateOfClusterAutoscaler`) after the last loop (all
    /// of them).
    #[serde(default)]
    soft_tainted: Option<BTreeSet<String>>,
    /// How many nodes carry the soft taint after the last loop (upstream's tests of the per-loop limit
    /// count them, whichever they are).
    #[serde(default)]
    soft_tainted_count: Option<usize>,
    /// Group → instances without a node the last loop deletes (all of them: a group not named loses
    /// none).
    #[serde(default)]
    deleted_instances: Option<BTreeMap<String, usize>>,
    /// Groups backed off from scale-up after the last loop (all of them).
    #[serde(default)]
    backed_off: Option<BTreeSet<String>>,
    /// Group → its target size after the last loop.
    #[serde(default)]
    target: Option<BTreeMap<String, i32>>,
}

/// Words of the reasons that keep a node at upstream's eligibility step: being deleted, the
/// scale-down-disabled annotation, utilization above the threshold or not known, unready with
/// `--scale-down-unready-enabled=false`.
const INELIGIBLE: [&str; 5] = [
    "being deleted",
    "disabled by annotation",
    "above threshold",
    "utilization unknown",
    "--scale-down-unready-enabled",
];

impl Expect {
    /// What of `self` the last loop's report `r` (and the simulation after it, whose last loop ran at
    /// `at`) does not match.
    pub fn compare(&self, r: &LoopReport, sim: &Simulation, at: i64) -> Vec<String> {
        let mut wrong = Vec::new();
        self.scale_up(r, &mut wrong);
        self.removals(r, &mut wrong);
        self.after(r, sim, at, &mut wrong);
        wrong
    }

    fn scale_up(&self, r: &LoopReport, wrong: &mut Vec<String>) {
        let scaled: BTreeMap<String, i32> = r
            .scale_up
            .iter()
            .map(|u| (u.group.clone(), u.delta))
            .collect();
        if let Some(want) = &self.scale_up {
            if &scaled != want {
                wrong.push(format!("scale-up {scaled:?}, upstream {want:?}"));
            }
        }
        if let Some(any) = &self.scale_up_one_of {
            if !any.contains(&scaled) {
                wrong.push(format!("scale-up {scaled:?}, upstream one of {any:?}"));
            }
        }
        for (pod, why) in self.pending.iter().flatten() {
            match r.pending.iter().find(|p| p.pod.as_deref() == Some(pod)) {
                Some(p) if p.reason.contains(why.as_str()) => {}
                Some(p) => wrong.push(format!(
                    "{pod} pending because {:?}, upstream: {why}",
                    p.reason
                )),
                None => wrong.push(format!("{pod} not pending, upstream: {why}")),
            }
        }
        if let Some(want) = self.unhealthy {
            if r.unhealthy.is_some() != want {
                wrong.push(format!("unhealthy: {:?}, upstream: {want}", r.unhealthy));
            }
        }
    }

    fn removals(&self, r: &LoopReport, wrong: &mut Vec<String>) {
        if let Some(want) = &self.scale_down {
            let got: BTreeSet<String> = r.scale_down.iter().map(|d| d.node.clone()).collect();
            if &got != want {
                wrong.push(format!("scale-down {got:?}, upstream {want:?}"));
            }
        }
        if let Some(want) = &self.evicted {
            let got: BTreeSet<String> = r
                .scale_down
                .iter()
                .flat_map(|d| d.evicted.iter().chain(&d.daemon_sets).cloned())
                .collect();
            if &got != want {
                wrong.push(format!("evicted {got:?}, upstream {want:?}"));
            }
        }
        let kept = |node: &str| {
            r.unremovable
                .iter()
                .find(|n| n.node.as_deref() == Some(node))
        };
        for (node, why) in self.unremovable.iter().flatten() {
            match kept(node) {
                Some(n) if n.reason.contains(why.as_str()) => {}
                Some(n) => wrong.push(format!(
                    "{node} kept because {:?}, upstream: {why}",
                    n.reason
                )),
                None => wrong.push(format!("{node} not kept, upstream: {why}")),
            }
        }
        let unneeded: BTreeSet<String> = r
            .scale_down
            .iter()
            .map(|d| d.node.clone())
            .chain(
                r.unremovable
                    .iter()
                    .filter(|n| n.reason.starts_with("unneeded"))
                    .filter_map(|n| n.node.clone()),
            )
            .collect();
        for node in self.removable.iter().flatten() {
            if !unneeded.contains(node) {
                wrong.push(format!(
                    "{node} not unneeded ({:?}), upstream: removable",
                    kept(node).map(|n| &n.reason)
                ));
            }
        }
        if let Some(want) = self.unneeded_count {
            if unneeded.len() != want {
                wrong.push(format!(
                    "{} nodes unneeded, upstream {want}",
                    unneeded.len()
                ));
            }
        }
        if let Some(want) = &self.unneeded {
            if &unneeded != want {
                wrong.push(format!("unneeded {unneeded:?}, upstream {want:?}"));
            }
        }
        for node in self.eligible.iter().flatten() {
            if let Some(n) = kept(node).filter(|n| INELIGIBLE.iter().any(|w| n.reason.contains(w)))
            {
                wrong.push(format!(
                    "{node} kept because {:?}, upstream: eligible",
                    n.reason
                ));
            }
        }
    }

    /// The state the last loop leaves: soft taints, deleted instances, backoffs, target sizes.
    fn after(&self, r: &LoopReport, sim: &Simulation, at: i64, wrong: &mut Vec<String>) {
        let soft: BTreeSet<String> = sim
            .cluster()
            .state()
            .nodes
            .iter()
            .filter(|n| n.taints.iter().any(|t| t.key == labels::DELETION_CANDIDATE))
            .map(|n| n.name.clone())
            .collect();
        if let Some(want) = &self.soft_tainted {
            if &soft != want {
                wrong.push(format!("soft-tainted {soft:?}, upstream {want:?}"));
            }
        }
        if let Some(want) = self.soft_tainted_count {
            if soft.len() != want {
                wrong.push(format!("soft-tainted {soft:?}, upstream {want} nodes"));
            }
        }
        if let Some(want) = &self.deleted_instances {
            let mut got = BTreeMap::<String, usize>::new();
            for d in &r.delete_instances {
                *got.entry(d.group.clone()).or_default() += 1;
            }
            if &got != want {
                wrong.push(format!("instances deleted {got:?}, upstream {want:?}"));
            }
        }
        if let Some(want) = &self.backed_off {
            let got: BTreeSet<String> = sim
                .memory()
                .backoff
                .iter()
                .filter(|(_, b)| b.until > at)
                .map(|(g, _)| g.clone())
                .collect();
            if &got != want {
                wrong.push(format!("backed off {got:?}, upstream {want:?}"));
            }
        }
        if let Some(want) = &self.target {
            let snapshot = sim.cloud().snapshot();
            for (group, size) in want {
                let got = snapshot
                    .groups()
                    .find(|g| &g.id == group)
                    .map(|g| g.target_size);
                if got != Some(*size) {
                    wrong.push(format!("{group} target {got:?}, upstream {size}"));
                }
            }
        }
    }
}
