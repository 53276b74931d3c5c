//! A node's pods ([`PodList`]), with what loops read of every one of them worked out once and kept
//! until the list changes: how far their anti-affinity reaches, the figures utilization sums, the
//! copies a drain moves, and what consolidation watches of the pods bound to the node. A loop asks
//! these of every node (the scale-up's and scale-down's simulations, scale-down's and
//! consolidation's candidates); a kept placement (`engine::placement`) hands the same list to the
//! next loop, so an unchanged node's pods are not read again.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, OnceLock};

use super::interpod::Repel;
use crate::engine::drainability::class::{classify, overdue_at, Class, DrainRules};
use crate::model::shared::Shared;
use crate::model::workload::Pod;
use std::borrow::Cow;

/// Pods, in the order placed. Reading never changes what is kept; any change through `DerefMut`
/// forgets it.
#[derive(Debug, Default)]
pub struct PodList {
    pods: Vec<Arc<Pod>>,
    /// Made on the first question: a list nobody asks keeps to a vector and a pointer, and the
    /// predicates that walk every node's pods read no more memory than a plain vector.
    kept: OnceLock<Box<Kept>>,
}

/// What was worked out of the pods, each part on its first question.
#[derive(Debug, Default)]
struct Kept {
    repel: OnceLock<Repel>,
    facts: OnceLock<Vec<Fact>>,
    unbound: OnceLock<Vec<Option<Arc<Pod>>>>,
    bound: OnceLock<(String, Bound)>,
    classes: OnceLock<(DrainRules, Vec<Class>)>,
}

/// The pods bound to a node, in the figures consolidation watches each loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// Those that are neither DaemonSet nor mirror pods (they come and go with the node): their
    /// count and the sum of a hash of each one's namespace, name and creation.
    pub signature: (usize, u64),
    /// The newest creation among all of them (`i64::MIN` for none).
    pub newest: i64,
    /// The first of them with `do-not-disrupt`, by position in the list.
    pub do_not_disrupt: Option<usize>,
    /// Whether every pod of the list is bound to the node (none placed there by a simulation).
    pub all: bool,
}

/// What utilization reads of one pod, kept side by side so that summing a node reads no pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fact {
    pub cpu_milli: i64,
    pub memory: i64,
    pub priority: i32,
    pub daemon_set: bool,
    pub mirror: bool,
    /// When it counts as terminating too long (`drainability::long_terminating`); `i64::MAX` when
    /// it is not being deleted.
    pub overdue_at: i64,
}

impl PodList {
    fn kept(&self) -> &Kept {
        self.kept.get_or_init(Box::default)
    }

    /// How far the anti-affinity of these pods reaches.
    pub fn repel(&self) -> Repel {
        *self.kept().repel.get_or_init(|| {
            self.pods
                .iter()
                .map(|p| Repel::of(p))
                .max()
                .unwrap_or(Repel::None)
        })
    }

    /// Each pod's [`Fact`], in order.
    pub fn facts(&self) -> &[Fact] {
        self.kept().facts.get_or_init(|| {
            self.pods
                .iter()
                .map(|p| Fact {
                    cpu_milli: p.requests.cpu_milli,
                    memory: p.requests.memory,
                    priority: p.meta.priority,
                    daemon_set: p.is_daemon_set(),
                    mirror: p.meta.mirror,
                    overdue_at: overdue_at(p).unwrap_or(i64::MAX),
                })
                .collect()
        })
    }

    /// For each pod, the copy a drain moves: unbound from its node (`None` for a pod without a
    /// node, moved as it is, and for DaemonSet and mirror pods, which stay).
    pub fn unbound(&self) -> &[Option<Arc<Pod>>] {
        self.kept().unbound.get_or_init(|| {
            self.pods
                .iter()
                .map(|p| {
                    (p.node_name.is_some() && !p.node_bound()).then(|| {
                        Arc::new(Pod {
                            node_name: None,
                            ..(**p).clone()
                        })
                    })
                })
                .collect()
        })
    }

