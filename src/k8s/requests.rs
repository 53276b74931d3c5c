//! A pod's requests as the scheduler counts them, in-place resize included: a running pod whose
//! resources are being resized holds the larger of what its spec asks and what the kubelet allocated
//! and actuated (its status), or, when the resize is infeasible, only what the kubelet gave it
//! (upstream's PodRequests with status resources, which the scheduler's NodeInfo counts).

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::error::Result;
use crate::model::{pod_level_resource, pod_requests, Resources};

type List = BTreeMap<String, Quantity>;

/// Resource names and quantity texts of a map (absent: none).
fn pairs(map: Option<&List>) -> impl Iterator<Item = (&str, &str)> + '_ {
    map.into_iter()
        .flatten()
        .map(|(k, q)| (k.as_str(), q.0.as_str()))
}

/// The `requests` of a container's or pod's resources, if any.
fn spec_requests(r: &Option<core::ResourceRequirements>) -> Option<&List> {
    r.as_ref().and_then(|r| r.requests.as_ref())
}

/// Where the kubelet reports a pod's resize: its status, and whether the resize is infeasible (the
/// first `PodResizePending` condition says so).
struct Status<'a> {
    status: &'a core::PodStatus,
    infeasible: bool,
}

impl<'a> Status<'a> {
    fn of(p: &'a core::Pod) -> Option<Status<'a>> {
        let status = p.status.as_ref()?;
        let infeasible = status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "PodResizePending")
            .is_some_and(|c| c.reason.as_deref() == Some("Infeasible"));
        let reported = status
            .container_statuses
            .iter()
            .chain(status.init_container_statuses.iter())
            .flatten()
            .any(|cs| cs.resources.is_some() || cs.allocated_resources.is_some())
            || status.resources.is_some()
            || status.allocated_resources.is_some();
        (reported || infeasible).then_some(Status { status, infeasible })
    }

    /// A container's status by name: regular containers' first, then init containers'.
    fn container(&self, name: &str) -> Option<&'a core::ContainerStatus> {
        let s = self.status;
        s.container_statuses
            .iter()
            .flatten()
            .chain(s.init_container_statuses.iter().flatten())
            .find(|cs| cs.name == name)
    }

    /// What the kubelet allocated a container: its status's, else (resize feasible) its spec's.
    fn allocated(&self, c: &'a core::Container) -> Option<&'a List> {
        match self
            .container(&c.name)
            .and_then(|cs| cs.allocated_resources.as_ref())
        {
            Some(a) => Some(a),
            None if self.infeasible => None,
            None => spec_requests(&c.resources),
        }
    }

    /// What the kubelet actuated for a container: its status's resources, else what it allocated.
    fn actuated(&self, c: &'a core::Container) -> Option<&'a List> {
        let cs = self.container(&c.name);
        match cs
            .and_then(|cs| cs.resources.as_ref())
            .and_then(|r| r.requests.as_ref())
        {
            Some(r) => Some(r),
            None => self.allocated(c),
        }
    }
}

/// The containers' aggregate (no pod-level requests, no overhead) with each container's requests
/// taken by `pick`.
fn aggregate<'a>(
    at: &dyn fmt::Display,
    spec: &'a core::PodSpec,
    pick: impl Fn(&'a core::Container) -> Option<&'a List>,
) -> Result<Resources> {
    Ok(pod_requests(
        at,
        pairs(None),
        spec.containers.iter().map(|c| pairs(pick(c))),
        spec.init_containers
            .iter()
            .flatten()
            .map(|c| (pairs(pick(c)), c.restart_policy.as_deref())),
        pairs(None),
    )?)
}

/// Parses a resource list, `field` naming it in errors.
fn parse(at: &dyn fmt::Display, field: &str, list: Option<&List>) -> Result<Resources> {
    Ok(Resources::from_quantities(
        format_args!("{at}{field}"),
        pairs(list),
    )?)
}

/// A pod's requests as the scheduler counts them; `at` prefixes field names in errors.
pub fn of(p: &core::Pod, at: &dyn fmt::Display) -> Result<Resources> {
    let default = core::PodSpec::default();
    let spec = p.spec.as_ref().unwrap_or(&default);
    let Some(st) = Status::of(p) else {
        return Ok(pod_requests(
            at,
            pairs(spec_requests(&spec.resources)),
            spec.containers
                .iter()
                .map(|c| pairs(spec_requests(&c.resources))),
            spec.init_containers.iter().flatten().map(|c| {
                (
                    pairs(spec_requests(&c.resources)),
                    c.restart_policy.as_deref(),
                )
            }),
            pairs(spec.overhead.as_ref()),
        )?);
    };
    let status = st.status;
    let pod_status_requests = status.resources.as_ref().and_then(|r| r.requests.as_ref());
    // The pod's own status lists, when the kubelet fills them, are the aggregates already.
    let (allocated, actuated) = match (&status.allocated_resources, pod_status_requests) {
        (Some(a), Some(r)) => (
            parse(at, "status.allocatedResources", Some(a))?,
            parse(at, "status.resources.requests", Some(r))?,
        ),
        _ => (
            aggregate(at, spec, |c| st.allocated(c))?,
            aggregate(at, spec, |c| st.actuated(c))?,
        ),
    };
    let mut total = if st.infeasible {
        Resources::default()
    } else {
        aggregate(at, spec, |c| spec_requests(&c.resources))?
    };
    total.max_with(&allocated);
    total.max_with(&actuated);
    // Pod-level requests, when the spec sets some: the larger of spec and status (status only when
    // infeasible).
    let spec_level = spec_requests(&spec.resources);
    if spec_level.is_some_and(|l| l.keys().any(|k| pod_level_resource(k))) {
        let mut lists = vec![("spec.resources.requests", spec_level)];
        if status.resources.is_some() {
            if st.infeasible {
                lists.clear();
            }
            lists.push(("status.resources.requests", pod_status_requests));
            lists.push((
                "status.allocatedResources",
                status.allocated_resources.as_ref(),
            ));
        }
        let mut level = Resources::default();
        let mut names: Vec<&str> = Vec::new();
        for (field, list) in lists {
            level.max_with(&parse(at, field, list)?);
            names.extend(pairs(list).map(|(n, _)| n));
        }
        total.override_pod_level(&level, names);
    }
    total.add(&parse(at, "spec.overhead", spec.overhead.as_ref())?);
    total.pods = 1;
    Ok(total)
}
