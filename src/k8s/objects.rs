//! Kubernetes objects (k8s-openapi types, as `kubectl get -o yaml` and the API serve them) turned into the
//! model's pods, nodes and PodDisruptionBudgets. Errors name the object and the field.

use crate::labels;
use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

use super::namespace_of;
pub use super::pod_status::{pod_finished_bound, pod_terminal};
use super::selectors::{affinity_terms, label_selector, node_selector_terms};
use super::volumes::Storage;
use crate::error::{Error, Result};
use crate::model::workload::{
    HostPort, LabelSelector, Node, Pdb, Pod, PodMeta, SafeToEvict, Toleration, TolerationValue,
    DAEMON_SET,
};
use crate::model::{Resources, Taint, TaintEffect, UnknownTaintEffect};

fn time(t: &Option<meta::Time>) -> i64 {
    t.as_ref().map(|t| t.0.as_second()).unwrap_or(0)
}

/// Resource names and quantity texts of a map (absent: none).
fn quantities(map: Option<&BTreeMap<String, Quantity>>) -> impl Iterator<Item = (&str, &str)> + '_ {
    map.into_iter()
        .flatten()
        .map(|(k, q)| (k.as_str(), q.0.as_str()))
}

fn resources(map: &Option<BTreeMap<String, Quantity>>, field: &str) -> Result<Resources> {
    Ok(Resources::from_quantities(field, quantities(map.as_ref()))?)
}

fn effect(e: &str, field: &str) -> Result<TaintEffect> {
    e.parse()
        .map_err(|e: UnknownTaintEffect| Error::invalid(field, e.to_string()))
}

/// `pod NAMESPACE/NAME: `, what a pod's field names start with in errors; written out only for an
/// error, not for every pod read.
struct PodAt<'a>(&'a str, &'a str);

impl std::fmt::Display for PodAt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pod {}/{}: ", self.0, self.1)
    }
}

