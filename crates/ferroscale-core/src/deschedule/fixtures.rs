//! What the descheduler's tests build: pods with the facts its strategies read, and a cluster holding
//! them (`Fixture::cluster`).

// Shared by every strategy's tests: not each uses every builder.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use super::view::Cluster;
use crate::fixtures::PodBuilder;
use crate::model::workload::{ContainerState, Node, Owner, Pdb, Pod, PodPhase};

/// The descheduler's facts on a pod under construction.
pub trait DeschedulerPod: Sized {
    /// Owned (as controller) by `kind`/`name`.
    fn owner(self, kind: &str, name: &str) -> Self;
    fn phase(self, phase: PodPhase) -> Self;
    fn images(self, images: &[&str]) -> Self;
    /// One container (init or not) with its state.
    fn container(self, c: ContainerState) -> Self;
    /// One running container restarted `n` times.
    fn restarts(self, n: i32) -> Self;
    fn do_not_disrupt(self) -> Self;
}

impl DeschedulerPod for PodBuilder {
    fn owner(self, kind: &str, name: &str) -> Self {
        let (kind, name) = (kind.to_string(), name.to_string());
        self.with(|p| {
            p.meta.controller = Some(kind.as_str().into());
            p.meta.controller_name = Some(name.as_str().into());
            p.meta.owners.push(Owner {
                kind,
                name,
                controller: true,
            });
        })
    }

    fn phase(self, phase: PodPhase) -> Self {
        self.with(|p| p.meta.phase = phase)
    }

    fn images(self, images: &[&str]) -> Self {
        let images: Vec<String> = images.iter().map(|s| s.to_string()).collect();
        self.with(|p| p.meta.images = images.into())
    }

    fn container(self, c: ContainerState) -> Self {
        self.with(|p| p.meta.containers.push(c))
    }

    fn restarts(self, n: i32) -> Self {
        self.container(ContainerState {
            restarts: n,
            ..Default::default()
        })
    }

    fn do_not_disrupt(self) -> Self {
        self.with(|p| p.meta.do_not_disrupt = true)
    }
}

/// A cluster's objects, owned, for `Fixture::cluster` to lend.
#[derive(Default)]
pub struct Fixture {
    pub nodes: Vec<Node>,
    pub pods: Vec<Arc<Pod>>,
    pub failed: Vec<Arc<Pod>>,
    pub pdbs: Vec<Pdb>,
    pub removing: HashSet<String>,
    pub priority_classes: BTreeMap<String, i32>,
    /// Actual usage (`metricsUtilization`), when a test gives it.
    pub usage: Option<super::actual::Usage>,
    pub now: i64,
}

impl Fixture {
    /// Nodes and pods; finished pods (phase `Failed` or `Succeeded`) go to `failed`.
    pub fn new(nodes: Vec<Node>, pods: Vec<Pod>) -> Self {
        let (failed, pods): (Vec<_>, Vec<_>) = pods
            .into_iter()
            .map(Arc::new)
            .partition(|p| p.meta.phase.finished());
        Fixture {
            nodes,
            pods,
            failed,
            ..Default::default()
        }
    }

    pub fn cluster(&self) -> Cluster<'_> {
        Cluster {
            nodes: &self.nodes,
            pods: &self.pods,
            failed: &self.failed,
            pdbs: &self.pdbs,
            removing: &self.removing,
            priority_classes: &self.priority_classes,
            namespaces: None,
            usage: self.usage.as_ref(),
            now: self.now,
        }
    }
}
