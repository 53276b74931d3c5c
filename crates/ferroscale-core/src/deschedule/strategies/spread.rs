//! `RemovePodsViolatingTopologySpreadConstraint`, as the descheduler's plugin of that name proposes
//! evictions: per namespace and distinct constraint of its pods, the domains are counted (the pods the
//! evictor may evict, selected by the constraint) and, when two differ by more than `maxSkew`, pods are
//! moved from the largest domains towards the smallest until each is within the skew of the average.
//! Each proposal's `onto` is the nodes of the domains below the average.
//!
//! `constraints` says which kinds of constraint are balanced: `DoNotSchedule` (the default; the pod's
//! `spread`) and `ScheduleAnyway` (its `meta.soft_spread`), each kind counted apart, as the
//! descheduler compares constraints with their `whenUnsatisfiable`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use serde::Deserialize;

use super::fit::Fit;
use super::scope::Scope;
use super::Plugin;
use crate::deschedule::args::{ArgsError, Namespaces, Problems, Selector, Strategy};
use crate::deschedule::policy::decode;
use crate::deschedule::policy::field::default;
use crate::deschedule::policy::field::Object;
use crate::deschedule::policy::PolicyError;
use crate::deschedule::validate;
use crate::deschedule::{Evictor, Proposal, View};
use crate::engine::predicates::spread_counts_node;
use crate::model::workload::{Node, Pod, SpreadConstraint};
use serde_norway::{Mapping, Value};

/// `whenUnsatisfiable`, as `constraints` lists the ones to balance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum WhenUnsatisfiable {
    DoNotSchedule,
    ScheduleAnyway,
}

/// `RemovePodsViolatingTopologySpreadConstraint`'s arguments, as the policy's `pluginConfig` writes
/// them, with the descheduler's defaults.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct RemovePodsViolatingTopologySpreadConstraintArgs {
    pub namespaces: Option<Namespaces>,
    pub label_selector: Option<Selector>,
    /// Which constraints to balance; empty means `[DoNotSchedule]`.
    #[serde(deserialize_with = "crate::deschedule::validate::null_as_default")]
    pub constraints: Vec<WhenUnsatisfiable>,
    /// Move a pod only if it fits a node of a domain below the average.
    pub topology_balance_node_fit: bool,
}

impl Default for RemovePodsViolatingTopologySpreadConstraintArgs {
    fn default() -> Self {
        RemovePodsViolatingTopologySpreadConstraintArgs {
            namespaces: None,
            label_selector: None,
            constraints: vec![WhenUnsatisfiable::DoNotSchedule],
            topology_balance_node_fit: true,
        }
    }
}

impl RemovePodsViolatingTopologySpreadConstraintArgs {
    /// The descheduler's validation, naming the field at fault (unknown `constraints` values are
    /// refused when the policy is read).
    pub fn validate(&self) -> Result<(), ArgsError> {
        let mut out = Problems::default();
        validate::scope(&self.namespaces, &self.label_selector, &mut out);
        out.done()
    }

    fn balances_do_not_schedule(&self) -> bool {
        self.constraints.is_empty() || self.constraints.contains(&WhenUnsatisfiable::DoNotSchedule)
    }

    /// Whether it balances `ScheduleAnyway` constraints too.
    pub fn balances_schedule_anyway(&self) -> bool {
        self.constraints
            .contains(&WhenUnsatisfiable::ScheduleAnyway)
    }
}

/// One distinct constraint of a namespace: the constraint and the pod whose node selector, affinity
/// and tolerations decide which nodes it counts.
struct Tsc {
    c: SpreadConstraint,
    pod: Arc<Pod>,
    /// `whenUnsatisfiable: ScheduleAnyway`.
    soft: bool,
}

impl Tsc {
    /// Same constraint, counting the same nodes (the descheduler's deep equality).
    fn same(&self, c: &SpreadConstraint, soft: bool, pod: &Pod) -> bool {
        self.soft == soft
            && self.c == *c
            && (c.ignore_node_affinity
                || (self.pod.node_selector == pod.node_selector
                    && self.pod.node_affinity == pod.node_affinity))
            && (!c.honor_taints || self.pod.tolerations == pod.tolerations)
    }