/// A pod as the engine sees it.
pub fn pod(p: &core::Pod) -> Result<Pod> {
    let namespace = namespace_of(&p.metadata).to_string();
    let name = p.metadata.name.clone().unwrap_or_default();
    let pod_at = PodAt(&namespace, &name);
    let at = |field: &str| format!("{pod_at}{field}");
    let default = core::PodSpec::default();
    let spec = p.spec.as_ref().unwrap_or(&default);
    let requests = super::requests::of(p, &pod_at)?;
    let node_affinity = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|sel| {
            node_selector_terms(
                sel,
                &at("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"),
            )
        })
        .transpose()?
        .unwrap_or_default();
    let pod_affinity = spec.affinity.as_ref().and_then(|a| a.pod_affinity.as_ref());
    let pod_anti = spec
        .affinity
        .as_ref()
        .and_then(|a| a.pod_anti_affinity.as_ref());
    let tolerations = spec
        .tolerations
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, t)| {
            Ok(Toleration {
                key: t.key.clone().unwrap_or_default(),
                value: {
                    let v = t.value.clone().unwrap_or_default();
                    match t.operator.as_deref() {
                        Some("Exists") => None,
                        Some("Gt") => Some(TolerationValue::Gt(v)),
                        Some("Lt") => Some(TolerationValue::Lt(v)),
                        _ => Some(TolerationValue::Equal(v)),
                    }
                },
                effect: t
                    .effect
                    .as_deref()
                    .filter(|e| !e.is_empty())
                    .map(|e| effect(e, &at(&format!("spec.tolerations[{i}].effect"))))
                    .transpose()?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    // Containers' and sidecars' (restartable init containers') ports, as upstream's GetHostPorts.
    let host_ports = spec
        .containers
        .iter()
        .chain(
            spec.init_containers
                .iter()
                .flatten()
                .filter(|c| c.restart_policy.as_deref() == Some("Always")),
        )
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| {
            let port = u16::try_from(p.host_port?).ok().filter(|p| *p > 0)?;
            Some(HostPort {
                protocol: p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                ip: p.host_ip.clone().unwrap_or_default(),
                port,
            })
        })
        .collect();
    // One lock of the shared tables for all of this pod's shared values.
    let shared = &mut super::shared::tables();
    let labels = shared.labels(p.metadata.labels.as_ref());
    let spread = super::pod_facts::spread(spec, &labels, &at, "DoNotSchedule")?;
    let mut facts = super::pod_facts::meta(p, shared);
    facts.soft_spread = super::pod_facts::spread(spec, &labels, &at, "ScheduleAnyway")?;
    facts.preferred_node_affinity = super::pod_facts::preferred_node_affinity(spec, &at)?;
    let no_annotations = BTreeMap::new();
    let annotations = p.metadata.annotations.as_ref().unwrap_or(&no_annotations);
    let unschedulable = p
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.type_ == "PodScheduled"
                    && c.status == "False"
                    && c.reason.as_deref() == Some("Unschedulable")
            })
        });
    let local_volumes = spec
        .volumes
        .iter()
        .flatten()
        .filter(|v| {
            v.host_path.is_some()
                || v.empty_dir
                    .as_ref()
                    .is_some_and(|e| e.medium.as_deref() != Some("Memory"))
        })
        .map(|v| v.name.clone())
        .collect();
    // Split as upstream does: on commas, nothing trimmed.
    let safe_local_volumes = annotations
        .get(labels::SAFE_TO_EVICT_LOCAL_VOLUMES)
        .filter(|v| !v.is_empty())
        .map(|v| v.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let controller = p
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true));
    let (phase, status_reason, containers) = super::pod_status::states(p);
    Ok(Pod {
        requests,
        node_name: spec.node_name.clone().filter(|n| !n.is_empty()),
        node_selector: spec.node_selector.clone().unwrap_or_default(),
        node_affinity,
        tolerations: shared.tolerations(tolerations),
        host_ports,
        affinity: affinity_terms(
            pod_affinity.and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            }),
            &labels,
            &format_args!("{pod_at}spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution"),
        )?,
        anti_affinity: affinity_terms(
            pod_anti.and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            }),
            &labels,
            &format_args!("{pod_at}spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"),
        )?,
        spread,
        // Resolved with the cluster's storage objects (`Inputs::convert`).
        claims: Vec::new(),
        inline_volumes: super::volumes::inline_volumes(spec).into(),
        // From the dump's Namespace objects (`namespaces::set_namespace_labels`).
        namespace_labels: Default::default(),
        meta: PodMeta {
            controller: controller.map(|o| shared.name(&o.kind)),
            controller_name: controller.map(|o| shared.name(&o.name)),
            owner_replicas: None,
            priority: spec.priority.unwrap_or(0),
            unschedulable,
            scheduler_name: spec.scheduler_name.as_deref().map(|s| shared.name(s)),
            created: time(&p.metadata.creation_timestamp),
            deleted: p
                .metadata
                .deletion_timestamp
                .as_ref()
                .map(|t| t.0.as_second()),
            grace_period: spec.termination_grace_period_seconds,
            safe_to_evict: annotations
                .get(labels::SAFE_TO_EVICT)
                .and_then(|v| SafeToEvict::parse(v)),
            local_volumes,
            safe_local_volumes,
            mirror: annotations.contains_key(labels::MIRROR),
            daemon_set_annotation: annotations
                .get(labels::DAEMONSET_POD)
                .is_some_and(|v| v == "true"),
            ds_eviction: annotations.get(labels::ENABLE_DS_EVICTION).map(|v| v == "true"),
            // A value that does not parse is ignored, as upstream does (it logs it).
            scale_up_delay: annotations
                .get(labels::POD_SCALE_UP_DELAY)
                .and_then(|v| crate::model::parse_go_duration(v).ok())
                .map(crate::model::duration::secs),
            phase,
            status_reason: status_reason.as_deref().map(|s| shared.name(s)),
            containers: shared.states(containers),
            owners: shared.owners(super::pod_status::owners(p)),
            images: shared.images(super::pod_status::images(spec)),
            do_not_disrupt: super::pod_status::do_not_disrupt(annotations),
            deletion_cost: super::pod_status::deletion_cost(annotations),
            evict_annotation: super::pod_status::evict_annotation(annotations),
            ..facts
        },
        labels,
        namespace: shared.name(&namespace),
        name,
    })
}

/// A node as the engine sees it.
pub fn node(n: &core::Node) -> Result<Node> {
    let name = n.metadata.name.clone().unwrap_or_default();
    let spec = n.spec.clone().unwrap_or_default();
    let status = n.status.clone().unwrap_or_default();
    let mut allocatable = resources(
        &status.allocatable.clone().or(status.capacity.clone()),
        &format!("node {name}: status.allocatable"),
    )?;
    if allocatable.pods == 0 {
        allocatable.pods = 110;
    }
    let mut capacity = match &status.capacity {
        Some(_) => resources(&status.capacity, &format!("node {name}: status.capacity"))?,
        None => allocatable.clone(),
    };
    if capacity.pods == 0 {
        capacity.pods = allocatable.pods;
    }
    Ok(Node {
        labels: n.metadata.labels.clone().unwrap_or_default().into(),
        taints: spec
            .taints
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, t)| {
                Ok(Taint {
                    key: t.key.clone(),
                    value: t.value.clone().unwrap_or_default(),
                    effect: effect(&t.effect, &format!("node {name}: spec.taints[{i}].effect"))?,
                })
            })
            .collect::<Result<_>>()?,
        allocatable,
        capacity,
        unschedulable: spec.unschedulable.unwrap_or(false),
        provider_id: spec.provider_id.clone().unwrap_or_default(),
        ready: status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True"),
        disk_pressure: condition_true(&status, "DiskPressure"),
        network_unavailable: condition_true(&status, "NetworkUnavailable"),
        ready_since: status
            .conditions
            .iter()
            .flatten()
            .filter(|c| ["Ready", "DiskPressure", "NetworkUnavailable"].contains(&c.type_.as_str()))
            .map(|c| time(&c.last_transition_time))
            .max()
            .unwrap_or(0),
        scale_down_disabled: n
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(labels::SCALE_DOWN_DISABLED))
            .is_some_and(|v| v == "true"),
        do_not_disrupt: n
            .metadata
            .annotations
            .as_ref()
            .is_some_and(super::pod_status::do_not_disrupt),
        created: time(&n.metadata.creation_timestamp),
        // A one-shot conversion knows no better; `run`'s index stamps when it first saw the node.
        seen: time(&n.metadata.creation_timestamp),
        // From the node's CSINode (`Inputs::convert`).
        volume_limits: BTreeMap::new(),
        template: false,
        name,
    })
}

