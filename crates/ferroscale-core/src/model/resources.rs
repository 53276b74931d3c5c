//! Resources of nodes and pods in exact integer units, taints, and the template of a group's nodes.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::quantity;
use crate::error::{Error, Result};
use crate::labels;

/// Resources of a node or a pod, in exact integer units.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources {
    /// CPU in millicores.
    pub cpu_milli: i64,
    /// Memory in bytes.
    pub memory: i64,
    /// Pod slots.
    pub pods: i64,
    /// Local ephemeral storage in bytes.
    pub ephemeral_storage: i64,
    /// Extended resources (e.g. `nvidia.com/gpu`) in whole units.
    pub extended: BTreeMap<String, i64>,
}

impl Resources {
    /// Parses Kubernetes resource names and quantities; `field` prefixes error messages.
    pub fn from_quantities<'a>(
        field: impl fmt::Display,
        entries: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self> {
        let mut r = Resources::default();
        for (name, text) in entries {
            r.set(name, text)
                .map_err(|e| Error::invalid(format!("{field}.{name}"), e.to_string()))?;
        }
        Ok(r)
    }

    /// Sets one resource from its Kubernetes name and quantity text.
    pub fn set(&mut self, name: &str, text: &str) -> Result<(), quantity::QuantityError> {
        match name {
            "cpu" => self.cpu_milli = quantity::parse_cpu_milli(text)?,
            "memory" => self.memory = quantity::parse_units(text)?,
            "pods" => self.pods = quantity::parse_units(text)?,
            "ephemeral-storage" => self.ephemeral_storage = quantity::parse_units(text)?,
            other => {
                self.extended
                    .insert(other.to_string(), quantity::parse_units(text)?);
            }
        }
        Ok(())
    }

    /// Kubernetes resource names and canonical quantity strings; zero-valued core resources are left out.
    pub fn to_quantities(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let mut put = |name: &str, value: i64, text: String| {
            if value != 0 {
                out.insert(name.to_string(), text);
            }
        };
        put(
            "cpu",
            self.cpu_milli,
            quantity::format_cpu_milli(self.cpu_milli),
        );
        put("memory", self.memory, quantity::format_bytes(self.memory));
        put("pods", self.pods, self.pods.to_string());
        put(
            "ephemeral-storage",
            self.ephemeral_storage,
            quantity::format_bytes(self.ephemeral_storage),
        );
        for (name, v) in &self.extended {
            out.insert(name.clone(), v.to_string());
        }
        out
    }

    /// Number of NVIDIA GPUs.
    pub fn gpus(&self) -> i64 {
        self.extended.get(labels::NVIDIA_GPU).copied().unwrap_or(0)
    }

    /// Adds `other`, resource by resource, saturating: huge requests summed stay huge (they fit
    /// nowhere) instead of wrapping negative (and fitting everywhere).
    pub fn add(&mut self, other: &Resources) {
        self.cpu_milli = self.cpu_milli.saturating_add(other.cpu_milli);
        self.memory = self.memory.saturating_add(other.memory);
        self.pods = self.pods.saturating_add(other.pods);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_add(other.ephemeral_storage);
        for (k, v) in &other.extended {
            let e = self.extended.entry(k.clone()).or_default();
            *e = e.saturating_add(*v);
        }
    }

    /// Sets the resources named in `names` that pod-level requests may set (cpu, memory, hugepages-*)
    /// to `pod_level`'s: pod-level requests replace the containers' aggregate of those only, the others
    /// (ephemeral storage, extended resources) stay the containers' (upstream's PodRequests).
    pub fn override_pod_level<'a>(
        &mut self,
        pod_level: &Resources,
        names: impl IntoIterator<Item = &'a str>,
    ) {
        for name in names {
            match name {
                "cpu" => self.cpu_milli = pod_level.cpu_milli,
                "memory" => self.memory = pod_level.memory,
                hp if pod_level_resource(hp) => {
                    let v = pod_level.extended.get(hp).copied().unwrap_or(0);
                    self.extended.insert(hp.to_string(), v);
                }
                _ => {}
            }
        }
    }

    /// Raises each resource to at least `other`'s.
    pub fn max_with(&mut self, other: &Resources) {
        self.cpu_milli = self.cpu_milli.max(other.cpu_milli);
        self.memory = self.memory.max(other.memory);
        self.pods = self.pods.max(other.pods);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        for (k, v) in &other.extended {
            let e = self.extended.entry(k.clone()).or_default();
            *e = (*e).max(*v);
        }
    }
}

/// Whether pod-level requests may set a resource (cpu, memory, hugepages of any size), as upstream's
/// IsSupportedPodLevelResource.
pub fn pod_level_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory") || name.starts_with("hugepages-")
}

