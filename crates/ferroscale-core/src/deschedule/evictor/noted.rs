//! The evictor's refusals kept for the plan: a strategy asks through [`Evictor::allows`] (the
//! `Filter`) or [`Evictor::admits_noting`] (`Filter` and `PreEvictionFilter`), and each pod refused is
//! noted with why, so that the plan lists it as declined (`Why::Kept`) rather than dropping it. Static,
//! DaemonSet and terminating pods are not noted: no descheduler evicts them, and every cycle would list
//! them all.

use std::sync::Arc;

use super::{Evictor, Kept};
use crate::model::workload::Pod;

impl Evictor<'_> {
    /// Whether a strategy may propose the pod (`filter`); a refusal is noted.
    pub fn allows(&self, pod: &Arc<Pod>) -> bool {
        self.note(pod, self.filter(pod))
    }

    /// Whether the pod passes `filter` and `pre_evict`; a refusal is noted.
    pub fn admits_noting(&self, pod: &Arc<Pod>) -> bool {
        self.note(pod, self.admits(pod))
    }

    /// Whether the pod passes `pre_evict`; a refusal is noted.
    pub fn pre_evicts(&self, pod: &Arc<Pod>) -> bool {
        self.note(pod, self.pre_evict(pod))
    }

    fn note(&self, pod: &Arc<Pod>, verdict: Result<(), Kept>) -> bool {
        match verdict {
            Ok(()) => true,
            Err(Kept::Mirror | Kept::DaemonSet | Kept::Terminating) => false,
            Err(why) => {
                let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
                kept.push((pod.clone(), why));
                false
            }
        }
    }

    /// The pods kept since the last call, each once (its first reason), in the order noted.
    pub fn take_kept(&self) -> Vec<(Arc<Pod>, Kept)> {
        let noted = std::mem::take(&mut *self.kept.lock().unwrap_or_else(|e| e.into_inner()));
        let mut seen = std::collections::HashSet::new();
        noted
            .into_iter()
            .filter(|(p, _)| seen.insert((p.namespace.clone(), p.name.clone())))
            .collect()
    }
}
