//! Upstream's removal simulation (`simulator/cluster.go`, the planner's snapshot): where a node's pods
//! would go if it were removed, and how many unneeded nodes one loop looks for.

use std::sync::Arc;

use foldhash::{HashMap as FastMap, HashSet};

use crate::engine::predicates::{fits_among, Cluster, NodeInfo, Overlay, Repel, Unfit};
use crate::engine::reasons::Unremovable;
use crate::engine::settings::Settings;
use crate::labels;
use crate::model::workload::Pod;

/// Upstream's `unneededNodesLimit`: one loop finds at most 2 × `--max-scale-down-parallelism` more
/// unneeded nodes than the last (a buffer for nodes that stop being unneeded), and never more than the
/// parallelism times the loops of one unneeded time, plus that buffer: scale-down could not remove more
/// before they are looked at again. The loops are `--scan-interval` apart (upstream measures the
/// shortest time between two loops, which is the scan interval when loops come on time).
pub(super) fn unneeded_limit(settings: &Settings, previously: usize) -> usize {
    let n = settings.max_scale_down_parallelism.max(1);
    let interval = settings.scan_interval.as_nanos().max(1);
    let unneeded = settings
        .defaults
        .scale_down_unneeded_time
        .as_nanos()
        .max(interval);
    let loops = usize::try_from(unneeded / interval).unwrap_or(usize::MAX);
    let upper = n.saturating_mul(loops).saturating_add(n);
    previously.saturating_add(2 * n).min(upper)
}

/// Where the first-fit search for pods of one shape ([`Pod::same_shape`]; no inter-pod constraints, no
/// claims) may start in the loop's snapshot: the nodes before it
/// took no such pod, and nodes only fill up as the loop goes (unneeded ones take none), so they never
/// will. Keeps scale-down's simulation linear when many nodes move pods of a few deployments. A shape
/// that fits nowhere any more keeps the reason, so each later node with such a pod is told at once.
#[derive(Clone, Default)]
pub(super) struct Cursors(Vec<(Arc<Pod>, usize, Option<Unfit>)>);

impl Cursors {
    fn shaped(p: &Pod) -> bool {
        p.affinity.is_empty()
            && p.anti_affinity.is_empty()
            && p.spread.is_empty()
            && p.claims.is_empty()
    }

    fn entry(&self, p: &Pod) -> Option<&(Arc<Pod>, usize, Option<Unfit>)> {
        Self::shaped(p)
            .then(|| self.0.iter().find(|(q, ..)| p.same_shape(q)))
            .flatten()
    }

    fn start(&self, p: &Pod) -> usize {
        self.entry(p).map_or(0, |e| e.1)
    }

    fn set(&mut self, p: &Arc<Pod>, j: usize, why: Option<Unfit>) {
        if !Self::shaped(p) {
            return;
        }
        match self.0.iter_mut().find(|(q, ..)| p.same_shape(q)) {
            Some(e) => *e = (e.0.clone(), j, why),
            None => self.0.push((Arc::clone(p), j, why)),
        }
    }
}

/// Where the pods of node `i` would go (the nodes that receive them, changed, and `i` without them; and
/// each pod's node, in `movable`'s order), or why one cannot move. As upstream's removal simulation (`simulator/cluster.go`): the pods leave node `i`
/// first (the node stays, empty of them and with the deletion taint, so its topology domain still counts
/// unless a spread constraint honours taints), then they are placed one
/// by one on the nodes that are no `i` and not in `no_dest` (nodes already found unneeded), each seeing
/// those placed before it: a pod with one-per-zone anti-affinity may move within its own zone, and two
/// pods that repel each other do not land side by side.
pub(super) fn place_elsewhere(
    movable: &[Arc<Pod>],
    i: usize,
    snap: &[NodeInfo],
    no_dest: &HashSet<usize>,
    repels: Repel,
    committed: &mut Cursors,
) -> Result<(FastMap<usize, NodeInfo>, Vec<usize>), Unremovable> {
    // Moved only if every pod finds a place: a failed simulation's placements are undone.
    let mut cursors = committed.clone();
    let moving: HashSet<(&str, &str)> = movable
        .iter()
        .map(|p| (p.namespace.as_str(), p.name.as_str()))
        .collect();
    let mut node = snap[i].node.clone();
    node.taints.push(crate::model::Taint {
        key: labels::TO_BE_DELETED.into(),
        value: String::new(),
        effect: crate::model::TaintEffect::NoSchedule,
    });
    let mut emptied = NodeInfo::new(node);
    for p in snap[i]
        .pods
        .iter()
        .filter(|p| !moving.contains(&(p.namespace.as_str(), p.name.as_str())))
    {
        emptied.add(Arc::clone(p));
    }
    let mut sim = Overlay::default();
    sim.changed.insert(i, emptied);
    let mut placed = Vec::with_capacity(movable.len());
    for p in movable {
        let mut last: Option<Unfit> = None;
        let target = {
            let cluster = Cluster {
                base: snap,
                added: &[],
                memo: None,
                overlay: Some(&sim),
            };
            (cursors.start(p)..snap.len())
                .filter(|j| *j != i && !no_dest.contains(j))
                .find(
                    |&j| match fits_among(p, cluster, sim.view(j, &snap[j]), repels) {
                        Ok(()) => true,
                        Err(u) => {
                            last.get_or_insert(u);
                            false
                        }
                    },
                )
        };
        match target {
            Some(j) => {
                placed.push(j);
                cursors.set(p, j, None);
                sim.changed
                    .entry(j)
                    .or_insert_with(|| snap[j].clone())
                    .add(Arc::clone(p))
            }
            None => {
                // The reason a person reads: the first node's refusal, also before the cursor.
                let cluster = Cluster {
                    base: snap,
                    added: &[],
                    memo: None,
                    overlay: Some(&sim),
                };
                let known = cursors.entry(p).and_then(|e| e.2.clone());
                let why = last.or(known).or_else(|| {
                    (0..snap.len())
                        .filter(|j| *j != i && !no_dest.contains(j))
                        .find_map(|j| fits_among(p, cluster, sim.view(j, &snap[j]), repels).err())
                });
                // Nothing of this candidate placed yet: the pod fits nowhere in the loop's snapshot,
                // which only fills up from here.
                if sim.changed.len() == 1 {
                    committed.set(p, snap.len(), why.clone());
                }
                return Err(Unremovable::NoPlaceFor { pod: p.key(), why });
            }
        }
    }
    *committed = cursors;
    Ok((sim.changed, placed))
}