/// The request parts of a pod spec, combined as the scheduler does ([`pod_requests`] reads them).
#[derive(Debug, Clone, Default, PartialEq)]
struct RequestParts {
    /// Pod-level `spec.resources.requests` and the names it sets that pod-level requests may set; None
    /// when it sets none of those (not set, as upstream's IsPodLevelRequestsSet).
    pod_level: Option<(Resources, Vec<String>)>,
    containers: Vec<Resources>,
    /// Init containers in order, each with whether it is a sidecar (`restartPolicy: Always`).
    init: Vec<(Resources, bool)>,
    overhead: Resources,
}

impl RequestParts {
    /// Effective requests: the sum of containers and sidecars, at least each regular init container plus
    /// the sidecars started before it; pod-level requests over it where set; then the runtime overhead;
    /// one pod slot.
    fn effective(&self) -> Resources {
        let mut sidecars = Resources::default();
        let mut init_peak = Resources::default();
        for (r, sidecar) in &self.init {
            if *sidecar {
                sidecars.add(r);
            } else {
                let mut this = sidecars.clone();
                this.add(r);
                init_peak.max_with(&this);
            }
        }
        let mut total = sidecars;
        for c in &self.containers {
            total.add(c);
        }
        total.max_with(&init_peak);
        if let Some((r, names)) = &self.pod_level {
            total.override_pod_level(r, names.iter().map(String::as_str));
        }
        total.add(&self.overhead);
        total.pods = 1;
        total
    }
}

/// A pod's effective requests, as the scheduler counts them (the containers and sidecars, at least each
/// init container's peak; the cpu, memory and hugepages pod-level requests set instead of theirs; then
/// the overhead): the one rule
/// every adapter reads a pod spec with, whatever its Kubernetes types. Each part is given as (resource
/// name, quantity text) pairs: `pod_level` is `spec.resources.requests` (absent or empty: not set),
/// `init_containers` come with their `restartPolicy` (`Always` makes a sidecar). `at` prefixes the field
/// names in errors (e.g. `"pod default/web: "`).
pub fn pod_requests<'a, Q>(
    at: &dyn fmt::Display,
    pod_level: Q,
    containers: impl IntoIterator<Item = Q>,
    init_containers: impl IntoIterator<Item = (Q, Option<&'a str>)>,
    overhead: Q,
) -> Result<Resources>
where
    Q: IntoIterator<Item = (&'a str, &'a str)>,
{
    let pod_level: Vec<(&str, &str)> = pod_level.into_iter().collect();
    let names: Vec<String> = pod_level
        .iter()
        .filter(|(n, _)| pod_level_resource(n))
        .map(|(n, _)| n.to_string())
        .collect();
    let parts = RequestParts {
        pod_level: match names.is_empty() {
            true => None,
            false => Some((
                Resources::from_quantities(format_args!("{at}spec.resources.requests"), pod_level)?,
                names,
            )),
        },
        containers: containers
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                Resources::from_quantities(
                    format_args!("{at}spec.containers[{i}].resources.requests"),
                    c,
                )
            })
            .collect::<Result<_>>()?,
        init: init_containers
            .into_iter()
            .enumerate()
            .map(|(i, (c, restart_policy))| {
                let r = Resources::from_quantities(
                    format_args!("{at}spec.initContainers[{i}].resources.requests"),
                    c,
                )?;
                Ok((r, restart_policy == Some("Always")))
            })
            .collect::<Result<_>>()?,
        overhead: Resources::from_quantities(format_args!("{at}spec.overhead"), overhead)?,
    };
    Ok(parts.effective())
}

/// Effect of a taint, as in Kubernetes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl TaintEffect {
    /// Every effect, in Kubernetes' order.
    pub const ALL: [TaintEffect; 3] = [
        TaintEffect::NoSchedule,
        TaintEffect::PreferNoSchedule,
        TaintEffect::NoExecute,
    ];

    /// The Kubernetes spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }
}