    /// The descheduler's `matchNodeInclusionPolicies` (the scheduler's, as the engine counts it).
    fn counts(&self, node: &Node) -> bool {
        spread_counts_node(&self.pod, &self.c, node)
    }
}

/// One domain's value and pods, the pods ordered so the last ones move first.
struct Domain {
    value: String,
    pods: Vec<Arc<Pod>>,
}

/// The pods `RemovePodsViolatingTopologySpreadConstraint` would evict, in the order it would evict them.
pub fn propose(
    args: &RemovePodsViolatingTopologySpreadConstraintArgs,
    view: &View,
    evictor: &Evictor,
) -> Vec<Proposal> {
    let (hard, soft) = (
        args.balances_do_not_schedule(),
        args.balances_schedule_anyway(),
    );
    if !hard && !soft {
        return Vec::new();
    }
    let scope = Scope::new(&args.namespaces, &args.label_selector);
    let mut by_namespace: BTreeMap<&str, Vec<Arc<Pod>>> = BTreeMap::new();
    for node in view.nodes() {
        for p in view.pods_on(&node.name) {
            if scope.admits(p) && evictor.allows(p) {
                by_namespace
                    .entry(&p.namespace)
                    .or_default()
                    .push(p.clone());
            }
        }
    }
    let fit = Fit::new(view);
    let mut chosen: Vec<(Arc<Pod>, Vec<String>)> = Vec::new();
    let mut seen = HashSet::new();
    for pods in by_namespace.values() {
        let mut constraints: Vec<Tsc> = Vec::new();
        // Candidates for "the same" by topology key and selector, so a namespace of many workloads
        // does not compare each pod's constraints with every other workload's.
        let mut by_selector: HashMap<(&str, &BTreeMap<String, String>), Vec<usize>> =
            HashMap::new();
        for p in pods {
            let hard = p.spread.iter().filter(|_| hard).map(|c| (c, false));
            let soft = p.meta.soft_spread.iter().filter(|_| soft);
            for (c, is_soft) in hard.chain(soft.map(|c| (c, true))) {
                let bucket = by_selector
                    .entry((&c.topology_key, &c.selector.match_labels))
                    .or_default();
                if !bucket.iter().any(|&i| constraints[i].same(c, is_soft, p)) {
                    bucket.push(constraints.len());
                    constraints.push(Tsc {
                        c: c.clone(),
                        pod: p.clone(),
                        soft: is_soft,
                    });
                }
            }
        }
        // The pods by label, so a constraint's selector looks only at the pods with its first label.
        let mut by_label: HashMap<(&str, &str), Vec<Arc<Pod>>> = HashMap::new();
        for p in pods {
            for (k, v) in p.labels.iter() {
                by_label.entry((k, v)).or_default().push(p.clone());
            }
        }
        for tsc in &constraints {
            let candidates = match tsc.c.selector.match_labels.iter().next() {
                Some((k, v)) => by_label
                    .get(&(k.as_str(), v.as_str()))
                    .map(Vec::as_slice)
                    .unwrap_or(&[]),
                None => pods.as_slice(),
            };
            let node_fit = args.topology_balance_node_fit;
            for (pod, onto) in balance(tsc, candidates, view, &fit, node_fit) {
                if seen.insert(pod.key()) {
                    chosen.push((pod, onto));
                }
            }
        }
    }
    chosen
        .into_iter()
        .map(|(pod, onto)| {
            let mut p =
                Proposal::anywhere(&pod, Strategy::RemovePodsViolatingTopologySpreadConstraint);
            p.onto = (!onto.is_empty()).then(|| onto.into());
            p
        })
        .collect()
}

