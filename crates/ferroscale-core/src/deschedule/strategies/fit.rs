//! "Would the pod fit another node?", as the descheduler's strategies ask it (`PodFitsAnyNode`,
//! `PodFitsAnyOtherNode`, `topologyBalanceNodeFit`), answered by the scheduler's filters
//! (`engine::predicates`) on the cluster as it is, not by the descheduler's subset of them.

use std::collections::HashMap;

use crate::deschedule::View;
use crate::engine::predicates::{fits_in, repelling, NodeInfo, Repel};
use crate::model::workload::Pod;

/// The view's nodes with their pods, for the scheduler's filters.
pub struct Fit<'v> {
    view: &'v View<'v>,
    infos: Vec<NodeInfo>,
    index: HashMap<String, usize>,
    repel: Repel,
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
        }
    }

    /// Whether the pod, unbound, passes every filter on one of `among` other than its own node: a
    /// node that is ready and not being removed.
    pub fn fits_elsewhere<'n>(&self, pod: &Pod, among: impl IntoIterator<Item = &'n str>) -> bool {
        let mut unbound = pod.clone();
        let own = unbound.node_name.take();
        among.into_iter().any(|name| {
            if own.as_deref() == Some(name) || self.view.cluster.removing.contains(name) {
                return false;
            }
            let Some(&i) = self.index.get(name) else {
                return false;
            };
            let info = &self.infos[i];
            info.node.ready && fits_in(&unbound, &self.infos, info, self.repel).is_ok()
        })
    }

    /// [`Fit::fits_elsewhere`] without the pod's topology spread constraints: for the spread
    /// strategy, whose balancing decides them (the descheduler's node fit ignores them too), and
    /// which would otherwise count every node's pods for each pod it may move.
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
}