impl fmt::Display for TaintEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A taint effect Kubernetes does not define (the text as given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown taint effect {0:?}")]
pub struct UnknownTaintEffect(pub String);

impl FromStr for TaintEffect {
    type Err = UnknownTaintEffect;

    /// The Kubernetes spelling, exactly (as the API server accepts it): every adapter reads taints and
    /// tolerations with this one parser.
    fn from_str(s: &str) -> Result<Self, UnknownTaintEffect> {
        TaintEffect::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| UnknownTaintEffect(s.to_string()))
    }
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Taint {
    pub key: String,
    #[serde(default)]
    pub value: String,
    pub effect: TaintEffect,
}

/// What a new node of a group looks like before it exists: the input of scale-up simulations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TemplateNode {
    /// Node name (also its `kubernetes.io/hostname`).
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub capacity: Resources,
    pub allocatable: Resources,
    /// Volumes each CSI driver can attach, when copied from a real node's CSINode (empty: no limit).
    pub volume_limits: BTreeMap<String, i64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn taint_effects_read_back_what_they_print() {
        for e in TaintEffect::ALL {
            assert_eq!(e.to_string().parse::<TaintEffect>(), Ok(e));
        }
        assert_eq!("NoExecute".parse(), Ok(TaintEffect::NoExecute));
    }

    #[test]
    fn unknown_taint_effects_are_refused_by_name() {
        for bad in ["", "noschedule", "NoSchedule ", "Evict"] {
            let err = bad.parse::<TaintEffect>().unwrap_err();
            assert_eq!(err, UnknownTaintEffect(bad.to_string()));
            assert_eq!(err.to_string(), format!("unknown taint effect {bad:?}"));
        }
    }

    type Requests = Vec<(&'static str, &'static str)>;

    fn cpu_mem(cpu: &'static str, mem: &'static str) -> Requests {
        vec![("cpu", cpu), ("memory", mem)]
    }

    #[test]
    fn pod_requests_count_init_containers_and_sidecars_like_the_scheduler() {
        let r = pod_requests(
            &"",
            vec![],
            [cpu_mem("500m", "1Gi"), cpu_mem("250m", "512Mi")],
            [
                (cpu_mem("100m", "128Mi"), Some("Always")),
                (cpu_mem("2", "256Mi"), None),
            ],
            vec![("cpu", "10m")],
        )
        .unwrap();
        // cpu: max(100+500+250, 100+2000) + 10; memory: max(128+1024+512, 128+256) MiB.
        assert_eq!(r.cpu_milli, 2110);
        assert_eq!(r.memory, 1664 << 20);
        assert_eq!(r.pods, 1);
    }

    #[test]
    fn pod_level_requests_win_over_containers_when_set() {
        let r = pod_requests(&"", cpu_mem("1", "1Gi"), [cpu_mem("3", "3Gi")], [], vec![]).unwrap();
        assert_eq!((r.cpu_milli, r.memory), (1000, 1 << 30));
        let r = pod_requests(&"", vec![], [cpu_mem("3", "3Gi")], [], vec![]).unwrap();
        assert_eq!(r.cpu_milli, 3000, "empty pod-level requests are not set");
    }

    #[test]
    fn pod_level_requests_leave_other_resources_to_the_containers() {
        let mut c = cpu_mem("3", "3Gi");
        c.push(("nvidia.com/gpu", "1"));
        c.push(("ephemeral-storage", "1Gi"));
        let r = pod_requests(&"", vec![("cpu", "1")], [c], [], vec![]).unwrap();
        assert_eq!((r.cpu_milli, r.memory, r.gpus()), (1000, 3 << 30, 1));
        assert_eq!(r.ephemeral_storage, 1 << 30);
        let r = pod_requests(
            &"",
            vec![("nvidia.com/gpu", "4")],
            [cpu_mem("3", "3Gi")],
            [],
            vec![],
        );
        assert_eq!(
            r.unwrap().gpus(),
            0,
            "pod-level requests cannot set extended resources"
        );
    }

    #[test]
    fn a_bad_quantity_is_named_by_its_field() {
        let err = pod_requests(
            &"pod default/web: ",
            vec![],
            [cpu_mem("1", "1Gi")],
            [(cpu_mem("lots", "1Gi"), None)],
            vec![],
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("pod default/web: spec.initContainers[0].resources.requests.cpu"),
            "{err}"
        );
    }

    #[test]
    fn a_quantity_too_large_is_an_error_naming_the_object_and_field_not_a_negative_request() {
        let err = pod_requests(
            &"pod default/huge: ",
            vec![],
            [cpu_mem("10000000000000000", "1Gi")],
            vec![],
            vec![],
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("pod default/huge: spec.containers[0].resources.requests.cpu")
                && err.contains("too large"),
            "{err}"
        );
        // Two requests each below the limit add up to the limit, not below zero.
        let r = pod_requests(
            &"pod default/two: ",
            vec![],
            [cpu_mem("9e15", "4Ei"), cpu_mem("9e15", "4Ei")],
            vec![],
            vec![],
        )
        .unwrap();
        assert_eq!((r.cpu_milli, r.memory), (i64::MAX, i64::MAX));
    }

    proptest! {
        #[test]
        fn the_taint_effect_parser_never_panics(s in ".*") {
            if let Ok(e) = s.parse::<TaintEffect>() {
                prop_assert_eq!(e.as_str(), s.as_str());
            }
        }
    }
}