    /// [`Bound`] of the pods bound to `node`. It runs over every bound pod of the cluster each
    /// loop, so it uses foldhash with a fixed seed, not SipHash: the same pod hashes alike in every
    /// loop and every process, at a fraction of the cost.
    pub fn bound(&self, node: &str) -> Bound {
        let work = || {
            use std::hash::BuildHasher;
            let hasher = foldhash::fast::FixedState::with_seed(0);
            let mut b = Bound {
                signature: (0, 0),
                newest: i64::MIN,
                do_not_disrupt: None,
                all: true,
            };
            for (k, p) in self.pods.iter().enumerate() {
                if p.node_name.as_deref() != Some(node) {
                    b.all = false;
                    continue;
                }
                b.newest = b.newest.max(p.meta.created);
                if p.meta.do_not_disrupt && b.do_not_disrupt.is_none() {
                    b.do_not_disrupt = Some(k);
                }
                if !p.node_bound() {
                    let h =
                        hasher.hash_one((p.namespace.as_str(), p.name.as_str(), p.meta.created));
                    b.signature = (b.signature.0 + 1, b.signature.1.wrapping_add(h));
                }
            }
            b
        };
        let (of, kept) = self.kept().bound.get_or_init(|| (node.to_string(), work()));
        if of == node {
            *kept
        } else {
            work()
        }
    }

    /// Each pod's drain [`Class`] under `rules`, in order (kept for the rules asked first).
    pub fn classes(&self, rules: &DrainRules) -> Cow<'_, [Class]> {
        let work = || self.pods.iter().map(|p| classify(p, rules)).collect();
        let (of, kept) = self.kept().classes.get_or_init(|| (*rules, work()));
        if of == rules {
            Cow::Borrowed(kept)
        } else {
            Cow::Owned(work())
        }
    }
}

/// A copy is made to be changed (`Shared`'s copy on write): it keeps nothing of what was worked out,
/// which the change would forget anyway.
impl Clone for PodList {
    fn clone(&self) -> Self {
        PodList::from(self.pods.clone())
    }
}

impl Deref for PodList {
    type Target = Vec<Arc<Pod>>;
    fn deref(&self) -> &Vec<Arc<Pod>> {
        &self.pods
    }
}

/// A change: what was kept of the pods is forgotten.
impl DerefMut for PodList {
    fn deref_mut(&mut self) -> &mut Vec<Arc<Pod>> {
        self.kept.take();
        &mut self.pods
    }
}

impl From<Vec<Arc<Pod>>> for PodList {
    fn from(pods: Vec<Arc<Pod>>) -> Self {
        PodList {
            pods,
            ..PodList::default()
        }
    }
}

impl FromIterator<Arc<Pod>> for PodList {
    fn from_iter<I: IntoIterator<Item = Arc<Pod>>>(iter: I) -> Self {
        PodList::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl<'a> IntoIterator for &'a PodList {
    type Item = &'a Arc<Pod>;
    type IntoIter = std::slice::Iter<'a, Arc<Pod>>;
    fn into_iter(self) -> Self::IntoIter {
        self.pods.iter()
    }
}

impl<'a> IntoIterator for &'a Shared<PodList> {
    type Item = &'a Arc<Pod>;
    type IntoIter = std::slice::Iter<'a, Arc<Pod>>;
    fn into_iter(self) -> Self::IntoIter {
        self.pods.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{pod, resources};
    use crate::model::workload::PodAffinityTerm;

    #[test]
    fn a_change_forgets_what_was_kept() {
        let mut list = PodList::from(vec![Arc::new(
            pod("shop", "web")
                .requests(resources(500, 1 << 20, 1))
                .build(),
        )]);
        assert_eq!(list.repel(), Repel::None);
        assert_eq!(list.facts()[0].cpu_milli, 500);
        let mut far = pod("shop", "db").build();
        far.anti_affinity.push(PodAffinityTerm {
            topology_key: crate::labels::ZONE.into(),
            ..PodAffinityTerm::default()
        });
        list.push(Arc::new(far));
        assert_eq!(list.repel(), Repel::Anywhere);
        assert_eq!(list.facts().len(), 2);
        list.retain(|p| p.name == "db");
        assert_eq!(list.facts().len(), 1);
        assert_eq!(list.facts()[0].cpu_milli, 0);
    }
}
