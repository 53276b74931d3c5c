//! "Would the pod fit another node?", as the descheduler's strategies ask it (`PodFitsAnyNode`,
//! `PodFitsAnyOtherNode`, `topologyBalanceNodeFit`), answered by the scheduler's filters
//! (`engine::predicates`) on the cluster as it is, not by the descheduler's subset of them.

use std::cell::RefCell;
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use crate::deschedule::View;
use crate::engine::predicates::{fits_in, repelling, NodeInfo, Repel};
use crate::model::workload::Pod;

/// A pod shape asked about, and the first node (by index) it fits other than the asker's own.
type Answer = (Pod, Option<usize>);

/// The view's nodes with their pods, for the scheduler's filters.
pub struct Fit<'v> {
    view: &'v View<'v>,
    infos: Vec<NodeInfo>,
    index: HashMap<String, usize>,
    repel: Repel,
    /// Answers of [`Fit::fits_any_other_unspread`] by pod shape: the pod asked (unbound, without
    /// spread) and the first node it fits other than its own, if any.
    shapes: RefCell<HashMap<u64, Vec<Answer>>>,
}

impl<'v> Fit<'v> {
    pub fn new(view: &'v View<'v>) -> Self {
        let infos: Vec<NodeInfo> = view
            .nodes()
            .iter()
            .map(|n| {
                let mut info = NodeInfo::new(n.clone());
                for p in view.pods_on(&n.name) {
                    info.add(p.clone());
                }
                info
            })
            .collect();
        let index = infos
            .iter()
            .enumerate()
            .map(|(i, n)| (n.node.name.clone(), i))
            .collect();
        let repel = repelling(&infos);
        Fit {
            view,
            infos,
            index,
            repel,
            shapes: RefCell::default(),
        }
    }

    /// Whether node `i` may take `pod` (unbound): ready, not being removed, not `own`, and every filter
    /// passes.
    fn takes(&self, i: usize, pod: &Pod, own: Option<&str>) -> bool {
        let info = &self.infos[i];
        let name = info.node.name.as_str();
        own != Some(name)
            && info.node.ready
            && !self.view.cluster.removing.contains(name)
            && fits_in(pod, &self.infos, info, self.repel).is_ok()
    }

    /// Whether the pod, unbound, passes every filter on one of `among` other than its own node: a
    /// node that is ready and not being removed.
    pub fn fits_elsewhere<'n>(&self, pod: &Pod, among: impl IntoIterator<Item = &'n str>) -> bool {
        let mut unbound = pod.clone();
        let own = unbound.node_name.take();
        among.into_iter().any(|name| {
            self.index
                .get(name)
                .is_some_and(|&i| self.takes(i, &unbound, own.as_deref()))
        })
    }

    /// [`Fit::fits_elsewhere`] without the pod's topology spread constraints, as the descheduler's
    /// node fit: a strategy asks it for many pods, and the spread filter counts every node's pods
    /// at each ask; the planner's placement checks spread. The spread strategy's balancing decides
    /// the constraints itself.
    pub fn fits_elsewhere_unspread<'n>(
        &self,
        pod: &Pod,
        among: impl IntoIterator<Item = &'n str>,
    ) -> bool {
        if pod.spread.is_empty() {
            return self.fits_elsewhere(pod, among);
        }
        let mut unspread = pod.clone();
        unspread.spread.clear();
        self.fits_elsewhere(&unspread, among)
    }

    /// [`Fit::fits_elsewhere`] among every node.
    pub fn fits_any_other(&self, pod: &Pod) -> bool {
        self.fits_elsewhere(pod, self.view.nodes().iter().map(|n| n.name.as_str()))
    }

    /// [`Fit::fits_elsewhere_unspread`] among every node. Nothing is placed between asks, so pods of
    /// one shape (the scheduler's view of them: `Pod::same_shape`) fit the same nodes: the first
    /// node found for one answers for the others not on it.
    pub fn fits_any_other_unspread(&self, pod: &Pod) -> bool {
        let mut shape = pod.clone();
        let own = shape.node_name.take();
        shape.spread.clear();
        let key = {
            let mut h = DefaultHasher::new();
            (&*shape.namespace, &*shape.labels, &shape.node_selector).hash(&mut h);
            (shape.requests.cpu_milli, shape.requests.memory).hash(&mut h);
            h.finish()
        };
        let mut shapes = self.shapes.borrow_mut();
        let known = shapes.entry(key).or_default();
        if let Some((_, found)) = known.iter().find(|(p, _)| p.same_shape(&shape)) {
            match found {
                Some(i) if Some(self.infos[*i].node.name.as_str()) != own.as_deref() => {
                    return true
                }
                // Its own node was the first found, or none but the first asker's own: ask again.
                _ => {}
            }
        }
        let found = (0..self.infos.len()).find(|&i| self.takes(i, &shape, own.as_deref()));
        known.retain(|(p, _)| !p.same_shape(&shape));
        known.push((shape, found));
        found.is_some()
    }
}
