//! Pods with identical scheduling needs (same namespace, labels, requests and constraints): the
//! estimator places one equivalence group at a time and the scheduler's first fit skips nodes a group's
//! earlier pod did not fit. Below both, so neither imports the other.

use std::hash::{Hash, Hasher};

use crate::model::workload::Pod;

/// A hash of what `Pod::same_shape` compares (pods of one shape hash alike), to find a pod's shape
/// among many without comparing it with each.
pub(crate) fn shape_hash(p: &Pod) -> u64 {
    // foldhash with a fixed seed: this runs for every pod a simulation places, and SipHash was a
    // visible share of consolidation's evaluations.
    let mut h = std::hash::BuildHasher::build_hasher(&foldhash::fast::FixedState::with_seed(0));
    p.namespace.hash(&mut h);
    p.labels.hash(&mut h);
    p.requests.cpu_milli.hash(&mut h);
    p.requests.memory.hash(&mut h);
    p.requests.ephemeral_storage.hash(&mut h);
    p.requests.extended.hash(&mut h);
    p.node_selector.hash(&mut h);
    p.node_name.hash(&mut h);
    p.host_ports.len().hash(&mut h);
    p.affinity.len().hash(&mut h);
    p.anti_affinity.len().hash(&mut h);
    p.spread.len().hash(&mut h);
    p.claims.hash(&mut h);
    h.finish()
}

/// Pods grouped by identical scheduling needs, each group in input order.
pub fn equivalence_groups(pods: &[&Pod]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut by_hash: foldhash::HashMap<u64, Vec<usize>> = foldhash::HashMap::default();
    let mut last: Option<usize> = None;
    for (i, p) in pods.iter().enumerate() {
        // Replicas usually come one after another: try the previous pod's group before hashing.
        if let Some(g) = last.filter(|&g| pods[groups[g][0]].same_shape(p)) {
            groups[g].push(i);
            continue;
        }
        let candidates = by_hash.entry(shape_hash(p)).or_default();
        match candidates
            .iter()
            .find(|&&g| pods[groups[g][0]].same_shape(p))
        {
            Some(&g) => {
                groups[g].push(i);
                last = Some(g);
            }
            None => {
                candidates.push(groups.len());
                last = Some(groups.len());
                groups.push(vec![i]);
            }
        }
    }
    groups
}
