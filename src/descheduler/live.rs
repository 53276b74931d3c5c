//! The descheduler on the live cluster, shared by `run` and `ferroscale deschedule`: it evicts through
//! the Kubernetes API ([`LiveCluster`]), reads its cycles from the watch-fed [`Index`] (nodes, live
//! pods, finished pods still bound, PodDisruptionBudgets, each pod's UID) and the PriorityClasses
//! and Namespaces the policy reads from the API.

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::ListParams;
use kube::{Api, Client};

use super::{Cycle, Descheduler, DeschedulerSettings, Identify, Seen};
use crate::actuator::Evictee;
use crate::k8s::cluster::LiveCluster;
use crate::k8s::events::Events;
use crate::k8s::index::Index;
use crate::k8s::lease::Fence;
use crate::metrics::DeschedulerMetrics;
use crate::model::workload::{Pdb, Pod};

impl Descheduler<LiveCluster> {
    /// A descheduler evicting through `client`, its Events written by `events`.
    pub fn new(
        settings: DeschedulerSettings,
        client: Client,
        events: Events,
        metrics: DeschedulerMetrics,
    ) -> Self {
        let cluster = LiveCluster::new(client, events, Fence::open());
        Descheduler::with_cluster(settings, cluster, metrics)
    }

    /// Evicts only while the Lease's term runs.
    pub fn set_fence(&mut self, fence: Fence) {
        self.cluster.set_fence(fence);
    }

    /// One cycle at `now` on the index as it is, its PodDisruptionBudgets as the cluster has them.
    /// `removing`: the nodes being emptied, on which nothing is planned.
    pub async fn cycle(&mut self, index: &Index, removing: &HashSet<String>, now: i64) -> Cycle {
        self.cycle_counting(index, removing, index.pdbs.items(), now)
            .await
    }

    /// One cycle at `now` on the index as it is, spending what `pdbs` allow (`run`: what the loop's
    /// other methods left).
    pub async fn cycle_counting(
        &mut self,
        index: &Index,
        removing: &HashSet<String>,
        pdbs: &[Pdb],
        now: i64,
    ) -> Cycle {
        self.read_priority_classes().await;
        self.read_namespaces().await;
        self.read_usage().await;
        let seen = Seen {
            nodes: index.nodes.items(),
            pods: index.pods.items(),
            failed: index.failed.items(),
            pdbs,
            removing,
            ids: index,
        };
        self.deschedule(&seen, now).await.0
    }

    /// Reads the PriorityClasses the policy names and this replica has not read yet; one that cannot be
    /// read is logged and tried again next cycle (the evictor meanwhile does not know its value).
    async fn read_priority_classes(&mut self) {
        let names: HashSet<String> = self
            .settings
            .policy
            .profiles
            .iter()
            .filter_map(|p| p.evictor.priority_threshold.as_ref())
            .map(|t| t.name.clone())
            .filter(|n| !n.is_empty() && !self.known.priority_classes.contains_key(n))
            .collect();
        let api: Api<PriorityClass> = Api::all(self.cluster.client().clone());
        for name in names {
            match api.get_opt(&name).await {
                Ok(Some(class)) => {
                    self.known
                        .priority_classes
                        .insert(name, class.value.unwrap_or(0));
                }
                Ok(None) => {
                    tracing::warn!(
                        priority_class = name,
                        "priorityThreshold names a PriorityClass that does not exist"
                    )
                }
                Err(e) => {
                    tracing::warn!(priority_class = name, error = %e, "reading a PriorityClass failed; tried again next cycle")
                }
            }
        }
    }
}

impl Descheduler<LiveCluster> {
    /// Lists the Namespaces' labels once per cycle when a profile's evictor has a
    /// `namespaceLabelSelector`; a list that fails is logged and the last one kept (none yet: no
    /// namespace matches, so no pod is evicted for want of its labels).
    async fn read_namespaces(&mut self) {
        if !self.reads_namespaces() {
            return;
        }
        let api: Api<Namespace> = Api::all(self.cluster.client().clone());
        match api.list(&ListParams::default()).await {
            Ok(list) => {
                let labels = list
                    .items
                    .into_iter()
                    .filter_map(|n| Some((n.metadata.name?, n.metadata.labels.unwrap_or_default())))
                    .collect();
                self.known.namespaces = Some(labels);
            }
            Err(e) => {
                tracing::warn!(error = %e, "listing Namespaces for namespaceLabelSelector failed; tried again next cycle");
                self.known.namespaces.get_or_insert_with(Default::default);
            }
        }
    }
}

impl Descheduler<LiveCluster> {
    /// metrics-server's usage, when a strategy's `metricsUtilization` asks: the collector started
    /// with the first cycle, the pods' usage listed now.
    async fn read_usage(&mut self) {
        if !crate::deschedule::plan::reads_metrics(&self.settings.policy) {
            return;
        }
        let client = self.cluster.client().clone();
        if self.known.collector.is_none() {
            self.known.collector = Some(super::usage::Collector::start(client.clone()).await);
        }
        if let Some(c) = &self.known.collector {
            self.known.usage = c.now(&client).await;
        }
    }
}

/// What every descheduler knows beside its index (`known`): `simulate` gives it a dump's
/// PriorityClasses.
impl<C: crate::actuator::Cluster> Descheduler<C> {
    /// What metrics-server says nodes and pods use now (`simulate`: its dump's, moved with the pods).
    pub fn know_usage(&mut self, usage: crate::deschedule::actual::Usage) {
        self.known.usage = Some(usage);
    }

    /// The PriorityClasses a dump holds (`simulate`): `run` reads those the policy names from the API.
    pub fn know_priority_classes(&mut self, classes: BTreeMap<String, i32>) {
        self.known.priority_classes = classes;
    }

    /// Whether a profile's evictor selects namespaces by their labels.
    pub(super) fn reads_namespaces(&self) -> bool {
        self.settings
            .policy
            .profiles
            .iter()
            .any(|p| p.evictor.namespace_label_selector.is_some())
    }
}

/// The pod as the eviction API is asked for it, with the UID the index holds.
impl Identify for Index {
    fn evictee(&self, pod: &Pod) -> Evictee {
        let key = crate::model::workload::pod_key(&pod.namespace, &pod.name);
        let uid = self
            .pods
            .get(&key)
            .or_else(|| self.failed.get(&key))
            .and_then(|(_, x)| x.uid.clone());
        Evictee {
            namespace: pod.namespace.to_string(),
            name: pod.name.clone(),
            uid,
            grace_period: pod.meta.grace_period,
            node: pod.node_name.clone(),
        }
    }
}