/// The pods one constraint moves, each with the nodes of the domains below the average.
fn balance(
    tsc: &Tsc,
    pods: &[Arc<Pod>],
    view: &View,
    fit: &Fit,
    node_fit: bool,
) -> Vec<(Arc<Pod>, Vec<String>)> {
    let key = &tsc.c.topology_key;
    // Domains of the nodes the constraint counts, even empty ones; then its pods, by their node's
    // domain (a node it does not count still adds its domain, as in the descheduler).
    let mut domains: BTreeMap<String, Vec<Arc<Pod>>> = BTreeMap::new();
    for node in view.nodes() {
        if let Some(v) = node.labels.get(key) {
            if tsc.counts(node) {
                domains.entry(v.clone()).or_default();
            }
        }
    }
    let mut sum = 0usize;
    for p in pods {
        if p.meta.deleted.is_some() || !tsc.c.selector.matches(&p.labels) {
            continue;
        }
        let node = p.node_name.as_deref().and_then(|n| view.node(n));
        if let Some(v) = node.and_then(|n| n.labels.get(key)) {
            domains.entry(v.clone()).or_default().push(p.clone());
            sum += 1;
        }
    }
    let sizes = || domains.values().map(Vec::len);
    let (min, max) = (sizes().min().unwrap_or(0), sizes().max().unwrap_or(0));
    if domains.is_empty() || (max - min) as i64 <= i64::from(tsc.c.max_skew) {
        return Vec::new();
    }
    let ideal = sum as f64 / domains.len() as f64;
    let mut sorted: Vec<Domain> = domains
        .into_iter()
        .map(|(value, mut pods)| {
            order_for_eviction(&mut pods);
            Domain { value, pods }
        })
        .collect();
    sorted.sort_by_key(|d| d.pods.len());
    let below: Vec<String> = below_average(view, tsc, &sorted, ideal);
    let mut fits: HashMap<String, bool> = HashMap::new();
    let mut fits_below = |p: &Pod| {
        *fits
            .entry(p.key())
            .or_insert_with(|| fit.fits_elsewhere_unspread(p, below.iter().map(String::as_str)))
    };
    let mut out = Vec::new();
    let skew_max = f64::from(tsc.c.max_skew);
    let (mut i, mut j) = (0usize, sorted.len() - 1);
    while i < j {
        if sorted[j].pods.len() as f64 <= ideal {
            j -= 1;
        }
        let skew = sorted[j].pods.len() as f64 - sorted[i].pods.len() as f64;
        if skew <= skew_max {
            i += 1;
            continue;
        }
        let above = (sorted[j].pods.len() as f64 - ideal).ceil();
        let under = (ideal - sorted[i].pods.len() as f64).ceil();
        let half = ((skew - skew_max) / 2.0).ceil();
        let moving = above.min(under).min(half);
        if moving <= 0.0 {
            i += 1;
            continue;
        }
        let moving = moving as usize;
        let (rest, moved) =
            last_to_move(std::mem::take(&mut sorted[j].pods), moving, &mut fits_below);
        sorted[j].pods = rest;
        for p in &moved {
            if !node_fit || fits_below(p) {
                out.push((p.clone(), below.clone()));
            }
        }
        sorted[i].pods.extend(moved);
    }
    out
}

/// The `moving` pods the descheduler takes from the end of a domain once the pods that fit a node
/// below the average are sorted last (a stable sort), and the pods left: asks `fits` from the end only
/// until enough fitting pods are found, so a large domain is not checked pod by pod.
fn last_to_move(
    pods: Vec<Arc<Pod>>,
    moving: usize,
    fits: &mut impl FnMut(&Pod) -> bool,
) -> (Vec<Arc<Pod>>, Vec<Arc<Pod>>) {
    let mut fitting = Vec::new();
    for (k, p) in pods.iter().enumerate().rev() {
        if fitting.len() == moving {
            break;
        }
        if fits(p) {
            fitting.push(k);
        }
    }
    fitting.reverse();
    // Too few fit: the last of the others move too, before the fitting ones.
    let mut fit_mask = vec![false; pods.len()];
    for &k in &fitting {
        fit_mask[k] = true;
    }
    let short = moving - fitting.len();
    let others: Vec<usize> = (0..pods.len()).filter(|&k| !fit_mask[k]).collect();
    let taken: Vec<usize> = others[others.len() - short..]
        .iter()
        .chain(&fitting)
        .copied()
        .collect();
    let mut taken_mask = vec![false; pods.len()];
    for &k in &taken {
        taken_mask[k] = true;
    }
    let moved = taken.iter().map(|&k| pods[k].clone()).collect();
    let rest = pods
        .into_iter()
        .enumerate()
        .filter(|(k, _)| !taken_mask[*k])
        .map(|(_, p)| p)
        .collect();
    (rest, moved)
}