/// Whether the node's condition `kind` is `True`.
fn condition_true(status: &core::NodeStatus, kind: &str) -> bool {
    status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == kind && c.status == "True")
}

/// A PodDisruptionBudget.
pub fn pdb(p: &PodDisruptionBudget) -> Result<Pdb> {
    let namespace = namespace_of(&p.metadata).to_string();
    let name = p.metadata.name.clone().unwrap_or_default();
    let selector = match p.spec.as_ref().and_then(|s| s.selector.as_ref()) {
        Some(s) => label_selector(s, &format!("pdb {namespace}/{name}: spec.selector"))?,
        // policy/v1: a null selector selects no pod (an empty one, every pod of the namespace).
        None => LabelSelector::nothing(),
    };
    Ok(Pdb {
        disruptions_allowed: p
            .status
            .as_ref()
            .and_then(|s| s.disruptions_allowed)
            .unwrap_or(0),
        selector,
        namespace,
        name,
    })
}

/// The pod a DaemonSet would run on a new node (for the daemon overhead of templates).
pub fn daemonset_pod(d: &DaemonSet) -> Result<Pod> {
    let template = d.spec.template.clone();
    let mut p = pod(&core::Pod {
        metadata: meta::ObjectMeta {
            namespace: d.metadata.namespace.clone(),
            name: d.metadata.name.clone(),
            labels: template.metadata.as_ref().and_then(|m| m.labels.clone()),
            ..Default::default()
        },
        spec: template.spec,
        status: None,
    })?;
    p.meta.controller = Some(DAEMON_SET.into());
    Ok(p)
}

/// The engine's view of a set of Kubernetes objects: what `ferroscale simulate` reads from a file and
/// `ferroscale run` from its watches. Terminal pods are left out.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub pdbs: Vec<Pdb>,
    /// The pods DaemonSets would start on a new node.
    pub daemon_pods: Vec<Pod>,
    /// Pods finished (`Failed`, `Succeeded`) still bound to a node, for the descheduler's
    /// `RemoveFailedPods` and `PodLifeTime`.
    pub failed: Vec<Pod>,
    /// PriorityClass name → value (a dump's; `run` reads them from the API as it needs them).
    pub priority_classes: BTreeMap<String, i32>,
    /// What a dump's NodeMetrics and PodMetrics say nodes and pods use (None: it has none; `run`
    /// polls metrics-server).
    pub usage: Option<crate::deschedule::actual::Usage>,
}

impl Inputs {
    /// Converts every object. An object that cannot be converted goes to `bad`: the simulator stops on
    /// it (returns the error), the live loop logs it and goes on without the object.
    pub fn convert<'a>(
        nodes: impl IntoIterator<Item = &'a core::Node>,
        pods: impl IntoIterator<Item = &'a core::Pod>,
        pdbs: impl IntoIterator<Item = &'a PodDisruptionBudget>,
        daemonsets: impl IntoIterator<Item = &'a DaemonSet>,
        storage: &Storage,
        mut bad: impl FnMut(Error) -> Result<()>,
    ) -> Result<Inputs> {
        fn each<'a, T: 'a, U>(
            items: impl IntoIterator<Item = &'a T>,
            convert: impl Fn(&T) -> Result<U>,
            bad: &mut impl FnMut(Error) -> Result<()>,
        ) -> Result<Vec<U>> {
            let mut out = Vec::new();
            for item in items {
                match convert(item) {
                    Ok(u) => out.push(u),
                    Err(e) => bad(e)?,
                }
            }
            Ok(out)
        }
        let with_limits = |n: &core::Node| {
            let mut out = node(n)?;
            out.volume_limits = storage.limits_of(&out.name);
            Ok(out)
        };
        let with_claims = |p: &core::Pod| {
            let mut out = pod(p)?;
            out.claims = storage.claims_of(p)?;
            Ok(out)
        };
        let pods: Vec<&core::Pod> = pods.into_iter().collect();
        Ok(Inputs {
            nodes: each(nodes, with_limits, &mut bad)?,
            pods: each(
                pods.iter().copied().filter(|p| !pod_terminal(p)),
                with_claims,
                &mut bad,
            )?,
            pdbs: each(pdbs, pdb, &mut bad)?,
            daemon_pods: each(daemonsets, daemonset_pod, &mut bad)?,
            // As the dump reader keeps them: one that does not convert is left out.
            failed: pods
                .iter()
                .filter(|p| pod_finished_bound(p))
                .filter_map(|p| pod(p).ok())
                .collect(),
            priority_classes: BTreeMap::new(),
            usage: None,
        })
    }
}