/// The descheduler's order within a domain, the pods to move last first: pods with a node selector
/// or affinity, then by priority, lower first (the descheduler's comparison, which moves the highest
/// priority first among equals in placement constraints).
fn order_for_eviction(pods: &mut [Arc<Pod>]) {
    let pinned = |p: &Pod| !p.node_selector.is_empty() || !p.node_affinity.is_empty();
    pods.sort_by_key(|p| (!pinned(p), p.meta.priority));
}

/// The counted nodes of the domains with fewer pods than the average, in the domains' order.
fn below_average(view: &View, tsc: &Tsc, sorted: &[Domain], ideal: f64) -> Vec<String> {
    let key = &tsc.c.topology_key;
    let rank: HashMap<&str, usize> = sorted
        .iter()
        .filter(|d| (d.pods.len() as f64) < ideal)
        .enumerate()
        .map(|(r, d)| (d.value.as_str(), r))
        .collect();
    let mut nodes: Vec<(usize, &str)> = view
        .nodes()
        .iter()
        .filter_map(|n| {
            let r = *rank.get(n.labels.get(key)?.as_str())?;
            tsc.counts(n).then_some((r, n.name.as_str()))
        })
        .collect();
    nodes.sort_by_key(|(r, _)| *r);
    nodes.into_iter().map(|(_, n)| n.to_string()).collect()
}

impl Plugin for RemovePodsViolatingTopologySpreadConstraintArgs {
    const STRATEGY: Strategy = Strategy::RemovePodsViolatingTopologySpreadConstraint;
    const BALANCES: bool = true;
    const FIELDS: &'static [&'static str] = &[
        "namespaces",
        "labelSelector",
        "constraints",
        "topologyBalanceNodeFit",
    ];
    const V1ALPHA1_PARAMS: &'static [&'static str] =
        &["namespaces", "labelSelector", "includeSoftConstraints"];

    fn defaults(out: &mut Mapping) {
        default(out, "topologyBalanceNodeFit", Value::Bool(true));
        let empty = out
            .get("constraints")
            .and_then(Value::as_sequence)
            .is_none_or(|c| c.is_empty());
        if empty {
            out.insert(
                "constraints".into(),
                Value::Sequence(vec!["DoNotSchedule".into()]),
            );
        }
    }

    fn decode(o: &Object) -> Result<(), PolicyError> {
        decode::scope(o)?;
        decode::flag(o, "topologyBalanceNodeFit")?;
        for c in o.get("constraints").items()? {
            let v = c.string()?;
            if v != "DoNotSchedule" && v != "ScheduleAnyway" {
                return Err(c.err(format!(
                    "constraint {v:?} is not one of DoNotSchedule, ScheduleAnyway"
                )));
            }
        }
        Ok(())
    }

    fn from_v1alpha1(p: &Object, out: &mut Mapping) -> Result<(), PolicyError> {
        decode::v1alpha1_scope(p, out, true);
        let mut constraints = vec![Value::from("DoNotSchedule")];
        if decode::flag(p, "includeSoftConstraints")? {
            constraints.push("ScheduleAnyway".into());
        }
        out.insert("constraints".into(), Value::Sequence(constraints));
        out.insert("topologyBalanceNodeFit".into(), Value::Bool(true));
        Ok(())
    }

    fn check(&self) -> Result<(), ArgsError> {
        self.validate()
    }

    fn proposals(&self, view: &View, evictor: &Evictor) -> Vec<Proposal> {
        propose(self, view, evictor)
    }
}

#[cfg(test)]
mod tests;
